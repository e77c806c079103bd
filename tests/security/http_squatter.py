"""An impostor on the daemon's channel that records every byte it is sent (standard library only).

Usage: ``python3 http_squatter.py tcp PORT`` (listen on 127.0.0.1:PORT, as a port squatter does while the
daemon is down) or ``python3 http_squatter.py unix PATH`` (listen on a Unix socket). Run as ``nobody`` by
tests/security/test_squatter.py and test_client_channel.py, or as the test's own user to play an impostor that
does not hold the token. It answers every HTTP request like a trawl daemon would, as convincingly as it can
without the token (``/healthz`` says trawl; the challenge gets a made-up proof; anything else gets a session),
and prints one JSON line per event: ``ready``, ``conn`` (a client connected), ``recv`` (bytes, hex) and
``end`` (that client's connection is over).
"""

import json
import os
import socket
import sys
import threading

LOCK = threading.Lock()


def emit(**record):
    with LOCK:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


def answer(request_head):
    line = request_head.split(b"\r\n", 1)[0].decode("latin-1")
    if " /healthz" in line:
        body = {"ok": True, "service": "trawl", "version": "0.1.0"}
    elif " /auth/challenge" in line:
        body = {"service": "trawl", "server_nonce": os.urandom(32).hex(), "proof": os.urandom(32).hex()}
    else:
        body = {"ok": True, "service": "trawl", "session": "ts_" + os.urandom(16).hex(), "pid": os.getpid()}
    data = json.dumps(body).encode()
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(data)).encode() + b"\r\n\r\n" + data)


def serve(conn):
    conn.settimeout(10)
    buf = b""
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            emit(event="recv", hex=data.hex())
            buf += data
            while b"\r\n\r\n" in buf:
                head, _, rest = buf.partition(b"\r\n\r\n")
                length = 0
                for h in head.split(b"\r\n")[1:]:
                    k, _, v = h.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v.strip() or 0)
                if len(rest) < length:
                    break
                buf = rest[length:]
                conn.sendall(answer(head))
    except OSError:
        return
    finally:
        conn.close()
        emit(event="end")


def main():
    mode, where = sys.argv[1], sys.argv[2]
    if mode == "tcp":
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", int(where)))
    else:
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(where)
        os.chmod(where, 0o777)
    srv.listen(64)
    emit(event="ready", uid=os.getuid(), pid=os.getpid())
    while True:
        conn, _ = srv.accept()
        emit(event="conn")
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
