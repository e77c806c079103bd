"""Capture through the real extension in real Chromium: open tabs, background tabs, shadow DOM, iframes,
big pages, tabs closed mid-capture, pages that never settle, logged-in pages, the site policy."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web
from trawl.browser import PINNED_EXTENSION_ID
from trawl.types import ErrorCode, TrawlError

from .conftest import PRIVATE_TEXT, Linked, LocalSite, close_linked, deny_in_options, e2e_settings, launch_linked, until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


def article(title: str, body: str) -> str:
    head = f"<!doctype html><html lang=en><head><title>{title}</title></head>"
    return f"{head}<body><main><h1>{title}</h1>{body}</main></body></html>"


async def test_open_tab_is_captured_through_the_extension(linked: Linked, site: LocalSite) -> None:
    url = site.add("/otters", article("Otters", "<p>Sea otters hold hands while they sleep so they do not drift.</p>"))
    await linked.open_tab(url)
    hits_before = site.hits.get("/otters", 0)
    result = await linked.engine.fetch(url, "why do otters hold hands")
    assert result.ok, result.error
    assert result.source == "extension"
    assert "hold hands" in " ".join(c.text for c in result.chunks)
    # The tab may also have been read ahead (via=read_ahead) when it loaded; the question's own capture is in place.
    mine = [r for r in linked.hub.captures if r.via == "open_tab"]
    assert mine and all(r.outcome == "ok" for r in mine), linked.hub.captures
    assert site.hits["/otters"] == hits_before, "an open tab must be read in place, not fetched again"


async def test_url_without_a_tab_goes_through_a_background_tab_that_is_closed(linked: Linked, site: LocalSite) -> None:
    url = site.add("/bg", article("Background", "<p>The background tab page mentions the number 7781.</p>"))
    page = await linked.hub.capture(url=url)
    assert page.source == "extension" and page.kind == "html"
    assert "7781" in (page.html or "")
    assert page.html is not None and page.html.startswith("<!DOCTYPE html><html lang=\"en\">")
    assert [r.via for r in linked.hub.captures if r.via != "read_ahead"] == ["background_tab"]
    listing = await linked.hub.list_tabs()
    assert all(t["url"] != url for t in listing["tabs"]), "the background tab must be closed after capture"


SHADOW_PAGE = """<!doctype html><html><head><title>Shadow</title></head><body>
<h1>Components</h1>
<p>This harbour guide is built from web components. Each card below keeps its text in a shadow root, some open
and some closed, the way design systems often do. A reader that only looks at the light DOM sees nothing.</p>
<open-card></open-card><closed-card></closed-card>
<script>
customElements.define('open-card', class extends HTMLElement {
  constructor() { super();
    this.attachShadow({mode: 'open'}).innerHTML = '<p>Open shadow text: the lighthouse keeper.</p>'; }
});
customElements.define('closed-card', class extends HTMLElement {
  constructor() { super(); const r = this.attachShadow({mode: 'closed'});
    r.innerHTML = '<p>Closed shadow text: the hidden harbour.</p><inner-card></inner-card>'; }
});
customElements.define('inner-card', class extends HTMLElement {
  constructor() { super();
    this.attachShadow({mode: 'closed'}).innerHTML = '<p>Nested closed text: the tide table.</p>'; }
});
</script></body></html>"""


async def test_open_and_closed_shadow_roots_are_inlined(linked: Linked, site: LocalSite) -> None:
    url = site.add("/shadow", SHADOW_PAGE)
    await linked.open_tab(url)
    page = await linked.hub.capture(url=url)
    html = page.html or ""
    for text in ("the lighthouse keeper", "the hidden harbour", "the tide table"):
        assert text in html
    assert 'shadowrootmode="closed"' in html and 'shadowrootmode="open"' in html
    result = await linked.engine.fetch(url, "who keeps the lighthouse")
    assert result.ok and "lighthouse keeper" in " ".join(c.text for c in result.chunks)


async def test_same_origin_iframe_is_inlined(linked: Linked, site: LocalSite) -> None:
    site.add("/frame", article("Frame", "<p>Inside the frame: the ferry leaves at 06:40.</p>"))
    url = site.add("/framed", article("Framed", '<p>Timetable below.</p><iframe src="/frame"></iframe><p>After.</p>'))
    await linked.open_tab(url)
    page = await linked.hub.capture(url=url)
    html = page.html or ""
    assert "the ferry leaves at 06:40" in html
    assert html.index("Timetable below") < html.index("ferry leaves") < html.index("After.")
    assert "data-trawl-frame" in html


async def test_ten_megabyte_page_arrives_whole(linked: Linked, site: LocalSite) -> None:
    para = "<p>" + ("Filler sentence about estuaries and mudflats. " * 20) + "</p>\n"
    body = para * (10_500_000 // len(para)) + "<p>END-MARKER-93421</p>"
    url = site.add("/big", article("Big", body))
    page = await linked.hub.capture(url=url)
    assert page.size >= 10_000_000
    assert "END-MARKER-93421" in (page.html or "")


NEVER_SETTLES = article("Ticker", """<p>Live ticker: the price of tea. This market page never stops changing: a
ticker rewrites a line every few milliseconds and dots keep arriving at the end, the way live dashboards, chats and
sports scores behave. A reader must stop waiting at some point and take the page as it is.</p><div id=t></div>
<script>let n = 0; setInterval(() => { document.getElementById('t').textContent = 'tick ' + (n++); }, 20);
new MutationObserver(() => {}).observe(document.body, {subtree: true, childList: true});
(function spin(){ const d = document.createElement('span'); d.textContent = '.'; document.body.appendChild(d);
  setTimeout(spin, 30); })();</script>""")


async def test_page_that_never_settles_is_captured_with_a_warning(tmp_path: Path, chromium: str,
                                                                   site: LocalSite) -> None:
    stack = await launch_linked(tmp_path, chromium, settings=e2e_settings(tmp_path, extension_settle_max_s=1.0))
    try:
        assert await stack.hub.wait_attached(15)
        url = site.add("/ticker", NEVER_SETTLES)
        page = await stack.hub.capture(url=url)
        assert "the price of tea" in (page.html or "")
        assert any("kept changing" in w for w in page.warnings), page.warnings  # the settle ceiling ended it
        result = await stack.engine.fetch(url, "price of tea")
        assert result.ok and any("kept changing" in w for w in result.warnings)
    finally:
        await close_linked(stack)


async def test_tab_closed_mid_capture_is_a_typed_error(linked: Linked, site: LocalSite) -> None:
    url = site.add("/closing", NEVER_SETTLES)
    task = asyncio.create_task(linked.hub.capture(url=url))
    # The extension opens a background tab and polls it; close that tab while it waits for the page to settle.
    loop = asyncio.get_running_loop()
    end = loop.time() + 30  # a bound for a loaded machine; the loop ends as soon as the tab is there
    while not (pages := [p for p in linked.context.pages if p.url == url]) and loop.time() < end:
        await asyncio.sleep(0.05)
    assert pages, "the background tab never appeared"
    await pages[0].wait_for_load_state("domcontentloaded")  # loaded: the extension now waits for it to settle
    await pages[0].close()
    with pytest.raises(TrawlError) as err:
        await asyncio.wait_for(task, 15)
    assert err.value.code == ErrorCode.TAB_NOT_FOUND
    assert "closed" in err.value.message


async def test_logged_in_page_comes_back_through_the_extension_only(linked: Linked, site: LocalSite) -> None:
    # Log in inside the extension's browser profile.
    page = await linked.context.new_page()
    await page.goto(site.url("/private"))
    await page.fill("input[name=password]", "open sesame")
    await page.click("button")
    await page.wait_for_url(site.url("/private"))
    assert PRIVATE_TEXT in await page.content()
    await page.close()

    via_browser = await linked.engine.fetch(site.url("/private"), "what is the quarterly balance", max_age_s=0)
    assert via_browser.ok, via_browser.error
    assert via_browser.source == "extension"
    assert "4,217 gold coins" in " ".join(c.text for c in via_browser.chunks)
    assert linked.hub.captures[0].via == "background_tab"

    # The plain HTTP source has no session: it gets the login wall, and trawl says so instead of returning it.
    plain = await linked.engine.fetch(site.url("/private"), "what is the quarterly balance", source="http")
    assert plain.error is not None and plain.error.code == ErrorCode.LOGIN_REQUIRED, plain
    # So does the headless browser source: a fresh profile without the user's cookies.
    headless = await linked.engine.fetch(site.url("/private"), "what is the quarterly balance", source="playwright")
    assert headless.error is not None and headless.error.code == ErrorCode.LOGIN_REQUIRED, headless


async def test_denied_site_is_refused_with_a_typed_error(linked: Linked, site: LocalSite) -> None:
    url = site.add("/secret", article("Secret", "<p>The denied page talks about the vault code.</p>"))
    tab = await linked.open_tab(url)
    await deny_in_options(linked, f"127.0.0.1:{site.port}")

    forced = await linked.engine.fetch(url, "vault code", source="extension")
    assert forced.error is not None and forced.error.code == ErrorCode.BLOCKED_BY_POLICY
    assert "deny list" in forced.error.message and forced.error.hint

    listing = await linked.hub.list_tabs()
    assert all(t["url"] != url for t in listing["tabs"]) and listing["hidden"] >= 1

    for other in linked.context.pages:  # the denied page is the only tab, so it is the active one
        if other is not tab:
            await other.close()
    await tab.bring_to_front()
    active = await linked.engine.fetch("tab:active", "vault code")
    assert active.error is not None and active.error.code == ErrorCode.BLOCKED_BY_POLICY
    assert "deny list" in active.error.message

    # A policy refusal is final: no other source (plain HTTP, headless) reads the site instead.
    hits = site.hits.get("/secret", 0)
    public = await linked.engine.fetch(url, "vault code", max_age_s=0)
    assert public.error is not None and public.error.code == ErrorCode.BLOCKED_BY_POLICY, public
    assert site.hits.get("/secret", 0) == hits, "no source may fetch a denied site"


async def test_pdf_tab_bytes_come_with_the_session(linked: Linked, site: LocalSite) -> None:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "The harbour master's PDF says berth 12 is closed.")
    data = doc.tobytes()

    async def pdf(request: web.Request) -> web.Response:
        if request.cookies.get("session") != "s3cret-session":
            return web.Response(status=403, text="sign in first")
        return web.Response(body=data, content_type="application/pdf")

    url = site.add("/report.pdf", pdf)
    page = await linked.context.new_page()
    await page.goto(site.url("/private"))
    await page.fill("input[name=password]", "open sesame")
    await page.click("button")
    await page.wait_for_url(site.url("/private"))
    captured = await linked.hub.capture(url=url)
    assert captured.kind == "pdf" and captured.data == data
    assert linked.hub.captures[0].via == "fetch"

    # A tab showing a PDF (Chrome's viewer; no .pdf in the URL) is read as the PDF's bytes.
    viewer_url = site.add("/report", pdf)
    viewer = await linked.context.new_page()
    await viewer.goto(viewer_url)
    await viewer.bring_to_front()
    in_tab = await linked.hub.capture(tab="active")
    assert in_tab.kind == "pdf" and in_tab.data == data and in_tab.content_type == "application/pdf"
    result = await linked.engine.fetch(url, "which berth is closed")
    if result.error is not None and result.error.message == "cannot extract pdf":
        pytest.xfail("the extract stage does not route PDFs yet (placeholder)")
    assert result.ok and result.source == "extension"
    assert "berth 12" in " ".join(c.text for c in result.chunks)


async def test_every_read_is_visible_in_the_popup_and_the_status_page(linked: Linked, site: LocalSite) -> None:
    import aiohttp

    url = site.add("/seen", article("Seen", "<p>This page is read by an agent and the user can see that it was. "
                                            "The popup lists it, the badge flashes, the status page names it.</p>"))
    await linked.open_tab(url)
    result = await linked.engine.fetch(url, "who can see the read")
    assert result.ok and result.source == "extension"
    worker = await linked.worker()
    assert await worker.evaluate("chrome.action.getBadgeText({})") == "read"  # the badge flashes for 3 s

    popup = await linked.context.new_page()
    await popup.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/popup/popup.html")
    await popup.wait_for_selector(f"#recent li:has-text('{url}')", timeout=30_000)
    assert "Connected" in await popup.inner_text("#link")

    headers = {"Authorization": f"Bearer {linked.daemon.token}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.get(f"{linked.daemon.url}/v1/status") as resp:
            status = await resp.json()
        async with http.get(f"{linked.daemon.url}/") as resp:
            page_html = await resp.text()
    browser = status["browser"]
    assert browser["attached"] is True and browser["extension"] == PINNED_EXTENSION_ID
    assert browser["captures"][0]["target"] == url and browser["captures"][0]["outcome"] == "ok"
    assert "browser attached" in page_html and url in page_html


async def test_pause_switch_in_the_popup_stops_all_reads(linked: Linked, site: LocalSite) -> None:
    url = site.add("/paused", article("Paused", "<p>While trawl is paused in the browser no agent reads this page "
                                                "through the user's session; public fetches still work.</p>"))
    await linked.open_tab(url)
    popup = await linked.context.new_page()
    await popup.goto(f"chrome-extension://{PINNED_EXTENSION_ID}/popup/popup.html")
    await popup.check("#paused")
    assert await until(lambda: linked.hub.paused, 30), "the daemon never heard that the user paused trawl"
    tab = await linked.engine.fetch("tab:active", "anything")
    assert tab.error is not None and tab.error.code == ErrorCode.EXTENSION_UNAVAILABLE
    assert "paused" in tab.error.message
    public = await linked.engine.fetch(url, "who reads this page")
    assert public.ok and public.source == "http"
    await popup.uncheck("#paused")
    assert await until(lambda: not linked.hub.paused, 30), "the daemon never heard that the user resumed trawl"
    again = await linked.engine.fetch(url, "who reads this page", max_age_s=0)
    assert again.ok and again.source == "extension"


LATE_CONTENT = """<!doctype html><html><head><title>App</title></head><body><div id=app>Loading…</div>
<script>
window.addEventListener('load', () => setTimeout(() => {
  document.getElementById('app').innerHTML = '<h1>Tide report</h1><p>' +
    'High water at the outer har' + 'bour is at 14:32 today, with a height of 4.1 metres. '.repeat(6) + '</p>';
}, 1500));
</script></body></html>"""


async def test_app_shell_filled_after_load_is_awaited_in_a_background_tab(linked: Linked, site: LocalSite) -> None:
    url = site.add("/app", LATE_CONTENT)
    page = await linked.hub.capture(url=url)
    assert "High water at the outer harbour" in (page.html or "")  # the script holds it only in two pieces
    assert "Loading…" not in (page.html or "")
    assert linked.hub.captures[0].via == "background_tab"


async def test_tab_showing_an_error_page_is_a_network_error(linked: Linked) -> None:
    page = await linked.context.new_page()
    for other in linked.context.pages:  # leave the error page as the only tab
        if other is not page:
            await other.close()
    with pytest.raises(Exception):  # noqa: B017 - Playwright raises on the refused connection
        await page.goto("http://127.0.0.1:9/unreachable")
    await page.bring_to_front()
    result = await linked.engine.fetch("tab:active", "anything")
    assert result.error is not None and result.error.code == ErrorCode.NETWORK_ERROR, result.error.message
    assert "did not load" in result.error.message


async def test_unreachable_url_through_a_background_tab_is_a_network_error(linked: Linked) -> None:
    with pytest.raises(TrawlError) as err:
        await linked.hub.capture(url="http://127.0.0.1:9/unreachable")
    assert err.value.code == ErrorCode.NETWORK_ERROR
    listing = await linked.hub.list_tabs()
    assert all("127.0.0.1:9" not in t["url"] for t in listing["tabs"]), "the background tab must be closed"
