"""The site-policy sync cannot lose the user's lists: descent decides, copies edited apart are merged (deny wins).

Python's rules (``trawl.browser.policy_merge``) and the extension's half (``extension/policy.js``: ``rulesHash``,
``savePolicy``, ``acceptPolicy``, run with node over a storage double) are checked on the same cases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from trawl.browser.policy_merge import merge, reconcile, rules_hash
from trawl.policy import DEFAULT_DENY, SitePolicy

from .test_protocol_contract import _run_node

DEFAULT = SitePolicy()
HAND = SitePolicy(deny=(*DEFAULT_DENY, "bank.example"), revision=5)  # the user's hand edit of the file
BROWSER = SitePolicy(deny=(*DEFAULT_DENY, "mail.example"), revision=9)  # the user's edit in the options page


def test_the_hash_names_the_rules_not_the_clock() -> None:
    assert rules_hash(DEFAULT) == rules_hash(SitePolicy(revision=123))
    assert rules_hash(HAND) != rules_hash(DEFAULT)
    assert rules_hash(SitePolicy(mode="deny_all_except_allowed")) != rules_hash(DEFAULT)
    assert rules_hash(SitePolicy(allow=("a.example",))) != rules_hash(SitePolicy(deny=("a.example",), allow=()))


def test_a_stale_browser_copy_never_replaces_a_hand_edited_file() -> None:
    # The attack: the file was edited by hand while the browser was away; the browser offers its
    # never-edited default with a newer revision (the old options page saved it along with the port).
    stale = SitePolicy(revision=10**13)
    assert reconcile(HAND, stale, rules_hash(DEFAULT), ours_on_file=True) == "keep"
    # ... and a copy from an extension that predates bases (no base) is merged, never taken.
    assert reconcile(HAND, stale, "", ours_on_file=True) == "merge"
    assert set(merge(HAND, stale).deny) >= set(HAND.deny)


@pytest.mark.parametrize(("ours", "theirs", "base", "on_file", "verdict"), [
    (HAND, HAND, rules_hash(HAND), True, "same"),
    (HAND, HAND, "", True, "same"),
    (HAND, BROWSER, rules_hash(HAND), True, "take"),  # edited from the file's version
    (DEFAULT, BROWSER, rules_hash(DEFAULT), False, "take"),  # no file yet: the browser holds the lists
    (DEFAULT, BROWSER, "", False, "take"),
    (HAND, DEFAULT, rules_hash(DEFAULT), True, "keep"),  # unedited since it synced: behind the file
    (HAND, BROWSER, rules_hash(DEFAULT), True, "merge"),  # both edited from the default
    (HAND, BROWSER, "0123456789abcdef", True, "merge"),
])
def test_descent_decides(ours: SitePolicy, theirs: SitePolicy, base: str, on_file: bool, verdict: str) -> None:
    assert reconcile(ours, theirs, base, ours_on_file=on_file) == verdict


def test_merge_keeps_every_denial_and_tightens_the_mode() -> None:
    m = merge(HAND, BROWSER)
    assert m.deny == (*DEFAULT_DENY, "bank.example", "mail.example")
    assert m.mode == "allow_all_except_denied" and m.revision > BROWSER.revision
    for url in ("https://bank.example/", "https://mail.example/", "https://accounts.google.com/"):
        assert not m.decide(url).allowed
    only = SitePolicy(mode="deny_all_except_allowed", allow=("docs.example", "wiki.example"), deny=())
    other = SitePolicy(mode="deny_all_except_allowed", allow=("docs.example", "blog.example"), deny=())
    both = merge(only, other)
    assert both.mode == "deny_all_except_allowed" and both.allow == ("docs.example",)
    one = merge(only, SitePolicy(allow=("blog.example",), deny=("wiki.example",)))
    assert one.mode == "deny_all_except_allowed" and one.allow == only.allow
    assert not one.decide("https://wiki.example/").allowed and not one.decide("https://blog.example/").allowed
    # Neither list is in force: the file's is kept, the browser's extra entries are not slipped in (they would
    # be the list in force after a mode switch, and a list in force vouches for exits).
    assert merge(SitePolicy(allow=("a.example",)), SitePolicy(allow=("b.example",))).allow == ("a.example",)


STORAGE_DOUBLE = """
const store = {};
globalThis.chrome = { storage: { local: {
  get: async (k) => (k in store ? { [k]: structuredClone(store[k]) } : {}),
  set: async (o) => { Object.assign(store, structuredClone(o)); },
} } };
"""


def test_javascript_hash_agrees_with_python(tmp_path: Path) -> None:
    cases = [DEFAULT, HAND, SitePolicy(mode="deny_all_except_allowed", allow=("bücher.example", "docs.rs"), deny=())]
    (tmp_path / "cases.json").write_text(json.dumps([c.to_json() for c in cases]))
    out = _run_node(tmp_path, """
import { rulesHash } from "./policy.mjs";
import { readFileSync } from "node:fs";
const cases = JSON.parse(readFileSync("cases.json", "utf8"));
console.log(JSON.stringify(await Promise.all(cases.map((c) => rulesHash(c)))));
""")
    assert out == [rules_hash(c) for c in cases]


def test_the_extension_keeps_its_unsent_edits_and_saves_only_changes(tmp_path: Path) -> None:
    hand, default = HAND.to_json(), DEFAULT.to_json()
    (tmp_path / "cases.json").write_text(json.dumps({"hand": hand, "default": default,
                                                     "hand_hash": rules_hash(HAND)}))
    out: dict[str, Any] = _run_node(tmp_path, STORAGE_DOUBLE + """
import { acceptPolicy, loadPolicy, rulesHash, savePolicy } from "./policy.mjs";
import { readFileSync } from "node:fs";
const c = JSON.parse(readFileSync("cases.json", "utf8"));
const out = {};
const fresh = await loadPolicy();
out.fresh_unedited = fresh.base === await rulesHash(fresh);
// Saving the page unchanged (a port change) stores nothing.
await savePolicy({ mode: fresh.mode, allow: fresh.allow, deny: fresh.deny }, fresh);
out.stored_after_port_save = "policy" in store;
// The daemon's hand-edited file arrives: an unedited copy takes it.
out.take = await acceptPolicy({ ...c.hand, base: "" });
out.after_take = (await loadPolicy()).deny;
// The user edits the page that still shows the daemon's copy: base = that copy's hash.
const shown = await loadPolicy();
await savePolicy({ ...shown, deny: [...shown.deny, "mail.example"] }, shown);
out.edit_base_is_file = (await loadPolicy()).base === c.hand_hash;
// Before the daemon saw the edit, another file copy arrives naming a copy we no longer hold: ours is kept.
out.resend = await acceptPolicy({ ...c.default, revision: 1, base: c.hand_hash });
out.kept = (await loadPolicy()).deny.includes("mail.example");
// The daemon's answer names our copy (it took or merged it): taken.
const mine = await loadPolicy();
out.merged = await acceptPolicy({ ...mine, deny: [...mine.deny, "bank2.example"], base: await rulesHash(mine) });
out.after_merge = (await loadPolicy()).deny.slice(-2);
// The page was open on an older copy while the storage changed under it: the edit keeps the page's base.
const older = { ...shown };
await savePolicy({ ...older, deny: [...older.deny, "other.example"] }, older);
out.stale_page_base = (await loadPolicy()).base === c.hand_hash;
console.log(JSON.stringify(out));
""")
    assert out["fresh_unedited"] is True
    assert out["stored_after_port_save"] is False
    assert out["take"] == "taken" and out["after_take"] == hand["deny"]
    assert out["edit_base_is_file"] is True
    assert out["resend"] == "resend" and out["kept"] is True
    assert out["merged"] == "taken" and out["after_merge"] == ["mail.example", "bank2.example"]
    assert out["stale_page_base"] is True


@pytest.mark.parametrize(("sender", "base", "valid"), [
    ("extension", "0123456789abcdef", True), ("daemon", "", True), ("extension", None, True),
    ("extension", 12, False), ("daemon", ["x"], False),
])
def test_the_policy_message_carries_an_optional_base(sender: str, base: Any, valid: bool) -> None:
    from trawl.browser import protocol

    msg = {"type": "policy", **DEFAULT.to_json()}
    if base is not None:
        msg["base"] = base
    assert (protocol.check(msg, sender) is None) is valid
