"""Issue 27 in the real extension: the popup keeps what agents asked for apart from the daemon's background
read-ahead captures."""

from __future__ import annotations

import pytest
from trawl import labels
from trawl import policy as site_policy
from trawl.browser import PINNED_EXTENSION_ID

from .conftest import Linked, page_until, until

pytestmark = [pytest.mark.e2e]


async def test_popup_separates_agent_reads_from_read_ahead(linked: Linked) -> None:
    worker = await linked.worker()
    entries = [{"t": 1_700_000_000_000 + i, "ok": True, "code": "", "what": f"https://example.org/{kind}/{i}",
                "ms": 40 + i, **({"preread": True} if kind == "ahead" else {})}
               for i, kind in enumerate(["agent", "ahead", "ahead", "agent", "ahead"])]
    await worker.evaluate("(e) => chrome.storage.session.set({recent: e})", entries)
    popup = await linked.context.new_page()
    await popup.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/popup/popup.html")
    await page_until(popup, "() => document.querySelectorAll('#recent li .url').length === 2")
    agents = await popup.eval_on_selector_all("#recent li .url", "els => els.map(e => e.textContent)")
    ahead = await popup.eval_on_selector_all("#recent-ahead li .url", "els => els.map(e => e.textContent)")
    assert agents == ["https://example.org/agent/0", "https://example.org/agent/3"]
    assert ahead == ["https://example.org/ahead/1", "https://example.org/ahead/2", "https://example.org/ahead/4"]


async def test_mode_labels_are_one_declaration_in_popup_options_and_status(linked: Linked) -> None:
    """Issue 27 item 8: the popup said "may not read any tab" beside "every request is refused" (web pages are still
    read while paused), and the options page and the status page named the site policy's modes in other words. Both
    now show extension/labels.json's words, and so do the daemon's status line and refusals."""
    words = labels.labels()
    popup = await linked.context.new_page()
    await popup.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/popup/popup.html")
    switch = words["pause"]["switch"]
    await page_until(popup, "(w) => document.getElementById('paused-label').textContent === w", switch)
    await popup.check("#paused")
    await page_until(popup, "(w) => document.getElementById('detail').textContent.includes(w)", words["pause"]["state"])
    # The daemon hears the state frame: its status line then says the popup's words.
    assert await until(lambda: linked.hub.paused, 30), "the daemon never heard that the user paused trawl"
    assert labels.paused() in linked.hub.summary(), linked.hub.summary()
    await popup.uncheck("#paused")

    options = await linked.context.new_page()
    await options.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/options/options.html")
    await page_until(options, "() => document.querySelector('[data-mode-label]').textContent !== ''")
    shown = await options.eval_on_selector_all(
        "input[name=mode]", "els => els.map(e => [e.value, e.parentElement.querySelector('[data-mode-label]')"
                            ".textContent])")
    assert dict(shown) == words["policy_mode"] and len(shown) == 2
    # The daemon's status page and refusals use the same words for the mode in force.
    info = site_policy.describe(linked.settings)
    assert site_policy.summary(info).startswith(words["policy_mode"][info["mode"]])
    strict = site_policy.SitePolicy(mode="deny_all_except_allowed")
    refused = strict.decide("https://example.org/")
    assert not refused.allowed and words["policy_mode"]["deny_all_except_allowed"].lower() in refused.reason
