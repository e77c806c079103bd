"""A real daemon in its own process for the security tests (no tests here).

``python serve_daemon.py <state_dir> <cache_dir> [key=value ...]`` runs :class:`RunningDaemon` with
those settings, prints ``<port> <token>`` on one line once it serves, and stops on SIGTERM. Tests that
must watch the daemon from outside (a spinning event loop would also stall an in-process client) use
:func:`spawn`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve()


@dataclass
class DaemonProc:
    proc: subprocess.Popen[str]
    port: int
    token: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def stop(self) -> None:
        stop_process(self.proc)


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM a child the test started, then SIGKILL it if it has not exited within 30 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def spawn(tmp: Path, **settings: Any) -> Iterator[DaemonProc]:
    args = [sys.executable, str(HERE), str(tmp / "state"), str(tmp / "cache"),
            *(f"{k}={v}" for k, v in settings.items())]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=open(tmp / "daemon.err", "w"),  # noqa: SIM115
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the child prints once it serves (or exits)
        if not line:
            proc.wait(timeout=30)
            raise AssertionError(f"daemon did not start: {(tmp / 'daemon.err').read_text()[-2000:]}")
        port, token = line.split()
        yield DaemonProc(proc, int(port), token)
    finally:
        stop_process(proc)


def healthz_answers(url: str, deadline_s: float = 10.0) -> bool:
    """True once GET /healthz answers 200 within the deadline (each try has its own short timeout)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            r = httpx.get(url + "/healthz", timeout=2.0)
            if r.status_code == 200 and r.json().get("service") == "trawl":
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    return False


def _coerce(raw: str) -> Any:
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return kind(raw)
    return raw


async def _main(argv: list[str]) -> None:
    from trawl.server.runner import RunningDaemon
    from trawl.settings import Settings

    kw: dict[str, Any] = {"state_dir": Path(argv[0]), "cache_dir": Path(argv[1]), "port": 0, "dense": "none",
                          "shutdown_grace_s": 5.0}
    for item in argv[2:]:
        k, _, v = item.partition("=")
        kw[k] = _coerce(v)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    async with RunningDaemon(Settings(**kw), warm=False) as d:
        print(d.port, d.token, flush=True)
        await stop.wait()


if __name__ == "__main__":
    os.environ.setdefault("TRAWL_DENSE", "none")
    asyncio.run(_main(sys.argv[1:]))
