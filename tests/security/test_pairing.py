"""Pairing (issue 8, item 5) and the mutual proof behind it.

- Both sides compute the same proofs, secrets and key ids (WebCrypto in the extension, hmac in the daemon).
- The daemon proves itself first; a wrong proof ends the connection before any welcome.
- (5a) The code is spent only when the extension confirms it stored the derived secret: a peer that vanishes
  after the welcome, or whose service worker dies before or after storing, completes the pairing later with the
  same code (or with the stored secret), even across a daemon restart. Real extension, worker killed through
  the browser's DevTools endpoint at the exact stage, by a daemon test hook.
- (5b) One socket per worker however many callers ask to connect at once.
- (5c) Wrong codes from other connections do not void the code; many of them only pause pairing for a minute.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import websockets
from trawl.browser import PINNED_EXTENSION_ID, ExtensionHub, pairing
from trawl.browser.pairing import CODE_FILE, WRONG_CODE_WINDOW_S, WRONG_CODES_PER_WINDOW, Pairing, new_pair_code
from trawl.server.runner import RunningDaemon

from ..e2e.conftest import (
    EXTENSION_SRC,
    PlainChromium,
    close_linked,
    copy_extension,
    e2e_settings,
    launch_linked,
    launch_plain_chromium,
    start_daemon,
)
from .linkpeer import LinkPeer, hello

NODE = shutil.which("node")


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def bare(tmp_path: Path) -> AsyncIterator[tuple[RunningDaemon, ExtensionHub, LinkPeer, Clock]]:
    settings = e2e_settings(tmp_path)
    clock = Clock()
    hub = ExtensionHub(settings, pairing=Pairing(settings.state_dir, clock=clock))
    daemon, hub = await start_daemon(settings, hub)
    peer = LinkPeer(daemon.port)
    yield daemon, hub, peer, clock
    await peer.close()
    await daemon.stop()


# ------------------------------------------------------------------ the computations, both sides
def test_extension_and_daemon_compute_the_same_proofs(tmp_path: Path) -> None:
    if NODE is None:
        if os.environ.get("CI"):
            pytest.fail("node is required under CI (./dev test installs it)")
        pytest.skip("node is not installed")
    for name in ("link.js", "protocol.js"):
        shutil.copy(EXTENSION_SRC / name, tmp_path / name)
    (tmp_path / "package.json").write_text('{"type": "module"}')
    code, ne, nd = "trawl-7KQM-X2RD-HP4N", "a1" * 32, "b2" * 32
    version = pairing.protocol.version()
    (tmp_path / "run.js").write_text("""
import * as L from "./link.js";
const [code, ne, nd, version] = JSON.parse(process.argv[2]);
const secret = await L.deriveSecret(code, version, ne, nd);
const daemonProof = await L.mac(L.codeKey(code), version, "daemon", "pair", ne, nd);
console.log(JSON.stringify({
  normalized: [code, " trawl 7kqm x2rd hp4n ", "7KQMX2RDHP4N", "TRAWL-7kqm-X2RD-hp4n"].map(L.normalizeCode),
  daemonProof,
  extensionProof: await L.mac(L.secretKey(secret), version, "extension", "secret", ne, nd),
  stored: await L.mac(L.secretKey(secret), version, "stored", "pair", ne, nd),
  secret,
  keyId: await L.keyId(secret),
  accepts: await L.proofMatches(L.codeKey(code), daemonProof, version, "daemon", "pair", ne, nd),
  rejectsReflection: await L.proofMatches(L.codeKey(code), daemonProof, version, "extension", "pair", ne, nd),
  rejectsOtherNonce: await L.proofMatches(L.codeKey(code), daemonProof, version, "daemon", "pair", nd, ne),
  rejectsGarbage: await L.proofMatches(L.codeKey(code), "zz", version, "daemon", "pair", ne, nd),
}));
""")
    out = subprocess.run([NODE, str(tmp_path / "run.js"), json.dumps([code, ne, nd, version])],
                         capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    js = json.loads(out.stdout)
    secret = pairing.derive_secret(code, ne, nd)
    assert js["secret"] == secret and pairing.is_hex64(secret)
    assert js["normalized"] == ["7KQMX2RDHP4N"] * 4 == [pairing.normalize_code(c) for c in
                                                          (code, " trawl 7kqm x2rd hp4n ", "7KQMX2RDHP4N",
                                                           "TRAWL-7kqm-X2RD-hp4n")]
    assert js["daemonProof"] == pairing.mac(pairing.code_key(code), "daemon", "pair", ne, nd)
    assert js["extensionProof"] == pairing.mac(pairing.secret_key(secret), "extension", "secret", ne, nd)
    assert js["stored"] == pairing.mac(pairing.secret_key(secret), "stored", "pair", ne, nd)
    assert js["keyId"] == pairing.key_id(secret)
    assert js["accepts"] is True
    assert js["rejectsReflection"] is js["rejectsOtherNonce"] is js["rejectsGarbage"] is False
    # Labels keep the directions apart: a daemon proof is never an extension proof.
    assert pairing.mac(b"k", "daemon", "pair", ne, nd) != pairing.mac(b"k", "extension", "pair", ne, nd)


# ------------------------------------------------------------------ the daemon's side, forged peers
async def test_the_daemon_proves_first_and_a_wrong_proof_gets_no_welcome(bare: Any) -> None:
    daemon, hub, peer, _ = bare
    code = new_pair_code(daemon.settings.state_dir)
    out = await peer.run("pair", code=code)
    assert out.daemon_proved is True and out.welcomed
    assert await hub.wait_attached(30)
    assert out.ws is not None
    await out.ws.close()
    assert await hub.wait_attached(30, attached=False)
    # A peer that holds nothing: the daemon's challenge comes first, its own proof is refused, no welcome.
    bad = await peer.run("secret", secret="00" * 32, key_id=pairing.key_id(out.secret), wrong_proof=True)
    assert bad.daemon_proved is False and not bad.welcomed and bad.refused == "bad_secret"
    assert [f["type"] for f in bad.frames] == ["challenge", "refused"]
    assert not hub.attached
    # Nothing secret ever travels: not the code, not the secret, in any frame the daemon sent.
    sent = json.dumps(out.frames + bad.frames)
    assert out.secret not in sent and pairing.normalize_code(code) not in sent


async def test_the_code_is_spent_only_after_the_extension_confirms(bare: Any) -> None:
    daemon, hub, peer, _ = bare
    code = new_pair_code(daemon.settings.state_dir)
    gone = await peer.run("pair", code=code, ack=False)  # its worker died before it could store the secret
    assert gone.welcomed and gone.ws is not None
    await gone.ws.close()
    assert not hub.attached and not hub.pairing.paired()
    assert hub.pairing.code() == pairing.normalize_code(code)  # the code is still waiting

    again = await peer.run("pair", code=code)  # the same code completes the pairing
    assert again.welcomed and await hub.wait_attached(30)
    assert hub.pairing.paired() and hub.pairing.code() is None
    assert again.secret != gone.secret  # fresh nonces, fresh secret; the unconfirmed one is void
    assert again.ws is not None
    await again.ws.close()
    assert await hub.wait_attached(30, attached=False)
    assert (await peer.run("secret", secret=gone.secret)).refused == "bad_secret"
    assert (await peer.run("pair", code=code)).refused == "bad_code"  # spent


async def test_a_stored_but_unconfirmed_secret_completes_the_pairing_even_after_a_restart(
        bare: Any, tmp_path: Path) -> None:
    daemon, hub, peer, _ = bare
    code = new_pair_code(daemon.settings.state_dir)
    stored = await peer.run("pair", code=code, ack=False)  # stored, then died before confirming
    assert stored.ws is not None
    await stored.ws.close()
    assert not hub.pairing.paired()

    port = daemon.port
    await daemon.stop()
    daemon2, hub2 = await start_daemon(daemon.settings.with_(port=port))
    try:
        back = await peer.run("secret", secret=stored.secret)
        assert back.daemon_proved and back.welcomed
        assert await hub2.wait_attached(30)
        assert hub2.pairing.paired() and hub2.pairing.code() is None  # confirmed by authenticating: spent
        assert back.ws is not None
        await back.ws.close()
    finally:
        await daemon2.stop()


async def test_six_wrong_codes_from_another_connection_do_not_void_the_code(bare: Any) -> None:
    daemon, hub, peer, _ = bare
    code = new_pair_code(daemon.settings.state_dir)
    for i in range(6):
        guess = f"trawl-AAAA-BBBB-CC{i:02d}"
        out = await peer.run("pair", code=guess)
        assert out.daemon_proved is False and out.refused == "bad_code" and not out.welcomed
        assert out.ws is not None and (await out.ws.receive(timeout=30)).type.name in ("CLOSE", "CLOSED", "CLOSING")
    assert hub.pairing.code() == pairing.normalize_code(code)
    assert (await peer.run("pair", code=code)).welcomed
    assert await hub.wait_attached(30) and hub.pairing.paired()


async def test_a_flood_of_wrong_codes_pauses_pairing_but_never_voids_the_code(bare: Any) -> None:
    daemon, hub, peer, clock = bare
    code = new_pair_code(daemon.settings.state_dir)
    for _ in range(WRONG_CODES_PER_WINDOW):
        assert (await peer.run("pair", code="trawl-AAAA-BBBB-CCCC")).refused == "bad_code"
    refused = await peer.run("pair", code="trawl-AAAA-BBBB-CCCC")
    assert refused.refused == "busy" and [f["type"] for f in refused.frames] == ["refused"]  # not even a challenge
    assert (await peer.run("pair", code=code)).refused == "busy"
    clock.now += WRONG_CODE_WINDOW_S + 1
    assert hub.pairing.code() == pairing.normalize_code(code)
    ok = await peer.run("pair", code=code)
    assert ok.welcomed and await hub.wait_attached(30) and hub.pairing.paired()


async def test_the_secret_mode_rejects_a_replayed_or_reflected_proof(bare: Any) -> None:
    """A recorded auth cannot be replayed (the daemon's nonce is new each time, even for the same hello nonce)
    and the daemon's own proof sent back as the extension's fails (direction label)."""
    daemon, hub, peer, _ = bare
    paired = await peer.run("pair", code=new_pair_code(daemon.settings.state_dir))
    assert paired.ws is not None and await hub.wait_attached(30)
    await paired.ws.close()
    assert await hub.wait_attached(30, attached=False)
    key, ne = pairing.secret_key(paired.secret), pairing.new_nonce()

    async def session(answer: Any) -> dict[str, Any]:
        _, ws = await peer._open(pairing_origin(), None)
        assert ws is not None
        await ws.send_str(json.dumps(hello("secret", ne, key_id=pairing.key_id(paired.secret))))
        challenge = json.loads((await ws.receive(timeout=30)).data)
        await ws.send_str(json.dumps({"type": "auth", "proof": answer(challenge)}))
        reply: dict[str, Any] = json.loads((await ws.receive(timeout=30)).data)
        reply["nd"] = challenge["nonce"]
        await ws.close()
        return reply

    first = await session(lambda c: pairing.mac(key, "extension", "secret", ne, c["nonce"]))
    assert first["type"] == "welcome"
    assert await hub.wait_attached(30, attached=False)
    replayed = await session(lambda c: pairing.mac(key, "extension", "secret", ne, first["nd"]))
    assert replayed["nd"] != first["nd"] and replayed["code"] == "bad_secret"
    reflected = await session(lambda c: c["proof"])
    assert reflected["code"] == "bad_secret"
    assert not hub.attached


def pairing_origin() -> str:
    return f"chrome-extension://{PINNED_EXTENSION_ID}"


# ------------------------------------------------------------------ the real extension
async def _kill_worker(browser: PlainChromium, profile: Path) -> None:
    """Stop the extension's service worker through the browser's DevTools endpoint (never attaching to it)."""
    port = await asyncio.to_thread(browser.devtools_port)
    path = (profile / "DevToolsActivePort").read_text().splitlines()[1]
    async with websockets.connect(f"ws://127.0.0.1:{port}{path}", max_size=None) as ws:
        await ws.send(json.dumps({"id": 1, "method": "Target.getTargets"}))
        targets = None
        while targets is None:
            msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if msg.get("id") == 1:
                targets = msg["result"]["targetInfos"]
        worker = next(t for t in targets if t["type"] == "service_worker" and PINNED_EXTENSION_ID in t["url"])
        await ws.send(json.dumps({"id": 2, "method": "Target.closeTarget", "params": {"targetId": worker["targetId"]}}))
        while True:
            msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if msg.get("id") == 2:
                assert msg.get("result", {}).get("success") is True, msg
                return


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.timeout(150)
@pytest.mark.parametrize("stage", ["pair_verified", "ack_received"])
async def test_worker_killed_during_pairing_and_the_pairing_completes(tmp_path: Path, chromium: str,
                                                                       stage: str) -> None:
    """pair_verified: the worker dies after the daemon checked the code, before the extension got the welcome
    and stored the secret (before the fix, the daemon had spent the code: the extension stayed unpaired).
    ack_received: it dies after storing the secret, before its confirmation counts."""
    settings = e2e_settings(tmp_path)
    daemon, hub = await start_daemon(settings)
    code = new_pair_code(settings.state_dir)
    ext = copy_extension(tmp_path / "ext", daemon.port, code)
    profile = tmp_path / "profile"
    browser = launch_plain_chromium(chromium, profile, ext)
    killed = asyncio.Event()

    async def kill_once() -> bool:
        if killed.is_set():
            return False
        await _kill_worker(browser, profile)
        killed.set()
        return True  # the daemon drops the socket at this stage

    hub.test_hooks[stage] = kill_once
    try:
        await asyncio.wait_for(killed.wait(), 30)
        assert not hub.attached and not hub.pairing.paired()
        assert hub.pairing.code() == pairing.normalize_code(code), "the code was spent before the confirmation"
        assert await hub.wait_attached(90), f"the pairing did not complete: {hub.describe()}"
        assert hub.pairing.paired() and hub.pairing.code() is None
        assert not (settings.state_dir / CODE_FILE).exists()
        conn = hub._conn
        assert conn is not None
        # Before storing: the restarted worker pairs again with the same code. After storing: it proves the
        # stored (pending) secret, which completes the pairing.
        assert conn.hello["mode"] == ("pair" if stage == "pair_verified" else "secret")
        assert (await hub.list_tabs())["type"] == "tabs"
    finally:
        browser.kill()
        await daemon.stop()


@pytest.mark.e2e
@pytest.mark.timeout(90)
async def test_concurrent_connects_open_one_socket(tmp_path: Path, chromium: str) -> None:
    stack = await launch_linked(tmp_path, chromium)
    try:
        assert await stack.hub.wait_attached(15)
        old = stack.hub._conn
        worker = await stack.worker()
        made = await worker.evaluate("""async () => {
            let made = 0;
            const Real = globalThis.WebSocket;
            globalThis.WebSocket = class extends Real {
                constructor(...args) { super(...args); made += 1; }
            };
            try {
                trawl.link.close();
                // The top-level connect, onStartup, onInstalled, a tab switch and the alarm, all at once.
                await Promise.all([trawl.connect(true), trawl.connect(true), trawl.connect(false),
                                   trawl.connect(true), trawl.connect(false)]);
                return made;
            } finally {
                globalThis.WebSocket = Real;
            }
        }""")
        assert made == 1
        hub = stack.hub
        async with hub._changed:  # the new link replaces the closed one
            await asyncio.wait_for(hub._changed.wait_for(lambda: hub.attached and hub._conn is not old), 15)
        assert (await stack.hub.list_tabs())["type"] == "tabs"
    finally:
        await close_linked(stack)
