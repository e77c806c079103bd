"""``python -m trawl.server [--background]``: run the daemon (what ``trawl daemon`` and trawl-mcp start).

An entry point: it composes the daemon from its parts (the server plus the browser link); nothing imports it.
"""

from __future__ import annotations

import argparse
import sys

from ..browser import browser_link
from ..settings import Settings, SettingsError
from .runner import run_daemon


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m trawl.server", description="Run the trawl daemon.")
    p.add_argument("--background", action="store_true", help="log to the state directory only (no stderr)")
    p.add_argument("--port", type=int, default=None, help="port (default: settings / TRAWL_PORT)")
    args = p.parse_args(argv)
    try:
        settings = Settings.from_env()
    except SettingsError as exc:  # a bad TRAWL_* variable: say which, no traceback
        print(f"trawl daemon: {exc}", file=sys.stderr)
        return 2
    if args.port is not None:
        settings = settings.with_(port=args.port)
    return run_daemon(settings, foreground=not args.background, extra_routes=[browser_link])


if __name__ == "__main__":
    sys.exit(main())
