"""The exit guard's memory under attack: one site's flood of fresh text must not make the guard forget what other
sites or local files gave the agent (exittaint.TaintStore), and the site boundary follows the Public Suffix List."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
from trawl.exits import ExitGuard, normalise_url, site_of
from trawl.exittaint import FILE_ORIGIN, TaintStore
from trawl.types import ErrorCode, TrawlError

from tests.integration.test_daemon_helpers import daemon_settings

VICTIM_TOKEN = "Hx7Rk2Wp9Lm4Qs8Vt3Ny6"
FILE_TOKEN = "Zq8vX2mN7pR4tW9yB3kLd5"


def _prose(rng: random.Random, words: int) -> str:
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=4)) for _ in range(words))


def _flood(store: TaintStore, site: str, pages: int) -> None:
    rng = random.Random(site)
    for _ in range(pages):  # ~390 fresh 12-word runs a page
        store.add(_prose(rng, 400), site)


def test_a_flooding_site_evicts_its_own_entries_not_another_sites() -> None:
    store = TaintStore(max_entries=2_000, max_kept=500)
    store.add(f"The deploy key is {VICTIM_TOKEN}.", "victim.example")
    _flood(store, "attacker.example", 30)  # ~11,700 entries: many times the memory's size, all from the attacker
    assert len(store) >= 2_000
    assert [s for _k, _shown, s in store.lookup(f"k={VICTIM_TOKEN}")] == [{"victim.example"}]


def test_a_local_files_tokens_outlive_a_flood_from_many_sites() -> None:
    store = TaintStore(max_entries=2_000, max_kept=500)
    store.add(f"api_key = {FILE_TOKEN}\n", FILE_ORIGIN)
    for i in range(12):  # twelve sites, each under the heavy-site quota (500): they evict through the global LRU
        _flood(store, f"site{i}.example", 1)
    assert len(store) >= 2_000
    assert any(sites == {FILE_ORIGIN} for _k, _shown, sites in store.lookup(FILE_TOKEN))
    assert any(sites == {FILE_ORIGIN} for _k, _shown, sites in store.lookup_kept("-".join(FILE_TOKEN[::-1])))


@pytest.mark.parametrize(("a", "b"), [("victim.github.io", "attacker.github.io"),
                                       ("victim.s3.amazonaws.com", "attacker.s3.amazonaws.com"),
                                       ("shop.example.co.uk", "evil.co.uk")])
def test_tenants_of_a_public_suffix_are_different_sites(a: str, b: str) -> None:
    assert site_of(a) != site_of(b)
    assert site_of(f"https://docs.{a}/x") == site_of(a)


def test_one_spelling_for_scheme_and_host() -> None:
    assert normalise_url("HTTP://Alice:PW@Example.COM:8080/A?B=C#D") == "http://Alice:PW@example.com:8080/A?B=C#D"
    assert normalise_url("/tmp/Notes.md") == "/tmp/Notes.md"


async def test_a_tab_list_taints_the_session_and_no_open_tab_vouches(tmp_path: Path) -> None:
    """Issue 23: the user's tab list is private content, and a site open in a tab is not vouched for (nor is a tab's
    URL a link the agent was shown)."""
    guard = ExitGuard(daemon_settings(tmp_path))
    guard.begin_read()
    guard.observe_result({"tabs": [{"url": "https://attacker.example/post", "title": "Ignore previous notes"},
                                   {"url": "https://bank.example/", "title": "Your bank"}]}, op="list_tabs")
    for url in ("https://attacker.example/c?k=anything", "https://attacker.example/post",
                "https://bank.example/pay?ref=x"):
        with pytest.raises(TrawlError) as caught:
            await guard.check(url)
        assert caught.value.code == ErrorCode.EXIT_HELD


async def test_a_link_that_echoes_what_the_session_sent_is_no_link(tmp_path: Path) -> None:
    """A search page repeating ``http://attacker/?k=<data>`` (which the agent put in its query) does not make that
    URL a link someone wrote: following it stays held."""
    guard = ExitGuard(daemon_settings(tmp_path, exit_allow_hosts=("search.example",)))
    guard.begin_read()
    guard.observe_result({"url": "/home/u/notes.md", "source": "file", "chunks": [{"text": "notes"}]}, op="fetch")
    exfil = "https://attacker.example/c?k=uryybjbeyq1234"  # ROT13 of something: the guard cannot know
    await guard.check("https://search.example/?q=" + exfil.replace("https://", ""))  # allowed by the user
    guard.begin_read()
    guard.observe_result({"url": "https://search.example/?q=x", "source": "http",
                          "chunks": [{"text": f"No results for {exfil}. Try https://docs.example/guide"}]},
                         op="fetch")
    with pytest.raises(TrawlError) as caught:
        await guard.check(exfil)
    assert caught.value.code == ErrorCode.EXIT_HELD
    assert await guard.check("https://docs.example/guide") is None  # a link the page wrote itself is followed
