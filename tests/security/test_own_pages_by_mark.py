"""trawl's own pages are refused by what they are, not only by where they are served (ownpages.py).

The address rule knows the ports this process serves and the configured one. A second daemon, started by another
client with its own port, serves a status page (its log of every URL, path and error) at an address the first
daemon does not know: an agent of the first daemon, given that page's link (an open tab, a log line), read it as
content. Real daemons over real sockets; the second daemon's real status page, served again from a port no daemon
of this process serves, as another process's daemon serves it.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from trawl.ownpages import OWN_PAGE_META
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings
from trawl.stages import prepare
from trawl.types import ErrorCode, Page, TrawlError

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.local import serve_html

MARKER = "quokka-ledger-5521"  # a URL the second daemon's agent asked for: its status page's log shows it


async def _status_page_of(d: RunningDaemon) -> str:
    """The daemon's status page as the user's browser gets it (one-time link, cookie, secret path)."""
    async with httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}) as c:
        await c.post("/v1/fetch", json={"url": f"http://127.0.0.1:9/{MARKER}", "query": "x"})  # the log shows it
        link = (await c.post("/v1/login-code")).json()["url"]
    async with httpx.AsyncClient(follow_redirects=True) as browser:
        page = await browser.get(link)
    assert page.status_code == 200 and MARKER in page.text, page.text[:500]
    return page.text


async def test_another_daemons_status_page_is_not_content(tmp_path: Path) -> None:
    async with RunningDaemon(daemon_settings(tmp_path / "second"), warm=False) as second:
        html = await _status_page_of(second)
    plain = f"<html><body><article><h1>Notes</h1><p>{MARKER}: a plain page of the site.</p></article></body></html>"
    first_settings = daemon_settings(tmp_path / "first", allow_private_hosts=True)
    async with serve_html(lambda path: html if path.startswith("/s/") else plain) as other_daemon, \
            RunningDaemon(first_settings, warm=False) as first, \
            httpx.AsyncClient(base_url=first.url, headers={"Authorization": f"Bearer {first.token}"}) as c:
        for query in ("which addresses failed", ""):
            r = await c.post("/v1/fetch", json={"url": other_daemon + "/s/secret/", "query": query})
            assert MARKER not in r.text, r.text[:800]
            assert r.json()["error"]["code"] == "blocked_by_policy", r.text[:800]
        # a page of the same site without the mark is read: the refusal is the mark's, not the address's
        read = (await c.post("/v1/fetch", json={"url": other_daemon + "/notes", "query": ""})).json()
        assert read["ok"] and MARKER in str(read["chunks"]), read


def _as_captured(html: str, head_prefix: str) -> str:
    """What the extension sends for the tab when another extension put its own elements first in <head>."""
    head_at = html.index("<head>") + len("<head>")
    return '<!DOCTYPE html><html lang="en" data-darkmode="dynamic"><head>' + head_prefix + html[head_at:]


# The kind of block a dark-mode extension puts at the top of every page's <head>: a dozen styles and a script, about
# ten kilobytes before the page's own first element.
DARK_MODE_HEAD = "".join(f'<style class="dark dark--{i}" media="screen">[data-dark-inline-{i}] {{ color: var(--x) }}'
                         + " " * 600 + "</style>" for i in range(12)) + '<script class="dark">(() => {})()</script>'


async def test_a_status_page_captured_after_another_extensions_head_elements_is_still_refused(tmp_path: Path) -> None:
    async with RunningDaemon(daemon_settings(tmp_path / "second"), warm=False) as second:
        captured = _as_captured(await _status_page_of(second), DARK_MODE_HEAD)
    assert captured.index("trawl-own-page") > 8192  # far from the document's start: only its place in <head> counts
    page = Page(url="http://127.0.0.1:47000/s/k/", final_url="http://127.0.0.1:47000/s/k/", kind="html",
                source="extension", html=captured)
    with pytest.raises(TrawlError) as err:
        prepare(page, Settings())
    assert err.value.code == ErrorCode.BLOCKED_BY_POLICY


def test_a_frame_carrying_the_mark_does_not_make_the_page_around_it_unreadable() -> None:
    """A capture inlines each frame's body into the page; a third-party frame (an ad, an embed) with the mark in it
    must not get the user's page refused: the mark counts in the top document's head only."""
    html = ("<!DOCTYPE html><html><head><title>Docs</title></head><body><header>"
            f'<div data-trawl-frame="https://ads.example/slot">{OWN_PAGE_META}<p>ad</p></div>'
            "</header><article><h1>Install</h1><p>" + "Run the installer and follow the steps. " * 40 +
            "</p></article></body></html>")
    page = Page(url="https://docs.example/", final_url="https://docs.example/", kind="html", source="extension",
                html=html)
    assert "Run the installer" in prepare(page, Settings()).doc.markdown


@pytest.mark.parametrize("head", [OWN_PAGE_META, '<META NAME=trawl-own-page content=x>',
                                  "<meta content='status' name='trawl-own-page'>"])
def test_the_mark_is_read_in_every_spelling_of_the_tag(head: str) -> None:
    page = Page(url="http://127.0.0.1:1/", final_url="http://127.0.0.1:1/", kind="html", source="http",
                html=f"<html><head>{head}</head><body><p>{MARKER} failed: connection refused.</p></body></html>")
    with pytest.raises(TrawlError) as err:
        prepare(page, Settings())
    assert err.value.code == ErrorCode.BLOCKED_BY_POLICY


def test_another_daemons_status_path_on_loopback_is_an_own_page_before_anything_is_read() -> None:
    """list_tabs leaves out what own_page names: a second daemon's status tab, on a port this process does not serve,
    was listed with its secret path. Its path's shape (server.security.status_prefix) names it, on loopback only."""
    import secrets

    from trawl.ownpages import own_page

    key = secrets.token_urlsafe(24)
    assert own_page(f"http://127.0.0.1:47999/s/{key}/", Settings(port=8765))
    assert own_page(f"http://localhost:47999/s/{key}/?x=1", Settings(port=8765))
    assert not own_page(f"https://example.com/s/{key}/", Settings(port=8765))  # not loopback: a site's own path
    assert not own_page("http://127.0.0.1:47999/s/short/", Settings(port=8765))
