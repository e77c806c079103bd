"""The site policy is one policy: the extension's options page and the daemon's file stay in step, both ways.

Real Chromium with the real extension, a real daemon; descent decides, copies edited apart are merged with deny
winning (see ``trawl.browser.policy_merge``). Each test
ends with the attack the policy exists for: the denied site read through plain HTTP, which must be refused
with no fallback and without the site ever being contacted.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from trawl.browser import PINNED_EXTENSION_ID
from trawl.policy import now_revision, policy_path
from trawl.types import ErrorCode

from tests.e2e.conftest import Linked, LocalSite, close_linked, deny_in_options, e2e_settings, launch_linked, page_until

from .test_private_hosts import SPELLINGS, html

pytestmark = pytest.mark.e2e
SECRET = "Statement: the joint account holds 12,940 euros."


T = TypeVar("T")


async def until(what: str, probe: Callable[[], Awaitable[T | None]], deadline_s: float = 20.0) -> T:
    """Wait for ``probe`` to return something truthy (a condition with a deadline, not a sleep)."""
    end = time.monotonic() + deadline_s
    last: T | None = None
    while time.monotonic() < end:
        last = await probe()
        if last:
            return last
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


async def extension_policy(linked: Linked) -> dict[str, Any]:
    worker = await linked.worker()
    stored = await worker.evaluate("chrome.storage.local.get('policy')")
    policy: dict[str, Any] = stored.get("policy") or {}
    return policy


@pytest.fixture
async def bank() -> Any:
    s = await LocalSite().start()
    s.add("/statement", html("Statement", f"<p>{SECRET}</p><p>Your last three transfers went to the landlord, "
                                          "the grocer and the sailing club, all on time this month.</p>"))
    yield s
    await s.stop()


async def test_options_page_edit_reaches_the_daemon_and_binds_plain_http(
    tmp_path: Path, chromium: str, bank: LocalSite
) -> None:
    linked = await launch_linked(tmp_path, chromium)
    try:
        assert await linked.hub.wait_attached(15), linked.hub.describe()
        url = bank.url("/statement")
        before = await linked.engine.fetch(url, "account", source="http")
        assert before.ok, before.error
        bank.hits.clear()

        pattern = f"127.0.0.1:{bank.port}"
        await deny_in_options(linked, f"mail.example.com\n{pattern}")
        path = policy_path(linked.settings)

        async def daemon_has_it() -> dict[str, Any] | None:
            if not path.exists():
                return None
            data: dict[str, Any] = json.loads(path.read_text())
            return data if pattern in data.get("deny", []) else None

        data = await until("the daemon's policy file to take the extension's edit", daemon_has_it)
        assert data["revision"] == (await extension_policy(linked))["revision"] > 0

        # Plain HTTP, the headless browser and the default plan: refused, final, the bank never contacted.
        for source in ("http", "playwright", None):
            res = await linked.engine.fetch(url, "account", source=source, max_age_s=0)
            assert res.error is not None and res.error.code == ErrorCode.BLOCKED_BY_POLICY, res
            assert pattern in res.error.message and not res.chunks
        assert bank.hits.get("/statement", 0) == 0
    finally:
        await close_linked(linked)


async def test_daemon_file_wins_when_newer_and_edits_are_pushed_to_the_browser(
    tmp_path: Path, chromium: str, bank: LocalSite
) -> None:
    settings = e2e_settings(tmp_path)
    path = policy_path(settings)
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    # Newer than the extension's never-edited default (revision 0): the extension must adopt it on attach.
    path.write_text(json.dumps({"mode": "allow_all_except_denied", "allow": [], "deny": ["first.example"],
                                "revision": now_revision()}))
    linked = await launch_linked(tmp_path, chromium, settings=settings)
    try:
        assert await linked.hub.wait_attached(15), linked.hub.describe()

        async def ext_denies(pattern: str) -> Callable[[], Awaitable[dict[str, Any] | None]]:
            async def probe() -> dict[str, Any] | None:
                policy = await extension_policy(linked)
                return policy if pattern in policy.get("deny", []) else None
            return probe

        await until("the extension to adopt the daemon's newer file", await ext_denies("first.example"))

        # The user edits the file by hand while the browser is attached: the daemon pushes it.
        pattern = f"127.0.0.1:{bank.port}"
        path.write_text(json.dumps({"deny": ["first.example", pattern], "revision": now_revision()}))
        pushed = await until("the daemon to push the hand edit", await ext_denies(pattern))
        assert pushed["deny"] == ["first.example", pattern]
        # The extension now refuses on its own too: reading the open tab is refused by both sides.
        tab = await linked.open_tab(bank.url("/statement"))
        for other in linked.context.pages:
            if other is not tab:
                await other.close()
        await tab.bring_to_front()
        res = await linked.engine.fetch("tab:active", "account")
        assert res.error is not None and res.error.code == ErrorCode.BLOCKED_BY_POLICY, res
        await tab.close()
        options = await linked.context.new_page()
        await options.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/options/options.html")
        # The page fills its form from storage after it loads: wait for the pattern to show (fails after 30 s).
        await page_until(options, "(p) => document.querySelector('#deny').value.includes(p)", pattern)
        await options.close()
        hits = bank.hits.get("/statement", 0)
        res = await linked.engine.fetch(bank.url("/statement"), "account", source="http")
        assert res.error is not None and res.error.code == ErrorCode.BLOCKED_BY_POLICY
        assert bank.hits.get("/statement", 0) == hits  # plain HTTP never contacted it
    finally:
        await close_linked(linked)


async def test_a_copy_edited_apart_in_the_browser_is_merged_not_taken_over_the_file(
    tmp_path: Path, chromium: str
) -> None:
    settings = e2e_settings(tmp_path)
    path = policy_path(settings)
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    rev = now_revision()
    path.write_text(json.dumps({"deny": ["kept.example"], "revision": rev}))
    linked = await launch_linked(tmp_path, chromium, settings=settings)
    try:
        assert await linked.hub.wait_attached(15)

        async def adopted() -> dict[str, Any] | None:
            policy = await extension_policy(linked)
            return policy if policy.get("deny") == ["kept.example"] else None

        # The attach exchange ends first (the extension adopts the file, as it does for a never-edited copy), so
        # the copy stored below meets a settled file: this test is about the merge, not the attach exchange.
        await until("the extension to adopt the daemon's file on attach", adopted)
        worker = await linked.worker()
        # A copy that does not descend from the file arrives from the browser (a second profile that was offline,
        # stored before copies carried a base), with a newer clock: neither side's list is dropped.
        await worker.evaluate("""(rev) => chrome.storage.local.set({policy: {mode: 'allow_all_except_denied',
            allow: [], deny: ['stale.example'], revision: rev}})""", rev + 60_000)

        async def merged() -> dict[str, Any] | None:
            policy = await extension_policy(linked)
            return policy if policy.get("deny") == ["kept.example", "stale.example"] else None

        await until("the daemon to merge the two copies and send the result", merged)
        assert json.loads(path.read_text())["deny"] == ["kept.example", "stale.example"]
        assert json.loads(Path(str(path) + ".bak").read_text())["deny"] == ["kept.example"]
    finally:
        await close_linked(linked)


async def test_an_edit_typed_and_saved_before_the_options_page_read_storage_is_kept(
    tmp_path: Path, chromium: str
) -> None:
    # A slow load (a busy machine) fills the form after the user typed and pressed Save: the typing is saved and
    # stays on the page; the load does not put the stored copy back over it.
    linked = await launch_linked(tmp_path, chromium)
    try:
        assert await linked.hub.wait_attached(15), linked.hub.describe()
        options = await linked.context.new_page()
        # The page's reads of storage answer 1.5 s late (the page's own world; the extension itself is unchanged).
        await options.add_init_script("""(() => {
            const area = chrome.storage.local, get = area.get.bind(area);
            area.get = (...a) => new Promise((r) => setTimeout(r, 1500)).then(() => get(...a));
        })()""")
        await options.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/options/options.html")
        await options.fill("#deny", "typed-early.example")
        await options.click("#save")
        await options.wait_for_selector("#saved:has-text('Saved')")
        await page_until(options, "() => document.getElementById('port').value !== ''")  # the page's load is done
        assert await options.evaluate("document.getElementById('deny').value") == "typed-early.example"
        await options.close()
        policy = await until("the typed edit stored", lambda: _denies(linked, "typed-early.example"))
        assert policy["deny"] == ["typed-early.example"]
    finally:
        await close_linked(linked)


async def _denies(linked: Linked, pattern: str) -> dict[str, Any] | None:
    policy = await extension_policy(linked)
    return policy if pattern in policy.get("deny", []) else None


async def test_the_daemon_checks_the_url_of_the_document_the_browser_captured(
    tmp_path: Path, chromium: str, bank: LocalSite
) -> None:
    # "tab:active" names no URL the daemon could check up front: the document the extension captured is
    # checked when it arrives. Loopback is closed here (a rule only the daemon has), so the capture is refused.
    settings = e2e_settings(tmp_path, allow_private_hosts="none")
    linked = await launch_linked(tmp_path, chromium, settings=settings)
    try:
        assert await linked.hub.wait_attached(15), linked.hub.describe()
        tab = await linked.open_tab(bank.url("/statement"))
        for other in linked.context.pages:
            if other is not tab:
                await other.close()
        await tab.bring_to_front()
        res = await linked.engine.fetch("tab:active", "account")
        assert res.error is not None and res.error.code == ErrorCode.BLOCKED_BY_POLICY, res
        assert "private-network rule" in res.error.message and not res.chunks
        assert linked.hub.captures[0].outcome == "ok"  # the extension did capture it: the daemon refused it
    finally:
        await close_linked(linked)


async def test_every_loopback_spelling_is_refused_through_the_extension_too(
    tmp_path: Path, chromium: str, bank: LocalSite
) -> None:
    settings = e2e_settings(tmp_path, allow_private_hosts="none")
    linked = await launch_linked(tmp_path, chromium, settings=settings)
    try:
        assert await linked.hub.wait_attached(15), linked.hub.describe()
        for spelling in SPELLINGS:
            url = f"http://{spelling}:{bank.port}/statement"
            for source in ("extension", None):
                res = await linked.engine.fetch(url, "account", source=source, max_age_s=0)
                assert res.error is not None and res.error.code == ErrorCode.BLOCKED_BY_POLICY, (spelling, res)
                assert "private-network rule" in res.error.message and not res.chunks
        assert not linked.hub.captures, "the browser was asked to open a private address"
        assert bank.hits.get("/statement", 0) == 0
    finally:
        await close_linked(linked)


# --------------------------------------------------------------------------- the user's lists are never lost
def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _launch_on_wrong_port(tmp_path: Path, chromium: str, settings: Any) -> Linked:
    """The README's first hour: the daemon runs on a port the extension does not know yet (TRAWL_PORT)."""
    from playwright.async_api import async_playwright
    from trawl.browser.pairing import new_pair_code

    from tests.e2e.conftest import BROWSER_FLAGS, copy_extension, start_daemon

    daemon, hub = await start_daemon(settings)
    ext = copy_extension(tmp_path / "ext", _closed_port(), new_pair_code(settings.state_dir))
    pw = await async_playwright().start()
    context = await pw.chromium.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=chromium, headless=True, timeout=30_000,
        args=[*BROWSER_FLAGS, f"--disable-extensions-except={ext}", f"--load-extension={ext}"])
    linked = Linked(daemon=daemon, hub=hub, context=context, ext_dir=ext, settings=settings)
    linked.extras["pw"] = pw
    return linked


async def _save_port_in_options(linked: Linked, port: int, deny: str | None = None) -> None:
    options = await linked.context.new_page()
    await options.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/options/options.html")
    await page_until(options, "() => document.getElementById('deny').value.length > 0")
    if deny is not None:
        await options.fill("#deny", deny)
    await options.fill("#port", str(port))
    await options.click("#save")
    await options.wait_for_selector("#saved:has-text('Saved')")
    await options.close()


@pytest.mark.parametrize("also_edit_the_page", [False, True], ids=["port-only", "page-edited-too"])
async def test_a_hand_edited_deny_list_survives_the_options_page_save(
    tmp_path: Path, chromium: str, bank: LocalSite, also_edit_the_page: bool
) -> None:
    # Issue 23 item 8: the user hand-edits the daemon's file (no revision, as a person writes it) while the
    # browser cannot reach the daemon, then sets the port on the options page and presses its one Save.
    settings = e2e_settings(tmp_path)
    path = policy_path(settings)
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    pattern = f"127.0.0.1:{bank.port}"
    hand = {"mode": "allow_all_except_denied", "allow": ["docs.example"], "deny": ["accounts.google.com", pattern]}
    path.write_text(json.dumps(hand, indent=2))
    linked = await _launch_on_wrong_port(tmp_path, chromium, settings)
    try:
        await linked.worker()
        page_deny = "accounts.google.com\nmail.example.com" if also_edit_the_page else None
        await _save_port_in_options(linked, linked.daemon.port, page_deny)
        assert await linked.hub.wait_attached(15), linked.hub.describe()

        wanted = {pattern, "mail.example.com"} if also_edit_the_page else {pattern}

        async def both_deny() -> dict[str, Any] | None:
            policy = await extension_policy(linked)
            return policy if wanted <= set(policy.get("deny", [])) else None

        got = await until("the extension to hold the hand-edited deny list", both_deny)
        on_file = json.loads(path.read_text())
        assert pattern in on_file["deny"] and "accounts.google.com" in on_file["deny"]
        if also_edit_the_page:
            # Both were edited apart: merged, deny wins, the user told; the hand edit kept as the backup.
            assert "mail.example.com" in on_file["deny"] and "mail.example.com" in got["deny"]
            assert on_file["allow"] == ["docs.example"]
            assert json.loads(Path(str(path) + ".bak").read_text())["deny"] == hand["deny"]
            worker = await linked.worker()

            async def told() -> list[Any] | None:
                recent = (await worker.evaluate("chrome.storage.session.get('recent')")).get("recent") or []
                return [e for e in recent if e.get("code") == "policy_merged"] or None

            notes = await until("the popup log to say the policy was merged", told)
            assert pattern in notes[0]["what"] or "mail.example.com" in notes[0]["what"]
            # ... and the status page says so too.
            async with httpx.AsyncClient(base_url=linked.daemon.url,
                                         headers={"Authorization": f"Bearer {linked.daemon.token}"}) as c:
                sync = (await c.get("/v1/status")).json()["browser"]["policy_sync"]
            assert sync["merges"] == 1 and "mail.example.com" in sync["last_merge"], sync
            assert sync["backup"] == str(path) + ".bak"
        else:
            # Nothing was edited in the browser: the file is untouched and the browser adopted it.
            assert on_file == hand and got["deny"] == hand["deny"]
        url = bank.url("/statement")
        for source in ("http", "extension", None):
            res = await linked.engine.fetch(url, "account", source=source, max_age_s=0)
            assert res.error is not None and res.error.code == ErrorCode.BLOCKED_BY_POLICY, (source, res)
            assert not res.chunks
        assert bank.hits.get("/statement", 0) == 0
    finally:
        await close_linked(linked)


async def test_the_options_page_names_an_entry_that_can_match_nothing(tmp_path: Path, chromium: str) -> None:
    """A deny entry with a port that is no number (``bank.com:x``) denies nothing: saved as typed, the page said
    "Saved." and the user believed the site denied. It must say which entries match nothing, and the daemon's log
    too when it reads them."""
    settings = e2e_settings(tmp_path)
    linked = await launch_linked(tmp_path, chromium, settings=settings)
    try:
        assert await linked.hub.wait_attached(15), linked.hub.describe()
        options = await linked.context.new_page()
        await options.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/options/options.html")
        await page_until(options, "() => document.getElementById('port').value !== ''")  # the page's load is done
        await options.fill("#deny", "bank.com:x\nexample.org:443")
        await options.click("#save")
        await options.wait_for_selector("#saved:has-text('Saved')")
        said = await options.evaluate("document.getElementById('saved').textContent")
        assert "match nothing" in said and "bank.com:x" in said and "example.org" not in said, said
        await options.close()
    finally:
        await close_linked(linked)
