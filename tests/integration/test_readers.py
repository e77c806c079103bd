"""Site readers (issue 13 item 1): each site read through its API from a local fake server answering in the
API's documented format (tests/readers_fake.py), with the structure kept in the chunks, and the fallback to
the rendered page (with the reason in ``source_reason``) on API failure, rate limit and private content.
One test runs the whole path through a real daemon over HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from trawl.pipeline import Engine
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings
from trawl.sources.base import FetchRequest
from trawl.sources.http import HttpSource
from trawl.sources.readers import all_readers
from trawl.sources.router import Router, default_sources
from trawl.types import FetchResult, Page

from ..readers_fake import ANSWERS, QUESTIONS, Sites, start_sites, stop_sites


@pytest.fixture
async def sites() -> AsyncIterator[Sites]:
    s = await start_sites()
    yield s
    await stop_sites(s)


def engine(settings: Settings) -> Engine:
    return Engine(settings, sources=[*all_readers(settings), HttpSource(settings)])


async def read(sites: Sites, tmp_path: Path, name: str, query: str | None = None, **kw: Any) -> FetchResult:
    settings = sites.settings(tmp_path, **kw)
    eng = engine(settings)
    try:
        return await eng.fetch(sites.urls()[name], QUESTIONS[name] if query is None else query, k=12)
    finally:
        await eng.aclose()


def chunk_with(result: FetchResult, text: str) -> Any:
    hits = [c for c in result.chunks if text in c.text]
    assert hits, f"{text!r} not in {[c.text for c in result.chunks]}"
    return hits[0]


# ------------------------------------------------------------------------------------------- routing
def test_each_reader_accepts_its_own_urls_only() -> None:
    router = Router(default_sources(Settings(dense="none")))
    cases = {
        "https://github.com/acme/widget/issues/42": "github",
        "https://github.com/acme/widget/pull/7": "github",
        "https://github.com/acme/widget": "github",
        "https://github.com/acme/widget/blob/main/src/a.py": "github",
        "https://github.com/orgs/acme/people": "http",
        "https://github.com/acme/widget/actions": "http",
        "https://github.com/acme/widget/blob/main/../../../users/x": "http",
        "https://stackoverflow.com/questions/11227809/why-is-it": "stackexchange",
        "https://unix.stackexchange.com/q/12345": "stackexchange",
        "https://stackoverflow.com/tags/python": "http",
        "https://stackoverflow.com/a/11227902/87234": "stackexchange",
        "https://stackoverflow.com/questions/11227809/why-is-it/11227902#11227902": "stackexchange",
        "https://en.wikipedia.org/wiki/Lake_Vostok": "mediawiki",
        "https://de.m.wikipedia.org/wiki/Wostoksee": "mediawiki",
        "https://en.wikipedia.org/wiki/Special:Random": "http",
        "https://en.wikipedia.org/w/index.php?title=Lake_Vostok&action=edit": "http",
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ": "youtube",
        "https://youtu.be/dQw4w9WgXcQ": "youtube",
        "https://www.youtube.com/shorts/dQw4w9WgXcQ": "youtube",
        "https://www.youtube.com/@channel": "http",
        "https://arxiv.org/abs/2401.01234v2": "arxiv",
        "https://arxiv.org/pdf/2401.01234": "arxiv",
        "https://arxiv.org/abs/hep-th/9901001": "arxiv",
        "https://arxiv.org/list/cs.CL/recent": "http",
        "https://www.reddit.com/r/homelab/comments/1abcde/which_ups/": "reddit",
        "https://old.reddit.com/r/homelab/comments/1abcde/": "reddit",
        "https://www.reddit.com/r/homelab/": "http",
        "https://example.com/questions/12/x": "http",
    }
    for url, want in cases.items():
        plan = router.plan(FetchRequest(url))
        assert plan[0][0].name == want, (url, [s.name for s, _ in plan])
        if want != "http":
            assert [s.name for s, _ in plan][1] == "http", url  # the page stays the fallback


def test_readers_can_be_switched_off() -> None:
    router = Router(default_sources(Settings(dense="none", readers=False)))
    assert router.plan(FetchRequest("https://github.com/acme/widget/issues/42"))[0][0].name == "http"


# ------------------------------------------------------------------------------------------- GitHub
async def test_github_issue_one_comment_per_chunk_with_author_role_and_votes(sites: Sites, tmp_path: Path) -> None:
    r = await read(sites, tmp_path, "github_issue")
    assert r.ok and r.source == "github", r.error
    assert "REST API" in r.source_reason
    c = chunk_with(r, "WIDGET_ALLOW_EMPTY=1")
    assert c.heading_path[0] == "Crash on empty config file (issue 42)"
    assert c.heading_path[-1].startswith("Comment 3 by mara (member, +12")
    # The author's own "## Steps" heading stays inside the issue body, as a bold line.
    opening = chunk_with(r, "touch widget.toml")
    assert opening.heading_path[-1].startswith("Issue by oren")
    hits = sites.github.api_hits("/api/v3/")
    assert [h.path for h in hits] == ["/api/v3/repos/acme/widget/issues/42",
                                      "/api/v3/repos/acme/widget/issues/42/comments"]
    assert hits[0].headers["Accept"] == "application/vnd.github+json"
    assert hits[0].headers["X-GitHub-Api-Version"] == "2022-11-28"
    assert "Authorization" not in hits[0].headers  # no token configured: none sent


async def test_github_pull_request_with_review_comments(sites: Sites, tmp_path: Path) -> None:
    r = await read(sites, tmp_path, "github_pull")
    assert r.ok and r.source == "github", r.error
    c = chunk_with(r, "use pathlib instead of os.path")
    assert "by ivo on src/widget/loader.py line 31" in c.heading_path[-1]
    assert any("Review" in c.heading_path[-1] and "changes requested" in c.heading_path[-1] for c in r.chunks)
    assert any("merged" in c.text for c in r.chunks)


async def test_github_readme_and_file(sites: Sites, tmp_path: Path) -> None:
    r = await read(sites, tmp_path, "github_readme")
    assert r.ok and r.source == "github", r.error
    c = chunk_with(r, "pip install acme-widget")
    assert c.heading_path == ("acme/widget", "widget", "Install")
    f = await read(sites, tmp_path, "github_file")
    assert f.ok and f.source == "github", f.error
    c = chunk_with(f, "DEFAULT_RETRIES = 7")
    assert "```py" in c.text


async def test_github_token_goes_to_the_api_only(sites: Sites, tmp_path: Path) -> None:
    sites.github.routes.pop("/api/v3/repos/acme/widget/issues/42")
    sites.github.json("/api/v3/repos/acme/widget/issues/42", {"message": "Not Found"}, status=404)
    r = await read(sites, tmp_path, "github_issue", reader_github_token="ghp_sekrit123")
    assert r.ok and r.source == "http", r.error  # fell back to the page
    api = sites.github.api_hits("/api/v3/")
    page = [h for h in sites.github.hits if not h.path.startswith("/api/")]
    assert api and all(h.headers.get("Authorization") == "Bearer ghp_sekrit123" for h in api)
    assert page and all("Authorization" not in h.headers for h in page)
    assert "ghp_sekrit123" not in json.dumps(r.to_dict())


async def test_github_rate_limit_falls_back_to_the_page_and_says_why(sites: Sites, tmp_path: Path) -> None:
    from trawl.extract import candidates

    if not candidates.HAVE_RS:  # seen on CPython 3.11: the fallback page extraction keeps the navigation
        pytest.xfail("without rs-trafilatura (no wheel for this Python) the fallback extraction path"
                     " picks this page's navigation over its README")
    sites.github.json("/api/v3/repos/acme/widget/issues/42",
                      {"message": "API rate limit exceeded for 127.0.0.1. (But here's the good news: ...)",
                       "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"},
                      status=403, headers={"x-ratelimit-limit": "60", "x-ratelimit-remaining": "0",
                                           "x-ratelimit-used": "60", "x-ratelimit-reset": "1767225600",
                                           "x-ratelimit-resource": "core"})
    r = await read(sites, tmp_path, "github_issue")
    assert r.ok and r.source == "http", r.error
    assert "github: GitHub API rate limit reached (x-ratelimit-remaining: 0" in r.source_reason
    assert "WIDGET_ALLOW_EMPTY=1" in " ".join(c.text for c in r.chunks)  # the page has it too


async def test_github_secondary_rate_limit_429_falls_back(sites: Sites, tmp_path: Path) -> None:
    sites.github.json("/api/v3/repos/acme/widget/issues/42/comments",
                      {"message": "You have exceeded a secondary rate limit."}, status=429,
                      headers={"retry-after": "60"})
    r = await read(sites, tmp_path, "github_issue")
    assert r.ok and r.source == "http", r.error
    assert "secondary rate limit (retry-after: 60)" in r.source_reason


async def test_github_private_repository_404_falls_back_to_the_page(sites: Sites, tmp_path: Path) -> None:
    sites.github.json("/api/v3/repos/acme/widget/issues/42", {"message": "Not Found",
                      "documentation_url": "https://docs.github.com/rest/issues/issues#get-an-issue"}, status=404)
    r = await read(sites, tmp_path, "github_issue")
    assert r.ok and r.source == "http", r.error
    assert "404: private repository or missing item" in r.source_reason


async def test_missing_everywhere_is_not_found(sites: Sites, tmp_path: Path) -> None:
    settings = sites.settings(tmp_path)
    eng = engine(settings)
    try:
        r = await eng.fetch(f"{sites.github.base}/acme/widget/issues/999", "anything")
    finally:
        await eng.aclose()
    assert not r.ok and r.error is not None and r.error.code == "not_found"


async def test_api_answering_html_instead_of_json_falls_back(sites: Sites, tmp_path: Path) -> None:
    sites.github.html("/api/v3/repos/acme/widget/readme", "<html><body>Unicorn! This page is taking too long")
    r = await read(sites, tmp_path, "github_readme")
    assert r.ok and r.source == "http", r.error
    assert "GitHub API did not answer JSON" in r.source_reason


# ------------------------------------------------------------------------------------------- Stack Exchange
async def test_stackexchange_accepted_answer_first_with_votes(sites: Sites, tmp_path: Path) -> None:
    r = await read(sites, tmp_path, "stackexchange")
    assert r.ok and r.source == "stackexchange", r.error
    c = chunk_with(r, "branch prediction")
    assert c.heading_path[-1] == "Answer by Mysticial (score 34188, accepted)"
    heads = [c.heading_path[-1] for c in sorted(r.chunks, key=lambda c: c.index) if len(c.heading_path) > 1]
    answers = [h for h in dict.fromkeys(heads) if h.startswith("Answer")]
    assert answers[0].endswith("accepted)") and "score 4200" in answers[1] and "score 12" in answers[2]
    q = sites.stackexchange.api_hits("/2.3/questions/11227809")[0].query
    assert q["site"] == "stackoverflow.com" and q["filter"] == "withbody"
    a = sites.stackexchange.api_hits("/2.3/questions/11227809/answers")[0].query
    assert a["sort"] == "votes" and a["order"] == "desc"


async def test_stackexchange_throttle_falls_back(sites: Sites, tmp_path: Path) -> None:
    sites.stackexchange.json("/2.3/questions/11227809/answers", {
        "error_id": 502, "error_name": "throttle_violation",
        "error_message": "too many requests from this IP, more requests available in 80000 seconds"}, status=400)
    r = await read(sites, tmp_path, "stackexchange")
    assert r.ok and r.source == "http", r.error
    assert "Stack Exchange API rate limit reached (throttle_violation)" in r.source_reason


async def test_stackexchange_server_error_falls_back(sites: Sites, tmp_path: Path) -> None:
    sites.stackexchange.routes["/2.3/questions/11227809"] = (500, {"Content-Type": "text/plain"}, b"oops")
    r = await read(sites, tmp_path, "stackexchange")
    assert r.ok and r.source == "http", r.error
    assert "Stack Exchange API failed (HTTP 500)" in r.source_reason


async def test_stackexchange_deleted_question_falls_back(sites: Sites, tmp_path: Path) -> None:
    sites.stackexchange.json("/2.3/questions/11227809", {"items": [], "has_more": False, "quota_max": 300,
                                                         "quota_remaining": 290})
    r = await read(sites, tmp_path, "stackexchange")
    assert r.ok and r.source == "http", r.error
    assert "deleted or missing" in r.source_reason


# ------------------------------------------------------------------------------------------- MediaWiki
async def test_mediawiki_sections_as_headings_without_page_furniture(sites: Sites, tmp_path: Path) -> None:
    r = await read(sites, tmp_path, "mediawiki", query="")
    assert r.ok and r.source == "mediawiki", r.error
    c = chunk_with(r, "3,750 metres")
    assert c.heading_path == ("Lake Vostok", "Description")
    assert any(c.heading_path == ("Lake Vostok", "Description", "Water") for c in r.chunks)
    assert any(c.kind == "table" and "East Antarctica" in c.text for c in r.chunks)  # the infobox stays
    text = "\n".join(c.text for c in r.chunks)
    for furniture in ("[1]", "edit", "Lake Ellsworth", "Siegert", "For the research station", "Menu entry"):
        assert furniture not in text, furniture
    q = sites.wiki.api_hits("/w/api.php")[0].query
    assert q["action"] == "parse" and q["page"] == "Lake Vostok" and q["formatversion"] == "2"


async def test_mediawiki_rate_limit_error_falls_back(sites: Sites, tmp_path: Path) -> None:
    async def limited(request: web.Request) -> web.StreamResponse:
        return web.json_response({"error": {"code": "ratelimited", "info": "You've exceeded your rate limit."}},
                                 headers={"MediaWiki-API-Error": "ratelimited"})

    sites.wiki.routes["/w/api.php"] = limited
    r = await read(sites, tmp_path, "mediawiki")
    assert r.ok and r.source == "http", r.error
    assert "MediaWiki API rate limit or lag (ratelimited)" in r.source_reason


async def test_mediawiki_private_wiki_falls_back(sites: Sites, tmp_path: Path) -> None:
    async def private(request: web.Request) -> web.StreamResponse:
        return web.json_response({"error": {"code": "readapidenied", "info": "You need read permission."}})

    sites.wiki.routes["/w/api.php"] = private
    r = await read(sites, tmp_path, "mediawiki")
    assert r.ok and r.source == "http", r.error
    assert "private (readapidenied)" in r.source_reason


# ------------------------------------------------------------------------------------------- YouTube
async def test_youtube_transcript_chunks_carry_timestamps(sites: Sites, tmp_path: Path) -> None:
    r = await read(sites, tmp_path, "youtube")
    assert r.ok and r.source == "youtube", r.error
    c = chunk_with(r, "110 newton metres")
    assert c.heading_path[0] == "How to change a wheel"
    assert c.heading_path[-1].startswith("Transcript 03:05")
    tt = sites.youtube.api_hits("/api/timedtext")
    assert tt and tt[0].query["fmt"] == "json3" and "kind" not in tt[0].query  # the manual track won
    # The rendered page does not hold the transcript: the reader is the only way to the answer.
    page = await read(sites, tmp_path / "page", "youtube", readers=False)
    assert page.ok and page.source == "http"
    assert "110 newton metres" not in " ".join(c.text for c in page.chunks)


async def test_youtube_members_only_video_falls_back_with_reason(sites: Sites, tmp_path: Path) -> None:
    player = {"playabilityStatus": {"status": "LOGIN_REQUIRED", "reason": "Join this channel to get access"},
              "videoDetails": {"title": "Members only"}}
    sites.youtube.html("/watch", f"<html><script>var ytInitialPlayerResponse = {json.dumps(player)};</script>"
                       "<body><main><h1>Members only</h1><p>Join this channel to get access to members-only "
                       "content like this video.</p></main></body></html>")
    r = await read(sites, tmp_path, "youtube")
    assert r.source == "http" and "YouTube needs a login for this video (LOGIN_REQUIRED)" in r.source_reason, r


async def test_youtube_video_without_captions_falls_back(sites: Sites, tmp_path: Path) -> None:
    player = {"playabilityStatus": {"status": "OK"}, "videoDetails": {"title": "Silent film"}}
    sites.youtube.html("/watch", "<html><body><main><h1>Silent film</h1><p>A film without words, with a long "
                       "description of its plot and its music.</p></main>"
                       f"<script>var ytInitialPlayerResponse = {json.dumps(player)};</script></body></html>")
    r = await read(sites, tmp_path, "youtube")
    assert r.ok and r.source == "http", r.error
    assert "no captions" in r.source_reason


# ------------------------------------------------------------------------------------------- arXiv
async def test_arxiv_abstract_page_to_full_text(sites: Sites, tmp_path: Path) -> None:
    r = await read(sites, tmp_path, "arxiv")
    assert r.ok and r.source == "arxiv", r.error
    assert r.final_url.endswith("/html/2401.01234")
    c = chunk_with(r, "93.4%")
    assert c.heading_path[-1] == "3 Results"
    page = await read(sites, tmp_path / "page", "arxiv", readers=False)
    assert "93.4%" not in " ".join(c.text for c in page.chunks)  # the abstract page holds the abstract only


async def test_arxiv_without_html_version_reads_the_pdf(sites: Sites, tmp_path: Path) -> None:
    settings = sites.settings(tmp_path)
    eng = engine(settings)
    try:
        r = await eng.fetch(f"{sites.arxiv.base}/abs/2401.09999", "how much drift was measured")
    finally:
        await eng.aclose()
    assert r.ok and r.source == "arxiv", r.error
    assert r.final_url.endswith("/pdf/2401.09999")
    assert "0.8 millimetres" in " ".join(c.text for c in r.chunks)


async def test_arxiv_rate_limit_falls_back_to_the_abstract_page(sites: Sites, tmp_path: Path) -> None:
    sites.arxiv.routes["/html/2401.01234"] = (503, {"Retry-After": "10", "Content-Type": "text/plain"},
                                              b"Rate exceeded.")
    r = await read(sites, tmp_path, "arxiv")
    assert r.ok and r.source == "http", r.error
    assert "arXiv rate limit reached (HTTP 503) (retry-after: 10)" in r.source_reason


# ------------------------------------------------------------------------------------------- Reddit
async def test_reddit_comment_tree_in_heading_paths(sites: Sites, tmp_path: Path) -> None:
    r = await read(sites, tmp_path, "reddit", query="")
    assert r.ok and r.source == "reddit", r.error
    c = chunk_with(r, "enable the network UPS server")
    assert c.heading_path == ("Which UPS for a small rack?", "Comment by u/voltvole (score 310)",
                              "Reply by u/rackmouse (score 40, OP)", "Reply by u/voltvole (score 35)")
    assert any("3 more replies" in w for w in r.warnings)
    assert sites.reddit.api_hits("/r/homelab/comments/1abcde.json")[0].query["raw_json"] == "1"


async def test_reddit_private_community_falls_back(sites: Sites, tmp_path: Path) -> None:
    sites.reddit.json("/r/homelab/comments/1abcde.json", {"reason": "private", "message": "Forbidden",
                                                          "error": 403}, status=403)
    r = await read(sites, tmp_path, "reddit")
    assert r.ok and r.source == "http", r.error
    assert "Reddit says the community is private" in r.source_reason


async def test_reddit_rate_limit_falls_back(sites: Sites, tmp_path: Path) -> None:
    sites.reddit.json("/r/homelab/comments/1abcde.json", {"message": "Too Many Requests", "error": 429},
                      status=429, headers={"x-ratelimit-used": "100", "x-ratelimit-remaining": "0",
                                           "x-ratelimit-reset": "412"})
    r = await read(sites, tmp_path, "reddit")
    assert r.ok and r.source == "http", r.error
    assert "Reddit rate limit reached (HTTP 429, resets in 412 s)" in r.source_reason


async def test_api_connection_dropped_falls_back(sites: Sites, tmp_path: Path) -> None:
    async def drop(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()  # the API host hangs up without an answer
        return web.Response()

    sites.reddit.routes["/r/homelab/comments/1abcde.json"] = drop
    r = await read(sites, tmp_path, "reddit")
    assert r.ok and r.source == "http", r.error
    assert "reddit: 127.0.0.1:" in r.source_reason and ("unreachable" in r.source_reason
                                                         or "broke off" in r.source_reason), r.source_reason


# ------------------------------------------------------------------------------------------- a real daemon
async def test_reader_through_the_daemon_over_http(sites: Sites, tmp_path: Path) -> None:
    settings = sites.settings(tmp_path, port=0, shutdown_grace_s=5.0)
    async with RunningDaemon(settings, warm=False) as d, httpx.AsyncClient(base_url=d.url, timeout=60) as c:
        resp = await c.post("/v1/fetch", json={"url": sites.urls()["stackexchange"], "query": QUESTIONS[
            "stackexchange"]}, headers={"Authorization": f"Bearer {d.token}"})
        body = resp.json()
        assert body["ok"] and body["source"] == "stackexchange", body
        assert any(ANSWERS["stackexchange"] in ch["text"] and "accepted" in ch["heading_path"][-1]
                   for ch in body["chunks"])
        sites.stackexchange.json("/2.3/questions/11227809", {"error_id": 502, "error_name": "throttle_violation",
                                                             "error_message": "slow down"}, status=400)
        resp = await c.post("/v1/fetch", json={"url": sites.urls()["stackexchange"], "query": "branch",
                                               "max_age_s": 0}, headers={"Authorization": f"Bearer {d.token}"})
        body = resp.json()
        assert body["ok"] and body["source"] == "http", body
        assert "throttle_violation" in body["source_reason"]


# ------------------------------------------------------------------------------------------- fallback order
class BrowserTab:
    """Stands in for the extension source at the Source seam (priority 10): the user's logged-in browser."""

    name = "extension"
    priority = 10

    def __init__(self) -> None:
        self.asked: list[str] = []

    def accepts(self, req: FetchRequest) -> str | None:
        return "the user's browser is attached" if req.target.startswith("http") else None

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        self.asked.append(req.target)
        html = ("<html><head><title>Private issue</title></head><body><main><h1>Crash on empty config file</h1>"
                "<p>Seen through the signed-in browser: set WIDGET_ALLOW_EMPTY=1 until the fix ships.</p>"
                "</main></body></html>")
        return Page(url=req.target, final_url=req.target, kind="html", source=self.name, html=html)


async def test_private_repository_falls_back_to_the_users_browser_first(sites: Sites, tmp_path: Path) -> None:
    sites.github.json("/api/v3/repos/acme/widget/issues/42", {"message": "Not Found"}, status=404)
    settings = sites.settings(tmp_path)
    tab = BrowserTab()
    eng = Engine(settings, sources=[*all_readers(settings), tab, HttpSource(settings)])
    try:
        r = await eng.fetch(sites.urls()["github_issue"], "workaround")
    finally:
        await eng.aclose()
    assert r.ok and r.source == "extension", r.error
    assert r.source_reason == ("the user's browser is attached (after github: GitHub API answered 404: private "
                               "repository or missing item)")
    assert tab.asked == [sites.urls()["github_issue"]]
    assert not [h for h in sites.github.hits if not h.path.startswith("/api/")]  # plain HTTP was not needed


async def test_stalled_api_times_out_and_falls_back(sites: Sites, tmp_path: Path) -> None:
    never = asyncio.Event()

    async def stall(request: web.Request) -> web.StreamResponse:
        await never.wait()  # the API accepts the connection and never answers
        return web.Response()

    sites.wiki.routes["/w/api.php"] = stall
    try:
        # The stalled API's deadline is also the fallback page's: 3 s, which a loaded machine meets for a local page.
        r = await read(sites, tmp_path, "mediawiki", http_timeout_s=3.0)
    finally:
        never.set()  # let the stalled handler end, so the server shuts down at once
    assert r.ok and r.source == "http", r.error
    assert "mediawiki: " in r.source_reason and "timed out" in r.source_reason, r.source_reason


async def test_youtube_xml_timedtext_is_read_too(sites: Sites, tmp_path: Path) -> None:
    xml = ('<?xml version="1.0" encoding="utf-8" ?><transcript><text start="0.5" dur="3.2">Today we change a '
           'wheel.</text><text start="185.0" dur="4.0">Tighten the nuts to 110 newton metres &amp;amp; '
           'check again.</text></transcript>')

    async def timedtext(request: web.Request) -> web.StreamResponse:
        return web.Response(text=xml, content_type="text/xml")

    sites.youtube.routes["/api/timedtext"] = timedtext
    r = await read(sites, tmp_path, "youtube", query="")
    assert r.ok and r.source == "youtube", r.error
    c = chunk_with(r, "110 newton metres & check again")
    assert c.heading_path[-1] == "Transcript 03:05–03:09"  # a new window: more than 90 s after the last


async def test_a_rate_limited_api_is_left_alone_until_it_resets(sites: Sites, tmp_path: Path) -> None:
    sites.stackexchange.json("/2.3/questions/11227809", {
        "error_id": 502, "error_name": "throttle_violation",
        "error_message": "too many requests from this IP, more requests available in 600 seconds"}, status=400)
    settings = sites.settings(tmp_path)
    eng = engine(settings)
    url = sites.urls()["stackexchange"]
    try:
        first = await eng.fetch(url, "branch prediction", max_age_s=0)
        second = await eng.fetch(url, "sorted array", max_age_s=0)
    finally:
        await eng.aclose()
    assert first.source == second.source == "http", (first.error, second.error)
    assert len(sites.stackexchange.api_hits("/2.3/")) == 1  # the second read did not ask the throttled API
    assert "throttle_violation" in second.source_reason and "not asking again for" in second.source_reason


async def test_youtube_chapters_from_the_description_head_their_transcript_windows(sites: Sites,
                                                                                   tmp_path: Path) -> None:
    status, headers, body = sites.youtube.routes["/watch"]  # type: ignore[misc]
    chapters = b"Changing a wheel.\\n0:00 Intro\\n1:00 Lifting the car\\n3:00 Tightening the nuts"
    sites.youtube.routes["/watch"] = (status, headers, body.replace(b"Changing a wheel safely in five minutes.",
                                                                    chapters))
    r = await read(sites, tmp_path, "youtube", query="")
    assert r.ok and r.source == "youtube", r.error
    c = chunk_with(r, "110 newton metres")
    assert c.heading_path == ("How to change a wheel", "Chapter 03:00 Tightening the nuts", "Transcript 03:05–03:55")
    lifting = chunk_with(r, "Lift the car until the tyre clears")
    assert lifting.heading_path[1] == "Chapter 01:00 Lifting the car"


async def test_stackexchange_answer_share_link_reads_its_question(sites: Sites, tmp_path: Path) -> None:
    settings = sites.settings(tmp_path)
    eng = engine(settings)
    try:
        r = await eng.fetch(f"{sites.stackexchange.base}/a/4200/12345", "")
    finally:
        await eng.aclose()
    assert r.ok and r.source == "stackexchange", r.error
    c = chunk_with(r, "conditional move")
    assert c.heading_path[-1] == "Answer by WiSaGaN (score 4200, the linked answer)"
    assert sites.stackexchange.api_hits("/2.3/answers/4200")[0].query["site"] == "stackoverflow.com"


@pytest.mark.parametrize(("name", "site_attr", "path", "status", "headers", "why"), [
    ("youtube", "youtube", "/api/timedtext", 429, {"Retry-After": "30"},
     "YouTube captions rate limit reached (HTTP 429, retry after 30 s)"),
    ("youtube", "youtube", "/api/timedtext", 500, {}, "YouTube captions failed (HTTP 500)"),
    ("arxiv", "arxiv", "/html/2401.01234", 500, {}, "arXiv failed (HTTP 500)"),
    ("mediawiki", "wiki", "/w/api.php", 502, {}, "MediaWiki API failed (HTTP 502)"),
    ("reddit", "reddit", "/r/homelab/comments/1abcde.json", 503, {}, "Reddit JSON failed (HTTP 503)"),
    ("github_file", "github", "/api/v3/repos/acme/widget/contents/src/widget/config.py", 500, {},
     "GitHub API failed (HTTP 500)"),
])
async def test_api_failures_fall_back_with_the_reason(sites: Sites, tmp_path: Path, name: str, site_attr: str,
                                                      path: str, status: int, headers: dict[str, str],
                                                      why: str) -> None:
    getattr(sites, site_attr).routes[path] = (status, {"Content-Type": "text/html", **headers},
                                              b"<html><body>Something went wrong</body></html>")
    r = await read(sites, tmp_path, name)
    assert r.ok and r.source == "http", r.error
    assert why in r.source_reason, r.source_reason


async def test_github_file_on_a_branch_with_a_slash(sites: Sites, tmp_path: Path) -> None:
    code = "RELEASE_CHANNEL = 'stable'\n"
    sites.github.json("/api/v3/repos/acme/widget/contents/src/widget/channel.py", {
        "type": "file", "name": "channel.py", "path": "src/widget/channel.py", "encoding": "base64",
        "content": base64.b64encode(code.encode()).decode()})
    url = f"{sites.github.base}/acme/widget/blob/release/1.2/src/widget/channel.py"
    settings = sites.settings(tmp_path)
    eng = engine(settings)
    try:
        r = await eng.fetch(url, "")
    finally:
        await eng.aclose()
    assert r.ok and r.source == "github", r.error
    assert "RELEASE_CHANNEL = 'stable'" in r.chunks[0].text
    assert r.title == "acme/widget: src/widget/channel.py (release/1.2)"
    asked = [(h.path, h.query.get("ref")) for h in sites.github.api_hits("/api/v3/")]
    assert asked == [("/api/v3/repos/acme/widget/contents/1.2/src/widget/channel.py", "release"),
                     ("/api/v3/repos/acme/widget/contents/src/widget/channel.py", "release/1.2")]
