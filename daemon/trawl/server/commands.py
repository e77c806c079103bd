"""The daemon-related ``trawl`` subcommands: daemon, status, stop, doctor (wired in ``trawl.cli``)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import webbrowser
from collections.abc import Sequence
from typing import TYPE_CHECKING

import httpx

from ..channel.discovery import locate, open_client
from ..settings import Settings
from .lifecycle import HARD_EXIT_MARGIN_S, LockHolder, check_ours, force_stop, hung_message, lock_holder, wait_gone

if TYPE_CHECKING:
    from .app import AppHook


def _daemon(args: argparse.Namespace) -> int:
    from .runner import run_daemon

    settings = Settings.from_env()
    if args.port is not None:
        settings = settings.with_(port=args.port)
    return run_daemon(settings, foreground=True, extra_routes=args.app_hooks)


def _status(args: argparse.Namespace) -> int:
    from .status import render_text

    settings = Settings.from_env()
    found = locate(settings.state_dir, settings.port)
    info = found.daemon
    if info is None:
        if (held := lock_holder(settings.state_dir)) is not None:  # our daemon is alive but does not answer
            print(f"trawl: {_unanswering(held, settings)}", file=sys.stderr)
            return 1
        if found.holder is not None:  # not ours: it was sent nothing, and the user hears why
            print(f"trawl: {found.holder.message()}", file=sys.stderr)
            return 1
        print(f"no trawl daemon is running (state dir {settings.state_dir}, port {settings.port}).\n"
              "Start one with `trawl daemon`, or let trawl-mcp start it.", file=sys.stderr)
        return 1
    try:
        with open_client(settings.state_dir, found, timeout=10.0) as c:
            r = c.get("/v1/status")
            if r.status_code == 401:
                print(f"the daemon at {info.url} refused this user's token (is it another user's daemon?)",
                      file=sys.stderr)
                return 1
            st = r.json()
            link = c.post("/v1/login-code").json()["url"] if args.open else ""
    except httpx.HTTPError as exc:
        print(f"cannot talk to the daemon at {info.url}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(st, indent=2) if args.json else render_text(st))
    if args.open:
        print(f"\nstatus page (one-time link, valid 2 minutes): {link}")
        if not args.no_browser:
            webbrowser.open(link)
    return 0


def _stop(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    grace = settings.shutdown_grace_s
    held = lock_holder(settings.state_dir)  # read from the lock file: works even when the daemon is hung
    found = locate(settings.state_dir, settings.port)
    info = found.daemon
    if info is None or info.pid <= 0:
        if held is not None:
            if not held.ours or not args.force:
                print(f"trawl: {_unanswering(held, settings)}", file=sys.stderr)
                return 1
            return 0 if force_stop(held.pid, grace, print) else 1
        if found.holder is not None:
            print(f"trawl: {found.holder.message()}", file=sys.stderr)
            return 1
        print("no trawl daemon is running.")
        return 0
    ours, why = check_ours(info.pid)  # never signal a pid that is not this user's trawl daemon
    if not ours:
        print(f"trawl: not stopping pid {info.pid}: {why}", file=sys.stderr)
        return 1
    if args.force:
        return 0 if force_stop(info.pid, grace, print) else 1
    os.kill(info.pid, signal.SIGTERM)
    if wait_gone(info.pid, grace + HARD_EXIT_MARGIN_S + 3.0):
        print(f"stopped the trawl daemon (pid {info.pid}).")
        return 0
    print(f"the trawl daemon (pid {info.pid}) did not stop within {grace + HARD_EXIT_MARGIN_S + 3.0:.0f} s. "
          "End it with `trawl stop --force`.", file=sys.stderr)
    return 1


def _unanswering(held: LockHolder, settings: Settings) -> str:
    if held.ours:
        return hung_message(held, settings.state_dir)
    return (f"{held.describe()} holds {settings.state_dir / 'daemon.lock'} but is not your trawl daemon "
            f"({held.why_not}); nothing was sent to it")


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import doctor

    code, text = doctor(Settings.from_env())
    print(text)
    return code


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], *,
                 app_hooks: Sequence[AppHook] = ()) -> None:
    """The daemon's subcommands; ``app_hooks`` are the parts ``trawl daemon`` plugs in (the entry point's choice)."""
    d = sub.add_parser("daemon", help="run the local daemon in the foreground (HTTP API, status page, /mcp)")
    d.add_argument("--port", type=int, default=None,
                   help="port (default: port in ~/.config/trawl/config.toml, TRAWL_PORT, else 8765)")
    d.set_defaults(func=_daemon, app_hooks=list(app_hooks))

    s = sub.add_parser("status", help="show what the daemon is doing")
    s.add_argument("--open", action="store_true", help="print a one-time link to the status page and open it")
    s.add_argument("--no-browser", action="store_true", help="with --open: only print the link")
    s.add_argument("--json", action="store_true", help="print the status as JSON")
    s.set_defaults(func=_status)

    st = sub.add_parser("stop", help="stop the running daemon (in-flight requests finish first)")
    st.add_argument("--force", action="store_true",
                    help="also end a hung daemon: SIGTERM, then SIGKILL if it is still there after the grace period")
    st.set_defaults(func=_stop)

    doc = sub.add_parser("doctor", help="check the installation and say how to fix problems")
    doc.set_defaults(func=_doctor)
