"""Over-deep JSON (issue 23 item 10): a 260 kB body of nested arrays made ``json.loads`` raise RecursionError,
which the JSON routes did not catch (HTTP 500). Every JSON route of a real daemon answers a typed 400 now (the
MCP endpoint its JSON-RPC parse error), and a value nested deeper than any trawl message is refused the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from trawl.capabilities import catalog
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
