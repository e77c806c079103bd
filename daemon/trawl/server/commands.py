"""The daemon-related ``trawl`` subcommands: daemon, status, stop, doctor (wired in ``trawl.cli``)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import webbrowser

import httpx

from ..settings import Settings
from .discovery import locate, open_client, probe


def _daemon(args: argparse.Namespace) -> int:
    from .runner import run_daemon

    settings = Settings.from_env()
    if args.port is not None:
        settings = settings.with_(port=args.port)
    return run_daemon(settings, foreground=True)


def _status(args: argparse.Namespace) -> int:
    from .status import render_text

    settings = Settings.from_env()
    found = locate(settings.state_dir, settings.port)
    info = found.daemon
    if info is None:
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
    found = locate(settings.state_dir, settings.port)
    info = found.daemon
    if info is None or info.pid <= 0:
        if found.holder is not None:
            print(f"trawl: {found.holder.message()}", file=sys.stderr)
            return 1
        print("no trawl daemon is running.")
        return 0
    os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + settings.shutdown_grace_s + 5.0
    while time.monotonic() < deadline:
        if probe(info.port, timeout=0.3) is None:
            print(f"stopped the trawl daemon (pid {info.pid}).")
            return 0
        time.sleep(0.1)
    print(f"the daemon (pid {info.pid}) did not stop in time.", file=sys.stderr)
    return 1


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import doctor

    code, text = doctor(Settings.from_env())
    print(text)
    return code


def _pair(args: argparse.Namespace) -> int:
    from ..browser.pairing import main as pair_main

    return pair_main()


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser("daemon", help="run the local daemon in the foreground (HTTP API, status page, /mcp)")
    d.add_argument("--port", type=int, default=None, help="port (default 8765 or TRAWL_PORT)")
    d.set_defaults(func=_daemon)

    s = sub.add_parser("status", help="show what the daemon is doing")
    s.add_argument("--open", action="store_true", help="print a one-time link to the status page and open it")
    s.add_argument("--no-browser", action="store_true", help="with --open: only print the link")
    s.add_argument("--json", action="store_true", help="print the status as JSON")
    s.set_defaults(func=_status)

    st = sub.add_parser("stop", help="stop the running daemon (in-flight requests finish first)")
    st.set_defaults(func=_stop)

    doc = sub.add_parser("doctor", help="check the installation and say how to fix problems")
    doc.set_defaults(func=_doctor)

    pr = sub.add_parser("pair", help="print a one-time code that pairs the browser extension with this daemon")
    pr.set_defaults(func=_pair)
