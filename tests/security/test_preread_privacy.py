"""Open tabs read ahead (browser/preread.py) and the agents' page memory (pipeline.Engine): what the daemon holds
of the user's tabs goes when the user takes it away (tab closed, trawl paused, site denied by editing the policy
file), pages read ahead stay out of the agents' page memory until an agent asks for their tab, and a private
(incognito) window's tab is never read ahead.

Real daemon, real extension in real Chromium (the e2e fixtures); every wait is on a condition with a deadline.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from trawl.browser import PINNED_EXTENSION_ID, protocol
from trawl.browser.preread import PreReader
from trawl.capabilities.tabs import PREREAD, ReadTabIn, SearchTabsIn, read_tab, search_tabs
from trawl.policy import now_revision, policy_path

from ..e2e import conftest as e2e_fixtures
from ..e2e.conftest import Linked, LocalSite

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

linked = e2e_fixtures.linked
site = e2e_fixtures.site


def _article(title: str, text: str) -> str:
    return (f"<!doctype html><html lang=en><head><title>{title}</title></head><body><main><h1>{title}</h1>"
            f"<p>{text}</p></main></body></html>")


def _reader(stack: Linked) -> PreReader:
    reader = stack.daemon.state.services.extras[PREREAD]
    assert isinstance(reader, PreReader)
    return reader


async def _tab_id(stack: Linked, url: str) -> int:
    listing = await stack.hub.list_tabs()
    return next(int(t["id"]) for t in listing["tabs"] if t["url"] == url)


def _text(result: Any) -> str:
    return " ".join(c.text for c in result.chunks)


DIARY = "On Tuesday I told the landlord the spare key is under the blue flower pot by the back door."


async def test_pages_read_ahead_enter_the_agents_memory_only_when_asked_and_leave_with_the_tab(
        linked: Linked, site: LocalSite) -> None:
    url = site.add("/diary", _article("Diary", DIARY))
    page = await linked.open_tab(url)
    reader = _reader(linked)
    tid = await _tab_id(linked, url)
    assert await reader.wait_for(lambda: tid in reader.entries, 60), reader.describe()
    key = reader.entries[tid].prep.key
    assert linked.engine.held(key) is None, "a tab read ahead sits in the agents' page memory before any question"
    out = await read_tab(linked.daemon.state.services, ReadTabIn(tab=tid, query="where is the spare key"))
    assert out.ok and "flower pot" in _text(out)
    assert linked.engine.held(out.page) is not None  # asked for: read_more works on it
    more = await linked.engine.read_more(out.page, out.chunks[0].id)
    assert more.ok and "flower pot" in _text(more)
    await page.close()
    assert await reader.wait_for(lambda: tid not in reader.entries, 30), reader.describe()
    gone = await linked.engine.read_more(out.page, out.chunks[0].id)
    assert not gone.ok and gone.error is not None and "unknown page" in gone.error.message


async def test_pausing_trawl_forgets_the_tabs_read_ahead_and_their_pages(linked: Linked, site: LocalSite) -> None:
    url = site.add("/diary", _article("Diary", DIARY))
    await linked.open_tab(url)
    reader = _reader(linked)
    tid = await _tab_id(linked, url)
    assert await reader.wait_for(lambda: tid in reader.entries, 60), reader.describe()
    found = await search_tabs(linked.daemon.state.services, SearchTabsIn(query="where is the spare key"))
    hit = next(h for h in found.hits if h.tab == tid)
    assert (await linked.engine.read_more(hit.page, hit.id)).ok  # the hit's page handle works while allowed
    popup = await linked.context.new_page()
    await popup.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/popup/popup.html")
    await popup.check("#paused")
    assert await reader.wait_for(lambda: linked.hub.paused and not reader.entries, 30), reader.describe()
    more = await linked.engine.read_more(hit.page, hit.id)
    assert not (more.ok and "flower pot" in _text(more)), "a tab's text is served while trawl is paused"
    assert reader.describe()["tabs"] == [] and reader.describe()["chars"] == 0


async def test_denying_a_site_by_editing_the_policy_file_drops_its_tabs(linked: Linked, site: LocalSite) -> None:
    """The policy file edited by hand (not through the extension's options): the daemon's watch sees it and the
    reader drops the tabs of the denied site at once, with the pages agents were given."""
    bank_url = f"http://localhost:{site.port}/bank"
    site.add("/bank", _article("Bank", "Your current account balance is 12,408.55 and the overdraft is 2,000."))
    await linked.open_tab(bank_url)
    reader = _reader(linked)
    bank = await _tab_id(linked, bank_url)
    assert await reader.wait_for(lambda: bank in reader.entries, 60), reader.describe()
    out = await read_tab(linked.daemon.state.services, ReadTabIn(tab=bank, query="what is the balance"))
    assert out.ok and linked.engine.held(out.page) is not None
    path = policy_path(linked.daemon.settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mode": "allow_all_except_denied", "allow": [], "deny": [f"localhost:{site.port}"],
                                "revision": now_revision() + 1000}))
    assert await reader.wait_for(lambda: bank not in reader.entries, 30), reader.describe()
    assert linked.engine.held(out.page) is None
    assert [t for t in reader.describe()["tabs"] if "localhost" in t["host"]] == []


async def test_a_private_window_tab_event_is_ignored(linked: Linked, site: LocalSite) -> None:
    """Defence in depth: the extension never reports a private (incognito) window's tab; if a 'ready' event for
    one arrives anyway (a valid frame of the protocol), the daemon does not queue or read it."""
    url = site.add("/private", _article("Private", "The surprise party is on Friday at the boathouse."))
    reader = _reader(linked)
    frame = protocol.validate({"type": "tab_event", "event": "ready", "tab_id": 424242,
                               "tab": {"id": 424242, "window_id": 9, "url": url, "title": "Private",
                                       "active": True, "status": "complete", "incognito": True}}, "extension")
    heard = reader.heard
    await reader.on_event(frame)
    assert 424242 not in reader.queued() and reader.heard == heard and reader.active != 424242
    assert site.hits.get("/private") is None
