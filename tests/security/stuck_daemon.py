"""``python stuck_daemon.py``: the real ``trawl daemon`` process (``run_daemon``) plus two test-only routes that get
stuck, for the SIGTERM tests (no tests here). Settings come from ``TRAWL_*`` like the real daemon.

* ``GET /test/stuck-loop``: blocks the event loop itself (a synchronous sleep inside the handler);
* ``GET /test/stuck-thread``: waits on an executor thread that never returns.

Each writes ``<state_dir>/stuck-<kind>`` just before it gets stuck, so a test can wait for that instead of sleeping.
"""

from __future__ import annotations

import asyncio
import sys
import time

from aiohttp import web
from trawl.server.runner import run_daemon
from trawl.server.state import STATE
from trawl.settings import Settings


def stuck_routes(app: web.Application) -> None:
    state = app[STATE]

    async def stuck_loop(request: web.Request) -> web.Response:
        (state.settings.state_dir / "stuck-loop").write_text("x")
        time.sleep(3600)  # the whole event loop stops here
        return web.Response(text="never")

    async def stuck_thread(request: web.Request) -> web.Response:
        (state.settings.state_dir / "stuck-thread").write_text("x")
        await asyncio.get_running_loop().run_in_executor(None, time.sleep, 3600)
        return web.Response(text="never")

    app.router.add_get("/test/stuck-loop", stuck_loop)
    app.router.add_get("/test/stuck-thread", stuck_thread)
    state.public_paths.update({"/test/stuck-loop", "/test/stuck-thread"})


if __name__ == "__main__":
    sys.exit(run_daemon(Settings.from_env(), foreground=True, extra_routes=[stuck_routes]))
