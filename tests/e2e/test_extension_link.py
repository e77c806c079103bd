"""The extension link's trust and liveness.

First half: forged clients (what a web page, another extension or another OS user's process can send) against a
real daemon, each refused. Second half: the real extension in Chromium: pairing through the popup, the daemon
restarted (link back within 5 s), the service worker killed (link restored by the alarm)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import websockets
from trawl.browser import PINNED_EXTENSION_ID, ExtensionHub
from trawl.browser import protocol as proto
from trawl.browser.pairing import new_pair_code
from trawl.server.runner import RunningDaemon

from .conftest import (
    LocalSite,
    close_linked,
    copy_extension,
    e2e_settings,
    launch_linked,
    launch_plain_chromium,
    start_daemon,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

GOOD_ORIGIN = f"chrome-extension://{PINNED_EXTENSION_ID}"
OTHER_ID = "abcdefghijklmnopabcdefghijklmnop"


def hello(**kw: Any) -> dict[str, Any]:
    return {"type": "hello", "protocol": proto.version(), "extension_version": "test", "browser": "forged", **kw}


class Forged:
    """A hand-made client of /ext: whatever headers and frames a local process could send."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.session = aiohttp.ClientSession()

    async def attempt(self, first: dict[str, Any] | None, *, origin: str | None = GOOD_ORIGIN,
                      host: str | None = None) -> tuple[int, dict[str, Any] | None, Any]:
        """(HTTP status or 101, first reply frame, the socket)."""
        headers = {}
        if origin is not None:
            headers["Origin"] = origin
        if host is not None:
            headers["Host"] = host
        try:
            ws = await self.session.ws_connect(f"http://127.0.0.1:{self.port}/ext", headers=headers)
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status, None, None
        if first is not None:
            await ws.send_str(json.dumps(first))
        msg = await ws.receive(timeout=5)
        reply = json.loads(msg.data) if msg.type == aiohttp.WSMsgType.TEXT else None
        return 101, reply, ws

    async def close(self) -> None:
        await self.session.close()


@pytest.fixture
async def bare(tmp_path: Path) -> AsyncIterator[tuple[RunningDaemon, ExtensionHub, Forged]]:
    settings = e2e_settings(tmp_path, extension_ids=(OTHER_ID[::-1],))
    daemon, hub = await start_daemon(settings)
    client = Forged(daemon.port)
    yield daemon, hub, client
    await client.close()
    await daemon.stop()


@pytest.mark.parametrize(
    "origin",
    [
        None,  # a local process without an Origin
        "http://evil.example",  # a web page
        "http://127.0.0.1:9",  # a local web page
        f"chrome-extension://{OTHER_ID}",  # a second extension
        f"chrome-extension://{PINNED_EXTENSION_ID}x",  # prefix tricks
        f"chrome-extension://{PINNED_EXTENSION_ID}.evil.example",
        f"CHROME-EXTENSION://{PINNED_EXTENSION_ID.upper()}",
        "null",
    ],
)
async def test_wrong_origin_is_refused_before_the_upgrade(bare: Any, origin: str | None) -> None:
    _, hub, client = bare
    status, _, _ = await client.attempt(hello(), origin=origin)
    assert status == 403
    assert not hub.attached


async def test_rebinding_host_is_refused(bare: Any) -> None:
    daemon, hub, client = bare
    status, _, _ = await client.attempt(hello(), host=f"evil.example:{daemon.port}")
    assert status == 421 and not hub.attached


async def test_unpaired_and_bad_secret_and_bad_code_are_refused(bare: Any, tmp_path: Path) -> None:
    daemon, hub, client = bare
    _, reply, _ = await client.attempt(hello())
    assert reply is not None and reply["type"] == "refused" and reply["code"] == "unpaired"

    code = new_pair_code(daemon.settings.state_dir)
    _, reply, ws = await client.attempt(hello(pair_code=code))
    assert reply is not None and reply["type"] == "welcome" and reply["secret"]
    secret = reply["secret"]
    await ws.close()
    assert await hub.wait_attached(5, attached=False)

    _, reply, _ = await client.attempt(hello(secret=secret + "x"))
    assert reply is not None and reply["code"] == "bad_secret"
    _, reply, _ = await client.attempt(hello(pair_code=code))  # a code works once
    assert reply is not None and reply["code"] == "bad_secret"

    # Five wrong guesses void a fresh code: the right one fails afterwards.
    code2 = new_pair_code(daemon.settings.state_dir)
    for _ in range(5):
        _, reply, _ = await client.attempt(hello(pair_code="trawl-AAAA-BBBB-CCCC"))
        assert reply is not None and reply["code"] == "bad_secret"
    _, reply, _ = await client.attempt(hello(pair_code=code2))
    assert reply is not None and reply["code"] == "bad_secret"

    _, reply, ws = await client.attempt(hello(secret=secret))
    assert reply is not None and reply["type"] == "welcome" and "secret" not in reply
    assert hub.attached
    await ws.close()
    refused = [r["reason"] for r in hub.describe()["refused"]]
    assert any(r.startswith("unpaired") for r in refused) and any(r.startswith("bad_secret") for r in refused)


async def test_a_second_browser_is_refused_while_the_first_is_alive(bare: Any) -> None:
    daemon, _hub, client = bare
    _, reply, first = await client.attempt(hello(pair_code=new_pair_code(daemon.settings.state_dir)))
    secret = reply["secret"] if reply else ""

    async def answer_pings() -> None:
        async for msg in first:
            data = json.loads(msg.data)
            if data["type"] == "ping":
                await first.send_str(json.dumps({"type": "pong", "id": data["id"]}))

    pinger = asyncio.create_task(answer_pings())
    try:
        _, reply, _ = await client.attempt(hello(secret=secret))
        assert reply is not None and reply["code"] == "already_attached"
    finally:
        pinger.cancel()
    # A dead first link (it stops answering) is replaced by the new one.
    _, reply, second = await client.attempt(hello(secret=secret))
    assert reply is not None and reply["type"] == "welcome"
    # Pairing another browser (a fresh code) detaches the live one instead of refusing the newcomer.
    _, reply, third = await client.attempt(hello(pair_code=new_pair_code(daemon.settings.state_dir)))
    assert reply is not None and reply["type"] == "welcome" and reply["secret"] != secret
    closed = await second.receive(timeout=5)
    assert closed.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
    _, reply, _ = await client.attempt(hello(secret=secret))  # the old secret is void now
    assert reply is not None and reply["code"] == "bad_secret"
    await third.close()


async def test_protocol_mismatch_and_garbage_are_refused(bare: Any) -> None:
    _, hub, client = bare
    _, reply, _ = await client.attempt({**hello(), "protocol": 999})
    assert reply is not None and reply["code"] == "protocol_mismatch"
    _, reply, _ = await client.attempt({"type": "capture", "id": 1})
    assert reply is not None and reply["code"] == "invalid_request"
    _, reply, _ = await client.attempt({**hello(), "extra": 1})
    assert reply is not None and reply["code"] == "invalid_request"
    assert not hub.attached


async def test_a_listed_store_id_passes_the_origin_check(bare: Any) -> None:
    _, _, client = bare
    status, reply, _ = await client.attempt(hello(), origin=f"chrome-extension://{OTHER_ID[::-1]}")
    assert status == 101 and reply is not None and reply["code"] == "unpaired"


async def test_web_page_in_the_browser_cannot_reach_the_link(tmp_path: Path, chromium: str, site: LocalSite) -> None:
    """A page's own JavaScript tries the socket and the API: the browser sets its Origin, the daemon refuses."""
    stack = await launch_linked(tmp_path, chromium)
    try:
        assert await stack.hub.wait_attached(15)
        page = await stack.context.new_page()
        await page.goto(site.add("/attacker", "<p>an ordinary web page</p>"))
        port = stack.daemon.port
        outcome = await page.evaluate(
            """(port) => new Promise((resolve) => {
                 const ws = new WebSocket(`ws://127.0.0.1:${port}/ext`);
                 ws.onopen = () => { ws.send('{"type":"hello"}'); resolve('open'); };
                 ws.onerror = () => resolve('error');
                 setTimeout(() => resolve('timeout'), 3000);
               })""",
            port,
        )
        assert outcome == "error"
        status = await page.evaluate(
            "(port) => fetch(`http://127.0.0.1:${port}/v1/list_tabs`, {method: 'POST', body: '{}'})"
            ".then(r => r.status, () => 'blocked')",
            port,
        )
        assert status in (403, "blocked")
        assert stack.hub.attached and len(stack.hub.captures) == 0
    finally:
        await close_linked(stack)


# ------------------------------------------------------------------ real extension
async def test_pairing_through_the_popup(tmp_path: Path, chromium: str) -> None:
    stack = await launch_linked(tmp_path, chromium, pair=False)
    try:
        popup = await stack.context.new_page()
        await popup.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/popup/popup.html")
        await popup.wait_for_selector("body[data-state=refused]", timeout=10_000)
        assert "refused" in (await popup.inner_text("#link")).lower()
        assert not stack.hub.attached and any(r.reason.startswith("unpaired") for r in stack.hub.refusals)

        code = new_pair_code(stack.settings.state_dir)
        await popup.fill("#pair-code", code)
        await popup.click("#pair-button")
        assert await stack.hub.wait_attached(10), stack.hub.describe()
        await popup.wait_for_selector("body[data-state=connected][data-paired=true]", timeout=10_000)
        assert await popup.is_hidden("#pair-box")
    finally:
        await close_linked(stack)


async def test_daemon_restart_link_back_within_5_s(tmp_path: Path, chromium: str) -> None:
    stack = await launch_linked(tmp_path, chromium)
    try:
        assert await stack.hub.wait_attached(15)
        port = stack.daemon.port
        await stack.daemon.stop()
        settings = stack.settings.with_(port=port)
        restarted, hub = await start_daemon(settings)
        stack.daemon = restarted
        t0 = time.monotonic()
        assert await hub.wait_attached(5.0), f"no link within 5 s: {hub.describe()}"
        took = time.monotonic() - t0
        listing = await hub.list_tabs()
        assert listing["type"] == "tabs"
        print(f"link back {took * 1000:.0f} ms after the daemon restarted")
    finally:
        await close_linked(stack)


async def _cdp(ws: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    _cdp.n += 1  # type: ignore[attr-defined]
    rid = _cdp.n  # type: ignore[attr-defined]
    await ws.send(json.dumps({"id": rid, "method": method, "params": params or {}}))
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if msg.get("id") == rid:
            return msg


_cdp.n = 0  # type: ignore[attr-defined]


@pytest.mark.slow
async def test_worker_killed_and_link_restored(tmp_path: Path, chromium: str) -> None:
    """Chromium as a plain subprocess (Playwright would keep the worker alive); the worker is stopped through
    the browser's DevTools endpoint, never attached to; the alarm must restart it and the link come back."""
    settings = e2e_settings(tmp_path)
    daemon, hub = await start_daemon(settings)
    ext = copy_extension(tmp_path / "ext", daemon.port, new_pair_code(settings.state_dir))
    browser = launch_plain_chromium(chromium, tmp_path / "profile", ext)
    try:
        assert await hub.wait_attached(15), hub.describe()
        port = await asyncio.to_thread(browser.devtools_port)
        path = (tmp_path / "profile" / "DevToolsActivePort").read_text().splitlines()[1]
        async with websockets.connect(f"ws://127.0.0.1:{port}{path}", max_size=None) as ws:
            targets = (await _cdp(ws, "Target.getTargets"))["result"]["targetInfos"]
            worker = next(t for t in targets if t["type"] == "service_worker" and PINNED_EXTENSION_ID in t["url"])
            closed = await _cdp(ws, "Target.closeTarget", {"targetId": worker["targetId"]})
            assert closed.get("result", {}).get("success") is True
        assert await hub.wait_attached(5, attached=False), "the link did not drop when the worker was stopped"
        t0 = time.monotonic()
        assert await hub.wait_attached(45), "the link was not restored after the worker was stopped"
        print(f"link restored {time.monotonic() - t0:.1f} s after the worker was stopped")
        listing = await hub.list_tabs()
        assert listing["type"] == "tabs"
    finally:
        browser.kill()
        await daemon.stop()


def test_pairing_files_are_private_and_codes_expire(tmp_path: Path) -> None:
    import os
    import stat

    from trawl.browser.pairing import CODE_FILE, SECRET_FILE, Pairing

    state = tmp_path / "state"
    code = new_pair_code(state)
    assert re.fullmatch(r"trawl-[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}", code)
    assert stat.S_IMODE((state / CODE_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert code not in (state / CODE_FILE).read_text()  # only a hash is stored

    record = json.loads((state / CODE_FILE).read_text())
    record["expires"] = time.time() - 1
    (state / CODE_FILE).write_text(json.dumps(record))
    os.chmod(state / CODE_FILE, 0o600)
    assert Pairing(state).check(None, code).code == "bad_secret"

    code = new_pair_code(state)
    verdict = Pairing(state).check(None, code.lower())  # pasted in lower case: still the same code
    assert verdict.ok and verdict.new_secret
    assert stat.S_IMODE((state / SECRET_FILE).stat().st_mode) == 0o600
    assert verdict.new_secret not in (state / SECRET_FILE).read_text()
    assert Pairing(state).check(verdict.new_secret, None).ok

    os.chmod(state / SECRET_FILE, 0o644)  # loose permissions are repaired (the file holds only a hash)
    assert Pairing(state).check(verdict.new_secret, None).ok
    assert stat.S_IMODE((state / SECRET_FILE).stat().st_mode) == 0o600
