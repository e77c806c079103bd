"""Finding the user's daemon: the lock that makes it one per user, its info file, and a health probe.

Files in the state directory:
    daemon.lock   held (flock) by the running daemon for its whole life
    daemon.json   {"pid", "port", "version", "started_at"} written once the port is bound
    start.lock    held briefly by whoever is starting a daemon, so two bridges start one daemon
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

INFO_FILE = "daemon.json"
LOCK_FILE = "daemon.lock"
START_LOCK_FILE = "start.lock"


@dataclass(frozen=True, slots=True)
class DaemonInfo:
    pid: int
    port: int
    version: str
    started_at: float
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def write_info(state_dir: Path, info: DaemonInfo) -> None:
    path = state_dir / INFO_FILE
    tmp = path.with_name(f".{INFO_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(asdict(info), f)
    os.replace(tmp, path)


def read_info(state_dir: Path) -> DaemonInfo | None:
    try:
        data = json.loads((state_dir / INFO_FILE).read_text())
        return DaemonInfo(pid=int(data["pid"]), port=int(data["port"]), version=str(data.get("version", "")),
                          started_at=float(data.get("started_at", 0.0)))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_info(state_dir: Path, pid: int) -> None:
    info = read_info(state_dir)
    if info is not None and info.pid == pid:
        with contextlib.suppress(OSError):
            (state_dir / INFO_FILE).unlink()


def probe(port: int, timeout: float = 1.0) -> dict[str, Any] | None:
    """GET /healthz on 127.0.0.1:port; the JSON when a trawl daemon answers, else None."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", "/healthz", headers={"Host": f"127.0.0.1:{port}"})
        resp = conn.getresponse()
        if resp.status != 200:
            return None
        data = json.loads(resp.read())
        return data if isinstance(data, dict) and data.get("service") == "trawl" else None
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def find_running(state_dir: Path, default_port: int, timeout: float = 1.0) -> DaemonInfo | None:
    """The running daemon: the port in daemon.json first, then the configured port."""
    info = read_info(state_dir)
    if info is not None and probe(info.port, timeout) is not None:
        return info
    if (info is None or info.port != default_port) and (h := probe(default_port, timeout)) is not None:
        fresh = read_info(state_dir)  # a daemon that was just starting has written its file by now
        if fresh is not None and fresh.port == default_port:
            return fresh
        return DaemonInfo(pid=0, port=default_port, version=str(h.get("version", "")), started_at=0.0)
    return None


class LockHeld(RuntimeError):
    pass


def acquire_daemon_lock(state_dir: Path) -> int:
    """Take the one-daemon-per-user lock; raise :class:`LockHeld` when another daemon holds it.

    The returned fd must stay open for the daemon's lifetime; the kernel drops the
    lock when the process dies, even by SIGKILL.
    """
    fd = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise LockHeld("another trawl daemon holds the lock") from exc
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def daemon_lock_held(state_dir: Path) -> bool:
    try:
        fd = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@contextlib.contextmanager
def start_lock(state_dir: Path, timeout: float = 30.0) -> Iterator[bool]:
    """Serialise daemon starts between processes; yields False if the lock could not be had in time."""
    fd = os.open(state_dir / START_LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    got = False
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                got = True
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        yield got
    finally:
        if got:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
