"""Shared end-to-end fixtures: real Chromium, the real trawl extension, a real daemon, local sites.

For every e2e test file (helper F's headless tests too). What exists here:

- ``chromium`` (session): path of the system Chromium (``trawl.chromium.find_chromium``). Missing browser:
  the test is skipped, except under ``CI=true`` where it FAILS.
- ``site``: a local aiohttp site on 127.0.0.1 (:class:`LocalSite`); add pages with ``site.add(path, html)``
  or ``site.add(path, handler)`` (an aiohttp handler) at any time, then use ``site.url(path)``. Has a login
  flow built in: ``POST /login`` sets an HttpOnly cookie, ``/private`` shows the private text only with it.
- ``linked``: the whole stack: a daemon (``RunningDaemon`` with the browser link installed, no model warm-up)
  + Chromium launched by Playwright with the extension loaded, paired and attached (:class:`Linked`).
- helpers: :func:`copy_extension` (an unpacked copy with a ``config.json`` holding the daemon port and a
  pairing code), :func:`launch_plain_chromium` (Chromium as a plain subprocess, for tests Playwright would
  disturb, e.g. the service worker's lifetime), :func:`e2e_settings`.

Every browser runs headless (new mode), with --no-sandbox and a tmp user-data-dir, and is killed at teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from trawl.browser import PINNED_EXTENSION_ID, ExtensionHub, install_browser_link
from trawl.browser.pairing import new_pair_code
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
EXTENSION_SRC = ROOT / "extension"
PRIVATE_TEXT = "The private ledger says the quarterly balance is 4,217 gold coins."
LOGIN_TEXT = "Please sign in to continue. Enter your password to view this page."

# Flags from DESIGN §7 (Playwright adds its own headless/user-data-dir flags).
BROWSER_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def e2e_settings(tmp_path: Path, **kw: Any) -> Settings:
    base: dict[str, Any] = dict(
        cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", port=0, dense="none", workers=2,
    )
    base.update(kw)
    return Settings(**base)


# --------------------------------------------------------------------------- local site
Page = str | Callable[[web.Request], Awaitable[web.StreamResponse]]


class LocalSite:
    """A local site whose pages can be added while it runs."""

    def __init__(self) -> None:
        self.pages: dict[str, Page] = {}
        self.runner: web.AppRunner | None = None
        self.port = 0
        self.hits: dict[str, int] = {}

    def add(self, path: str, page: Page) -> str:
        self.pages[path] = page
        return self.url(path)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.hits[request.path] = self.hits.get(request.path, 0) + 1
        page = self.pages.get(request.path)
        if page is None:
            return web.Response(status=404, text="not here")
        if isinstance(page, str):
            return web.Response(text=page, content_type="text/html")
        return await page(request)

    async def _login(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        if form.get("password") != "open sesame":
            return web.Response(status=403, text="wrong password")
        resp = web.HTTPFound("/private")
        resp.set_cookie("session", "s3cret-session", httponly=True, samesite="Lax", path="/")
        raise resp

    async def _private(self, request: web.Request) -> web.StreamResponse:
        if request.cookies.get("session") == "s3cret-session":
            body = f"<h1>Ledger</h1><p>{PRIVATE_TEXT}</p><p>Only you can see this page.</p>"
        else:
            body = (f"<h1>Sign in</h1><p>{LOGIN_TEXT}</p><form method=post action=/login>"
                    "<input type=password name=password><button>Sign in</button></form>")
        return web.Response(text=f"<!doctype html><html><head><title>Ledger</title></head><body>{body}</body></html>",
                            content_type="text/html")

    async def start(self) -> LocalSite:
        app = web.Application()
        app.router.add_post("/login", self._login)
        app.router.add_get("/private", self._private)
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        # A handler still streaming at the end (an endless page) is cancelled after 1 s, not aiohttp's default 60 s.
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = self.runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


@pytest.fixture
async def site() -> AsyncIterator[LocalSite]:
    s = await LocalSite().start()
    yield s
    await s.stop()


# --------------------------------------------------------------------------- extension + daemon
def copy_extension(dest: Path, port: int, pair_code: str | None) -> Path:
    """An unpacked copy of extension/ whose config.json points at ``port`` (same pinned key, same id)."""
    shutil.copytree(EXTENSION_SRC, dest, symlinks=False)
    config: dict[str, Any] = {"port": port}
    if pair_code:
        config["pair_code"] = pair_code
    (dest / "config.json").write_text(json.dumps(config))
    return dest


async def start_daemon(settings: Settings, hub: ExtensionHub | None = None) -> tuple[RunningDaemon, ExtensionHub]:
    holder: dict[str, ExtensionHub] = {}

    def hook(app: web.Application) -> None:
        holder["hub"] = install_browser_link(app, hub)

    daemon = await RunningDaemon(settings, extra_routes=[hook], warm=False, mcp=True).start()
    return daemon, holder["hub"]


@dataclass
class Linked:
    """The running stack. ``context`` is Playwright's persistent browser context with the extension."""

    daemon: RunningDaemon
    hub: ExtensionHub
    context: Any
    ext_dir: Path
    settings: Settings
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def engine(self) -> Any:
        return self.daemon.engine

    async def open_tab(self, url: str) -> Any:
        page = await self.context.new_page()
        await page.goto(url)
        return page

    async def worker(self) -> Any:
        workers = self.context.service_workers
        if workers:
            return workers[0]
        return await self.context.wait_for_event("serviceworker", timeout=10_000)


async def launch_linked(tmp_path: Path, chromium: str, *, settings: Settings | None = None,
                        pair: bool = True) -> Linked:
    from playwright.async_api import async_playwright

    settings = settings or e2e_settings(tmp_path)
    daemon, hub = await start_daemon(settings)
    code = new_pair_code(settings.state_dir) if pair else None
    ext = copy_extension(tmp_path / "ext", daemon.port, code)
    pw = await async_playwright().start()
    try:
        context = await pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=chromium,
            headless=True,
            args=[*BROWSER_FLAGS, f"--disable-extensions-except={ext}", f"--load-extension={ext}"],
            timeout=30_000,
        )
    except BaseException:
        await pw.stop()
        await daemon.stop()
        raise
    linked = Linked(daemon=daemon, hub=hub, context=context, ext_dir=ext, settings=settings)
    linked.extras["pw"] = pw
    return linked


async def deny_in_options(linked: Linked, deny: str) -> None:
    """The user types ``deny`` into the extension's options page and saves it (the policy reaches the daemon by
    sync)."""
    options = await linked.context.new_page()
    await options.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/options/options.html")
    await options.fill("#deny", deny)
    await options.click("#save")
    await options.wait_for_selector("#saved:has-text('Saved')")
    await options.close()


async def close_linked(linked: Linked) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(linked.context.close(), 15)
    with contextlib.suppress(Exception):
        await linked.extras["pw"].stop()
    await linked.daemon.stop()


@pytest.fixture
async def linked(tmp_path: Path, chromium: str) -> AsyncIterator[Linked]:
    stack = await launch_linked(tmp_path, chromium)
    try:
        assert await stack.hub.wait_attached(15), f"extension did not attach: {stack.hub.describe()}"
        yield stack
    finally:
        await close_linked(stack)


# --------------------------------------------------------------------------- plain Chromium
@dataclass
class PlainChromium:
    proc: subprocess.Popen[bytes]
    user_data_dir: Path

    def devtools_port(self, timeout_s: float = 10.0) -> int:
        f = self.user_data_dir / "DevToolsActivePort"
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if f.exists():
                lines = f.read_text().splitlines()
                if lines and lines[0].strip().isdigit():
                    return int(lines[0])
            time.sleep(0.05)
        raise TimeoutError("Chromium did not open its DevTools port")

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def launch_plain_chromium(chromium: str, user_data_dir: Path, ext: Path, *extra: str) -> PlainChromium:
    """Chromium as a plain subprocess (its own process group), flags as in DESIGN §7."""
    args = [
        chromium, "--headless=new", *BROWSER_FLAGS, f"--user-data-dir={user_data_dir}",
        f"--load-extension={ext}", f"--disable-extensions-except={ext}", "--remote-debugging-port=0",
        *extra, "about:blank",
    ]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return PlainChromium(proc, user_data_dir)


async def page_until(page: Any, fn: str, arg: object = None, timeout_s: float = 30.0) -> None:
    """Return as soon as the JavaScript function ``fn(arg)`` is true in ``page``; fail after ``timeout_s``. Polled
    from here through ``evaluate``, not with Playwright's ``wait_for_function``: its in-page poller compiles the
    predicate with eval, which an extension page's CSP forbids, so it failed whenever the first check was false
    (a loaded machine)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while not await page.evaluate(fn, arg):
        if loop.time() >= end:
            raise AssertionError(f"still false after {timeout_s:g} s: {fn} ({arg!r})")
        await asyncio.sleep(0.05)


async def until(pred: Callable[[], object], timeout_s: float = 30.0) -> bool:
    """True as soon as ``pred()`` holds, False when it still does not after ``timeout_s`` (a bound for a loaded
    machine: the wait ends at the condition, not at the bound)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while loop.time() < end:
        if pred():
            return True
        await asyncio.sleep(0.05)
    return bool(pred())


async def session_rule_count(worker: Any) -> int:
    """How many session declarativeNetRequest rules the extension's worker holds (a capture tab's block)."""
    return int(await worker.evaluate("chrome.declarativeNetRequest.getSessionRules().then((r) => r.length)"))
