"""A busy daemon is still the bridge's daemon: the stdio bridge must not answer in its own process (splitting the
agent's session, cache and browser link from the daemon's) because the daemon took more than a second to answer
its health probe while it rendered a page on a loaded machine (seen in CI: the first call of a session answered
in-process)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from trawl.server.runner import RunningDaemon

from trawl_mcp.client import ensure_located

from .test_daemon_helpers import daemon_settings


async def test_a_daemon_busy_for_longer_than_the_first_probe_is_found_not_replaced(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path)
    async with RunningDaemon(settings, warm=False) as d:
        bridge = daemon_settings(tmp_path, port=d.port)  # the bridge's view: the same state dir and port
        asyncio.get_running_loop().call_soon(time.sleep, 2.5)  # the daemon's event loop is busy for 2.5 s
        found, reason = await asyncio.to_thread(ensure_located, bridge, autostart=False)
    assert found is not None and found.daemon is not None, reason


async def test_no_daemon_is_said_at_once_when_none_runs(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path)
    async with RunningDaemon(settings, warm=False) as d:
        bridge = daemon_settings(tmp_path, port=d.port)
    # it stopped: nothing listens on its port any more
    t0 = time.monotonic()
    found, reason = await asyncio.to_thread(ensure_located, bridge, autostart=False)
    assert found is None and reason, reason
    assert time.monotonic() - t0 < 5.0  # a dead daemon refuses at once: the busy wait is never spent on it
