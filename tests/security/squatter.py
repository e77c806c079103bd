"""A port squatter: another OS user's program listening on the daemon's port while the daemon is down.

Run as ``nobody`` by tests/security/test_ext_squatter.py with whatever Python that user can execute, so it uses
the standard library only (a minimal RFC 6455 server). It accepts the extension's WebSocket, prints every frame
it receives as a JSON line on stdout, and on each new connection tries the next trick to make the extension
talk: pretend the handshake is done, forge a challenge, hand it a secret the old way, ask before any hello,
forge a proof keyed by what it saw. Usage: ``python3 squatter.py PORT CAPTURE_URL``.
"""

import asyncio
import base64
import hashlib
import hmac
import json
import os
import secrets
import sys

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TRICKS = ["skip_handshake", "forged_challenge", "legacy_secret", "requests_first", "keyed_by_what_it_saw"]


def emit(**record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def frame(text):
    data = text.encode()
    head = bytearray([0x81])
    if len(data) < 126:
        head.append(len(data))
    elif len(data) < 65536:
        head.append(126)
        head += len(data).to_bytes(2, "big")
    else:
        head.append(127)
        head += len(data).to_bytes(8, "big")
    return bytes(head) + data


async def read_frame(reader):
    """(opcode, payload) of the next whole message."""
    parts = []
    while True:
        b1, b2 = await reader.readexactly(2)
        opcode, masked, length = b1 & 0x0F, b2 & 0x80, b2 & 0x7F
        if length == 126:
            length = int.from_bytes(await reader.readexactly(2), "big")
        elif length == 127:
            length = int.from_bytes(await reader.readexactly(8), "big")
        mask = await reader.readexactly(4) if masked else b"\0\0\0\0"
        payload = bytes(c ^ mask[i % 4] for i, c in enumerate(await reader.readexactly(length)))
        if opcode in (8, 9, 10):
            return opcode, payload
        parts.append(payload)
        if b1 & 0x80:
            return 1, b"".join(parts)


class Squatter:
    def __init__(self, capture_url):
        self.capture_url = capture_url
        self.count = 0

    async def serve(self, reader, writer):
        n = self.count
        self.count += 1
        trick = TRICKS[n % len(TRICKS)]
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
            accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + GUID).encode()).digest())
            writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
            emit(conn=n, event="open", trick=trick, path=lines[0], origin=headers.get("origin", ""), uid=os.getuid())

            def send(msg):
                emit(conn=n, event="sent", data=msg)
                writer.write(frame(json.dumps(msg)))

            def requests():
                send({"type": "list_tabs", "id": 1})
                send({"type": "capture", "id": 2, "url": self.capture_url, "settle_quiet_ms": 100,
                      "settle_max_ms": 2000, "timeout_ms": 10000, "max_bytes": 10_000_000})
                send({"type": "ping", "id": 3})

            if trick == "requests_first":
                requests()
            while True:
                opcode, payload = await read_frame(reader)
                if opcode == 8:
                    emit(conn=n, event="close", data=payload[2:].decode("utf-8", "replace"))
                    return
                if opcode == 9:
                    continue
                text = payload.decode("utf-8", "replace")
                emit(conn=n, event="frame", data=text)
                try:
                    msg = json.loads(text)
                except ValueError:
                    continue
                if msg.get("type") != "hello":
                    continue
                proto, ne, mode = msg.get("protocol"), msg.get("nonce", ""), msg.get("mode", "")
                welcome = {"type": "welcome", "protocol": proto, "daemon_version": "0.1.0"}
                nd = secrets.token_hex(32)
                if trick == "skip_handshake":
                    send(welcome)
                    requests()
                elif trick == "forged_challenge":
                    send({"type": "challenge", "protocol": proto, "daemon_version": "0.1.0", "nonce": nd,
                          "proof": secrets.token_hex(32)})
                    send(welcome)
                    requests()
                elif trick == "legacy_secret":
                    send({**welcome, "secret": "f" * 64})
                    requests()
                elif trick == "keyed_by_what_it_saw":
                    key = str(msg.get("key_id", "")).encode()
                    transcript = f"trawl-link/{proto}\ndaemon\n{mode}\n{ne}\n{nd}".encode()
                    proof = hmac.new(key, transcript, hashlib.sha256).hexdigest()
                    send({"type": "challenge", "protocol": proto, "daemon_version": "0.1.0", "nonce": nd,
                          "proof": proof})
                    send(welcome)
                    requests()
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, KeyError, ValueError) as exc:
            emit(conn=n, event="gone", data=type(exc).__name__)
        finally:
            writer.close()


async def main():
    port, capture_url = int(sys.argv[1]), sys.argv[2]
    squatter = Squatter(capture_url)
    server = await asyncio.start_server(squatter.serve, "127.0.0.1", port, reuse_address=True)
    emit(event="ready", port=port, uid=os.getuid())
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
