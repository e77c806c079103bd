"""The pipeline end to end on the bundled page, through the public API and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

from trawl import Engine, ErrorCode, Settings, fetch_relevant

from ..conftest import DEMO_PAGE


async def test_answers_a_question_about_the_bundled_page(settings: Settings) -> None:
    engine = Engine(settings)
    result = await engine.fetch(str(DEMO_PAGE), "How do I connect trawl to Claude Code?")
    assert result.ok, result.error
    assert result.source == "file"
    assert result.title.startswith("trawl handbook")
    assert "claude mcp add trawl" in result.chunks[0].text
    assert result.chunks[0].heading_path[-1] == "Claude Code"
    assert result.coverage.chunks_returned == len(result.chunks) < result.coverage.chunks_total
    assert result.coverage.tokens_returned < result.coverage.tokens_total
    assert set(result.timings_ms) >= {"route", "fetch", "extract", "chunk", "retrieve", "sanitise"}

    again = await engine.fetch(str(DEMO_PAGE), "Which sites are denied by default?")
    assert "page" in again.cached
    assert any("deny list" in c.text for c in again.chunks[:2])
    await engine.aclose()


async def test_no_query_returns_a_small_page_whole_and_in_order(settings: Settings) -> None:
    engine = Engine(settings)
    result = await engine.fetch(str(DEMO_PAGE))
    assert result.ok and result.mode == "whole-page"
    assert [c.index for c in result.chunks] == sorted(c.index for c in result.chunks)
    assert result.coverage.chunks_returned == result.coverage.chunks_total


async def test_no_query_on_a_large_page_asks_for_one(settings: Settings, tmp_path) -> None:
    big = tmp_path / "big.html"
    paras = "".join(f"<h2>Section {i}</h2><p>{f'Plenty of words about topic {i}. ' * 20}</p>" for i in range(60))
    big.write_text(f"<html><head><title>Big</title></head><body><article>{paras}</article></body></html>")
    result = await Engine(settings).fetch(str(big))
    assert result.error is not None and result.error.code == ErrorCode.QUERY_REQUIRED
    assert result.chunks == ()


async def test_read_more_returns_neighbours_in_order(settings: Settings) -> None:
    engine = Engine(settings)
    first = await engine.fetch(str(DEMO_PAGE), "deny list of sites")
    top = first.chunks[0]
    more = await engine.read_more(first.page_key, top.id, before=1, after=1)
    assert more.ok
    ids = [c.id for c in more.chunks]
    assert top.id in ids and 2 <= len(ids) <= 3
    assert [c.index for c in more.chunks] == sorted(c.index for c in more.chunks)
    unknown = await engine.read_more("nope", top.id)
    assert unknown.error is not None and unknown.error.code == ErrorCode.INVALID_REQUEST


def test_sync_api_and_json_shape(settings: Settings) -> None:
    result = fetch_relevant(str(DEMO_PAGE), "what does trawl doctor check?", engine=Engine(settings))
    d = result.to_dict()
    json.dumps(d)
    assert d["ok"] is True and d["error"] is None
    assert d["chunks"] and all(isinstance(c["text"], str) and c["text"] for c in d["chunks"])
    assert "untrusted" in d["untrusted_content"]


def test_cli_prints_json_with_chunk_text(tmp_path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "c"), "XDG_STATE_HOME": str(tmp_path / "s"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "trawl.cli", "fetch", str(DEMO_PAGE), "token file permissions", "--json", "--k", "2"],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert len(data["chunks"]) == 2
    assert any("token" in c["text"] for c in data["chunks"])


def test_cli_reports_errors_with_exit_code(tmp_path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "c"), "XDG_STATE_HOME": str(tmp_path / "s"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "trawl.cli", "fetch", str(tmp_path / "missing.html"), "anything"],
        capture_output=True, text=True, timeout=60, env=env,
    )
    assert out.returncode == 1
    assert "not_found" in out.stdout
