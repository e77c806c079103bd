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
from trawl.browser import PINNED_EXTENSION_ID, ExtensionHub, pairing
from trawl.browser.pairing import new_pair_code
from trawl.server.runner import RunningDaemon

from ..security.linkpeer import LinkPeer, hello
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

OTHER_ID = "abcdefghijklmnopabcdefghijklmnop"


@pytest.fixture
async def bare(tmp_path: Path) -> AsyncIterator[tuple[RunningDaemon, ExtensionHub, LinkPeer]]:
    settings = e2e_settings(tmp_path, extension_ids=(OTHER_ID[::-1],))
    daemon, hub = await start_daemon(settings)
    client = LinkPeer(daemon.port)
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
    out = await client.raw(hello(), origin=origin)
    assert out.status == 403
    assert not hub.attached


async def test_rebinding_host_is_refused(bare: Any) -> None:
    daemon, hub, client = bare
    out = await client.raw(hello(), host=f"evil.example:{daemon.port}")
    assert out.status == 421 and not hub.attached


async def test_unpaired_and_bad_secret_and_bad_code_are_refused(bare: Any, tmp_path: Path) -> None:
    daemon, hub, client = bare
    assert (await client.run("none")).refused == "unpaired"
    assert (await client.run("secret", secret="ab" * 32)).refused == "unpaired"
    assert (await client.run("pair", code="trawl-AAAA-BBBB-CCCC")).refused == "bad_code"  # no code waiting

    code = new_pair_code(daemon.settings.state_dir)
    out = await client.run("pair", code=code)
    assert out.welcomed and out.daemon_proved and out.secret
    assert await hub.wait_attached(30)
    secret = out.secret
    assert out.ws is not None
    await out.ws.close()
    assert await hub.wait_attached(30, attached=False)

    assert (await client.run("secret", secret="cd" * 32)).refused == "bad_secret"  # unknown key id
    wrong = await client.run("secret", secret="cd" * 32, key_id=pairing.key_id(secret))  # right id, wrong key
    assert wrong.daemon_proved is False and wrong.refused == "bad_secret"
    assert (await client.run("pair", code=code)).refused == "bad_code"  # spent once confirmed

    out = await client.run("secret", secret=secret)
    assert out.welcomed and out.daemon_proved and "secret" not in json.dumps(out.frames)
    assert hub.attached
    assert out.ws is not None
    await out.ws.close()
    refused = [r["reason"] for r in hub.describe()["refused"]]
    assert any(r.startswith("unpaired") for r in refused) and any(r.startswith("bad_secret") for r in refused)


async def test_a_second_browser_is_refused_while_the_first_is_alive(bare: Any) -> None:
    daemon, hub, client = bare
    out = await client.run("pair", code=new_pair_code(daemon.settings.state_dir))
    first, secret = out.ws, out.secret
    assert first is not None and await hub.wait_attached(30)

    async def answer_pings() -> None:
        assert first is not None
        async for msg in first:
            data = json.loads(msg.data)
            if data["type"] == "ping":
                await first.send_str(json.dumps({"type": "pong", "id": data["id"]}))

    pinger = asyncio.create_task(answer_pings())
    try:
        assert (await client.run("secret", secret=secret)).refused == "already_attached"
    finally:
        pinger.cancel()
    # A dead first link (it stops answering) is replaced by the new one.
    second = await client.run("secret", secret=secret)
    assert second.welcomed and second.ws is not None
    # Pairing another browser (a fresh code) detaches the live one instead of refusing the newcomer.
    third = await client.run("pair", code=new_pair_code(daemon.settings.state_dir))
    assert third.welcomed and third.secret != secret and third.ws is not None
    closed = await second.ws.receive(timeout=30)
    assert closed.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
    assert (await client.run("secret", secret=secret)).refused == "bad_secret"  # the old secret is void now
    await third.ws.close()


async def test_protocol_mismatch_and_garbage_are_refused(bare: Any) -> None:
    _, hub, client = bare
    assert (await client.raw({**hello(), "protocol": 999})).refused == "protocol_mismatch"
    # A first-protocol extension (secret in the hello) is told to update, not refused as garbage.
    old = {"type": "hello", "protocol": 1, "extension_version": "0.0", "browser": "x", "secret": "s"}
    assert (await client.raw(old)).refused == "protocol_mismatch"
    assert (await client.raw({"type": "capture", "id": 1})).refused == "invalid_request"
    assert (await client.raw({**hello(), "extra": 1})).refused == "invalid_request"
    assert (await client.raw(hello(nonce="short"))).refused == "invalid_request"
    assert (await client.raw("{not json")).refused == "invalid_request"
    assert not hub.attached


async def test_a_listed_store_id_passes_the_origin_check(bare: Any) -> None:
    _, _, client = bare
    out = await client.raw(hello(), origin=f"chrome-extension://{OTHER_ID[::-1]}")
    assert out.status == 101 and out.refused == "unpaired"


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
        # The page itself may be read ahead (an open tab on an allowed site); nothing else may be captured.
        assert stack.hub.attached and all(c.via == "read_ahead" for c in stack.hub.captures)
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


async def test_daemon_restart_link_comes_back(tmp_path: Path, chromium: str) -> None:
    stack = await launch_linked(tmp_path, chromium)
    try:
        assert await stack.hub.wait_attached(15)
        port = stack.daemon.port
        await stack.daemon.stop()
        settings = stack.settings.with_(port=port)
        restarted, hub = await start_daemon(settings)
        stack.daemon = restarted
        t0 = time.monotonic()
        # A hang guard, not a speed check: the extension must link back on its own (the time is printed).
        assert await hub.wait_attached(60.0), f"no link after the daemon restarted: {hub.describe()}"
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
        assert await hub.wait_attached(30, attached=False), "the link did not drop when the worker was stopped"
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
    assert Pairing(state).code() == pairing.normalize_code(code)
    assert pairing.normalize_code(f"  {code.lower()} ") == pairing.normalize_code(code.replace("-", " "))

    now = [time.time()]
    late = Pairing(state, clock=lambda: now[0])
    now[0] += pairing.CODE_TTL_S + 1
    assert late.code() is None and not (state / CODE_FILE).exists()  # expired codes are deleted

    code = new_pair_code(state)
    secret = pairing.derive_secret(code, "a" * 64, "b" * 64)
    p = Pairing(state)
    p.add_pending(secret)
    found = p.key_for(pairing.key_id(secret))
    assert found is not None and found.pending and not p.paired()
    p.commit(secret)
    assert p.paired() and p.code() is None
    assert stat.S_IMODE((state / SECRET_FILE).stat().st_mode) == 0o600
    found = p.key_for(pairing.key_id(secret))
    assert found is not None and not found.pending

    os.chmod(state / SECRET_FILE, 0o644)  # loose permissions are repaired
    assert Pairing(state).paired()
    assert stat.S_IMODE((state / SECRET_FILE).stat().st_mode) == 0o600
