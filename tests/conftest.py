"""Shared fixtures: settings that never touch the user's home directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from trawl import Settings

ROOT = Path(__file__).resolve().parent.parent
DEMO_PAGE = ROOT / "daemon" / "trawl" / "data" / "demo.html"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state")
