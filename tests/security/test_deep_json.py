"""Over-deep JSON (issue 23 item 10): a 260 kB body of nested arrays made ``json.loads`` raise RecursionError,
which the JSON routes did not catch (HTTP 500). Every JSON route of a real daemon answers a typed 400 now (the
MCP endpoint its JSON-RPC parse error), and a value nested deeper than any trawl message is refused the same way.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from trawl.capabilities import catalog
from trawl.channel.discovery import locate, probe, prove, read_info
from trawl.channel.token import ProofError, load_or_create_token
from trawl.jsonbody import MAX_DEPTH, depth, loads
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings

DEEP = b"[" * 130_000 + b"]" * 130_000  # 260 kB
SMALL_DEEP = b"[" * 2000 + b"]" * 2000  # 4 kB: under the proof routes' body limit, past the recursion limit
JUST_TOO_DEEP = b'{"url": ' + b"[" * MAX_DEPTH + b"1" + b"]" * MAX_DEPTH + b', "query": "x"}'


def test_loads_bounds_depth_without_recursing() -> None:
    with pytest.raises(ValueError, match="nested"):
        loads(DEEP)
    with pytest.raises(ValueError, match="nested"):
        loads(JUST_TOO_DEEP)
    assert loads(b'{"a": [[1], {"b": []}]}') == {"a": [[1], {"b": []}]}
    assert depth(loads(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)) == MAX_DEPTH
    assert depth(1) == 0 and depth({}) == 1


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[RunningDaemon]:
    settings = Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", port=0, dense="none")
    async with RunningDaemon(settings, warm=False) as d:
        yield d


@pytest.mark.parametrize("body", [DEEP, SMALL_DEEP, JUST_TOO_DEEP], ids=["260kB-arrays", "4kB-arrays",
                                                                       "depth-65-field"])
async def test_every_json_route_answers_a_typed_400(daemon: RunningDaemon, body: bytes) -> None:
    auth = {"Authorization": f"Bearer {daemon.token}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=daemon.url, timeout=30) as c:
        for op in [cap.name for cap in catalog()]:
            r = await c.post(f"/v1/{op}", content=body, headers=auth)
            assert r.status_code == 400, (op, r.status_code, r.text[:200])
            err = r.json()["error"]
            assert err["code"] == "invalid_request" and "nested" in err["message"], (op, err)
        for path in ("/auth/challenge", "/auth/answer"):
            r = await c.post(path, content=body, headers={"Content-Type": "application/json"})
            assert r.status_code in (400, 413), (path, r.status_code, r.text[:200])  # 413: over its 4 kB limit
            assert r.json()["error"]["code"] == "invalid_request"
        r = await c.post("/mcp", content=body, headers={**auth, "Accept": "application/json, text/event-stream"})
        assert r.status_code < 500, r.text[:200]
        assert r.json()["error"]["code"] in (-32700, -32600, -32602), r.text[:200]  # a JSON-RPC error
        # The daemon still serves.
        ok = await c.post("/v1/stats", json={}, headers=auth)
        assert ok.status_code == 200, ok.text[:200]


# ------------------------------------------------------------------ a hostile listener on the daemon's port
class _Hostile(http.server.BaseHTTPRequestHandler):
    """Answers like a trawl daemon as far as it must, then with JSON nested past the recursion limit."""

    deep_health = True

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(SMALL_DEEP if self.deep_health else b'{"ok": true, "service": "trawl", "version": "0"}')

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(b'{"service": "trawl", "server_nonce": ' + SMALL_DEEP + b"}")

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture(params=["deep-health", "deep-challenge"])
def hostile_port(request: pytest.FixtureRequest) -> Iterator[tuple[int, str]]:
    handler = type("Handler", (_Hostile,), {"deep_health": request.param == "deep-health"})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], request.param
    server.shutdown()
    server.server_close()


def test_a_listener_answering_over_deep_json_is_not_a_daemon_and_raises_nothing(
    tmp_path: Path, hostile_port: tuple[int, str]
) -> None:
    # Before: json.loads on the answer raised RecursionError out of probe()/prove(), so locate() (every CLI
    # command, the MCP bridge) crashed with a traceback instead of naming what holds the port.
    port, case = hostile_port
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    token = load_or_create_token(state)  # a token to check the listener with: the deep challenge is reached
    assert probe(port) is None if case == "deep-health" else probe(port) is not None
    found = locate(state, port, timeout=2.0)
    assert found.daemon is None
    if case == "deep-challenge":
        assert found.holder is not None and found.holder.says_trawl, found
        with pytest.raises(ProofError):
            prove(port, token, timeout=2.0)


def test_a_deep_daemon_json_file_is_no_daemon(tmp_path: Path) -> None:
    (tmp_path / "daemon.json").write_bytes(b'{"pid": 1, "port": 1, "x": ' + SMALL_DEEP + b"}")
    assert read_info(tmp_path) is None
