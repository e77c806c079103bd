"""Two copies of the user's site policy (the daemon's file, the extension's storage) become one without losing
what the user wrote in either. Pure rules; ``policy_sync.py`` applies them, ``extension/policy.js`` mirrors the
extension's half (the contract test runs both on the same cases).

A copy is named by the hash of its rules (:func:`rules_hash`: mode, allow list, deny list, in order). Each copy
the extension sends carries ``base``: the hash of the version it was edited from, the last one both sides held.
Which copy wins is decided by descent, never by clocks (``revision`` is only the time of the last edit, shown
on the status page):

=================================================  ===========================================================
the extension's copy                               the daemon
=================================================  ===========================================================
has the daemon's rules                             nothing to do (``same``)
descends from the daemon's copy (base = its hash)  takes it: the file is replaced, the old one kept as .bak
the daemon has no file yet (the built-in default)  takes it (the user's lists live only in the browser)
is unedited since it last synced (hash = base)     keeps its own and sends it (``keep``): the browser is behind
anything else: both were edited apart              merges them, deny wins (:func:`merge`), and tells the user
=================================================  ===========================================================

So a hand edit of the file made while the browser was away is never replaced by the browser's stale copy, and
an edit made in the browser while the daemon's file changed is merged into it, not dropped.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from .. import labels
from ..policy import Mode, SitePolicy, now_revision

Verdict = Literal["same", "take", "keep", "merge"]
HASH_HEX = 16  # 64 bits: names a version among the handful one user makes; not a secret


def rules_hash(policy: SitePolicy) -> str:
    """The version's name: sha256 of ``[mode, allow, deny]`` as compact JSON (policy.js ``rulesHash``)."""
    blob = json.dumps([policy.mode, list(policy.allow), list(policy.deny)], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_HEX]


def reconcile(ours: SitePolicy, theirs: SitePolicy, base: str, *, ours_on_file: bool) -> Verdict:
    """What the daemon (holding ``ours``) does with the extension's copy ``theirs`` edited from ``base``."""
    if ours.same_rules(theirs):
        return "same"
    if not ours_on_file or base == rules_hash(ours):
        return "take"
    if base == rules_hash(theirs):
        return "keep"
    return "merge"


def merge(ours: SitePolicy, theirs: SitePolicy) -> SitePolicy:
    """Both copies were edited apart: nothing either denies becomes readable.

    * deny: every pattern of both lists (ours first);
    * mode: "only the allow list" when either copy uses it;
    * allow: when both copies read only their allow lists, a site stays allowed only if both allow it; when one
      does, its list (the other copy's allow list was not in force); when neither does, the daemon's file's list.
      A list that is not in force means nothing today, but it becomes the list in force the day the user
      switches the mode, and a site policy allow list in force vouches for exits (``exits.allowed_host``): so an
      entry that only the other copy held is never added silently. :func:`describe_merge` names what was left out.
    """
    deny = tuple(dict.fromkeys((*ours.deny, *theirs.deny)))
    strict = [p for p in (ours, theirs) if p.mode == "deny_all_except_allowed"]
    if len(strict) == 2:
        theirs_allow = set(theirs.allow)
        allow = tuple(p for p in ours.allow if p in theirs_allow)
    elif strict:
        allow = strict[0].allow
    else:
        allow = ours.allow
    mode: Mode = "deny_all_except_allowed" if strict else "allow_all_except_denied"
    return SitePolicy(mode=mode, allow=allow, deny=deny, revision=max(now_revision(), ours.revision + 1,
                                                                      theirs.revision + 1))


def describe_merge(ours: SitePolicy, theirs: SitePolicy, merged: SitePolicy) -> str:
    """One line for the log, the popup and the status page: what the merge changed for each side."""
    parts = []
    added_to_file = [p for p in merged.deny if p not in ours.deny]
    added_to_browser = [p for p in merged.deny if p not in theirs.deny]
    if added_to_file:
        parts.append(f"denied from the browser's copy: {', '.join(added_to_file[:10])}")
    if added_to_browser:
        parts.append(f"denied from the daemon's file: {', '.join(added_to_browser[:10])}")
    dropped = list(dict.fromkeys(p for p in (*ours.allow, *theirs.allow) if p not in merged.allow))
    if merged.mode == "deny_all_except_allowed" and dropped:
        parts.append(f"no longer allowed until you allow them again: {', '.join(dropped[:10])}")
    elif dropped:
        parts.append(f"allow entries only the browser's copy had were not merged (they decide nothing in this "
                     f"mode; add them again if you meant them): {', '.join(dropped[:10])}")
    if ours.mode != theirs.mode:
        parts.append(f"site policy: {labels.policy_mode(merged.mode).lower()}")
    return "; ".join(parts) or "the two copies differed only in order"
