"""``trawl-mcp``: the stdio MCP server users put in their client config.

It serves trawl's tools over stdio and forwards every call to the user's trawl
daemon (starting the daemon in the background when none runs). If no daemon can
be started it answers in-process and says so in each result. Which daemon: the
user's config file (``~/.config/trawl/config.toml``: ``port``, ``state_dir``),
which MCP clients cannot keep from it, then any ``TRAWL_*`` variables the client
passes; when the user runs a daemon with other settings, the bridge says so (on
stderr, in its MCP instructions and in its first result). ``--no-start`` never
starts one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys

from trawl.settings import Settings, SettingsError


async def _serve(settings: Settings, autostart: bool) -> None:
    from trawl.capabilities import catalog
    from trawl.capabilities.mcp import build_server

    from .client import DaemonBackend, daemon_notice, port_warning

    if held := port_warning(settings):  # another user holds the daemon's port: say so now (nothing is sent)
        logging.getLogger("trawl.mcp").warning("%s", held)
    notice = daemon_notice(settings, autostart=autostart)
    if notice:  # the user runs a daemon these settings do not point at
        logging.getLogger("trawl.mcp").warning("%s", notice)
    registry = catalog()
    backend = DaemonBackend(settings, autostart=autostart, registry=registry, notice=notice, own_session=True)
    server = build_server(registry, backend, notice=notice)
    try:
        await server.run_stdio_async()
    finally:
        await backend.aclose()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="trawl-mcp", description="trawl's MCP server over stdio (forwards to the daemon).")
    p.add_argument("--no-start", action="store_true", help="do not start a daemon; answer in-process if none runs")
    p.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = p.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="trawl-mcp %(levelname)s %(name)s: %(message)s")
    try:
        settings = Settings.from_env()
    except SettingsError as exc:  # a bad TRAWL_* variable: say which, no traceback
        sys.exit(f"trawl-mcp: {exc}")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(settings, autostart=not args.no_start))


if __name__ == "__main__":
    main()
