"""trawl's own pages are never content (issue 23 item 9): the status page open in the user's browser, with its
log of every URL and error, is not listed, searched, read ahead or fetched by any source; nor are the
extension's own pages.

Real daemon, real extension in real Chromium (the e2e fixtures); every wait is on a condition with a deadline.
"""

from __future__ import annotations

import httpx
import pytest
from trawl.browser import PINNED_EXTENSION_ID
from trawl.capabilities.tabs import ListTabsIn, ReadTabIn, SearchTabsIn, list_tabs, read_tab, search_tabs
from trawl.ownpages import own_page
from trawl.settings import Settings
from trawl.types import ErrorCode

from ..e2e import conftest as e2e_fixtures
from ..e2e.conftest import Linked, LocalSite
from .test_preread_privacy import _article, _reader

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

linked = e2e_fixtures.linked
site = e2e_fixtures.site

MARKER = "zebrafish-ledger-7731"  # in a URL an agent asked for: the status page's log shows it


@pytest.mark.parametrize(("url", "own"), [
    ("http://127.0.0.1:8765/s/abc/", True), ("http://localhost:8765/", True), ("http://[::1]:8765/v1/status", True),
    ("http://[::ffff:127.0.0.1]:8765/s/x/", True), ("http://127.0.0.2:8765/", True), ("ws://127.0.0.1:8765/ext", True),
    ("http://0.0.0.0:8765/", True), ("http://2130706433:8765/", True), ("http://0x7f.1:8765/s/k/", True),
    ("http://[::ffff:7f00:1]:8765/", True), ("http://sub.localhost:8765/", True),
    (f"chrome-extension://{PINNED_EXTENSION_ID}/options/options.html", True),
    ("http://127.0.0.1:8766/", False), ("http://example.com:8765/", False), ("https://127.0.0.1/", False),
    ("file:///tmp/x", False), ("not a url", False),
])
def test_the_predicate(url: str, own: bool) -> None:
    assert bool(own_page(url, Settings(port=8765))) is own


async def test_the_status_page_open_in_the_browser_is_never_content(linked: Linked, site: LocalSite) -> None:
    d = linked.daemon
    article = site.add("/otters", _article("Otters", "Sea otters hold hands while they sleep on the water."))
    async with httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}) as c:
        r = await c.post("/v1/fetch", json={"url": site.url(f"/{MARKER}"), "query": "x"})  # the log shows it
        assert r.status_code in (200, 404)
        link = (await c.post("/v1/login-code")).json()["url"]
    status = await linked.context.new_page()
    await status.goto(link)
    assert status.url.startswith(d.url + "/s/") and MARKER in await status.inner_text("body")
    await linked.open_tab(article)
    await status.bring_to_front()
    svc = d.state.services
    reader = _reader(linked)
    assert await reader.wait_for(lambda: any("/otters" in str(e.prep.page.url) for e in reader.entries.values()), 60)

    # list_tabs: the status page (and its secret path) is not there; the article is.
    tabs = await list_tabs(svc, ListTabsIn())
    assert [t.url for t in tabs.tabs] == [article]
    assert "/s/" not in tabs.model_dump_json()
    # The open tabs read ahead: never the status page.
    assert all(not str(e.prep.page.url).startswith(d.url) for e in reader.entries.values()), reader.describe()
    # search_tabs: nothing of its log.
    found = await search_tabs(svc, SearchTabsIn(query=f"{MARKER} not_found error"))
    assert found.tabs_searched == 1 and found.hits
    for hit in found.hits:
        assert hit.url == article and MARKER not in hit.text and "/s/" not in hit.url
    # read_tab / fetch_page by tab: the status tab is the active one; and by its id.
    worker = await linked.worker()
    ids = await worker.evaluate(
        "async (u) => (await chrome.tabs.query({})).filter((t) => String(t.url || '').startsWith(u)).map((t) => t.id)",
        d.url)
    assert len(ids) == 1
    for ref in ("active", str(ids[0])):
        page = await read_tab(svc, ReadTabIn(tab=ref, query="which addresses failed"))
        assert not page.ok and MARKER not in page.model_dump_json(), page
        assert page.error is not None and page.error.code == "blocked_by_policy", page.error
        res = await linked.engine.fetch(f"tab:{ref}", "which addresses failed")
        assert res.error is not None and res.error.code == ErrorCode.BLOCKED_BY_POLICY, res
    # fetch_page by URL, every source: a typed refusal, nothing of the log.
    for source in (None, "extension", "http", "playwright"):
        res = await linked.engine.fetch(status.url, "which addresses failed", source=source, max_age_s=0)
        assert res.error is not None and res.error.code == ErrorCode.BLOCKED_BY_POLICY, (source, res)
        assert "own page" in res.error.message and not res.chunks
        assert MARKER not in repr(res)
    # The extension's own pages too.
    options = f"chrome-extension://{PINNED_EXTENSION_ID}/options/options.html"
    res = await linked.engine.fetch(options, "site policy")
    assert res.error is not None and not res.chunks
