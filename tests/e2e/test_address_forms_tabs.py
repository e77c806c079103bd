"""Issue 23 item 7, the extension's half: a tab at a denied address in IPv4-mapped form is not shown to agents.

Before: with ``127.0.0.3`` denied, a tab at ``http://[::ffff:127.0.0.3]:PORT/`` showed in ``list_tabs`` and its
text in ``search_tabs``. Real extension in real Chromium; the user denies the address on the options page; the
tabs are opened at mapped spellings of it (and one at an address that is not denied, which must still show).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest
from trawl.capabilities.tabs import ListTabsIn, SearchTabsIn, list_tabs, search_tabs

from tests.security.test_private_hosts import Server, html

from .conftest import Linked, deny_in_options

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

SECRET = "The harbour master's ledger records the tide bell rung at four."
OPEN = "The ferry timetable lists the tide bell crossings at nine and eleven."


def _dual_stack() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s, socket.create_server(("127.0.0.1", 0)) as srv:
            s.settimeout(2)
            s.connect(("::ffff:127.0.0.1", srv.getsockname()[1]))
        return True
    except OSError:
        return False


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    s = await Server().start()
    s.pages["/ledger"] = html("Ledger", f"<p>{SECRET}</p>")
    s.pages["/ferry"] = html("Ferry", f"<p>{OPEN}</p>")
    yield s
    await s.stop()


async def test_a_tab_at_a_mapped_spelling_of_a_denied_address_is_not_listed(linked: Linked, server: Server) -> None:
    if not _dual_stack():
        pytest.skip("this kernel does not reach IPv4 through IPv4-mapped IPv6 addresses")
    await deny_in_options(linked, "127.0.0.3")

    port = server.port
    denied = [f"http://[::ffff:127.0.0.3]:{port}/ledger", f"http://[::ffff:7f00:3]:{port}/ledger?b",
              f"http://[0:0:0:0:0:ffff:127.0.0.3]:{port}/ledger?c"]
    for url in denied:
        await linked.open_tab(url)
    await linked.open_tab(f"http://[::ffff:127.0.0.4]:{port}/ferry")

    listing = await list_tabs(linked.daemon.state.services, ListTabsIn())
    urls = [t.url for t in listing.tabs]
    assert any(":127.0.0.4" in u or "7f00:4" in u for u in urls), urls  # the allowed address shows
    assert not any("7f00:3" in u or "127.0.0.3" in u for u in urls), urls
    assert listing.hidden >= len(denied), listing
    found = await search_tabs(linked.daemon.state.services, SearchTabsIn(query="tide bell ledger"))
    assert found.ok, found
    assert not any(SECRET in h.text for h in found.hits) and any(OPEN in h.text for h in found.hits), found.hits
