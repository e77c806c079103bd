"""Port squatting (issue 8, item 1): another OS user listens on the daemon's port while the daemon is down.

The squatter (tests/security/squatter.py) runs as ``nobody`` and records every frame; the real extension in
real Chromium connects to it. Asserted: the squatter never receives the pairing secret, the pairing code or
any proof keyed by them (only a hello: a fresh nonce and, when paired, a public key id); it never gets an
answer to tabs, capture or ping; the extension's stored secret is untouched and no secret is planted; and once
the squatter is gone and the real daemon starts, the extension links with its old secret (or pairs with the
same code).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import async_playwright
from trawl.browser import pairing
from trawl.browser.pairing import new_pair_code

from ..e2e.conftest import (
    BROWSER_FLAGS,
    Linked,
    LocalSite,
    close_linked,
    copy_extension,
    e2e_settings,
    launch_linked,
    site,  # noqa: F401  (fixture)
    start_daemon,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
SQUATTER = Path(__file__).with_name("squatter.py")
HELLO_FIELDS = {"type", "protocol", "extension_version", "browser", "mode", "nonce", "key_id"}


def _nobody_python() -> list[str]:
    """setpriv + a Python that the user nobody can execute; skip (never under CI) when we cannot switch users."""
    if os.geteuid() != 0:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("the squatter tests run another OS user (nobody): run them as root under CI")
        pytest.skip("simulating another OS user needs root")
    for py in (sys.executable, "/usr/bin/python3", shutil.which("python3") or ""):
        if py and subprocess.run([*NOBODY, py, "-c", "import asyncio, hmac"], capture_output=True).returncode == 0:
            return [*NOBODY, py]
    pytest.fail("no Python the user nobody can run (apt-get install -y python3)")


class Squatter:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.records: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, port: int, capture_url: str) -> Squatter:
        cmd = [*_nobody_python(), "-c", SQUATTER.read_text(), str(port), capture_url]
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        squatter = cls(proc)
        ready = await squatter.wait_for(lambda r: r.get("event") == "ready", 15)
        assert ready["uid"] == 65534, "the squatter must run as another OS user"
        return squatter

    async def wait_for(self, cond: Any, timeout_s: float) -> dict[str, Any]:
        async def scan() -> dict[str, Any]:
            assert self.proc.stdout is not None
            while True:
                line = await self.proc.stdout.readline()
                if not line:
                    err = b""
                    if self.proc.stderr is not None:
                        err = await self.proc.stderr.read()
                    raise AssertionError(f"the squatter exited: {err.decode(errors='replace')[-2000:]}")
                record = json.loads(line)
                self.records.append(record)
                if cond(record):
                    return record

        return await asyncio.wait_for(scan(), timeout_s)

    async def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        await self.proc.wait()

    def frames_from_extension(self) -> list[dict[str, Any]]:
        return [json.loads(r["data"]) for r in self.records if r.get("event") == "frame"]

    def connections(self) -> int:
        return len({r["conn"] for r in self.records if r.get("event") == "open"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def storage(context: Any) -> dict[str, Any]:
    """The extension's stored settings and its link state, read in its service worker."""
    worker = context.service_workers[0] if context.service_workers else await context.wait_for_event(
        "serviceworker", timeout=10_000)
    local = await worker.evaluate("chrome.storage.local.get(null)")
    session = await worker.evaluate("chrome.storage.session.get('link')")
    return {**local, "link": session.get("link", {})}


async def _all_tricks_tried(squatter: Squatter) -> None:
    """Wait until each trick has met the extension and the extension has left it."""
    await squatter.wait_for(
        lambda r: r.get("event") in ("close", "gone") and r.get("conn", -1) >= 4, 90)


def _assert_learned_nothing(squatter: Squatter, secrets_: list[str], mode: str) -> None:
    frames = squatter.frames_from_extension()
    raw = json.dumps(squatter.records)
    for s in secrets_:
        assert s and s not in raw and s.upper() not in raw, "a secret reached the squatter"
    assert frames, "the extension never talked to the squatter: the test proves nothing"
    assert {f["type"] for f in frames} == {"hello"}, f"the extension sent more than a hello: {frames}"
    for f in frames:
        assert set(f) <= HELLO_FIELDS and f["mode"] == mode
        assert pairing.is_hex64(f["nonce"])
    assert len({f["nonce"] for f in frames}) == len(frames), "a nonce was reused"
    opens = [r for r in squatter.records if r.get("event") == "open"]
    assert all(r["uid"] == 65534 for r in opens)


@pytest.fixture
async def capture_target(site: LocalSite) -> AsyncIterator[tuple[LocalSite, str]]:  # noqa: F811
    url = site.add("/bank", "<h1>Balance</h1><p>Your balance is 9,999 gold coins.</p>")
    yield site, url


async def test_squatter_gets_nothing_from_a_paired_extension(tmp_path: Path, chromium: str,
                                                            capture_target: tuple[LocalSite, str]) -> None:
    site_, bank = capture_target
    stack = await launch_linked(tmp_path, chromium)
    squatter: Squatter | None = None
    try:
        assert await stack.hub.wait_attached(15), stack.hub.describe()
        before = await storage(stack.context)
        secret = before["secret"]
        assert pairing.is_hex64(secret)
        port = stack.daemon.port
        await stack.daemon.stop()  # the normal state: the daemon runs only while an agent does

        squatter = await Squatter.start(port, bank)
        await _all_tricks_tried(squatter)
        _assert_learned_nothing(squatter, [secret], "secret")
        kid = {f["key_id"] for f in squatter.frames_from_extension()}
        assert kid == {pairing.key_id(secret)}  # a public id: an HMAC of the 256-bit secret, nothing to guess
        after = await storage(stack.context)
        assert after["secret"] == secret, "the squatter changed the stored secret"
        assert after["link"]["state"] != "connected", after["link"]
        closes = [r for r in squatter.records if r.get("event") == "close"]
        assert closes and all("did not prove" in r["data"] for r in closes), closes
        assert site_.hits.get("/bank", 0) == 0, "the extension opened the squatter's capture"
        await squatter.stop()
        squatter = None

        # The real daemon comes back on the same port: the extension links with the secret it kept.
        restarted, hub = await start_daemon(stack.settings.with_(port=port))
        stack.daemon = restarted
        assert await hub.wait_attached(60), hub.describe()
        assert (await hub.list_tabs())["type"] == "tabs"
    finally:
        if squatter is not None:
            await squatter.stop()
        await close_linked(stack)


async def test_squatter_cannot_pair_or_plant_a_secret(tmp_path: Path, chromium: str,
                                                      capture_target: tuple[LocalSite, str]) -> None:
    """The user pasted a code; a squatter answers first. It learns nothing keyed by the code and plants nothing;
    the real daemon then pairs with the same code."""
    site_, bank = capture_target
    port = free_port()
    settings = e2e_settings(tmp_path, port=port)
    code = new_pair_code(settings.state_dir)
    squatter = await Squatter.start(port, bank)
    pw = await async_playwright().start()
    context: Any = None
    stack: Linked | None = None
    try:
        ext = copy_extension(tmp_path / "ext", port, code)
        context = await pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=chromium, headless=True,
            args=[*BROWSER_FLAGS, f"--disable-extensions-except={ext}", f"--load-extension={ext}"], timeout=30_000)
        await _all_tricks_tried(squatter)
        _assert_learned_nothing(squatter, [code, pairing.normalize_code(code)], "pair")
        before = await storage(context)
        assert not before.get("secret"), "the squatter planted a secret"
        assert before.get("used_file_code") != code, "the extension thinks the code was used"
        assert before["link"]["state"] != "connected"
        assert site_.hits.get("/bank", 0) == 0
        await squatter.stop()

        daemon, hub = await start_daemon(settings)
        stack = Linked(daemon=daemon, hub=hub, context=context, ext_dir=ext, settings=settings, extras={"pw": pw})
        assert await hub.wait_attached(60), hub.describe()
        after = await storage(stack.context)
        assert pairing.is_hex64(after["secret"]) and after["used_file_code"] == code
        assert hub.pairing.paired() and hub.pairing.code() is None  # the code was spent by the real pairing
        assert (await hub.list_tabs())["type"] == "tabs"
    finally:
        await squatter.stop()
        if stack is not None:
            await close_linked(stack)
        else:
            if context is not None:
                with contextlib.suppress(Exception):
                    await context.close()
            await pw.stop()
