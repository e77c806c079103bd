"""The configured endpoints (query expansion, a remote embedding or rerank endpoint) under the exit rule.

Before: after a session read a private page, a prompt-injected agent put the secret into its next question and the
daemon sent that question to the expansion endpoint (and the embedding and rerank endpoints) the user configured,
whatever the session had read: an exit no URL check saw. The question is text the agent composed, like a URL, so
the same flow decision now holds it (``exitflow.endpoint_refusal``): an endpoint off this machine that nobody
vouched for gets no question from a session that read private content; the call ranks locally and says why.

Real daemon over its real Unix socket, a real HTTP server standing in for the endpoints, configured under a name
(``llm.test``) that resolves to it through the resolver every connection uses (``socket.getaddrinfo``).
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from trawl.exitflow import SESSION_HEADER
from trawl.server.runner import RunningDaemon

from ..integration.test_daemon_helpers import daemon_settings
from .test_exit_flow_daemon import SECRET_FILE
from .test_exits import TOKEN, page, serve
from .test_review_s32 import another_user as another_user  # the fixture

QUESTION = "what is the payment API key for"
NAME = "llm.test"  # the endpoints' name in the configuration: not a loopback spelling


class Endpoint:
    """An OpenAI-compatible server (chat completions, embeddings, rerank) recording every body it is sent."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.bodies: list[tuple[str, str]] = []  # (path, raw body)
        self.host = host
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def start(self) -> Endpoint:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embed)
        app.router.add_post("/v1/rerank", self._rerank)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, 0).start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _body(self, request: web.Request) -> Any:
        raw = await request.text()
        self.bodies.append((request.path, raw))
        return json.loads(raw)

    async def _chat(self, request: web.Request) -> web.Response:
        await self._body(request)
        return web.json_response({"choices": [{"index": 0, "message": {"role": "assistant",
                                                                       "content": "The key opens payments."}}]})

    async def _embed(self, request: web.Request) -> web.Response:
        texts = (await self._body(request))["input"]
        vec = [[float((len(t) * (j + 3)) % 7 + 1) for j in range(8)] for t in texts]
        return web.json_response({"data": [{"index": i, "embedding": v} for i, v in enumerate(vec)]})

    async def _rerank(self, request: web.Request) -> web.Response:
        docs = (await self._body(request))["documents"]
        return web.json_response({"results": [{"index": i, "relevance_score": 1.0 / (i + 1)}
                                              for i in range(len(docs))]})

    def got(self, path: str, text: str) -> bool:
        return any(p == path and text in raw for p, raw in self.bodies)


@pytest.fixture
async def endpoint(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Endpoint]:
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *args: Any, **kw: Any) -> Any:
        name = (host.decode() if isinstance(host, bytes) else str(host)).rstrip(".").lower()
        if name == NAME:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", int(port or 0)))]
        return real(host, port, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    e = await Endpoint().start()
    yield e
    await e.stop()


async def _session(d: RunningDaemon) -> str:
    async with _client(d) as c:
        r = await c.post("/v1/session", json={})
    sid: str = r.json()["session"]
    return sid


def _client(d: RunningDaemon, session: str = "") -> httpx.AsyncClient:
    assert d.socket_path is not None
    headers = {"Authorization": f"Bearer {d.token}", **({SESSION_HEADER: session} if session else {})}
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=str(d.socket_path)), base_url=d.url,
                             headers=headers, timeout=60)


async def _ask(d: RunningDaemon, session: str, url: str, query: str) -> dict[str, Any]:
    async with _client(d, session) as c:
        r = await c.post("/v1/fetch", json={"url": url, "query": query})
    body: dict[str, Any] = r.json()
    assert body["ok"] is True, body.get("error")
    return body


@pytest.fixture
async def guide() -> AsyncIterator[str]:
    """A public page (a local mirror of public docs, named in ``TRAWL_EXIT_PUBLIC_HOSTS``): reading it taints nothing,
    and the test's settings let a tainted session fetch it (``TRAWL_EXIT_ALLOW_HOSTS``): only the endpoint is at
    stake."""

    async def handle(request: web.Request) -> web.Response:
        return web.Response(text=GUIDE, content_type="text/html")

    runner, port = await serve("127.0.0.1", handle)
    yield f"http://127.0.0.1:{port}/guide"
    await runner.cleanup()


GUIDE = page("Payments guide", "<p>The payment API key is issued by the bank for each shop.</p>"
             "<p>Keys are rotated every year by the keeper of the ledger.</p>" * 3)


@pytest.mark.parametrize("where", ["named", "local-embedder"])
async def test_a_question_carrying_a_private_read_never_reaches_a_remote_endpoint(
    tmp_path: Path, endpoint: Endpoint, guide: str, where: str
) -> None:
    """``named``: expansion, embeddings and rerank all at ``http://llm.test:PORT``. ``local-embedder``: embeddings at
    ``http://127.0.0.1:PORT`` (on this machine: the question may go there), expansion at ``llm.test``: the
    expansion endpoint alone is held. In both, an untainted session keeps using every endpoint."""
    secrets_md = tmp_path / "secrets.md"
    secrets_md.write_text(SECRET_FILE + "\nThe keeper's ledger lists the pay.\n" * 3)
    remote = f"http://{NAME}:{endpoint.port}"
    embed = remote if where == "named" else f"http://127.0.0.1:{endpoint.port}"
    settings = daemon_settings(tmp_path, dense="openai", embed_url=embed, expand_url=remote,
                               rerank_url=remote if where == "named" else "", exit_public_hosts=("127.0.0.1",),
                               exit_allow_hosts=("127.0.0.1",))  # the guide may still be fetched
    sent = f"{QUESTION} {TOKEN}"  # the question (page text holds the secret too, never this sentence)
    async with RunningDaemon(settings, warm=False) as d:
        agent, other = await _session(d), await _session(d)
        await _ask(d, agent, guide, QUESTION)  # an untainted session's question goes to every endpoint
        assert endpoint.got("/v1/chat/completions", QUESTION), endpoint.bodies
        assert endpoint.got("/v1/embeddings", QUESTION), endpoint.bodies
        assert where != "named" or endpoint.got("/v1/rerank", QUESTION), endpoint.bodies
        await _ask(d, agent, str(secrets_md), "who keeps the ledger")  # the private read
        body = await _ask(d, agent, guide, sent)  # the next question carries the secret
        leaked = [p for p, raw in endpoint.bodies if sent in raw and (embed == remote or p != "/v1/embeddings")]
        assert leaked == [], f"a remote endpoint was sent the question with the secret: {leaked}"
        held = [w for w in body.get("warnings", []) if "not sent to" in w]
        assert held and NAME in held[0] and "private content" in held[0], body.get("warnings")
        assert TOKEN not in json.dumps(held)
        if where == "named":
            assert body["mode"] == "bm25-only", body["mode"]
        await _ask(d, other, guide, "who rotates the keys")  # another session that read nothing still uses them
        async with _client(d) as c:
            events = (await c.get("/v1/status")).json()
    assert endpoint.got("/v1/chat/completions", "who rotates the keys"), "the untainted session was held too"
    if where == "named":  # the private file's text itself went to no endpoint off this machine either
        assert not any(TOKEN in raw for _p, raw in endpoint.bodies), [p for p, r in endpoint.bodies if TOKEN in r]
    else:  # on this machine: the question and the file's text went there, and the ranking used them
        assert endpoint.got("/v1/embeddings", sent) and endpoint.got("/v1/embeddings", f"is {TOKEN}")
        assert body["mode"] != "bm25-only", body["mode"]
        assert not endpoint.got("/v1/chat/completions", TOKEN)
    assert NAME in json.dumps(events), "the hold is not on the status page"


async def test_an_endpoint_the_user_vouched_for_still_gets_the_question(tmp_path: Path, endpoint: Endpoint) -> None:
    """``TRAWL_EXIT_ALLOW_HOSTS=llm.test``: the user said data may go there, so a question after a private read does
    (the rule is the exit rule's, not a second list)."""
    secrets_md = tmp_path / "secrets.md"
    secrets_md.write_text(SECRET_FILE)
    remote = f"http://{NAME}:{endpoint.port}"
    settings = daemon_settings(tmp_path, dense="openai", embed_url=remote, expand_url=remote,
                               exit_allow_hosts=(NAME,))
    async with RunningDaemon(settings, warm=False) as d:
        agent = await _session(d)
        await _ask(d, agent, str(secrets_md), QUESTION)
        body = await _ask(d, agent, str(secrets_md), f"{QUESTION} {TOKEN}")
    assert not any("not sent to" in w for w in body.get("warnings", [])), body.get("warnings")
    assert endpoint.got("/v1/chat/completions", f"{QUESTION} {TOKEN}")


async def test_another_users_listener_on_the_endpoints_port_is_sent_nothing(
    tmp_path: Path, another_user: tuple[int, Any]
) -> None:
    """The user's model server on 127.0.0.1:PORT (expansion, embeddings, rerank: on this machine, so it is sent
    questions and private pages) stops, and another user listens there: it received every question and every
    chunk of the pages read. The endpoints' connections are now checked like the sources' (the listener's owner,
    before a byte is written)."""
    port, rec = another_user  # nobody on the loopback port the user's model server left
    secrets_md = tmp_path / "secrets.md"
    secrets_md.write_text(SECRET_FILE)
    local = f"http://127.0.0.1:{port}"
    settings = daemon_settings(tmp_path, dense="openai", embed_url=local, expand_url=local, rerank_url=local)
    async with RunningDaemon(settings, warm=False) as d:
        body = await _ask(d, await _session(d), str(secrets_md), QUESTION)
    got = rec.received()
    assert got == b"", f"another user's listener received {got[:200]!r}"
    assert body["mode"] == "bm25-only", body["mode"]


@pytest.mark.parametrize(("endpoint_url", "here"), [
    ("http://127.0.0.1:8080", True), ("http://localhost:8080/v1", True), ("http://[::1]:8080", True),
    ("http://127.1:8080", True), ("http://0.0.0.0:8080", True), ("http://[::ffff:127.0.0.1]:8080", True),
    ("http://llm.localhost:8080", False), ("http://llm.test:8080", False), ("http://192.168.1.20:8080", False),
    ("https://api.example.com", False),
])
def test_on_this_machine_is_judged_by_the_spelling_alone(tmp_path: Path, endpoint_url: str, here: bool) -> None:
    """Which configured endpoint counts as this machine (private content and a tainted question may go there): a
    loopback address in any spelling or ``localhost``; a name DNS could answer (``*.localhost`` too) does not."""
    from trawl.exits import private_content_refusal

    assert (private_content_refusal(daemon_settings(tmp_path), endpoint_url) == "") is here
