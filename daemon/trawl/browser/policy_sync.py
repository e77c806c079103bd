"""Keep the daemon's site-policy file and the extension's copy in step, without ever losing the user's lists.

* The extension sends ``policy`` (its rules and ``base``, the hash of the version it edited) after it attaches
  and whenever the user saves its options. ``policy_merge.reconcile`` decides by descent: the daemon takes a copy
  that descends from its own, keeps its own against a copy that is merely behind, and merges two copies edited
  apart (deny wins), logging a warning and telling the user in the extension's popup (a ``notice``) and on the
  status page. Every write keeps the file's previous version next to it (``site-policy.json.bak``).
* Every answer the daemon sends carries as ``base`` the hash of the extension's copy it has seen, so the
  extension adopts it only when it holds that copy or has no edits of its own (policy.js ``acceptPolicy``).
* The daemon watches the file (its mtime, once a second while a browser is attached) and sends the new copy
  when the user edits it by hand.
* A malformed ``policy`` message is logged and ignored: the file stays as it was.
* Whatever changed the policy (the extension's copy taken or merged, the file edited), the ``changed`` hooks run:
  the reader of open tabs drops what the new policy refuses (browser/preread.py ``on_policy``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from ..atomicfile import write_atomic
from ..policy import PolicyStore, SitePolicy, policy_store
from ..types import TrawlError
from .hub import ExtensionHub
from .policy_merge import describe_merge, merge, reconcile, rules_hash

log = logging.getLogger("trawl.browser.policy_sync")

WATCH_INTERVAL_S = 1.0
BACKUP_SUFFIX = ".bak"


class PolicySync:
    def __init__(self, hub: ExtensionHub, store: PolicyStore) -> None:
        self.hub = hub
        self.store = store
        self.pushes = 0  # copies sent to the extension (for the status page and tests)
        self.taken = 0  # copies taken from the extension
        self.merges = 0  # copies merged with the file because both were edited apart
        self.last_merge = ""  # what the last merge did, for the status page
        self.seen = ""  # hash of the extension's copy last received: the ``base`` of every copy sent
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.changed: list[Callable[[SitePolicy], Awaitable[None]]] = []  # told after every policy change
        hub.frame_handlers["policy"] = self.on_policy
        store.listeners.append(self._file_changed)

    async def on_policy(self, msg: dict[str, Any]) -> None:
        try:
            theirs = SitePolicy.from_json({k: v for k, v in msg.items() if k not in ("type", "base")})
        except ValueError as exc:
            log.error("the extension sent a site policy trawl cannot use: %s", exc)
            return
        raw_base = msg.get("base")
        base = raw_base if isinstance(raw_base, str) else ""
        try:
            ours = self.store.current()
            verdict = reconcile(ours, theirs, base, ours_on_file=self.store.path.exists())
            self.seen = rules_hash(theirs)
            if verdict == "same":
                if base != self.seen:
                    await self.push(ours)  # the extension marks its copy as synced
                return
            if verdict == "keep":
                log.info("the extension's site policy is behind the daemon's file; sending the file's copy")
                await self.push(ours)
                return
            if verdict == "take":
                self.save(theirs)
                self.taken += 1
                log.info("site policy updated from the extension (it was edited from the daemon's copy)")
                await self._tell(theirs)
                await self.push(theirs)
                return
            merged = merge(ours, theirs)
            if ours.same_rules(merged):
                # The copy adds nothing to the file (it was merged already and arrived again): no new merge.
                await self.push(ours)
                return
            self.save(merged)
        except (OSError, TrawlError) as exc:
            log.error("site policy sync failed: %s", exc)
            return
        self.merges += 1
        self.last_merge = describe_merge(ours, theirs, merged)
        log.warning("the site policy was edited both in %s and in the browser: merged them, deny wins (%s); the "
                    "file's previous version is in %s", self.store.path, self.last_merge, self.backup_path)
        await self._tell(merged)
        await self.push(merged)
        await self.hub.notify("notice", code="policy_merged", what="site policy merged",
                              detail=f"edited in the browser and in {self.store.path.name}: kept both, deny wins "
                                     f"({self.last_merge})")

    @property
    def backup_path(self) -> Path:
        return self.store.path.with_name(self.store.path.name + BACKUP_SUFFIX)

    def save(self, policy: SitePolicy) -> None:
        """Write ``policy``, keeping the file's previous version (as it is on disk) in ``<file>.bak``. Called only
        with rules the file does not hold (``on_policy``), so the backup is the version before a change."""
        with contextlib.suppress(FileNotFoundError):
            write_atomic(self.backup_path, self.store.path.read_bytes())
        self.store.save(policy)

    async def push(self, policy: SitePolicy) -> None:
        if await self.hub.notify("policy", **policy.to_json(), base=self.seen):
            self.pushes += 1

    def describe(self) -> dict[str, Any]:
        return {"pushes": self.pushes, "taken": self.taken, "merges": self.merges, "last_merge": self.last_merge,
                "backup": str(self.backup_path)}

    async def _tell(self, policy: SitePolicy) -> None:
        for hook in list(self.changed):
            try:
                await hook(policy)
            except Exception:  # one hook must not stop the others (or the sync)
                log.exception("a site policy change hook failed")

    async def _changed_file(self, _policy: SitePolicy) -> None:
        # Runs a moment after the file was read: send what is in force now, never the copy the listener saw (a
        # sync may have written a newer one meanwhile, and a stale push would make the browser adopt it).
        try:
            policy = self.store.current()
        except TrawlError:
            return
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
