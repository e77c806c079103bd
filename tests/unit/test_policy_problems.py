"""A site-policy entry that can match nothing is named when the daemon reads the file (the options page names it
when it is saved: tests/security/test_policy_sync.py; both halves on one table: test_address_forms.py)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from trawl.policy import policy_path, policy_store
from trawl.settings import Settings


def test_the_daemon_logs_an_entry_that_can_match_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(state_dir=tmp_path)
    path = policy_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"deny": ["bank.com:x", "example.org:443"], "revision": 1}))
    with caplog.at_level(logging.WARNING, logger="trawl.policy"):
        policy = policy_store(settings).current()
    assert policy.deny == ("bank.com:x", "example.org:443")  # kept: the user's list, as written
    logged = [r.getMessage() for r in caplog.records if "matches nothing" in r.getMessage()]
    assert len(logged) == 1 and "bank.com:x" in logged[0], logged
