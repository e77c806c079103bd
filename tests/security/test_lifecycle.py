"""Issue 8.3 and the SIGTERM part of 8.2: a daemon that holds its lock but does not answer is named, and ended.

Before: with the daemon hung, ``trawl status`` said no daemon ran, ``trawl stop`` said the same and exited 0 while
the process lived, ``trawl doctor`` blamed "another program", and SIGTERM was ignored. The hang is mounted the
way it looks from outside: the real ``trawl daemon`` process stopped with SIGSTOP (it holds the lock and its port,
and answers nothing), and a daemon whose event loop or executor thread is stuck in a request.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from trawl.server.lifecycle import check_ours, lock_holder

from .serve_daemon import healthz_answers

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

HERE = Path(__file__).resolve().parent
GRACE_S = 2.0


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(tmp: Path, port: int) -> dict[str, str]:
    return {**os.environ, "TRAWL_STATE_DIR": str(tmp / "state"), "TRAWL_CACHE_DIR": str(tmp / "cache"),
            "TRAWL_PORT": str(port), "TRAWL_DENSE": "none", "TRAWL_SHUTDOWN_GRACE_S": str(GRACE_S),
            "TRAWL_CHROMIUM_PATH": str(tmp / "no-chromium")}


def _cli(tmp: Path, port: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trawl.cli", *args], env=_env(tmp, port), capture_output=True,
                          text=True, timeout=120)


def _gone(proc: subprocess.Popen[str], within_s: float) -> bool:
    try:
        proc.wait(timeout=within_s)
    except subprocess.TimeoutExpired:
        return False
    return True


@contextlib.contextmanager
def _daemon(tmp: Path, argv: list[str]) -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = _free_port()
    proc = subprocess.Popen(argv, env=_env(tmp, port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        assert healthz_answers(f"http://127.0.0.1:{port}", 60.0), "the daemon did not start"
        yield proc, port
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
            proc.wait()


def test_a_stopped_daemon_is_named_as_hung_and_stop_force_ends_it(tmp_path: Path) -> None:
    with _daemon(tmp_path, [sys.executable, "-m", "trawl.cli", "daemon"]) as (proc, port):
        held = lock_holder(tmp_path / "state")
        assert held is not None and held.pid == proc.pid and held.ours
        os.kill(proc.pid, signal.SIGSTOP)  # holds the lock and the port, answers nothing

        st = _cli(tmp_path, port, "status")
        assert st.returncode == 1
        assert f"pid {proc.pid}" in st.stderr and "hung" in st.stderr and "trawl stop --force" in st.stderr

        stop = _cli(tmp_path, port, "stop")
        assert stop.returncode != 0
        assert f"pid {proc.pid}" in stop.stderr and "trawl stop --force" in stop.stderr
        assert proc.poll() is None  # a plain stop sent it nothing

        doc = _cli(tmp_path, port, "doctor")
        assert doc.returncode == 1
        assert f"pid {proc.pid}" in doc.stdout and "hung" in doc.stdout and "trawl stop --force" in doc.stdout
        assert "another program" not in doc.stdout

        forced = _cli(tmp_path, port, "stop", "--force")
        assert forced.returncode == 0, forced.stdout + forced.stderr
        assert f"pid {proc.pid}" in forced.stdout
        assert _gone(proc, 10.0)
        assert lock_holder(tmp_path / "state") is None

        after = _cli(tmp_path, port, "stop")
        assert after.returncode == 0 and "no trawl daemon is running" in after.stdout


def test_stop_force_never_signals_a_lock_holder_that_is_not_our_daemon(tmp_path: Path) -> None:
    """A forged lock (or a recycled pid) names a process that is not trawl: nothing is sent to it."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(state / 'daemon.lock')!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "os.write(fd, str(os.getpid()).encode())\n"
         "print('held', flush=True)\n"
         "time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        ours, why = check_ours(holder.pid)
        assert not ours and "not a trawl daemon" in why
        port = _free_port()
        res = _cli(tmp_path, port, "stop", "--force")
        assert res.returncode == 1
        assert f"pid {holder.pid}" in res.stderr and "not your trawl daemon" in res.stderr
        assert holder.poll() is None  # still alive: no signal was sent
        st = _cli(tmp_path, port, "status")
        assert st.returncode == 1 and "not your trawl daemon" in st.stderr
    finally:
        holder.kill()
        holder.wait()


def _get_in_background(url: str) -> threading.Thread:
    def go() -> None:
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url, timeout=60.0)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def _wait_file(path: Path, deadline_s: float = 30.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if path.exists():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("kind", ["loop", "thread"])
def test_sigterm_ends_a_daemon_stuck_in_a_request(tmp_path: Path, kind: str) -> None:
    with _daemon(tmp_path, [sys.executable, str(HERE / "stuck_daemon.py")]) as (proc, port):
        _get_in_background(f"http://127.0.0.1:{port}/test/stuck-{kind}")
        assert _wait_file(tmp_path / "state" / f"stuck-{kind}")
        proc.send_signal(signal.SIGTERM)
        # the promise: gone within shutdown_grace_s + 1 s; the deadline here adds room for a loaded CI machine
        assert _gone(proc, GRACE_S + 1.0 + 4.0), "SIGTERM did not end the daemon"
        log = (tmp_path / "state" / "logs" / "daemon.log").read_text()
        assert "got SIGTERM" in log
        if kind == "loop":
            assert "forcing exit" in log  # the loop never came back: the watchdog ended it
        assert lock_holder(tmp_path / "state") is None


def test_second_sigterm_ends_at_once(tmp_path: Path) -> None:
    with _daemon(tmp_path, [sys.executable, str(HERE / "stuck_daemon.py")]) as (proc, port):
        _get_in_background(f"http://127.0.0.1:{port}/test/stuck-loop")
        assert _wait_file(tmp_path / "state" / "stuck-loop")
        proc.send_signal(signal.SIGTERM)
        assert _wait_file(tmp_path / "state" / "logs" / "daemon.log")
        end = time.monotonic() + 10
        log_path = tmp_path / "state" / "logs" / "daemon.log"
        while "got SIGTERM" not in log_path.read_text() and time.monotonic() < end:
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        assert _gone(proc, 10.0)
        assert "forcing exit: second SIGTERM" in log_path.read_text()
