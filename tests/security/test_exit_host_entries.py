"""The exit lists name hosts the way the user writes them, and are compared in the one canonical form URLs are:
``TRAWL_EXIT_ALLOW_HOSTS`` and ``TRAWL_EXIT_PUBLIC_HOSTS`` entries are ``host`` (every port) or ``host:port``
(that port only). Sent before: a ``host:port`` allow entry never matched (the port was compared as part of the
host) and a bare loopback entry vouched for every port on it, so any other local user's listener received what the
session read; ``[::1]`` and an IDN entry never matched their own URLs."""

from __future__ import annotations

from pathlib import Path

import pytest
from trawl.exitflow import host_entries
from trawl.exits import ExitGuard
from trawl.netguard import HostRule
from trawl.settings import Settings, SettingsError
from trawl.types import ErrorCode, TrawlError

from tests.integration.test_daemon_helpers import daemon_settings

SECRET = "notes of the board meeting"


def _tainted(tmp_path: Path, allow: tuple[str, ...]) -> ExitGuard:
    guard = ExitGuard(daemon_settings(tmp_path, exit_allow_hosts=allow))
    guard.begin_read()
    guard.observe_result({"url": "/home/u/notes.md", "source": "file", "chunks": [{"text": SECRET}]}, op="fetch")
    return guard


async def _held(guard: ExitGuard, url: str) -> bool:
    guard.begin_read()
    try:
        await guard.check(url)
    except TrawlError as err:
        assert err.code == ErrorCode.EXIT_HELD, err
        return True
    return False


async def test_a_host_port_entry_vouches_for_that_port_and_no_other(tmp_path: Path) -> None:
    guard = _tainted(tmp_path, ("127.0.0.1:8000",))
    assert not await _held(guard, "http://127.0.0.1:8000/import?k=1")  # the user's own service
    assert not await _held(guard, "http://2130706433:8000/import?k=2")  # the same address, spelled as a number
    assert await _held(guard, "http://127.0.0.1:9999/c?k=3")  # another local listener: maybe another user's
    assert await _held(guard, "http://127.0.0.1/c?k=4")  # port 80


async def test_a_bare_host_entry_covers_its_ports_and_subdomains_an_address_entry_no_names(tmp_path: Path) -> None:
    guard = _tainted(tmp_path, ("Docs.Example.", "10.0.0.5"))
    assert not await _held(guard, "https://docs.example/a")
    assert not await _held(guard, "https://api.docs.example:8443/b")
    assert await _held(guard, "https://docs.example.attacker.test/c")
    assert not await _held(guard, "http://10.0.0.5:81/d")
    assert await _held(guard, "http://x.10.0.0.5/e")  # a name ending in the address is not a subdomain of it


async def test_ipv6_and_international_entries_match_their_urls(tmp_path: Path) -> None:
    guard = _tainted(tmp_path, ("[::1]:8000", "bücher.example"))
    assert not await _held(guard, "http://[::1]:8000/a")
    assert not await _held(guard, "http://[0:0:0:0:0:0:0:1]:8000/b")
    assert await _held(guard, "http://[::1]:8001/c")
    assert not await _held(guard, "https://xn--bcher-kva.example/d")
    assert not await _held(guard, "https://BÜCHER.example/e")


async def test_a_public_mirror_entry_with_a_port_makes_only_that_port_public(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path, exit_public_hosts=("127.1:8080",))
    guard = ExitGuard(settings)
    assert guard.flow.is_public_page("http://127.0.0.1:8080/guide", "http")
    assert not guard.flow.is_public_page("http://127.0.0.1:8081/notes", "http")
    assert not guard.flow.is_public_page("http://127.0.0.1/notes", "http")


@pytest.mark.parametrize("bad", ["a b", "host:port", "host:99999", "user@host", "[::1]x", "host?x"])
def test_an_entry_that_is_not_a_host_is_refused_by_settings_and_never_widens_a_list(
        bad: str, caplog: pytest.LogCaptureFixture) -> None:
    for name in ("exit_allow_hosts", "exit_public_hosts", "allow_hosts"):
        with pytest.raises(SettingsError, match=r"not a host|bad port"):
            Settings(**{name: (bad,)})
    assert host_entries((bad, "OK.example:81", "https://docs.example/guide")) == (
        HostRule("ok.example", 81), HostRule("docs.example", None))
    assert any("ignored in a list of hosts" in r.getMessage() for r in caplog.records)
