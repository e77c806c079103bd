"""The daemon's life from outside and inside: is it there, is it hung, and does SIGTERM really end it.

Outside (the CLI): the daemon holds ``daemon.lock`` (flock) for its whole life and writes its pid
in it. :func:`lock_holder` finds that pid without talking to the daemon at all, so ``trawl
status`` / ``stop`` / ``doctor`` can tell "no daemon" from "a daemon that holds the lock but does
not answer" (hung, or stopped with SIGSTOP), name its pid, and ``trawl stop --force`` can end it.
Before any signal is sent, :func:`check_ours` makes sure the pid is this user's trawl daemon
(``/proc/<pid>`` owner uid and command line), so a recycled pid is never killed.

Inside (the daemon): :class:`ShutdownWatchdog` sees SIGTERM/SIGINT in a thread of its own
(through the interpreter's signal wakeup pipe), so a signal is seen even while the event loop
is blocked. It asks the loop to shut down gracefully and, if the process is not
gone ``shutdown_grace_s`` + ``HARD_EXIT_MARGIN_S`` after the signal (a stuck request, a stuck
executor thread, a loop that never comes back), ends it with ``os._exit``. A second signal
ends it at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import select
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("trawl.server.lifecycle")

LOCK_FILE = "daemon.lock"
HARD_EXIT_MARGIN_S = 0.8  # SIGTERM ends the daemon within shutdown_grace_s + this (< 1 s)
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


# ----------------------------------------------------------------------------------------------- outside


@dataclass(frozen=True, slots=True)
class LockHolder:
    pid: int  # 0 when the lock is held but the pid in it cannot be read
    ours: bool  # the pid is this user's trawl daemon (checked in /proc)
    why_not: str = ""  # when not ours: what was seen
    age_s: float | None = None

    def describe(self) -> str:
        return f"pid {self.pid}" if self.pid else "an unknown pid"


def lock_holder(state_dir: Path) -> LockHolder | None:
    """Who holds ``daemon.lock`` now, or None when nobody does (no daemon of this state dir is alive)."""
    path = state_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: read the pid the holder wrote
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        raw = os.read(fd, 64)
    finally:
        os.close(fd)
    try:
        pid = int(raw.decode("ascii").strip() or "0")
    except (UnicodeDecodeError, ValueError):
        pid = 0
    if pid <= 0:
        return LockHolder(pid=0, ours=False, why_not="the lock file holds no pid")
    ours, why = check_ours(pid)
    return LockHolder(pid=pid, ours=ours, why_not=why, age_s=process_age_s(pid))


def check_ours(pid: int) -> tuple[bool, str]:
    """(True, "") when ``pid`` is a live trawl daemon owned by this user; else (False, what was seen)."""
    proc = Path(f"/proc/{pid}")
    try:
        uid = proc.stat().st_uid
        cmdline = (proc / "cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return False, f"pid {pid} is not running"
    except OSError as exc:
        return False, f"cannot inspect pid {pid}: {exc.strerror or exc}"
    if uid != os.getuid():
        return False, f"pid {pid} belongs to uid {uid}, not to you (uid {os.getuid()})"
    args = [a.decode("utf-8", "replace") for a in cmdline if a]
    if not _is_daemon_cmdline(args):
        return False, f"pid {pid} is not a trawl daemon ({' '.join(args)[:200] or 'no command line'})"
    return True, ""


def _is_daemon_cmdline(args: list[str]) -> bool:
    joined = " ".join(args)
    if "trawl.server" in joined:  # python -m trawl.server (what trawl-mcp starts)
        return True
    for i, a in enumerate(args):  # trawl daemon / python -m trawl.cli daemon
        base = os.path.basename(a)
        if (base == "trawl" or a == "trawl.cli") and "daemon" in args[i + 1:]:
            return True
    return False


def process_age_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in {"Z", "X"}


def wait_gone(pid: int, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)


def hung_message(holder: LockHolder, state_dir: Path) -> str:
    """What every command says about a daemon that holds the lock but does not answer."""
    young = holder.age_s is not None and holder.age_s < 10.0
    return (f"the trawl daemon ({holder.describe()}) holds {state_dir / LOCK_FILE} but does not answer: it is hung"
            + (f" (or still starting: it began {holder.age_s:.0f} s ago)" if young else "")
            + ". End it with `trawl stop --force`.")


def force_stop(pid: int, grace_s: float, say: Callable[[str], None]) -> bool:
    """SIGTERM (and SIGCONT, in case it is stopped), then SIGKILL after the grace; True once the pid is gone."""
    ours, why = check_ours(pid)
    if not ours:
        say(f"not sending any signal: {why}")
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        os.kill(pid, signal.SIGCONT)
    if wait_gone(pid, grace_s + HARD_EXIT_MARGIN_S + 1.0):
        say(f"stopped the trawl daemon (pid {pid}) with SIGTERM.")
        return True
    ours, why = check_ours(pid)  # still the same process? (pids are reused)
    if not ours:
        say(f"pid {pid} is gone ({why}).")
        return not pid_alive(pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if wait_gone(pid, 10.0):
        say(f"killed the trawl daemon (pid {pid}) with SIGKILL: it did not end after SIGTERM.")
        return True
    say(f"pid {pid} is still there after SIGKILL (is it stuck in the kernel?)")
    return False


# ------------------------------------------------------------------------------------------------ inside


class ShutdownWatchdog:
    """SIGTERM/SIGINT seen by a thread of its own, a graceful stop through the loop, and a hard exit as the backstop.

    :meth:`install` (main thread, once the loop runs) routes both signals to a pipe with
    ``signal.set_wakeup_fd``: the C-level handler writes the signal number there from whatever thread
    the kernel picked, even while the event loop or the main thread is stuck, and the watchdog thread
    blocks on that pipe. The Python-level handlers do nothing (they only replace the default action,
    which would kill the process without a clean stop). :meth:`finished` disarms the hard exit.
    """

    def __init__(self, grace_s: float, on_signal: Callable[[int], object],
                 before_exit: Callable[[], None] | None = None) -> None:
        self.grace_s = grace_s
        self._on_signal = on_signal
        self._before_exit = before_exit
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._read_fd = -1

    def install(self) -> None:
        r, w = os.pipe()
        os.set_blocking(w, False)
        self._read_fd = r
        for sig in STOP_SIGNALS:
            signal.signal(sig, _ignore_here)
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._run, name="trawl-signals", daemon=True)
        self._thread.start()

    def finished(self) -> None:
        self._done.set()

    def _next_signal(self, timeout_s: float | None) -> int | None:
        ready, _, _ = select.select([self._read_fd], [], [], timeout_s)
        if not ready:
            return None
        data = os.read(self._read_fd, 64)
        for b in data:
            if b in STOP_SIGNALS:
                return int(b)
        return 0  # another signal (e.g. SIGCHLD): not ours

    def _run(self) -> None:
        sig: int | None = 0
        while not sig:
            sig = self._next_signal(None)
        log.info("got %s: shutting down (at most %.1f s)", signal.Signals(sig).name,
                 self.grace_s + HARD_EXIT_MARGIN_S)
        deadline = time.monotonic() + self.grace_s + HARD_EXIT_MARGIN_S
        try:
            self._on_signal(sig)
        except Exception:  # the loop may be closed already; the deadline still holds
            log.exception("could not ask the event loop to stop")
        while (left := deadline - time.monotonic()) > 0:
            if self._done.is_set():
                return
            again = self._next_signal(min(left, 0.1))
            if again:
                self._hard_exit(f"second {signal.Signals(again).name}")
        if not self._done.is_set():
            self._hard_exit(f"still running {self.grace_s + HARD_EXIT_MARGIN_S:.1f} s after the signal "
                            "(a stuck request, thread or event loop)")

    def _hard_exit(self, why: str) -> None:
        with contextlib.suppress(Exception):
            log.error("forcing exit: %s", why)
            for h in logging.getLogger("trawl").handlers:
                h.flush()
        if self._before_exit is not None:
            with contextlib.suppress(Exception):
                self._before_exit()
        os._exit(1)


def _ignore_here(signum: int, frame: object) -> None:
    """The Python-level half of SIGTERM/SIGINT: nothing; the watchdog thread reads the wakeup pipe."""
