"""Threat: an allowed page frames a page the rules refuse (a denied site, a router or LAN service) and the browser
capture carries the frame's text, read with the user's session, to the agent (review S3-5/S3-6).

Two lines of defence, each attacked on its own: the extension checks the URL of each frame's document against the
site policy before it reads it (extension/capture.js fillFrames), and the daemon checks every frame box of a
browser capture against the site policy and the private-network rule (daemon/trawl/frameguard.py, called from
pipeline._guard_frames), which also covers an older or compromised extension.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from trawl.frameguard import empty_frames, frame_urls, guard_frames
from trawl.pipeline import Engine
from trawl.policy import SitePolicy, now_revision, policy_store
from trawl.settings import Settings
from trawl.types import ErrorCode, Page, TrawlError

from ..e2e import conftest as e2e_fixtures
from ..e2e.conftest import Linked, LocalSite, deny_in_options

linked = e2e_fixtures.linked
site = e2e_fixtures.site

SECRET = "The payroll export password is tangerine-walrus-417."


# ------------------------------------------------------------------------------------------------ the daemon's line


def _box(url: str, inner: str, extra: str = "") -> str:
    return f'<div data-trawl-frame="{url}" data-trawl-slot="ab12:0"{extra}>{inner}</div>'


def test_a_refused_box_is_emptied_whatever_markup_its_frame_holds() -> None:
    """The frame's own markup cannot end its box early: a ``</div>`` in a script, a comment, a raw-text element
    or an attribute does not close it, and nested divs are counted."""
    inner = ("<div><p>" + SECRET + "</p><script>var s = '</div></div>';</script><!-- </div> -->"
             "<noscript></div></noscript><textarea></div></textarea><p title='</div>'>" + SECRET + "</p>"
             "<div><div>" + SECRET + "</div></div></div>")
    html = "<html><body><p>Before.</p>" + _box("http://denied.test/pay", inner) + "<p>After.</p></body></html>"
    out, n = empty_frames(html, lambda u: u == "http://denied.test/pay")
    assert n == 1
    assert "tangerine" not in out
    assert out == ('<html><body><p>Before.</p><div data-trawl-frame="http://denied.test/pay" data-trawl-slot="ab12:0"'
                   ' data-trawl-unread="frame"></div><p>After.</p></body></html>')


def test_a_refused_frame_nested_in_an_allowed_one_is_emptied_and_the_allowed_one_kept() -> None:
    nested = _box("http://denied.test/pay", f"<p>{SECRET}</p>")
    html = _box("https://ok.test/", f"<p>Allowed frame text.</p>{nested}<p>More allowed text.</p>")
    out, n = empty_frames(html, lambda u: "denied" in u)
    assert n == 1
    assert "tangerine" not in out
    assert "Allowed frame text." in out and "More allowed text." in out


def test_frame_urls_reads_both_sources_boxes_and_unescapes() -> None:
    html = (_box("http://a.test/?x=1&amp;y=2", "") + '<div data-trawl-iframe="/rel" data-trawl-slot="f1"></div>'
            + _box("http://a.test/?x=1&amp;y=2", ""))
    assert frame_urls(html) == ["http://a.test/?x=1&y=2", "/rel"]
    assert frame_urls("<p>no frames</p>") == []


async def test_guard_frames_resolves_relative_urls_and_leaves_pages_own_documents() -> None:
    asked: list[str] = []

    async def check(url: str) -> None:
        asked.append(url)
        if "10.0.0.1" in url:
            raise TrawlError(ErrorCode.BLOCKED_BY_POLICY, "private")

    html = ('<div data-trawl-iframe="/admin">' + SECRET + "</div>"
            '<div data-trawl-iframe="about:srcdoc"><p>The page\'s own srcdoc.</p></div>'
            '<div data-trawl-iframe="http://router.lan/">LAN text</div>')
    out, refused = await guard_frames(html, "http://10.0.0.1/page", check)
    assert refused == ["/admin"]
    assert "tangerine" not in out and "The page's own srcdoc." in out and "LAN text" in out
    assert sorted(asked) == ["http://10.0.0.1/admin", "http://router.lan/"]  # about:srcdoc fetched nothing


def _settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", dense="none", **kw)  # type: ignore


async def test_engine_empties_frames_an_old_extension_inlined_from_denied_and_private_hosts(tmp_path: Path) -> None:
    """Attack on the daemon alone: a capture from an extension that does no frame check (older, or compromised)
    carries a denied site's frame and a loopback service's frame; the page itself is allowed."""
    settings = _settings(tmp_path, allow_private_hosts="0", allow_hosts=("127.0.0.1:8001",))
    policy_store(settings).save(SitePolicy.from_json({"mode": "allow_all_except_denied", "allow": [],
                                                      "deny": ["payroll.example"], "revision": now_revision()}))
    html = ("<!doctype html><html><head><title>Guide</title></head><body><h1>Canal guide</h1>"
            "<p>The towpath runs between the locks.</p>"
            + _box("https://payroll.example/export", f"<p>{SECRET}</p>")
            + _box("http://127.0.0.1:9/admin", "<p>Router admin password hunter2-router.</p>")
            + _box("http://127.0.0.1:8001/also-allowed", "<p>The lock keeper opens at six.</p>")
            + "</body></html>")
    page = Page(url="http://127.0.0.1:8001/guide", final_url="http://127.0.0.1:8001/guide", kind="html",
                source="extension", html=html)
    eng = Engine(settings)
    try:
        checked = await eng.check_page(page)
    finally:
        await eng.aclose()
    assert checked.html is not None
    assert "tangerine" not in checked.html and "hunter2" not in checked.html
    assert "The lock keeper opens at six." in checked.html
    assert checked.html.count('data-trawl-unread="frame"') == 2


async def test_engine_leaves_frame_boxes_of_non_browser_sources_alone(tmp_path: Path) -> None:
    """A plain HTTP page's markup is the page's own: a look-alike box there is page text, not a frame read."""
    html = "<html><body>" + _box("https://payroll.example/export", "<p>Served by the page itself.</p>") + "</body>"
    page = Page(url="http://127.0.0.1:8001/p", final_url="http://127.0.0.1:8001/p", kind="html", source="http",
                html=html)
    eng = Engine(_settings(tmp_path))
    try:
        assert (await eng.check_page(page)).html == html
    finally:
        await eng.aclose()


# A frame's content sits in place of its frame element, with the element's attributes: when a page fools the
# browser-side check (S3-8: it overrides the element's checkVisibility/getBoundingClientRect in the headless page's
# world), the daemon's own CSS pass still judges the box by the element's style and class.
FOOLED = {
    "off-screen": ("style='position:absolute; left:-5000px; top:0'", ""),
    "clip-path": ("style='clip-path: inset(50%)'", ""),
    "clip-rect": ("style='position:absolute; clip: rect(0px, 0px, 0px, 0px)'", ""),
    "filter-opacity": ("style='filter: opacity(0)'", ""),
    "class": ("class='sr-frame'", "<style>.sr-frame { position: absolute; left: -9999px }</style>"),
}


@pytest.mark.parametrize("how", list(FOOLED))
def test_a_frame_box_the_browser_check_missed_is_judged_by_the_elements_own_style(tmp_path: Path, how: str) -> None:
    from trawl import stages

    attrs, head = FOOLED[how]
    filler = " ".join(f"Line {i} of the canal guide describes the towpath between the locks." for i in range(12))
    html = (f"<!doctype html><html lang=en><head><title>Guide</title>{head}</head><body><h1>Canal guide</h1>"
            f"<p>{filler}</p><div data-trawl-iframe='http://127.0.0.1:9/secret' width='600' height='300' {attrs}>"
            f"<h2>Payroll</h2><p>{SECRET}</p></div><p>After the frame: the towpath is closed on Sundays.</p>"
            "</body></html>")
    page = Page(url="http://127.0.0.1:8001/g", final_url="http://127.0.0.1:8001/g", kind="html", source="playwright",
                html=html)
    ready = stages.prepare(page, _settings(tmp_path))
    text = ready.doc.markdown
    assert "towpath between the locks" in text
    # cut, or (opacity: revealable by the raw-HTML rules, as a fade-in is) kept only between the hidden markers
    assert "tangerine" not in re.sub(r"⟦hidden⟧.*?⟦/hidden⟧", "", text, flags=re.S)


# ------------------------------------------------------------------------------------------------ the extension's line


@pytest.fixture
async def other() -> object:
    s = await LocalSite().start()
    s.add("/secret", f"<!doctype html><html><head><title>Payroll</title></head><body><p>{SECRET}</p></body></html>")
    s.add("/public", "<!doctype html><html><head><title>Public</title></head><body><p>Public notes.</p></body></html>")
    yield s
    await s.stop()


async def _frame_at(tab: object, url: str) -> None:
    deadline = time.monotonic() + 15
    while not any(f.url == url for f in tab.frames):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, [f.url for f in tab.frames]  # type: ignore[attr-defined]
        await asyncio.sleep(0.05)


@pytest.mark.e2e
@pytest.mark.timeout(180)
async def test_extension_capture_itself_leaves_a_denied_frame_unread(linked: Linked, site: LocalSite,
                                                                     other: LocalSite) -> None:
    """The extension's own capture (before the daemon's check) does not carry the denied frame's text."""
    await deny_in_options(linked, f"localhost:{other.port}")
    denied = f"http://localhost:{other.port}/secret"
    url = site.add("/framing", "<!doctype html><html><head><title>Guide</title></head><body><h1>Guide</h1>"
                   f"<p>Towpath notes.</p><iframe src='{denied}' width=600 height=300></iframe></body></html>")
    tab = await linked.open_tab(url)
    await _frame_at(tab, denied)
    page = await linked.hub.capture(url=url)
    assert page.html is not None
    assert "Towpath notes." in page.html
    assert "tangerine" not in page.html
    assert f'data-trawl-frame="{denied}"' in page.html and 'data-trawl-unread="frame"' in page.html


@pytest.mark.e2e
@pytest.mark.timeout(180)
async def test_extension_judges_a_frame_by_its_document_not_its_src(linked: Linked, site: LocalSite,
                                                                   other: LocalSite) -> None:
    """Attack: the iframe's src names an allowed page; the page then navigates the frame to the denied one
    (a parent may navigate its child frames), so the element's src still says 'allowed'."""
    await deny_in_options(linked, f"localhost:{other.port}")
    allowed, denied = other.url("/public"), f"http://localhost:{other.port}/secret"
    url = site.add("/navigated", "<!doctype html><html><head><title>Guide</title></head><body><h1>Guide</h1>"
                   f"<p>Towpath notes.</p><iframe src='{allowed}' width=600 height=300 "
                   "onload=\"if (!this.dataset.moved) { this.dataset.moved = 1; "
                   f"frames[0].location = '{denied}'; }}\">"
                   "</iframe></body></html>")
    tab = await linked.open_tab(url)
    await _frame_at(tab, denied)
    page = await linked.hub.capture(url=url)
    assert page.html is not None
    assert "tangerine" not in page.html
    assert f'data-trawl-frame="{denied}"' in page.html  # the box names the document's URL, which the daemon checks
    result = await linked.engine.fetch(url, "what is the payroll export password?")
    assert result.ok, result.error
    assert "tangerine" not in str(result.to_dict())
    assert denied in result.coverage.unread


# ------------------------------------------------------------------------------------------------ the headless check
# The page hides the frame with a rule only the browser knows (inserted through the CSSOM: the serialised <style>
# is empty, so the daemon's CSS pass cannot see it) and overrides every layout and style function it can reach
# in its own world. The headless capture judges with the natives saved before the page's scripts ran.
SPOOF_ALL = ("<style id=s></style><script>"
             "document.getElementById('s').sheet.insertRule('.x { position: absolute; left: -5000px; top: 0 }');"
             "const box = { left: 10, top: 10, right: 610, bottom: 310, width: 600, height: 300, x: 10, y: 10 };"
             "for (const P of [Element.prototype, HTMLElement.prototype, HTMLIFrameElement.prototype]) {"
             " P.getBoundingClientRect = function () { return box; };"
             " P.checkVisibility = function () { return true; }; }"
             "const real = window.getComputedStyle.bind(window);"
             "window.getComputedStyle = function (el) { const cs = real(el);"
             " return new Proxy(cs, { get: (t, k) => k === 'position' ? 'static' : (typeof t[k] === 'function'"
             " ? t[k].bind(t) : t[k]) }); };</script>")


@pytest.mark.e2e
@pytest.mark.timeout(180)
async def test_headless_frame_check_uses_natives_saved_before_the_page_ran(tmp_path: Path, chromium: str,
                                                                           site: LocalSite, other: LocalSite) -> None:
    url = site.add("/spoof-all", f"<!doctype html><html lang=en><head><title>Guide</title>{SPOOF_ALL}</head><body>"
                   "<h1>Canal guide</h1><p>" + " ".join(f"Line {i} of the canal guide describes the towpath."
                                                       for i in range(12)) + "</p>"
                   f"<iframe class=x src='{other.url('/secret')}' width=600 height=300></iframe>"
                   "<p>After the frame.</p></body></html>")
    eng = Engine(Settings(cache_dir=tmp_path / "c", state_dir=tmp_path / "s", dense="none", chromium_path=chromium,
                          render_timeout_s=15.0, render_ceiling_s=6.0, page_ttl_s=0.0))
    try:
        r = await eng.fetch(url, "what is the payroll export password?", source="playwright", max_age_s=0)
        assert r.ok, r.error
        assert "canal guide describes the towpath" in "\n".join(c.text for c in r.chunks)
        assert "tangerine" not in "\n".join(c.text for c in r.chunks)
    finally:
        await eng.aclose()
