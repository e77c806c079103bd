"""Issue 27 in the real extension: the popup keeps what agents asked for apart from the daemon's background
read-ahead captures."""

from __future__ import annotations

import pytest
from trawl.browser import PINNED_EXTENSION_ID

from .conftest import Linked

pytestmark = [pytest.mark.e2e]


async def test_popup_separates_agent_reads_from_read_ahead(linked: Linked) -> None:
    worker = await linked.worker()
    entries = [{"t": 1_700_000_000_000 + i, "ok": True, "code": "", "what": f"https://example.org/{kind}/{i}",
                "ms": 40 + i, **({"preread": True} if kind == "ahead" else {})}
               for i, kind in enumerate(["agent", "ahead", "ahead", "agent", "ahead"])]
    await worker.evaluate("(e) => chrome.storage.session.set({recent: e})", entries)
    popup = await linked.context.new_page()
    await popup.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/popup/popup.html")
    await popup.wait_for_function("document.querySelectorAll('#recent li .url').length === 2", timeout=5_000)
    agents = await popup.eval_on_selector_all("#recent li .url", "els => els.map(e => e.textContent)")
    ahead = await popup.eval_on_selector_all("#recent-ahead li .url", "els => els.map(e => e.textContent)")
    assert agents == ["https://example.org/agent/0", "https://example.org/agent/3"]
    assert ahead == ["https://example.org/ahead/1", "https://example.org/ahead/2", "https://example.org/ahead/4"]
