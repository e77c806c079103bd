"""A hand-made peer of the daemon's ``/ext`` socket that speaks the real handshake (``pairing.py``) from Python.

It sends whatever a local process could (any Origin, any nonce, a wrong proof, no confirmation) and records
every frame the daemon sends, so tests can assert exactly what a peer learns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from trawl.browser import PINNED_EXTENSION_ID, pairing
from trawl.browser import protocol as proto

GOOD_ORIGIN = f"chrome-extension://{PINNED_EXTENSION_ID}"


def hello(mode: str = "none", nonce: str | None = None, **kw: Any) -> dict[str, Any]:
    return {"type": "hello", "protocol": proto.version(), "extension_version": "test", "browser": "forged",
            "mode": mode, "nonce": nonce or pairing.new_nonce(), **kw}


@dataclass
class Outcome:
    status: int  # 101 when the socket opened, else the HTTP status
    frames: list[dict[str, Any]] = field(default_factory=list)
    ws: aiohttp.ClientWebSocketResponse | None = None
    secret: str = ""  # the secret derived by a pairing
    daemon_proved: bool | None = None  # whether the challenge's proof checked out

    @property
    def last(self) -> dict[str, Any] | None:
        return self.frames[-1] if self.frames else None

    @property
    def refused(self) -> str:
        last = self.last
        return str(last["code"]) if last and last["type"] == "refused" else ""

    @property
    def welcomed(self) -> bool:
        return any(f["type"] == "welcome" for f in self.frames)


class LinkPeer:
    def __init__(self, port: int) -> None:
        self.port = port
        self.session = aiohttp.ClientSession()

    async def close(self) -> None:
        await self.session.close()

    async def _open(self, origin: str | None, host: str | None) -> tuple[int, aiohttp.ClientWebSocketResponse | None]:
        headers = {}
        if origin is not None:
            headers["Origin"] = origin
        if host is not None:
            headers["Host"] = host
        try:
            ws = await self.session.ws_connect(f"http://127.0.0.1:{self.port}/ext", headers=headers)
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status, None
        return 101, ws

    @staticmethod
    async def _recv(ws: aiohttp.ClientWebSocketResponse, out: Outcome) -> dict[str, Any] | None:
        msg = await ws.receive(timeout=10)
        if msg.type != aiohttp.WSMsgType.TEXT:
            return None
        data: dict[str, Any] = json.loads(msg.data)
        out.frames.append(data)
        return data

    async def raw(self, first: Any, *, origin: str | None = GOOD_ORIGIN, host: str | None = None) -> Outcome:
        """Open the socket, send ``first`` as it is, record the answer."""
        status, ws = await self._open(origin, host)
        out = Outcome(status, ws=ws)
        if ws is not None:
            await ws.send_str(first if isinstance(first, str) else json.dumps(first))
            await self._recv(ws, out)
        return out

    async def run(self, mode: str, *, secret: str = "", code: str = "", key_id: str | None = None,
                  wrong_proof: bool = False, ack: bool = True, origin: str | None = GOOD_ORIGIN,
                  host: str | None = None) -> Outcome:
        """The extension's side of the handshake, optionally misbehaving."""
        status, ws = await self._open(origin, host)
        out = Outcome(status, ws=ws)
        if ws is None:
            return out
        ne = pairing.new_nonce()
        fields: dict[str, Any] = {}
        key = b""
        if mode == "secret":
            fields["key_id"] = key_id if key_id is not None else pairing.key_id(secret)
            key = pairing.secret_key(secret)
        elif mode == "pair":
            key = pairing.code_key(code)
        await ws.send_str(json.dumps(hello(mode, ne, **fields)))
        challenge = await self._recv(ws, out)
        if challenge is None or challenge["type"] != "challenge":
            return out
        nd = challenge["nonce"]
        out.daemon_proved = pairing.proof_matches(key, challenge["proof"], "daemon", mode, ne, nd)
        proof = pairing.mac(b"not the key" if wrong_proof else key, "extension", mode, ne, nd)
        await ws.send_str(json.dumps({"type": "auth", "proof": proof}))
        reply = await self._recv(ws, out)
        if reply is None or reply["type"] != "welcome":
            return out
        if mode == "pair":
            out.secret = pairing.derive_secret(code, ne, nd)
            if ack:
                stored = pairing.mac(pairing.secret_key(out.secret), "stored", mode, ne, nd)
                await ws.send_str(json.dumps({"type": "paired", "proof": stored}))
        return out
