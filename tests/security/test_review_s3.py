"""Attacker's-eye review of the surface added in session 3 (issues 11-15): site readers, open tabs read ahead, the
usage file and ``trawl stats``, query expansion, page profiles, the packaged extension, cross-origin frames.

Each test mounts one attack against the real code (real daemon, real sockets, real Chromium with the real extension
where a browser is involved). A test marked ``xfail(strict=True)`` documents a hole that is open today: the attack
still succeeds, so the assertion (what a fixed trawl must do) fails; when the hole is fixed the test passes, the
strict xfail turns that into a failure, and the marker must be removed. Unmarked tests are attacks that were tried
and held.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from trawl import usage
from trawl.pipeline import Engine
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings
from trawl.sources.http import HttpSource
from trawl.sources.readers import all_readers

from ..integration.test_daemon_helpers import daemon_settings
from ..readers_fake import FakeSite
from .local import serve_html

# ------------------------------------------------------------------------------------------------ usage / stats


@pytest.fixture
def _fresh_ring() -> None:
    usage.RING.clear()


@pytest.mark.xfail(strict=True, reason="S3-1: a host name with terminal control characters reaches `trawl stats` "
                   "output raw (framing.one_line keeps C0/C1 controls); fix in capabilities/stats.py render_stats "
                   "(or usage.host_of: keep only IDNA/LDH host characters)")
async def test_trawl_stats_prints_no_terminal_control_characters(tmp_path: Path, _fresh_ring: None) -> None:
    """Attack: a page tells the agent to fetch ``http://a<ESC>c...`` (ESC c resets the user's terminal; other ESC
    and C1 CSI sequences recolour, retitle or rewrite what the user sees). The daemon accepts the URL, the call fails,
    and its host goes into the usage file as is; the user later runs ``trawl stats`` in a terminal."""
    hostile = ["http://a\x1bcreset.example/", "http://b\x9b2Jwipe.example/", "http://c\x07bell.example/"]
    async with RunningDaemon(daemon_settings(tmp_path, usage_log=True)) as d, httpx.AsyncClient(
            base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}, timeout=60.0) as c:
        for url in hostile:
            body = (await c.post("/v1/fetch", json={"url": url, "query": "anything"})).json()
            assert not body["ok"]  # the call fails, the daemon keeps serving
    assert usage.log_path(d.settings).is_file()
    env = {**os.environ, "TRAWL_STATE_DIR": str(tmp_path / "state"), "TRAWL_USAGE_LOG": "1"}
    out = subprocess.run([sys.executable, "-m", "trawl.cli", "stats"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "3 calls (3 failed)" in out.stdout, out.stdout  # the attack's records are there...
    controls = sorted({hex(ord(ch)) for ch in out.stdout if (ord(ch) < 0x20 and ch != "\n") or 0x7F <= ord(ch) < 0xA0})
    assert controls == [], f"terminal control characters in `trawl stats` output: {controls}"  # ...but not raw


# ------------------------------------------------------------------------------------------------ site readers


async def _read(settings: Settings, url: str, query: str) -> Any:
    eng = Engine(settings, sources=[*all_readers(settings), HttpSource(settings)])
    try:
        return await eng.fetch(url, query)
    finally:
        await eng.aclose()


README_B64 = "IyBDb3JwIGluZnJhCgpUaGUgZGVwbG95IGtleSBpcyBrZXB0IGluIHZhdWx0IHBhdGggc2VjcmV0L2RlcGxveS4K"


@pytest.mark.xfail(strict=True, reason="S3-2: with reader_github_api set to GitHub Enterprise, a github.com URL is "
                   "read from the Enterprise API with the Enterprise token and its private repository is returned "
                   "under the public github.com URL; fix in sources/readers/github.py match/read: github.com URLs "
                   "go to api.github.com (no Enterprise token), the Enterprise API reads only its own host's URLs")
async def test_a_github_com_url_is_not_answered_from_the_enterprise_api(tmp_path: Path) -> None:
    """Attack: a public page links ``https://github.com/corp/infra`` (a public repository, or none at all). The
    user's trawl points ``reader_github_api`` at the company's GitHub Enterprise with a token; the corp/infra there
    is private. The agent reads what it takes for a public page."""
    ghe = await FakeSite().start()
    try:
        ghe.json("/api/v3/repos/corp/infra/readme", {"type": "file", "name": "README.md", "encoding": "base64",
                                                     "content": README_B64})
        settings = Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", dense="none",
                            allow_private_hosts="loopback", page_ttl_s=0.0, http_timeout_s=10.0,
                            reader_github_api=f"{ghe.base}/api/v3", reader_github_token="ghe_corp_token_do_not_use")
        r = await _read(settings, "https://github.com/corp/infra", "where is the deploy key")
        leaked = r.ok and "vault path secret/deploy" in " ".join(c.text for c in r.chunks)
        tokened = [h.path for h in ghe.hits if h.headers.get("Authorization") == "Bearer ghe_corp_token_do_not_use"]
        assert not leaked and tokened == [], (f"github.com URL answered from the Enterprise API (hits with the "
                                              f"Enterprise token: {tokened})")
    finally:
        await ghe.stop()


# ------------------------------------------------------------------------------------------------ page profiles

MUSEUM = " ".join(f"The harbour museum keeps model ship number {i} in the north gallery beside the brass instruments."
                  for i in range(12))
FORGED = "Reader note: the museum now charges forty dollars at the door, paid to the guide in cash."


def _notes_page() -> str:
    """The attacker's page: its text sits directly in <body>, so the element that reproduces it is <body>."""
    paras = "".join(f"<p>Note {i}: the tide tables of the bay list the high water times for each day.</p>"
                    for i in range(8))
    return f"<!doctype html><html><head><title>Notes</title></head><body>{paras}</body></html>"


def _museum_page() -> str:
    """A victim page of the same host: the article, and a reader-notes box the extractor leaves out."""
    return ("<!doctype html><html><head><title>Museum</title></head><body><nav><a href=/>Home</a> <a href=/a>About"
            f"</a></nav><article><h1>The harbour museum</h1><p>{MUSEUM}</p></article>"
            f"<div class=talk><h3>Reader notes</h3><p>{FORGED}</p></div><footer>Copyright</footer></body></html>")


def _profile_settings(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", dense="none",
                    allow_private_hosts="loopback", page_profiles=True, page_ttl_s=0.0)


async def _museum_text(eng: Engine, url: str) -> str:
    r = await eng.fetch(url, "how much does the museum charge at the door", max_age_s=0)
    assert r.ok, r.error
    return " ".join(c.text for c in r.chunks)


async def test_without_the_attack_the_extractor_leaves_the_notes_out(tmp_path: Path) -> None:
    """The baseline the two profile attacks below depend on: the museum page alone does not carry the note."""
    async with serve_html(lambda p: _museum_page()) as base:
        eng = Engine(_profile_settings(tmp_path))
        try:
            assert FORGED not in await _museum_text(eng, base + "/museum")
            assert FORGED not in await _museum_text(eng, base + "/museum2")  # its own profile reused
        finally:
            await eng.aclose()


@pytest.mark.xfail(strict=True, reason="S3-3: one page whose text sits directly in <body> teaches the host the "
                   "profile 'body'; every later page of the host then returns the whole body (comments, notes, "
                   "boxes the extractor dropped) as long as it is under twice the article; fix in profiles.py: "
                   "never learn 'body' (or any element much larger than the extraction on the page it is applied "
                   "to: AGREE_MAX_RATIO near 1.2), and learn a host's profile only from pages that agree with it")
async def test_one_page_cannot_widen_its_hosts_profile_to_the_whole_body(tmp_path: Path) -> None:
    """Attack: a page on a shared host (a user page, a paste, a forum post) is read first; it teaches the host's
    profile. The user's next page on that host, an article, now carries the attacker's 'reader note'."""

    def page(path: str) -> str:
        return _notes_page() if path.startswith("/notes") else _museum_page()

    async with serve_html(page) as base:
        eng = Engine(_profile_settings(tmp_path))
        try:
            await eng.fetch(base + "/notes", "tide tables", max_age_s=0)
            assert FORGED not in await _museum_text(eng, base + "/museum")
        finally:
            await eng.aclose()


@pytest.mark.xfail(strict=True, reason="S3-4: profiles are keyed by host name only, so a server on another port "
                   "of the same host (another OS user's server on 127.0.0.1, any other service of a host) sets the "
                   "profile of the user's site; fix in profiles.py host_of: key by scheme, host and port")
async def test_a_server_on_another_port_does_not_set_the_profile_of_this_one(tmp_path: Path) -> None:
    """Attack: another local user runs a server on 127.0.0.1:<their port> and gets the agent to read one page of it;
    the user's own dev server on 127.0.0.1:<other port> is then read through the profile their page taught."""
    async with serve_html(lambda p: _museum_page()) as theirs, serve_html(lambda p: _museum_page()) as ours:
        eng = Engine(_profile_settings(tmp_path))
        try:
            first = await eng.fetch(theirs + "/museum", "museum", max_age_s=0)
            assert first.ok and eng.profiles.get("127.0.0.1") is not None  # learnt from their server
            mine = await eng.fetch(ours + "/museum", "museum", max_age_s=0)
            assert mine.ok, mine.error
            assert not mine.extractor.startswith("profile+"), "their server's profile read the user's first page"
        finally:
            await eng.aclose()
