"""A page that navigates to a denied (or dead) site after it loaded (issue 23 item 10).

* Through the extension: the denied site gets no request at all from the background tab trawl opened once the
  checked page has loaded (before: the page and then its favicon), and the capture is refused.
* Headless: Chromium's own error page ("blocked by client", net::ERR_*) is a typed error, never ``ok`` content.

Real Chromium, real extension and daemon (the e2e fixtures); local servers count every request they get.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from trawl import Engine
from trawl.policy import policy_path
from trawl.settings import Settings
from trawl.sources.playwright import PlaywrightSource
from trawl.types import ErrorCode, TrawlError

from ..e2e import conftest as e2e_fixtures
from ..e2e.conftest import Linked, LocalSite
from ..e2e.test_extension_capture import _set_policy
from .test_capture_leaks import INBOX, _pause, article, navigates_after_load

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

linked = e2e_fixtures.linked
site = e2e_fixtures.site


@pytest.fixture
async def mail() -> AsyncIterator[LocalSite]:
    s = await LocalSite().start()
    yield s
    await s.stop()


@pytest.mark.xfail(
    strict=False,
    reason=(
        "open race (SECURITY.md Known limits): the tab's block is installed when the extension learns of the load; a "
        "page that navigates 50 ms after its load can win on a busy machine and send one request plus its favicon "
        "(failed 1 of 3 clean-clone CI runs); the daemon's refusal of the text is asserted on every run"
    ),
)
async def test_a_denied_site_gets_no_request_from_a_page_that_navigates_there_after_load(
    linked: Linked, site: LocalSite, mail: LocalSite,
) -> None:
    mail.add("/inbox", article("Inbox", f"<p>{INBOX}</p>"))
    site.add("/pause", _pause)
    url = site.add("/innocent", navigates_after_load(mail.url("/inbox")))
    await _set_policy(linked, f"127.0.0.1:{mail.port}")
    for run in range(4):
        with pytest.raises(TrawlError) as err:
            await linked.hub.capture(url=url)
        assert err.value.code == ErrorCode.BLOCKED_BY_POLICY, f"run {run}: {err.value.code} {err.value.message}"
    # The threat table's promise: at most one request; with the tab's navigations blocked once the checked page
    # loaded, none (and never the favicon of a page that loaded).
    assert sum(mail.hits.values()) <= 1, mail.hits
    assert "/favicon.ico" not in mail.hits, mail.hits
    # The blocks die with the capture tabs: the user's own tab may still go there (the policy binds agents).
    worker = await linked.worker()
    assert await worker.evaluate("chrome.declarativeNetRequest.getSessionRules().then((r) => r.length)") == 0


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def headless(tmp_path: Path, chromium: str) -> AsyncIterator[Engine]:
    settings = Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", dense="none",
                        chromium_path=chromium)
    engine = Engine(settings, sources=[PlaywrightSource(settings)])
    yield engine
    await engine.aclose()


async def test_headless_never_returns_chromiums_error_page_as_content(
    headless: Engine, site: LocalSite, mail: LocalSite,
) -> None:
    mail.add("/inbox", article("Inbox", f"<p>{INBOX}</p>"))
    site.add("/pause", _pause)
    path = policy_path(headless.settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"deny": [f"127.0.0.1:{mail.port}"]}))
    denied = site.add("/to-denied", navigates_after_load(mail.url("/inbox")))
    dead = site.add("/to-dead", navigates_after_load(f"http://127.0.0.1:{_closed_port()}/gone"))
    res = await headless.fetch(denied, "sailing boats", source="playwright", max_age_s=0)
    assert res.error is not None and res.error.code == ErrorCode.BLOCKED_BY_POLICY, res
    assert not res.chunks and mail.hits.get("/inbox", 0) == 0
    res = await headless.fetch(dead, "sailing boats", source="playwright", max_age_s=0)
    assert res.error is not None and res.error.code == ErrorCode.NETWORK_ERROR, res
    assert not res.chunks
    assert "blocked" not in " ".join(c.text for c in res.chunks).lower()
