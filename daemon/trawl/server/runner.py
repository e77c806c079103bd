"""Running the daemon: :class:`RunningDaemon` (in-process, for tests and benchmarks) and :func:`run_daemon`
(the ``trawl daemon`` process: one per user, signals, graceful shutdown, logs).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Self

from aiohttp import web

from .. import __version__
from ..channel import running
from ..channel.discovery import (
    DaemonInfo,
    LockHeld,
    acquire_daemon_lock,
    find_running,
    port_holder,
    remove_info,
    socket_path,
    unix_address,
    write_info,
)
from ..channel.peer import same_user_check
from ..channel.site import GatedSockSite, proof_routes
from ..channel.token import ProofLedger, TokenError, ensure_state_dir, load_or_create_token
from ..pipeline import Engine
from ..settings import Settings
from ..sources.base import Source
from .app import AppHook, create_app
from .lifecycle import ShutdownWatchdog
from .limits import (
    AcceptErrorLimiter,
    CappedStderr,
    ConnectionLimits,
    GuardedAppRunner,
    cap_start_log,
    raise_nofile_limit,
)
from .logs import setup_logging
from .security import is_loopback_host
from .state import STATE, AppState

log = logging.getLogger("trawl.server")


class DaemonError(RuntimeError):
    """The daemon cannot start; the message says why and what to do."""


def check_bind_host(settings: Settings) -> None:
    if not is_loopback_host(settings.host) and not settings.allow_non_loopback:
        raise DaemonError(
            f"refusing to listen on {settings.host!r}: it is not a loopback address, and the daemon can read "
            "what your browser can. Use 127.0.0.1, or set TRAWL_ALLOW_NON_LOOPBACK=1 if you really mean it."
        )


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.listen(256)
    sock.setblocking(False)
    return sock


def bind_unix_socket(path: Path) -> socket.socket | None:
    """The daemon's Unix socket (0600, inside the 0700 state dir); None where AF_UNIX is missing.

    A socket file left by a dead daemon is replaced; a live one (another daemon of this state dir) is not.
    """
    if not hasattr(socket, "AF_UNIX"):
        return None
    if os.path.lexists(path):
        probe_sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe_sock.settimeout(0.5)
            with unix_address(path) as addr:
                probe_sock.connect(addr)
        except OSError:
            path.unlink()  # nobody listens: a leftover
        else:
            raise DaemonError(f"another daemon serves {path}; stop it first (`trawl stop`)")
        finally:
            probe_sock.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with unix_address(path) as addr:
            sock.bind(addr)
        os.chmod(path, 0o600)  # the 0700 directory already keeps others out while this runs
        sock.listen(256)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


class RunningDaemon:
    """A daemon serving on a loopback socket inside the current event loop."""

    def __init__(
        self,
        settings: Settings,
        *,
        engine: Engine | None = None,
        sources: list[Source] | None = None,
        mcp: bool = True,
        extra_routes: Iterable[AppHook] = (),
        log_file: str = "",
        warm: bool = True,
        on_bound: Callable[[int], None] | None = None,
    ) -> None:
        self.settings = settings
        self._on_bound = on_bound
        self._engine = engine
        self._sources = sources
        self._mcp = mcp
        self._extra_routes = tuple(extra_routes)
        self._log_file = log_file
        self._warm = warm
        self.executor: ThreadPoolExecutor | None = None
        self.engine: Engine | None = None
        self.app: web.Application | None = None
        self.runner: web.AppRunner | None = None
        self.port = 0
        self.token = ""
        self.socket_path: Path | None = None
        self._socket_ino = 0
        self._warm_task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def state(self) -> AppState:
        assert self.app is not None
        return self.app[STATE]

    async def start(self) -> Self:
        check_bind_host(self.settings)
        self.token = load_or_create_token(self.settings.state_dir)
        sock = bind_socket(self.settings.host, self.settings.port)
        self.port = sock.getsockname()[1]
        try:
            unix = bind_unix_socket(socket_path(self.settings.state_dir))
        except DaemonError:
            sock.close()
            raise
        except OSError as exc:  # e.g. a path too long for sun_path off Linux: clients fall back to the TCP proof
            log.warning("no Unix socket in %s (%s); local clients will use TCP with the mutual proof",
                        self.settings.state_dir, exc)
            unix = None
        if unix is not None:
            self.socket_path = socket_path(self.settings.state_dir)
            self._socket_ino = os.stat(self.socket_path).st_ino
        self.executor = ThreadPoolExecutor(max(1, self.settings.workers), thread_name_prefix="trawl-cpu")
        self.engine = self._engine or Engine(self.settings, sources=self._sources, executor=self.executor)
        ledger = ProofLedger(self.token)
        self.app = create_app(self.engine, self.settings, token=self.token, port=self.port, mcp=self._mcp,
                              extra_routes=(proof_routes(ledger), *self._extra_routes), log_file=self._log_file)
        # header/idle timeouts and connection caps (limits.py)
        self.runner = GuardedAppRunner(self.app, limits=ConnectionLimits.from_settings(self.settings),
                                       handle_signals=False, access_log=None,
                                       shutdown_timeout=self.settings.shutdown_grace_s)
        await self.runner.setup()
        if self._on_bound is not None:
            self._on_bound(self.port)  # before the first request can be answered
        check = same_user_check(enforce_tcp=self.settings.peer_uid_check)
        if unix is not None:
            await GatedSockSite(self.runner, unix, check).start()
        await GatedSockSite(self.runner, sock, check).start()  # other users' TCP peers are closed at accept
        log.info("trawl %s listening on %s (pid %d)", __version__, self.url, os.getpid())
        if self._warm:
            self._warm_task = asyncio.create_task(self._warm_model(), name="trawl-warm")
        return self

    async def _warm_model(self) -> None:
        assert self.engine is not None
        warm = getattr(self.engine.retriever, "warm", None)
        if warm is None:
            return
        t0 = time.perf_counter()
        try:
            await asyncio.get_running_loop().run_in_executor(self.executor, warm)
        except Exception as exc:
            self.state.model_error = f"{type(exc).__name__}: {exc}"
            log.warning("model failed to load: %s (BM25-only answers until fixed)", exc)
            return
        self.state.model_warm_ms = (time.perf_counter() - t0) * 1000.0
        log.info("model ready in %.0f ms: %s", self.state.model_warm_ms, self.engine.retriever.describe())

    async def stop(self) -> None:
        if self._warm_task is not None and not self._warm_task.done():
            self._warm_task.cancel()
        if self.runner is not None:
            # aiohttp stops accepting, then waits up to the grace period for in-flight handlers; just before
            # it cancels them, give what is still running a clear "shutting down" result instead.
            services = self.state.services
            grace = self.settings.shutdown_grace_s
            handle = asyncio.get_running_loop().call_later(max(0.0, grace - min(1.0, grace / 2)),
                                                           services.abort_in_flight)
            try:
                await self.runner.cleanup()
            finally:
                handle.cancel()
            self.runner = None
        self._remove_socket()
        if self.engine is not None:
            try:
                await self.engine.aclose()
            except Exception:
                log.exception("closing the engine failed")
        if self.executor is not None:
            self.executor.shutdown(wait=False, cancel_futures=True)
            self.executor = None
        log.info("trawl daemon stopped")

    def _remove_socket(self) -> None:
        if self.socket_path is None:
            return
        try:
            if os.stat(self.socket_path).st_ino == self._socket_ino:  # still ours, not a successor's
                self.socket_path.unlink()
        except OSError:
            pass
        self.socket_path = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


def run_daemon(settings: Settings, *, foreground: bool = True, extra_routes: Iterable[AppHook] = ()) -> int:
    """The ``trawl daemon`` process. Returns the exit code. ``extra_routes`` are what the entry point plugs in
    (``python -m trawl.server`` and ``trawl daemon`` plug in the browser link: the server does not import it)."""
    say = (lambda m: print(m, file=sys.stderr)) if foreground else (lambda m: None)
    try:
        check_bind_host(settings)
        ensure_state_dir(settings.state_dir)
    except (DaemonError, TokenError) as exc:
        say(f"trawl daemon: {exc}")
        return 2
    if not foreground:  # stderr is daemon-start.log: keep it bounded (everything else goes to daemon.log)
        cap_start_log(settings.state_dir / "logs" / "daemon-start.log")
        sys.stderr = CappedStderr(sys.stderr)
    log_path = setup_logging(settings.state_dir, foreground=foreground)
    try:
        lock_fd = acquire_daemon_lock(settings.state_dir)
    except LockHeld:
        running = find_running(settings.state_dir, settings.port)
        if running is not None:
            say(f"trawl daemon is already running (pid {running.pid or '?'}) at {running.url}/")
            return 0
        say("trawl daemon: another daemon holds the lock in "
            f"{settings.state_dir} but does not answer; it may be starting. Try again in a few seconds.")
        return 1
    hooks = list(extra_routes)
    soft, _hard = raise_nofile_limit()
    log.info("open files limit: %d", soft)
    try:
        code = asyncio.run(_serve(settings, str(log_path), say, hooks))
        others = [t for t in threading.enumerate() if not t.daemon and t is not threading.current_thread()]
        end = time.monotonic() + 0.5  # idle pool workers leave at once; a stuck one never does
        for t in others:
            t.join(max(0.0, end - time.monotonic()))
        stuck = [t.name for t in others if t.is_alive()]
        if stuck:  # a thread that never returns would hold the exit forever: leave without it
            log.warning("exiting with %d stuck thread(s): %s", len(stuck), ", ".join(stuck[:5]))
            logging.shutdown()
            os._exit(code)
        return code
    finally:
        os.close(lock_fd)


async def _serve(settings: Settings, log_file: str, say: Any, extra_routes: Iterable[AppHook]) -> int:
    def announce(port: int) -> None:
        write_info(settings.state_dir, DaemonInfo(pid=os.getpid(), port=port, version=__version__,
                                                  started_at=time.time()))
        running.register(os.getpid(), port, settings.state_dir)  # clients with other settings can tell the user

    def forget() -> None:
        remove_info(settings.state_dir, os.getpid())
        running.unregister(os.getpid())

    daemon = RunningDaemon(settings, log_file=log_file, extra_routes=extra_routes, on_bound=announce)
    try:
        await daemon.start()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            holder = port_holder(settings.port, token=daemon.token or None)
            if holder is not None and holder.foreign:
                msg = holder.message()
            else:
                who = ("another trawl daemon (other state directory)" if holder and holder.says_trawl
                       else "another program")
                seen = f" ({holder.listener.describe()})" if holder and holder.listener else ""
                msg = (f"port {settings.port} on {settings.host} is in use by {who}{seen}; set TRAWL_PORT to a "
                       "free port (the same value for trawl-mcp and the CLI)")
        else:
            msg = f"cannot listen on {settings.host}:{settings.port}: {exc}"
        log.error(msg)
        say(f"trawl daemon: {msg}")
        await daemon.stop()
        return 1
    except (DaemonError, TokenError) as exc:
        log.error("%s", exc)
        say(f"trawl daemon: {exc}")
        await daemon.stop()
        return 2
    say(f"trawl daemon {__version__} listening on {daemon.url}/ (pid {os.getpid()}); log: {log_file}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    AcceptErrorLimiter().install(loop)  # accept() failures under fd pressure: one line per 10 s, not a flood
    # SIGTERM/SIGINT arrive in the watchdog's thread even when the loop is stuck; it hard-exits after the grace
    ShutdownWatchdog(settings.shutdown_grace_s, lambda _sig: loop.call_soon_threadsafe(stop.set),
                     before_exit=forget).install()
    await stop.wait()
    log.info("shutting down: finishing %d in-flight request(s), up to %.0f s", daemon.state.services.in_flight,
             settings.shutdown_grace_s)
    forget()
    await daemon.stop()
    return 0
