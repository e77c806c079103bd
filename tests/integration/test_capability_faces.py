"""One declaration, every face: a capability registered through the daemon's public hook is served at
``POST /v1/<name>`` and as an MCP tool on ``/mcp`` (real daemon, real sockets, the real MCP SDK client), with its
bounds enforced alike; and the attacks on the generated faces are refused (an agent naming its own roots or forcing
a source through tool arguments, a malformed tab reference, unknown fields)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Self

import httpx
from aiohttp import web
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import Field
from trawl.capabilities import Capability, ErrorOut, Input, Output, Services
from trawl.host import host_of
from trawl.server.runner import RunningDaemon
from trawl.types import ErrorCode, TrawlError

from .test_daemon_helpers import daemon_settings


class EchoIn(Input):
    word: str = Field(min_length=1, max_length=5, description="a short word")
    times: int = Field(default=1, ge=1, le=3, description="how often")

    def target(self) -> str:
        return self.word


class EchoOut(Output):
    said: str = ""
    error: ErrorOut | None = None

    @classmethod
    def failure(cls, target: str, err: TrawlError) -> Self:
        return cls(ok=False, error=ErrorOut.of(err))


async def _echo(svc: Services, req: EchoIn) -> EchoOut:
    if req.word == "boom":
        raise TrawlError(ErrorCode.NOT_FOUND, "no boom here", "say something else")
    return EchoOut(said=" ".join([req.word] * req.times))


ECHO = Capability(name="echo", tool="echo_word", title="Echo", description="Say a word back.", input=EchoIn,
                  output=EchoOut, handler=_echo, render=lambda o: f"said: {o.said}" if o.ok else f"error: {o.error}")


def _register_echo(app: web.Application) -> None:
    host_of(app).ops.register(ECHO)  # the public hook a part uses to add its operations


@contextlib.asynccontextmanager
async def mcp_client(d: RunningDaemon) -> AsyncIterator[Client]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {d.token}"})
    async with http, Client(streamable_http_client(d.url + "/mcp", http_client=http)) as c:
        yield c


def api(d: RunningDaemon) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}, timeout=30.0)


async def test_one_declaration_is_served_by_http_and_mcp(tmp_path: Path) -> None:
    async with RunningDaemon(daemon_settings(tmp_path), warm=False, extra_routes=[_register_echo]) as d:
        async with api(d) as c:
            ok = await c.post("/v1/echo", json={"word": "hi", "times": 2})
            bad = await c.post("/v1/echo", json={"word": "toolong"})
            failed = await c.post("/v1/echo", json={"word": "boom"})
        async with mcp_client(d) as m:
            tools = {t.name: t for t in (await m.list_tools()).tools}
            said = await m.call_tool("echo_word", {"word": "yo", "times": 3})
            refused = await m.call_tool("echo_word", {"word": "boom"})
    assert ok.status_code == 200 and ok.json() == {"ok": True, "said": "hi hi", "error": None}
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_request" and "word" in bad.text
    assert failed.status_code == 200 and failed.json()["error"] == {"code": "not_found", "message": "no boom here",
                                                                    "hint": "say something else"}
    tool = tools["echo_word"]
    assert tool.input_schema["properties"] == EchoIn.model_json_schema()["properties"]
    assert tool.description == "Say a word back." and tool.annotations is not None and tool.annotations.read_only_hint
    assert not said.is_error and said.structured_content == {"ok": True, "said": "yo yo yo", "error": None}
    assert said.content[0].text == "said: yo yo yo"  # type: ignore[union-attr]
    assert refused.is_error and refused.structured_content is not None
    assert refused.structured_content["error"]["code"] == "not_found"


async def test_an_agent_cannot_name_its_own_roots_or_force_a_source(tmp_path: Path) -> None:
    """Attack: a prompt-injected agent passes ``roots`` (and ``source: file``) as tool arguments to read a file
    outside the user's roots. The generated tool has neither argument: the file is still refused."""
    secret = tmp_path.parent / f"{tmp_path.name}-outside" / "notes.md"
    secret.parent.mkdir()
    secret.write_text("# Notes\n\nThe vault code is 4242-SECRET.\n")
    async with RunningDaemon(daemon_settings(tmp_path), warm=False) as d, mcp_client(d) as m:
        res = await m.call_tool("fetch_page", {"url": str(secret), "query": "vault code",
                                               "roots": [secret.parent.as_uri(), "file:///"], "source": "file"})
    assert res.is_error and res.structured_content is not None
    assert res.structured_content["error"]["code"] == "path_not_allowed"
    assert "4242" not in str(res.structured_content) and "4242" not in str(res.content)


async def test_malformed_tab_references_and_unknown_fields_are_refused(tmp_path: Path) -> None:
    """Attack: odd tab references (``tab:`` targets are routed by string) and fields the model does not declare
    (``files``, ``allow``) sent straight to /v1. Each is a typed 400 before any handler runs."""
    async with RunningDaemon(daemon_settings(tmp_path), warm=False) as d, api(d) as c:
        refused = [await c.post("/v1/read_tab", json={"tab": t}) for t in ("../1", "1 or 2", "", "ACTIVE\n")]
        extra = await c.post("/v1/fetch", json={"url": "https://example.org/", "files": ["/"], "allow": True})
        listed = await c.post("/v1/list_tabs", json={})
    for r in refused:
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request", r.text
    assert extra.status_code == 400 and "files: unknown field" in extra.json()["error"]["message"]
    # no browser link on this daemon: the tab capabilities say so, typed, in their own output shape
    assert listed.status_code == 200 and listed.json()["error"]["code"] == "extension_unavailable"
    assert listed.json()["tabs"] == []
