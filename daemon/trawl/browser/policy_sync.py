"""Keep the daemon's site-policy file and the extension's copy in step (last writer wins, see ``trawl.policy``).

* The extension sends ``policy`` after it attaches and whenever the user saves its options. A newer revision
  than the file's is written to the file; otherwise the daemon answers with its own copy when they differ.
* The daemon watches the file (its mtime, once a second while a browser is attached) and sends the new copy
  when the user edits it by hand.
* A malformed ``policy`` message is logged and ignored: the file stays as it was.
* Whatever changed the policy (the extension's copy taken, the file edited), the ``changed`` hooks run: the
  reader of open tabs drops what the new policy refuses (browser/preread.py ``on_policy``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ..policy import PolicyStore, SitePolicy, policy_store
from ..types import TrawlError
from .hub import ExtensionHub

log = logging.getLogger("trawl.browser.policy_sync")

WATCH_INTERVAL_S = 1.0


class PolicySync:
    def __init__(self, hub: ExtensionHub, store: PolicyStore) -> None:
        self.hub = hub
        self.store = store
        self.pushes = 0  # copies sent to the extension (for the status page and tests)
        self.taken = 0  # copies taken from the extension
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.changed: list[Callable[[SitePolicy], Awaitable[None]]] = []  # told after every policy change
        hub.frame_handlers["policy"] = self.on_policy
        store.listeners.append(self._file_changed)

    async def on_policy(self, msg: dict[str, Any]) -> None:
        try:
            theirs = SitePolicy.from_json({k: v for k, v in msg.items() if k != "type"})
        except ValueError as exc:
            log.error("the extension sent a site policy trawl cannot use: %s", exc)
            return
        try:
            if self.store.offer(theirs) == "taken":
                self.taken += 1
                await self._tell(theirs)
                return
            ours = self.store.current()
        except (OSError, TrawlError) as exc:
            log.error("site policy sync failed: %s", exc)
            return
        if ours.revision != theirs.revision or not ours.same_rules(theirs):
            await self.push(ours)

    async def push(self, policy: SitePolicy) -> None:
        if await self.hub.notify("policy", **policy.to_json()):
            self.pushes += 1

    async def _tell(self, policy: SitePolicy) -> None:
        for hook in list(self.changed):
            try:
                await hook(policy)
            except Exception:  # one hook must not stop the others (or the sync)
                log.exception("a site policy change hook failed")

    async def _changed_file(self, policy: SitePolicy) -> None:
        await self._tell(policy)
        await self.push(policy)

    def _file_changed(self, policy: SitePolicy) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(lambda: loop.create_task(self._changed_file(policy)))

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            if self.hub.attached:
                with contextlib.suppress(TrawlError):
                    self.store.current()  # re-reads the file when it changed; _file_changed pushes it

    async def start(self, _app: web.Application | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._watch(), name="trawl-policy-watch")

    async def stop(self, _app: web.Application | None = None) -> None:
        if self._file_changed in self.store.listeners:
            self.store.listeners.remove(self._file_changed)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def install_policy_sync(app: web.Application, hub: ExtensionHub) -> PolicySync:
    sync = PolicySync(hub, policy_store(hub.settings))
    app.on_startup.append(sync.start)
    app.on_cleanup.append(sync.stop)
    return sync
