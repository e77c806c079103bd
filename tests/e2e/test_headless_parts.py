"""Parts of the headless fallback that need no browser: finding Chromium, per-host settle ceilings, routing."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from trawl import ErrorCode, TrawlError
from trawl.chromium import candidates, describe, find_chromium, require_chromium
from trawl.settings import Settings
from trawl.sources.base import FetchRequest
from trawl.sources.playwright import PlaywrightSource, SettleStats
from trawl.sources.router import Router, default_sources


def _fake_binary(path: Path) -> Path:
    path.write_text("#!/bin/sh\necho 'Chromium 999.0.0.0'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_configured_path_wins(tmp_path: Path) -> None:
    fake = _fake_binary(tmp_path / "my-chromium")
    settings = Settings(chromium_path=str(fake))
    assert find_chromium(settings) == str(fake)
    info = describe(settings)
    assert info is not None and info.how == "setting" and info.version == "Chromium 999.0.0.0"


def test_configured_but_missing_is_an_error_not_a_silent_fallback(tmp_path: Path) -> None:
    settings = Settings(chromium_path=str(tmp_path / "nope"))
    assert find_chromium(settings) is None
    with pytest.raises(TrawlError) as info:
        require_chromium(settings)
    assert info.value.code == ErrorCode.BROWSER_UNAVAILABLE
    assert info.value.hint and "TRAWL_CHROMIUM_PATH" in info.value.hint


def test_not_executable_is_not_usable(tmp_path: Path) -> None:
    plain = tmp_path / "chromium"
    plain.write_text("not a program")
    os.chmod(plain, 0o644)
    assert find_chromium(Settings(chromium_path=str(plain))) is None


def test_search_order_prefers_the_real_debian_binary() -> None:
    order = [where for where, _how in candidates(Settings())]
    assert order.index("/usr/lib/chromium/chromium") < order.index("/usr/bin/chromium")
    assert {"chromium", "chromium-browser", "google-chrome"} <= set(order)


async def test_missing_browser_gives_browser_unavailable(tmp_path: Path) -> None:
    settings = Settings(chromium_path=str(tmp_path / "nope"), cache_dir=tmp_path, state_dir=tmp_path)
    source = PlaywrightSource(settings)
    with pytest.raises(TrawlError) as info:
        await source.fetch(FetchRequest("http://127.0.0.1:9/"), settings)
    assert info.value.code == ErrorCode.BROWSER_UNAVAILABLE
    await source.aclose()


def test_accepts_http_only() -> None:
    source = PlaywrightSource(Settings())
    assert source.accepts(FetchRequest("https://example.org/a"))
    assert source.accepts(FetchRequest("http://127.0.0.1:8000/"))
    for target in ("/tmp/page.html", "file:///tmp/x.html", "tab:active", "ftp://example.org/", "data:text/html,x"):
        assert source.accepts(FetchRequest(target)) is None


def test_default_order_puts_the_browser_after_http() -> None:
    router = Router(default_sources(Settings()))
    names = [s.name for s, _ in router.plan(FetchRequest("https://example.org/"))]
    assert names.index("http") < names.index("playwright")
    assert names[-1] == "playwright"
    forced = router.plan(FetchRequest("https://example.org/", source="playwright"))
    assert [s.name for s, _ in forced] == ["playwright"]


def test_settle_ceiling_adapts_per_host() -> None:
    settings = Settings(render_ceiling_s=6.0, render_timeout_s=15.0)
    stats = SettleStats()
    assert stats.ceiling("fast.example", settings) == 6.0  # unseen host: the default
    for t in (0.2, 0.3, 0.25, 0.3, 0.2):
        stats.record("fast.example", t)
    for t in (4.0, 5.0, 4.5):
        stats.record("slow.example", t)
    fast, slow = stats.ceiling("fast.example", settings), stats.ceiling("slow.example", settings)
    assert 1.5 <= fast < 6.0  # quick host: stop waiting sooner on pages that never settle
    assert 6.0 < slow <= 14.0  # slow host: wait longer than the default, never past the render budget
    assert stats.ceiling("other.example", settings) == 6.0
    snap = stats.snapshot(settings)
    assert snap["fast.example"]["samples"] == 5


def test_settle_stats_forget_old_hosts() -> None:
    stats = SettleStats(samples=3, hosts=2)
    for host in ("a", "b", "c"):
        stats.record(host, 1.0)
    assert set(stats.snapshot(Settings())) == {"b", "c"}
