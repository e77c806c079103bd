"""Captures that cannot leak (issue 9 items 1, 2 and 6), mounted against the real extension in real Chromium.

- A ``.pdf`` link that redirects to a denied site: refused before any request (with the user's cookies) reaches
  the denied site; an HTML body behind a ``.pdf`` link is never passed off as the PDF.
- A page that navigates to a denied site right after load: refused, every time; a page that moves to another
  (allowed) site during capture is refused too.
- A page that busy-loops after load: the capture ends by its own deadline with ``timeout`` (whatever the load),
  the background tab is closed and its renderer does not keep spinning.
- 24 concurrent captures: never more than ``extension_max_background_tabs`` background tabs (counted through the
  DevTools protocol) nor requests in flight; all 24 are answered. A full queue answers ``busy`` at once.
- A worker stopped mid-capture: the restarted worker closes the tab the dead one left open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import websockets
from aiohttp import web
from trawl.browser import PINNED_EXTENSION_ID
from trawl.browser.pairing import new_pair_code
from trawl.types import ErrorCode, TrawlError

from ..e2e import conftest as e2e_fixtures
from ..e2e.conftest import (
    Linked,
    LocalSite,
    close_linked,
    copy_extension,
    deny_in_options,
    e2e_settings,
    launch_linked,
    launch_plain_chromium,
    session_rule_count,
    start_daemon,
)
from ..e2e.test_extension_capture import article

# The e2e fixtures, shared with this module.
linked = e2e_fixtures.linked
site = e2e_fixtures.site

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

INBOX = "The mail site's inbox: a message from the bank with the one-time code 771-204."


@pytest.fixture
async def mail() -> AsyncIterator[LocalSite]:
    """A second local site, on its own port, that the user's policy denies (a mail site, say)."""
    s = await LocalSite().start()
    yield s
    await s.stop()


def pdf_bytes(text: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    data: bytes = doc.tobytes()
    return data


# --------------------------------------------------------------------------- 1. the .pdf redirect
async def test_pdf_link_redirecting_to_a_denied_site_is_refused_before_any_request(
    linked: Linked, site: LocalSite, mail: LocalSite,
) -> None:
    inbox_pdf = pdf_bytes(INBOX)
    mail.add("/inbox", article("Inbox", f"<p>{INBOX}</p>"))

    async def inbox(request: web.Request) -> web.Response:
        return web.Response(body=inbox_pdf, content_type="application/pdf")

    mail.add("/inbox.pdf", inbox)

    async def to_mail(request: web.Request) -> web.Response:
        raise web.HTTPFound(mail.url("/inbox" if "html" in request.path else "/inbox.pdf"))

    async def hop_then_mail(request: web.Request) -> web.Response:
        raise web.HTTPFound("/doc.pdf")  # an allowed hop first, then the denied site

    doc = site.add("/doc.pdf", to_mail)
    doc_html = site.add("/doc-html.pdf", to_mail)
    chain = site.add("/chain.pdf", hop_then_mail)
    await deny_in_options(linked, f"127.0.0.1:{mail.port}")

    for url in (doc, doc_html, chain):
        with pytest.raises(TrawlError) as err:
            await linked.hub.capture(url=url)
        assert err.value.code == ErrorCode.BLOCKED_BY_POLICY, err.value.message
        assert f"127.0.0.1:{mail.port}" in err.value.message
    assert mail.hits == {}, f"the denied site received requests: {mail.hits}"

    # Through the whole pipeline the refusal is final, and nothing from the mail site comes back.
    result = await linked.engine.fetch(doc, "what is the one-time code", max_age_s=0)
    assert result.error is not None and result.error.code == ErrorCode.BLOCKED_BY_POLICY, result
    assert mail.hits == {}


async def test_pdf_fetch_accepts_only_pdf_bodies_and_checks_the_final_url(linked: Linked, site: LocalSite) -> None:
    real = pdf_bytes("The harbour master's PDF says berth 12 is closed.")

    async def the_pdf(request: web.Request) -> web.Response:
        return web.Response(body=real, content_type="application/pdf")

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPMovedPermanently("/files/report.pdf")

    async def html_as_pdf(request: web.Request) -> web.Response:
        return web.Response(text=article("Not a PDF", "<p>HTML served under a PDF type and name.</p>"),
                            content_type="application/pdf")

    final = site.add("/files/report.pdf", the_pdf)
    start = site.add("/report.pdf", moved)
    page = await linked.hub.capture(url=start)
    assert page.kind == "pdf" and page.data == real
    assert page.final_url == final, "the reply must name the URL the bytes came from"
    assert linked.hub.captures[0].via == "fetch"

    # A body without the %PDF- header is not a PDF, whatever its type says: never sent on as the PDF's bytes.
    fake = site.add("/fake.pdf", html_as_pdf)
    with pytest.raises(TrawlError) as err:
        await linked.hub.capture(url=fake)
    assert err.value.code == ErrorCode.UNSUPPORTED_CONTENT, err.value.message

    # An HTML page behind a .pdf name is not fetched as a document either: it is read as a page, in a tab,
    # where the page checks apply.
    async def html_page(request: web.Request) -> web.Response:
        return web.Response(text=article("Login", "<p>" + "Sign in to see the report. " * 20 + "</p>"),
                            content_type="text/html")

    named = site.add("/named.pdf", html_page)
    got = await linked.hub.capture(url=named)
    assert got.kind == "html" and "Sign in to see the report" in (got.html or "")
    assert linked.hub.captures[0].via == "background_tab"


# --------------------------------------------------------------------------- 2. navigating after the check
def navigates_after_load(target: str) -> str:
    # Two triggers, so a throttled timer in a background tab does not delay the attack: a 50 ms timer and the
    # end of a request the server answers after 50 ms.
    script = f"""<script>
      addEventListener('load', () => {{
        const go = () => {{ if (!window.gone) {{ window.gone = true; location.href = {json.dumps(target)}; }} }};
        setTimeout(go, 50);
        fetch('/pause').then(go, go);
      }});
    </script>"""
    return article("Innocent", "<p>" + "A harmless article about sailing boats. " * 30 + "</p>" + script)


def keeps_changing_then_navigates(target: str) -> str:
    # For a visible tab: the page keeps changing after load (so it is not settled yet), and leaves for the target
    # 300 ms after load, after the tab's URL was checked and before the capture is taken.
    script = f"""<script>
      addEventListener('load', () => {{
        let n = 0;
        setInterval(() => {{ document.getElementById('tick').textContent = 'tick ' + (n++); }}, 30);
        setTimeout(() => {{ location.href = {json.dumps(target)}; }}, 300);
      }});
    </script>"""
    return article("Innocent", "<p>" + "A harmless article about rowing boats. " * 30 + "</p><p id=tick></p>" + script)


def drips_then_navigates(target: str) -> str:
    # Keeps the page changing after load from a streamed response (promises, not timers: background tabs do not
    # throttle them), so the capture is still waiting for the page to settle when it leaves for the target.
    script = f"""<script>
      addEventListener('load', async () => {{
        const reader = (await fetch('/drip')).body.getReader();
        for (;;) {{
          const {{ done }} = await reader.read();
          if (done) break;
          document.getElementById('drip').append('.');
        }}
        location.href = {json.dumps(target)};
      }});
    </script>"""
    return article("Mover", "<p>" + "A harmless article about canal boats. " * 30 + "</p><p id=drip></p>" + script)


async def _drip(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await resp.prepare(request)
    for _ in range(8):
        await resp.write(b".")
        await asyncio.sleep(0.03)
    await resp.write_eof()
    return resp


async def _pause(request: web.Request) -> web.Response:
    await asyncio.sleep(0.05)
    return web.Response(text="ok")


async def test_page_navigating_to_a_denied_site_after_load_is_refused(
    linked: Linked, site: LocalSite, mail: LocalSite,
) -> None:
    mail.add("/inbox", article("Inbox", f"<p>{INBOX}</p>"))
    site.add("/pause", _pause)
    url = site.add("/innocent", navigates_after_load(mail.url("/inbox")))
    await deny_in_options(linked, f"127.0.0.1:{mail.port}")
    for run in range(6):
        with pytest.raises(TrawlError) as err:
            await linked.hub.capture(url=url)
        assert err.value.code == ErrorCode.BLOCKED_BY_POLICY, f"run {run}: {err.value.code} {err.value.message}"
        assert f"127.0.0.1:{mail.port}" in err.value.message
    listing = await linked.hub.list_tabs()
    assert all(site.url("/") not in t["url"] and mail.url("/") not in t["url"] for t in listing["tabs"])


async def test_open_tab_navigating_to_a_denied_site_during_capture_is_refused(
    linked: Linked, site: LocalSite, mail: LocalSite,
) -> None:
    mail.add("/inbox", article("Inbox", f"<p>{INBOX}</p>"))
    site.add("/pause", _pause)
    html = keeps_changing_then_navigates(mail.url("/inbox")).encode()

    async def slow_to_finish(request: web.Request) -> web.StreamResponse:
        # The user's tab is still loading when the agent asks for it: the page's end arrives 0.5 s later.
        resp = web.StreamResponse(headers={"Content-Type": "text/html; charset=utf-8"})
        await resp.prepare(request)
        await resp.write(html[: len(html) // 2])
        await asyncio.sleep(0.5)
        await resp.write(html[len(html) // 2 :])
        await resp.write_eof()
        return resp

    url = site.add("/innocent-tab", slow_to_finish)
    await deny_in_options(linked, f"127.0.0.1:{mail.port}")
    tab = await linked.context.new_page()
    await tab.goto(url, wait_until="commit")
    with pytest.raises(TrawlError) as err:
        await linked.hub.capture(url=url)
    assert err.value.code == ErrorCode.BLOCKED_BY_POLICY, err.value.message
    assert f"127.0.0.1:{mail.port}" in err.value.message


async def test_page_moving_to_another_allowed_site_during_capture_is_refused(
    linked: Linked, site: LocalSite, mail: LocalSite,
) -> None:
    mail.add("/elsewhere", article("Elsewhere", "<p>" + "Another site's page, never checked. " * 20 + "</p>"))
    site.add("/drip", _drip)
    url = site.add("/mover", drips_then_navigates(mail.url("/elsewhere")))
    with pytest.raises(TrawlError) as err:
        await linked.hub.capture(url=url)
    assert err.value.code == ErrorCode.BLOCKED_BY_POLICY, err.value.message
    assert "trawl reads only the page it checked" in err.value.message or "went to" in err.value.message


# --------------------------------------------------------------------------- 6. hung pages, many captures
BUSY_PAGE = article("Busy", "<p>" + "This page spins forever once it has loaded. " * 10 + "</p>"
                    "<script>addEventListener('load', () => setTimeout(() => { for (;;) {} }, 0));</script>")


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return -1.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _renderers_of(profile: Path) -> list[int]:
    """Renderer processes of the Chromium whose user-data-dir is ``profile``."""
    procs: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError, ValueError):
            continue
        procs[int(entry.name)] = (ppid, cmd)
    browsers = {pid for pid, (_, cmd) in procs.items() if f"--user-data-dir={profile}" in cmd and "--type=" not in cmd}
    out = []
    for pid, (_, cmd) in procs.items():
        if "--type=renderer" not in cmd:
            continue
        up, hops = pid, 0
        while up in procs and up not in browsers and hops < 6:
            up, hops = procs[up][0], hops + 1
        if up in browsers:
            out.append(pid)
    return out


async def page_targets(linked: Linked) -> list[dict[str, Any]]:
    """Every page target in the browser, from the DevTools protocol."""
    anchor = linked.context.pages[0] if linked.context.pages else await linked.context.new_page()
    cdp = await linked.context.new_cdp_session(anchor)
    try:
        infos = (await cdp.send("Target.getTargets"))["targetInfos"]
    finally:
        await cdp.detach()
    return [t for t in infos if t["type"] == "page"]


async def test_busy_looping_page_times_out_and_its_tab_is_closed(tmp_path: Path, chromium: str,
                                                                 site: LocalSite) -> None:
    settings = e2e_settings(tmp_path, extension_capture_timeout_s=10.0)
    stack = await launch_linked(tmp_path, chromium, settings=settings)
    try:
        assert await stack.hub.wait_attached(15), stack.hub.describe()
        url = site.add("/busy", BUSY_PAGE)
        await page_targets(stack)  # the anchor page exists before the baseline
        before = {pid: _cpu_seconds(pid) for pid in _renderers_of(tmp_path / "profile")}
        task = asyncio.create_task(stack.hub.capture(url=url))

        # The page loops forever, so only the capture's own deadline can end it, however much CPU the machine
        # gives the renderer. Meanwhile, note the CPU each renderer used since the baseline: the busy tab's
        # renderer is the one that used the most (no CPU threshold: a loaded machine may give it little).
        used: dict[int, float] = {}
        while not task.done():
            for pid in _renderers_of(tmp_path / "profile"):
                used[pid] = max(used.get(pid, 0.0), _cpu_seconds(pid) - before.get(pid, 0.0))
            await asyncio.wait({task}, timeout=0.1)
        spinner = max(used, key=lambda pid: used[pid], default=0)
        assert spinner and used[spinner] > 0, f"no renderer ran the busy page: {used}"

        with pytest.raises(TrawlError) as err:
            await asyncio.wait_for(task, 120)  # a hang guard only: the task is already done
        assert err.value.code == ErrorCode.TIMEOUT, err.value.message
        # the extension's timer around the injected script answered, not the daemon's own wait for the browser
        assert "the page did not answer" in err.value.message, err.value.message
        # The extension closes the tab before it answers.
        assert all(t["url"] != url for t in await page_targets(stack)), "the busy tab was left open"
        # and its block (the session rules that keep it on its site) with it
        worker = await stack.worker()
        assert await session_rule_count(worker) == 0
        end = time.monotonic() + 60  # a wait with a deadline, not a speed check: the renderer must go at all
        while _alive(spinner) and time.monotonic() < end:
            await asyncio.sleep(0.1)
        assert not _alive(spinner), "the busy page's renderer keeps running after its tab was closed"
        # The browser still answers, and a normal page is read.
        ok = site.add("/after-busy", article("After", "<p>" + "A calm page read after the busy one. " * 20 + "</p>"))
        page = await stack.hub.capture(url=ok)
        assert "calm page" in (page.html or "")
    finally:
        await close_linked(stack)


async def test_concurrent_captures_never_open_more_than_the_limit(tmp_path: Path, chromium: str,
                                                                  site: LocalSite) -> None:
    limit = 2
    settings = e2e_settings(tmp_path, extension_max_background_tabs=limit)
    stack = await launch_linked(tmp_path, chromium, settings=settings)
    state = {"inflight": 0, "max_inflight": 0}

    async def slow(request: web.Request) -> web.Response:
        state["inflight"] += 1
        state["max_inflight"] = max(state["max_inflight"], state["inflight"])
        try:
            await asyncio.sleep(0.3)  # the server is slow; the test waits on the captures, not on this
            n = request.match_info.get("n", request.path.rsplit("/", 1)[-1])
            return web.Response(text=article(f"Slow {n}", f"<p>Slow page number {n}. " * 20 + "</p>"),
                                content_type="text/html")
        finally:
            state["inflight"] -= 1

    try:
        assert await stack.hub.wait_attached(15), stack.hub.describe()
        urls = [site.add(f"/slow/{i}", slow) for i in range(24)]
        baseline = len(await page_targets(stack))
        seen = {"max_tabs": 0}
        done = asyncio.Event()

        async def watch_tabs() -> None:
            while not done.is_set():
                seen["max_tabs"] = max(seen["max_tabs"], len(await page_targets(stack)) - baseline)

        watcher = asyncio.create_task(watch_tabs())
        try:
            pages = await asyncio.gather(*(stack.hub.capture(url=u) for u in urls))
        finally:
            done.set()
            await watcher
        for i, page in enumerate(pages):
            assert f"Slow page number {i}." in (page.html or "")
        assert 1 <= state["max_inflight"] <= limit, state
        assert 1 <= seen["max_tabs"] <= limit, seen
        assert len(await page_targets(stack)) == baseline, "background tabs were left open"
    finally:
        await close_linked(stack)


async def test_a_full_capture_queue_answers_busy_at_once(tmp_path: Path, chromium: str, site: LocalSite) -> None:
    """One background tab allowed, 64 captures may wait: the 66th concurrent capture is refused with ``busy``
    straight away instead of piling up."""
    settings = e2e_settings(tmp_path, extension_max_background_tabs=1, extension_capture_timeout_s=20.0)
    stack = await launch_linked(tmp_path, chromium, settings=settings)
    release = asyncio.Event()

    async def held(request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(text=article("Held", "<p>Held page.</p>"), content_type="text/html")

    tasks: list[asyncio.Task[Any]] = []
    try:
        assert await stack.hub.wait_attached(15), stack.hub.describe()
        urls = [site.add(f"/held/{i}", held) for i in range(66)]
        tasks = [asyncio.create_task(stack.hub.capture(url=u)) for u in urls]
        done, _ = await asyncio.wait(tasks, timeout=15, return_when=asyncio.FIRST_COMPLETED)
        assert done, "no capture was answered: the queue is not bounded"
        first = done.pop()
        err = first.exception()
        assert isinstance(err, TrawlError) and err.code == ErrorCode.BUSY, err
        assert sum(1 for t in tasks if t.done()) == 1, "only the one capture over the bound may be refused"
        assert sum(1 for p in await page_targets(stack) if "/held/" in p["url"]) <= 1
    finally:
        release.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await close_linked(stack)


# --------------------------------------------------------------------------- orphans of a stopped worker
async def _cdp(ws: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    _cdp_ids[0] += 1
    rid = _cdp_ids[0]
    await ws.send(json.dumps({"id": rid, "method": method, "params": params or {}}))
    while True:
        msg: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if msg.get("id") == rid:
            return msg


_cdp_ids = [0]


async def test_tab_left_by_a_stopped_worker_is_closed_when_it_restarts(tmp_path: Path, chromium: str,
                                                                       site: LocalSite) -> None:
    """Plain Chromium (Playwright would keep the worker alive); the worker is stopped through DevTools while a
    capture waits on a page that never finishes loading; the restarted worker must close that tab."""

    async def endless(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/html; charset=utf-8"})
        await resp.prepare(request)
        await resp.write(b"<!doctype html><html><head><title>Endless</title></head><body><p>Still loading")
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await asyncio.sleep(3600)
        return resp

    url = site.add("/endless", endless)
    settings = e2e_settings(tmp_path)
    daemon, hub = await start_daemon(settings)
    ext = copy_extension(tmp_path / "ext", daemon.port, new_pair_code(settings.state_dir))
    browser = launch_plain_chromium(chromium, tmp_path / "profile", ext)
    try:
        assert await hub.wait_attached(15), hub.describe()
        port = await asyncio.to_thread(browser.devtools_port)
        path = (tmp_path / "profile" / "DevToolsActivePort").read_text().splitlines()[1]
        task = asyncio.create_task(hub.capture(url=url))
        async with websockets.connect(f"ws://127.0.0.1:{port}{path}", max_size=None) as ws:
            async def pages() -> list[dict[str, Any]]:
                infos = (await _cdp(ws, "Target.getTargets"))["result"]["targetInfos"]
                return [t for t in infos if t["type"] == "page"]

            end = time.monotonic() + 15
            while not any(t["url"] == url for t in await pages()) and time.monotonic() < end:
                await asyncio.sleep(0.05)
            assert any(t["url"] == url for t in await pages()), "the capture never opened its tab"
            targets = (await _cdp(ws, "Target.getTargets"))["result"]["targetInfos"]
            worker = next(t for t in targets if t["type"] == "service_worker" and PINNED_EXTENSION_ID in t["url"])
            closed = await _cdp(ws, "Target.closeTarget", {"targetId": worker["targetId"]})
            assert closed.get("result", {}).get("success") is True
            with pytest.raises(TrawlError):
                await asyncio.wait_for(task, 30)  # the link dropped with the worker
            assert await hub.wait_attached(45), "the worker did not come back"
            end = time.monotonic() + 15
            while any(t["url"] == url for t in await pages()) and time.monotonic() < end:
                await asyncio.sleep(0.1)
            assert not any(t["url"] == url for t in await pages()), "the orphaned background tab is still open"
    finally:
        browser.kill()
        await daemon.stop()
