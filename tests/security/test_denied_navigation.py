"""A page that navigates to a denied (or dead) site after it loaded (issue 23 item 10).

* Through the extension: the denied site gets no request at all from the background tab trawl opened (before:
  the page and then its favicon), and the capture is refused. The tab's block is in place before the tab is sent
  to the URL, so a redirect hop to another site is blocked too, and refused by name (no hang).
* Headless: Chromium's own error page ("blocked by client", net::ERR_*) is a typed error, never ``ok`` content.

Real Chromium, real extension and daemon (the e2e fixtures); local servers count every request they get.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from trawl import Engine
from trawl.policy import policy_path
from trawl.settings import Settings
from trawl.sources.playwright import PlaywrightSource
from trawl.types import ErrorCode, TrawlError

from ..e2e import conftest as e2e_fixtures
from ..e2e.conftest import Linked, LocalSite, deny_in_options, session_rule_count
from .test_capture_leaks import INBOX, _pause, article, navigates_after_load

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

linked = e2e_fixtures.linked
site = e2e_fixtures.site


@pytest.fixture
async def mail() -> AsyncIterator[LocalSite]:
    s = await LocalSite().start()
    yield s
    await s.stop()


async def test_a_denied_site_gets_no_request_from_a_page_that_navigates_there_after_load(
    linked: Linked, site: LocalSite, mail: LocalSite,
) -> None:
    mail.add("/inbox", article("Inbox", f"<p>{INBOX}</p>"))
    site.add("/pause", _pause)
    url = site.add("/innocent", navigates_after_load(mail.url("/inbox")))
    await deny_in_options(linked, f"127.0.0.1:{mail.port}")
    for run in range(4):
        with pytest.raises(TrawlError) as err:
            await linked.hub.capture(url=url)
        assert err.value.code == ErrorCode.BLOCKED_BY_POLICY, f"run {run}: {err.value.code} {err.value.message}"
    # The tab's navigations are blocked from before its first request: the denied site gets none, favicon included.
    assert mail.hits == {}, mail.hits
    # The blocks die with the capture tabs: the user's own tab may still go there (the policy binds agents).
    worker = await linked.worker()
    assert await session_rule_count(worker) == 0


def _redirect_to(target: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(target)

    return handler


async def test_a_redirect_hop_to_another_site_is_blocked_before_its_request_and_refused_by_name(
    linked: Linked, site: LocalSite, mail: LocalSite,
) -> None:
    other = await LocalSite().start()
    try:
        mail.add("/inbox", article("Inbox", f"<p>{INBOX}</p>"))
        other.add("/guide", article("Guide", "<p>" + "An allowed guide to knots. " * 30 + "</p>"))
        to_denied = site.add("/to-denied", _redirect_to(mail.url("/inbox")))
        to_other = site.add("/to-other", _redirect_to(other.url("/guide")))
        same = site.add("/same", _redirect_to("/innocent"))
        site.add("/innocent", article("Innocent", "<p>" + "A harmless article about sailing boats. " * 30 + "</p>"))
        await deny_in_options(linked, f"127.0.0.1:{mail.port}")
        with pytest.raises(TrawlError) as err:
            await linked.hub.capture(url=to_denied)
        assert err.value.code == ErrorCode.BLOCKED_BY_POLICY, f"{err.value.code} {err.value.message}"
        assert f"127.0.0.1:{mail.port}" in err.value.message
        # Another site the policy allows: not opened either (the tab stays on the site checked), and said so.
        with pytest.raises(TrawlError) as err:
            await linked.hub.capture(url=to_other)
        assert err.value.code == ErrorCode.BLOCKED_BY_POLICY, f"{err.value.code} {err.value.message}"
        assert "another site" in err.value.message and other.url("/guide") in err.value.message
        # A script that leaves before the page has loaded is blocked the same way.
        script = f"<script>location.href = {json.dumps(mail.url('/inbox'))};</script>"
        early = site.add("/early", article("Early", script + "<p>" + "Leaving at once. " * 30 + "</p>"))
        with pytest.raises(TrawlError) as err:
            await linked.hub.capture(url=early)
        assert err.value.code == ErrorCode.BLOCKED_BY_POLICY, f"{err.value.code} {err.value.message}"
        assert mail.hits == {} and other.hits == {}, (mail.hits, other.hits)
        # A hop on the same site is followed as before.
        got = await linked.hub.capture(url=same)
        assert "sailing boats" in (got.html or "") and got.final_url == site.url("/innocent")
        worker = await linked.worker()
        assert await session_rule_count(worker) == 0
    finally:
        await other.stop()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def headless(tmp_path: Path, chromium: str) -> AsyncIterator[Engine]:
    settings = Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", dense="none",
                        chromium_path=chromium)
    engine = Engine(settings, sources=[PlaywrightSource(settings)])
    yield engine
    await engine.aclose()


async def test_headless_never_returns_chromiums_error_page_as_content(
    headless: Engine, site: LocalSite, mail: LocalSite,
) -> None:
    mail.add("/inbox", article("Inbox", f"<p>{INBOX}</p>"))
    site.add("/pause", _pause)
    path = policy_path(headless.settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"deny": [f"127.0.0.1:{mail.port}"]}))
    denied = site.add("/to-denied", navigates_after_load(mail.url("/inbox")))
    dead = site.add("/to-dead", navigates_after_load(f"http://127.0.0.1:{_closed_port()}/gone"))
    res = await headless.fetch(denied, "sailing boats", source="playwright", max_age_s=0)
    assert res.error is not None and res.error.code == ErrorCode.BLOCKED_BY_POLICY, res
    assert not res.chunks and mail.hits.get("/inbox", 0) == 0
    res = await headless.fetch(dead, "sailing boats", source="playwright", max_age_s=0)
    assert res.error is not None and res.error.code == ErrorCode.NETWORK_ERROR, res
    assert not res.chunks
    assert "blocked" not in " ".join(c.text for c in res.chunks).lower()
