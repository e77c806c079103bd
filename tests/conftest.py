"""Shared fixtures: settings that never touch the user's home directory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from trawl import Settings
from trawl.chromium import find_chromium
from trawl.exitflow import end_call

ROOT = Path(__file__).resolve().parent.parent
# The developer's own ~/.config/trawl/config.toml stays out of the tests and the processes they start (a test that
# means to read a config file gives its own HOME or TRAWL_CONFIG).
os.environ.setdefault("TRAWL_CONFIG", os.devnull)
# Daemons this session starts leave their notes (trawl.channel.running) in a folder of its own, so a bridge or
# `trawl doctor` under test never hears of another session's daemons.
os.environ.setdefault("TRAWL_RUNNING_DIR", tempfile.mkdtemp(prefix="trawl-running-"))
SESSION_RUNNING_DIR = os.environ["TRAWL_RUNNING_DIR"]  # every xdist worker's: each test gets its own (below)
# The static table's distillation (retrieve/static.py, ~6 CPU-minutes; off by default too) never starts under
# the tests, nor in the daemons they start: tests of the table build a small one and name it.
os.environ.setdefault("TRAWL_STATIC_TABLE", "off")
DEMO_PAGE = ROOT / "daemon" / "trawl" / "data" / "demo.html"


@pytest.fixture(autouse=True)
def _running_dir_of_this_test(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's daemons leave their notes in a folder of that test's own (``TRAWL_RUNNING_DIR``, the seam
    ``trawl.channel.running`` reads at every call; processes the test starts inherit it). The session's folder above
    is shared by every xdist worker (they inherit the controller's environment), so a bridge under test heard of
    another worker's daemon (test_slowloris's) and said it would answer in its own process."""
    monkeypatch.setenv("TRAWL_RUNNING_DIR", str(tmp_path_factory.mktemp("running")))


@pytest.fixture(autouse=True)
def _no_exit_call_record_left_behind() -> object:
    """A test that began an agent call by hand (``guard.begin_read()``, not through a face) ends it, so pages served
    to later tests in this process are not counted as that call's reads."""
    yield
    end_call()


@pytest.fixture(scope="session")
def chromium() -> str:
    """The system Chromium for the browser tests: missing fails under CI=true, skips elsewhere."""
    path = find_chromium(None)
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("Chromium is required for the browser tests under CI=true (apt-get install -y chromium)")
        pytest.skip("Chromium not found (apt-get install -y chromium, or set TRAWL_CHROMIUM_PATH)")
    return path


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state")
