"""Local stand-ins for the sites the readers read: one aiohttp server per site on loopback, answering in each
API's documented format, plus the rendered page a browser or plain HTTP would get at the same URL.

Shared by tests/integration/test_readers.py, tests/security/test_readers_guard.py and
benchmarks/bench_readers.py. Every fixture below is written by hand for these tests; field names follow the
documentation pages listed in each builder's docstring. Each fixture holds one fact (``ANSWERS``) that a
question (``QUESTIONS``) asks for, so a benchmark can tell whether the answer came back.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from trawl.settings import Settings

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Hit:
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class FakeSite:
    """One site on 127.0.0.1: ``routes`` maps a path to a handler or a ready (status, headers, body)."""

    routes: dict[str, Handler | tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def json(self, path: str, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.routes[path] = (status, {"Content-Type": "application/json; charset=utf-8", **(headers or {})},
                             json.dumps(data).encode())

    def html(self, path: str, text: str, status: int = 200) -> None:
        self.routes[path] = (status, {"Content-Type": "text/html; charset=utf-8"}, text.encode())

    def api_hits(self, prefix: str = "") -> list[Hit]:
        return [h for h in self.hits if h.path.startswith(prefix)]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.hits.append(Hit(request.path, dict(request.query), dict(request.headers)))
        route = self.routes.get(request.path)
        if route is None:
            return web.Response(status=404, text="not here")
        if callable(route):
            return await route(request)
        status, headers, body = route
        return web.Response(status=status, headers=headers, body=body)

    async def start(self) -> FakeSite:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@dataclass
class Sites:
    github: FakeSite
    stackexchange: FakeSite
    wiki: FakeSite
    youtube: FakeSite
    arxiv: FakeSite
    reddit: FakeSite

    def all(self) -> list[FakeSite]:
        return [self.github, self.stackexchange, self.wiki, self.youtube, self.arxiv, self.reddit]

    def settings(self, tmp: Path, **kw: Any) -> Settings:
        values: dict[str, Any] = dict(
            cache_dir=tmp / "cache", state_dir=tmp / "state", dense="none", allow_private_hosts="loopback",
            http_timeout_s=10.0, page_ttl_s=0.0,
            reader_github_api=f"{self.github.base}/api/v3",
            reader_stackexchange_api=f"{self.stackexchange.base}/2.3",
            reader_mediawiki_api=f"{self.wiki.base}/w/api.php",
            reader_youtube_base=self.youtube.base,
            reader_arxiv_base=self.arxiv.base,
            reader_reddit_base=self.reddit.base,
        )
        values.update(kw)
        return Settings(**values)

    def urls(self) -> dict[str, str]:
        """The page URL each fixture is read at (on the fake site, as GitHub Enterprise or a self-hosted wiki)."""
        return {
            "github_issue": f"{self.github.base}/acme/widget/issues/42",
            "github_pull": f"{self.github.base}/acme/widget/pull/43",
            "github_readme": f"{self.github.base}/acme/widget",
            "github_file": f"{self.github.base}/acme/widget/blob/main/src/widget/config.py",
            "stackexchange": f"{self.stackexchange.base}/questions/11227809/why-is-sorted-faster",
            "mediawiki": f"{self.wiki.base}/wiki/Lake_Vostok",
            "youtube": f"{self.youtube.base}/watch?v=dQw4w9WgXcQ",
            "arxiv": f"{self.arxiv.base}/abs/2401.01234",
            "reddit": f"{self.reddit.base}/r/homelab/comments/1abcde/which_ups_for_a_small_rack/",
        }


async def start_sites(filler: int = 0) -> Sites:
    """The six fake sites; ``filler`` adds that many unrelated comments (answers, for Stack Exchange) to the
    GitHub issue, the Stack Exchange question and the Reddit thread, in the API and on the page alike."""
    sites = Sites(*[await FakeSite().start() for _ in range(6)])
    install_github(sites.github, filler)
    install_stackexchange(sites.stackexchange, filler // 4)
    install_wiki(sites.wiki)
    install_youtube(sites.youtube)
    install_arxiv(sites.arxiv)
    install_reddit(sites.reddit, filler)
    return sites


async def stop_sites(sites: Sites) -> None:
    for s in sites.all():
        await s.stop()


QUESTIONS = {
    "github_issue": "how do I work around the crash on an empty config file",
    "github_pull": "what did the reviewer ask to change in the loader",
    "github_readme": "how do I install widget",
    "github_file": "what is the default retry limit",
    "stackexchange": "why is processing a sorted array faster",
    "mediawiki": "how deep is the ice above Lake Vostok",
    "youtube": "what torque should the wheel nuts be tightened to",
    "arxiv": "what accuracy did the model reach on the held-out set",
    "reddit": "which UPS did people recommend for a small rack",
}
ANSWERS = {
    "github_issue": "WIDGET_ALLOW_EMPTY=1",
    "github_pull": "use pathlib instead of os.path",
    "github_readme": "pip install acme-widget",
    "github_file": "DEFAULT_RETRIES = 7",
    "stackexchange": "branch prediction",
    "mediawiki": "3,750 metres",
    "youtube": "110 newton metres",
    "arxiv": "93.4%",
    "reddit": "CyberPower CP1500PFCLCD",
}


# ------------------------------------------------------------------------------------------- page chrome
def chrome_page(title: str, main: str, *, nav_items: int = 40, footer_items: int = 30, extra: str = "") -> str:
    """A rendered page as a site serves it: header, navigation, sidebars and footer around ``main``."""
    nav = "".join(f'<li><a href="/n{i}">Menu entry {i} of the site navigation</a></li>' for i in range(nav_items))
    foot = "".join(f'<li><a href="/f{i}">Footer link {i}: terms, privacy, status</a></li>'
                   for i in range(footer_items))
    side = "".join(f'<li><a href="/s{i}">Related item {i} you may also like to read</a></li>' for i in range(15))
    return (f"<!doctype html><html lang=en><head><title>{title}</title>"
            "<script>window.__APP_STATE__={\"user\":null,\"features\":[1,2,3]}</script></head><body>"
            f"<header><nav><ul>{nav}</ul></nav><form><input placeholder='Search'></form></header>"
            f"<div class=layout><aside><ul>{side}</ul></aside><main>{main}</main>"
            f"<aside class=sidebar><h3>Sponsored</h3><ul>{side}</ul></aside></div>{extra}"
            f"<footer><ul>{foot}</ul><p>© 2026 Example Corp. All rights reserved.</p></footer></body></html>")


# ------------------------------------------------------------------------------------------- GitHub
def _user(login: str) -> dict[str, Any]:
    return {"login": login, "id": abs(hash(login)) % 10**6, "type": "User", "html_url": f"https://github.com/{login}"}


def _reactions(plus: int) -> dict[str, Any]:
    return {"url": "", "total_count": plus, "+1": plus, "-1": 0, "laugh": 0, "hooray": 0, "confused": 0,
            "heart": 0, "rocket": 0, "eyes": 0}


GITHUB_COMMENTS = [
    ("dana", "NONE", 1, "Same here on 2.3.0, it crashes with `KeyError: 'sections'` when the file is empty."),
    ("eli", "CONTRIBUTOR", 0, "I could reproduce it with an empty `widget.toml` on Linux and macOS."),
    ("mara", "MEMBER", 12, "Thanks for the report. Until the fix ships, set `WIDGET_ALLOW_EMPTY=1` in the "
     "environment: the loader then treats an empty file as defaults instead of crashing. The fix is in #43."),
    ("dana", "NONE", 2, "The workaround works for me, thanks!"),
]


_WHO = ["ana", "bo", "cyd", "dev", "eun", "fay", "gus", "hal", "ike", "jo"]
_THINGS = ["the Windows installer", "the ARM image", "proxy settings", "the colour output", "the plugin loader",
           "the docs search", "log rotation", "the Docker tag", "shell completion", "the release notes"]
_SAYS = ["also misbehaves for me, but I think that is a separate problem", "works fine on my side after the update",
         "was slow last week and is fast again now", "could use a clearer message when it fails",
         "should get its own ticket, it is unrelated here", "behaves the same on three machines I tried"]


def filler_text(i: int) -> str:
    """An unrelated, deterministic comment: the noise of a long thread (it never holds a fixture's answer)."""
    a, b = _THINGS[i % len(_THINGS)], _THINGS[(i * 3 + 1) % len(_THINGS)]
    return (f"Not sure it helps, but {a} {_SAYS[i % len(_SAYS)]}. Version {i % 5 + 1}.{i % 7}; "
            f"I also checked {b} and it {_SAYS[(i + 2) % len(_SAYS)]}.")


def install_github(site: FakeSite, filler: int = 0) -> None:
    """GitHub REST fixtures. Fields from docs.github.com/en/rest/issues/issues#get-an-issue, .../issues/comments
    #list-issue-comments, .../pulls/pulls#get-a-pull-request, .../pulls/comments, .../pulls/reviews,
    .../repos/contents#get-a-repository-readme and #get-repository-content; rate limits from
    docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api."""
    api = "/api/v3/repos/acme/widget"
    issue = {"number": 42, "title": "Crash on empty config file", "state": "open", "user": _user("oren"),
             "author_association": "NONE", "body": "Loading an empty `widget.toml` crashes:\n\n```\n"
             "Traceback (most recent call last):\nKeyError: 'sections'\n```\n\n## Steps\n\n1. touch widget.toml\n"
             "2. widget run", "labels": [{"name": "bug"}, {"name": "config"}],
             "comments": len(_github_comments(filler)),
             "created_at": "2026-03-01T10:00:00Z", "reactions": _reactions(5),
             "html_url": "https://github.com/acme/widget/issues/42"}
    site.json(f"{api}/issues/42", issue)
    comments = [{"id": i, "user": _user(u), "author_association": role, "body": body,
                 "reactions": _reactions(plus), "created_at": f"2026-03-0{i + 2}T09:00:00Z"}
                for i, (u, role, plus, body) in enumerate(_github_comments(filler))]
    site.json(f"{api}/issues/42/comments", comments)
    pull = {"number": 43, "title": "Treat an empty config file as defaults", "state": "closed", "merged": True,
            "user": _user("mara"), "author_association": "MEMBER", "body": "Fixes #42. The loader returns the "
            "defaults for an empty file.", "labels": [], "comments": 1, "created_at": "2026-03-05T12:00:00Z"}
    site.json(f"{api}/pulls/43", pull)
    site.json(f"{api}/issues/43/comments", [{"user": _user("oren"), "body": "Works on my machine now.",
                                             "created_at": "2026-03-06T08:00:00Z", "reactions": _reactions(1)}])
    site.json(f"{api}/pulls/43/reviews", [{"user": _user("ivo"), "state": "CHANGES_REQUESTED",
                                           "body": "Looks right; one request inline.",
                                           "submitted_at": "2026-03-05T15:00:00Z"}])
    site.json(f"{api}/pulls/43/comments", [{"user": _user("ivo"), "path": "src/widget/loader.py", "line": 31,
                                            "diff_hunk": "@@ -28,6 +28,9 @@ def load(path):\n+    text = "
                                            "open(os.path.join(root, name)).read()",
                                            "body": "Please use pathlib instead of os.path here, like the rest "
                                            "of the loader.", "created_at": "2026-03-05T15:01:00Z"}])
    readme = ("<!-- header -->\n<p align=\"center\"><img src=\"docs/logo.svg\" width=\"160\" alt=\"\"></p>\n\n"
              "[![CI](https://github.com/acme/widget/actions/workflows/ci.yml/badge.svg)](https://github.com/acme/"
              "widget/actions) [![PyPI](https://img.shields.io/pypi/v/acme-widget.svg)](https://pypi.org/project/"
              "acme-widget/) [![License: MIT](https://img.shields.io/badge/License-MIT-yellow.svg)](LICENSE)\n\n"
              "# widget\n\nA small configurable widget runner.\n\n## Install\n\n```\npip install acme-widget\n```\n\n"
              "## Usage\n\nRun `widget run` in a folder holding `widget.toml`.\n\n## License\n\nMIT")
    site.json(f"{api}/readme", {"type": "file", "name": "README.md", "path": "README.md", "encoding": "base64",
                                "size": len(readme), "content": base64.b64encode(readme.encode()).decode()})
    code = ('"""Configuration defaults."""\n\nDEFAULT_RETRIES = 7\nDEFAULT_TIMEOUT_S = 30\n\n\n'
            "def retries(cfg):\n    return cfg.get('retries', DEFAULT_RETRIES)\n")
    site.json(f"{api}/contents/src/widget/config.py", {"type": "file", "name": "config.py", "encoding": "base64",
                                                       "path": "src/widget/config.py", "size": len(code),
                                                       "content": base64.b64encode(code.encode()).decode()})
    # The rendered pages at the same URLs.
    thread = "".join(f"<div class='timeline-comment'><h3><a href='/{u}'>{u}</a> commented</h3>"
                     f"<div class='comment-body'><p>{body}</p></div>"
                     "<div class='reactions'><button>👍</button><button>🎉</button></div></div>"
                     for u, _, _, body in _github_comments(filler))
    site.html("/acme/widget/issues/42", chrome_page(
        "Crash on empty config file · Issue #42 · acme/widget",
        "<h1>Crash on empty config file #42</h1><div class='comment-body'><p>Loading an empty widget.toml "
        "crashes with KeyError: 'sections'.</p></div>" + thread, nav_items=80, footer_items=40))
    site.html("/acme/widget/pull/43", chrome_page(
        "Treat an empty config file as defaults · Pull Request #43", "<h1>Treat an empty config file as "
        "defaults #43</h1><p>Fixes #42.</p><p>ivo requested changes</p><div class='review-thread'>"
        "<a href='/f'>src/widget/loader.py</a><pre>+    text = open(os.path.join(root, name)).read()</pre>"
        "<p>Please use pathlib instead of os.path here, like the rest of the loader.</p></div>"
        "<p>Works on my machine now.</p>",
        nav_items=80))
    site.html("/acme/widget", chrome_page(
        "acme/widget: A small configurable widget runner", "<div class='file-navigation'>"
        + "".join(f"<div class=row><a href='/f/{i}'>file_{i}.py</a><span>commit message {i}</span></div>"
                  for i in range(25)) + "</div><article class='markdown-body'><h1>widget</h1><p>A small "
        "configurable widget runner.</p><h2>Install</h2><pre><code>pip install acme-widget</code></pre>"
        "<h2>Usage</h2><p>Run widget run in a folder holding widget.toml.</p></article>", nav_items=80))
    site.html("/acme/widget/blob/main/src/widget/config.py", chrome_page(
        "widget/src/widget/config.py at main · acme/widget", "<table class='highlight'>" + "".join(
            f"<tr><td class='blob-num'>{i}</td><td class='blob-code'>{line}</td></tr>"
            for i, line in enumerate(code.splitlines(), 1)) + "</table>", nav_items=80))


# ------------------------------------------------------------------------------------------- Stack Exchange
SE_ANSWERS = [
    (12, False, "Raymond", "<p>Sorting first costs more than it saves in most real programs.</p>"),
    (34188, True, "Mysticial", "<p>You are a victim of <b>branch prediction</b> failure.</p><h2>What is branch "
     "prediction?</h2><p>The processor guesses which way a branch will go; on sorted data the guess is almost "
     "always right, so the pipeline never stalls. On random data it is wrong half the time.</p>"
     "<pre><code>if (data[c] &gt;= 128) sum += data[c];</code></pre>"),
    (4200, False, "WiSaGaN", "<p>The compiler can replace the branch with a conditional move "
     "(<code>cmov</code>), after which sorted and unsorted run equally fast.</p>"),
]


def _github_comments(filler: int) -> list[tuple[str, str, int, str]]:
    extra = [(_WHO[i % len(_WHO)], "NONE", i % 3, filler_text(i)) for i in range(filler)]
    return GITHUB_COMMENTS[:2] + extra[: filler // 2] + GITHUB_COMMENTS[2:] + extra[filler // 2:]


def install_stackexchange(site: FakeSite, filler: int = 0) -> None:
    """Stack Exchange API v2.3 fixtures. Fields from api.stackexchange.com/docs/questions-by-ids and
    /docs/answers-on-questions (filter=withbody adds ``body``), /docs/types/question, /docs/types/answer,
    /docs/types/shallow-user, the wrapper (``items``, ``has_more``, ``quota_max``, ``quota_remaining``) from
    /docs/wrapper and errors (``error_id``, ``error_name``, ``error_message``) from /docs/error-handling."""
    q: dict[str, Any] = {"question_id": 11227809, "title": "Why is processing a sorted array faster than processing an "
         "unsorted array?", "score": 27000, "answer_count": 3, "is_answered": True, "accepted_answer_id": 11227902,
         "tags": ["java", "c++", "performance", "branch-prediction"], "owner": {"display_name": "GManNickG",
         "reputation": 500000}, "link": "https://stackoverflow.com/questions/11227809", "creation_date": 1340805096,
         "body": "<p>Here is a piece of C++ code that shows some very peculiar behavior: sorting the data first "
         "makes the loop almost six times faster.</p><pre><code>for (unsigned c = 0; c &lt; arraySize; ++c)"
         "</code></pre>"}
    wrap = {"has_more": False, "quota_max": 300, "quota_remaining": 297}
    site.json("/2.3/questions/11227809", {"items": [q], **wrap})
    posts = SE_ANSWERS + [(i % 9, False, _WHO[i % len(_WHO)], f"<p>{filler_text(i)}</p>") for i in range(filler)]
    # ids: the accepted answer 11227902, the other two by their score (4200 and 12), fillers from 1000
    answers: list[dict[str, Any]] = [
        {"answer_id": 11227902 if acc else score if i < len(SE_ANSWERS) else 1000 + i, "question_id": 11227809,
         "score": score, "is_accepted": acc, "owner": {"display_name": name}, "body": body}
        for i, (score, acc, name, body) in enumerate(posts)]
    answers.sort(key=lambda a: -int(a["score"]))
    site.json("/2.3/questions/11227809/answers", {"items": answers, **wrap})
    site.json("/2.3/answers/4200", {"items": [{"answer_id": 4200, "question_id": 11227809, "score": 4200,
                                               "is_accepted": False}], **wrap})
    main = (f"<h1>{q['title']}</h1><div class='question'>{q['body']}</div>"
            + "".join(f"<div class='answer'><div class='votes'>{a['score']}</div>{a['body']}"
                      "<div class='comments'>" + "".join(f"<p>comment {j} on this answer, with a link</p>"
                                                         for j in range(6)) + "</div></div>" for a in answers)
            + "<div class='hot-network'>" + "".join(f"<p>Hot network question {i}: something else?</p>"
                                                    for i in range(40)) + "</div>")
    site.html("/questions/11227809/why-is-sorted-faster", chrome_page(q["title"], main, nav_items=60))


# ------------------------------------------------------------------------------------------- MediaWiki
WIKI_HTML = """<div class="mw-content-ltr mw-parser-output" lang="en" dir="ltr">
<div class="shortdescription nomobile noexcerpt noprint searchaux" style="display:none">Antarctic subglacial lake</div>
<div role="note" class="hatnote navigation-not-searchable">For the research station, see Vostok Station.</div>
<table class="infobox"><tbody><tr><th colspan="2">Lake Vostok</th></tr>
<tr><th>Location</th><td>East Antarctica</td></tr><tr><th>Max. length</th><td>250 km</td></tr>
<tr><th>Surface area</th><td>12,500 km2</td></tr></tbody></table>
<p><b>Lake Vostok</b> is the largest of Antarctica's almost 400 known subglacial lakes.<sup id="cite_ref-1"
class="reference"><a href="#cite_note-1">[1]</a></sup> It lies beneath Russia's Vostok Station.</p>
<div class="mw-heading mw-heading2"><h2 id="Description">Description</h2><span class="mw-editsection">
<span class="mw-editsection-bracket">[</span><a href="/w/index.php?title=Lake_Vostok&action=edit&section=1">edit</a>
<span class="mw-editsection-bracket">]</span></span></div>
<p>The lake's surface lies about 3,750 metres under the ice of the East Antarctic Ice Sheet, about 500 m below
sea level.<sup class="reference"><a href="#cite_note-2">[2]</a></sup> Its water is thought to be about 15 million
years old.</p>
<div class="mw-heading mw-heading3"><h3 id="Water">Water</h3></div>
<p>The water is supersaturated with nitrogen and oxygen.</p>
<div class="mw-heading mw-heading2"><h2 id="Research">Research</h2></div>
<p>Russian drillers reached the lake's surface on 5 February 2012.</p>
<div class="mw-heading mw-heading2"><h2 id="References">References</h2></div>
<div class="reflist"><ol class="references"><li id="cite_note-1">Siegert, M. (2005). Lakes beneath the ice
sheet.</li><li id="cite_note-2">Studinger, M. (2004). Sub-ice geology.</li></ol></div>
<div role="navigation" class="navbox"><table><tr><td>Lakes of Antarctica · Lake Ellsworth · Lake Whillans ·
Lake Vida · Lake Untersee · Don Juan Pond</td></tr></table></div>
</div>"""


def install_wiki(site: FakeSite) -> None:
    """MediaWiki action API fixtures. ``action=parse`` with ``formatversion=2``: ``parse.title``, ``pageid``,
    ``displaytitle`` and ``text`` (HTML), from www.mediawiki.org/wiki/API:Parsing_wikitext and the module help
    (Special:ApiHelp/parse); errors ``{"error": {"code", "info"}}`` from
    www.mediawiki.org/wiki/API:Errors_and_warnings."""

    async def api(request: web.Request) -> web.StreamResponse:
        if request.query.get("action") != "parse" or request.query.get("format") != "json":
            return web.json_response({"error": {"code": "badvalue", "info": "unexpected request"}})
        page = request.query.get("page", "")
        if page != "Lake Vostok":
            return web.json_response({"error": {"code": "missingtitle", "info": "The page you specified doesn't "
                                                "exist."}}, headers={"MediaWiki-API-Error": "missingtitle"})
        return web.json_response({"parse": {"title": "Lake Vostok", "pageid": 287403,
                                            "displaytitle": "<span class=\"mw-page-title-main\">Lake Vostok</span>",
                                            "text": WIKI_HTML}})

    site.routes["/w/api.php"] = api
    site.html("/wiki/Lake_Vostok", chrome_page(
        "Lake Vostok - Wikipedia", "<h1>Lake Vostok</h1>" + WIKI_HTML.replace("class=\"navbox\"", "class=nb"),
        nav_items=120, footer_items=40,
        extra="<div id='p-lang'>" + "".join(f"<a href='/l{i}'>Language {i}</a>" for i in range(60)) + "</div>"))


# ------------------------------------------------------------------------------------------- YouTube
TRANSCRIPT = [
    (0, "Today we are changing a wheel on a small hatchback."),
    (6, "First loosen the wheel nuts a half turn while the car is still on the ground."),
    (15, "Then put the jack under the marked jacking point behind the front wheel."),
    (60, "Lift the car until the tyre clears the ground by a few centimetres."),
    (95, "Take the nuts off and keep them in a cup so they do not roll away."),
    (130, "Fit the spare and run the nuts on by hand in a star pattern."),
    (185, "Lower the car, then tighten the wheel nuts to 110 newton metres with a torque wrench."),
    (230, "Check the tyre pressure of the spare before you drive off."),
    (290, "And check the torque again after fifty kilometres."),
]


def install_youtube(site: FakeSite) -> None:
    """The watch page's player data (``ytInitialPlayerResponse``: ``videoDetails``, ``playabilityStatus``,
    ``captions.playerCaptionsTracklistRenderer.captionTracks[].baseUrl/languageCode/kind``) and the timedtext
    ``fmt=json3`` answer (``events[].tStartMs/dDurationMs/segs[].utf8``). YouTube does not document these
    publicly; the shapes follow what the player itself requests (as read by open transcript tools)."""
    player = {
        "playabilityStatus": {"status": "OK"},
        "videoDetails": {"videoId": "dQw4w9WgXcQ", "title": "How to change a wheel", "author": "Garage Basics",
                         "lengthSeconds": "312", "shortDescription": "Changing a wheel safely in five minutes.\n"
                         "#cars #diy"},
        "captions": {"playerCaptionsTracklistRenderer": {"captionTracks": [
            {"baseUrl": "/api/timedtext?v=dQw4w9WgXcQ&lang=en&kind=asr", "languageCode": "en", "kind": "asr",
             "name": {"simpleText": "English (auto-generated)"}},
            {"baseUrl": "/api/timedtext?v=dQw4w9WgXcQ&lang=en", "languageCode": "en",
             "name": {"simpleText": "English"}}]}},
    }
    page = chrome_page("How to change a wheel - YouTube", "<div id='player'></div><h1>How to change a wheel</h1>"
                       "<div id='description'>Changing a wheel safely in five minutes. #cars #diy</div>"
                       "<div id='comments'>" + "".join(f"<p>Great video {i}!</p>" for i in range(10)) + "</div>",
                       nav_items=50,
                       extra=f"<script>var ytInitialPlayerResponse = {json.dumps(player)};var meta = 1;</script>")
    site.html("/watch", page)

    async def timedtext(request: web.Request) -> web.StreamResponse:
        if request.query.get("fmt") != "json3" or request.query.get("kind") == "asr":
            return web.Response(status=400, text="bad request")
        events = [{"tStartMs": t * 1000, "dDurationMs": 5000, "segs": [{"utf8": w + " "} for w in text.split()]}
                  for t, text in TRANSCRIPT]
        events.insert(1, {"tStartMs": 5500, "dDurationMs": 100, "aAppend": 1, "segs": [{"utf8": "\n"}]})
        return web.json_response({"wireMagic": "pb3", "events": events})

    site.routes["/api/timedtext"] = timedtext


# ------------------------------------------------------------------------------------------- arXiv
ARXIV_ABSTRACT = ("We train a compact classifier for bird calls and show that it matches larger models while "
                  "using a tenth of the parameters.")


def arxiv_html() -> str:
    """A paper's HTML version in the shape LaTeXML writes (ltx_document, ltx_section with h2/h3 titles)."""
    return ("<!DOCTYPE html><html lang='en'><head><title>Small Models for Bird Calls</title></head><body>"
            "<div class='ltx_page_main'><article class='ltx_document'><h1 class='ltx_title ltx_title_document'>"
            "Small Models for Bird Calls</h1><div class='ltx_authors'>A. Author, B. Author</div>"
            f"<div class='ltx_abstract'><h6>Abstract</h6><p class='ltx_p'>{ARXIV_ABSTRACT}</p></div>"
            "<section class='ltx_section'><h2 class='ltx_title'>1 Introduction</h2><p class='ltx_p'>Bird call "
            "recognition on small devices needs models that fit in little memory. Earlier work used large "
            "convolutional networks that need a server.</p></section>"
            "<section class='ltx_section'><h2 class='ltx_title'>2 Method</h2><p class='ltx_p'>We distil a large "
            "teacher into a student of 1.2 million parameters, trained on 40,000 labelled recordings.</p>"
            "</section><section class='ltx_section'><h2 class='ltx_title'>3 Results</h2><p class='ltx_p'>On the "
            "held-out set the student reaches 93.4% accuracy, against 94.1% for the teacher.</p>"
            "<table class='ltx_tabular'><tr><th>Model</th><th>Params</th><th>Accuracy</th></tr>"
            "<tr><td>Teacher</td><td>12M</td><td>94.1%</td></tr><tr><td>Student</td><td>1.2M</td>"
            "<td>93.4%</td></tr></table></section><section class='ltx_section'><h2 class='ltx_title'>4 "
            "Conclusion</h2><p class='ltx_p'>Small models are enough for bird calls.</p></section>"
            "</article></div></body></html>")


def install_arxiv(site: FakeSite) -> None:
    """arXiv: the abstract page (abstract only), the HTML version at /html/<id> (info.arxiv.org/about/accessible_HTML)
    and the PDF at /pdf/<id>; 2401.09999 has no HTML version (404) and is read from its PDF."""
    site.html("/abs/2401.01234", chrome_page(
        "[2401.01234] Small Models for Bird Calls", "<h1 class='title'>Small Models for Bird Calls</h1>"
        f"<div class='authors'>A. Author, B. Author</div><blockquote class='abstract'>{ARXIV_ABSTRACT}"
        "</blockquote><div class='extra-services'><a href='/pdf/2401.01234'>View PDF</a>"
        "<a href='/html/2401.01234'>HTML (experimental)</a></div>", nav_items=30))
    site.html("/html/2401.01234", arxiv_html())
    site.html("/abs/2401.09999", chrome_page("[2401.09999] A PDF-only paper", "<h1>A PDF-only paper</h1>"
                                             "<blockquote>Only an abstract here.</blockquote>"))
    site.routes["/pdf/2401.09999"] = (200, {"Content-Type": "application/pdf"}, make_pdf(
        "A PDF-only paper", "The measured drift was 0.8 millimetres per year at the northern station."))


def make_pdf(title: str, text: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), title, fontsize=18)
    page.insert_text((72, 110), text, fontsize=11)
    data = doc.tobytes()
    doc.close()
    return bytes(data)


# ------------------------------------------------------------------------------------------- Reddit
def _t1(author: str, score: int, body: str, replies: list[dict[str, Any]] | None = None, depth: int = 0,
        op: bool = False) -> dict[str, Any]:
    rep: Any = ""
    if replies:
        rep = {"kind": "Listing", "data": {"after": None, "before": None, "dist": None, "children": replies}}
    return {"kind": "t1", "data": {"author": author, "score": score, "body": body, "replies": rep, "depth": depth,
                                   "score_hidden": False, "is_submitter": op, "stickied": False,
                                   "id": f"c{abs(hash(body)) % 10**6}", "distinguished": None}}


def reddit_thread(filler: int = 0) -> list[dict[str, Any]]:
    post = {"kind": "t3", "data": {"title": "Which UPS for a small rack?", "author": "rackmouse", "score": 245,
                                   "subreddit": "homelab", "subreddit_name_prefixed": "r/homelab",
                                   "selftext": "Three mini PCs and a switch, about 120 W. Which UPS would you buy?",
                                   "is_self": True, "num_comments": 5, "url": "https://www.reddit.com/r/homelab/",
                                   "over_18": False, "id": "1abcde"}}
    comments = [
        _t1("voltvole", 310, "Get the CyberPower CP1500PFCLCD: pure sine wave, and NUT supports it over USB.", [
            _t1("rackmouse", 40, "Does it work with a Synology as NUT server?", [
                _t1("voltvole", 35, "Yes, plug USB into the Synology and enable the network UPS server.", depth=2),
            ], depth=1, op=True),
        ]),
        _t1("amperella", 120, "APC Back-UPS Pro 1500 is fine too, but the batteries cost more."),
        *[_t1(_WHO[i % len(_WHO)], i % 20, filler_text(i)) for i in range(filler)],
        {"kind": "more", "data": {"count": 3, "children": ["x1", "x2", "x3"], "depth": 0}},
    ]
    listing = {"kind": "Listing", "data": {"after": None, "before": None, "dist": 1, "children": [post]}}
    return [listing, {"kind": "Listing", "data": {"after": None, "before": None, "children": comments}}]


def install_reddit(site: FakeSite, filler: int = 0) -> None:
    """Reddit ``.json`` fixtures: two Listings (``kind``, ``data.children``), a ``t3`` link and ``t1`` comments with
    ``replies`` ("" or a Listing) and ``more``; fields from github.com/reddit-archive/reddit/wiki/JSON. Errors
    as Reddit sends them: 403 ``{"reason": "private", "message": "Forbidden", "error": 403}``, 429 with
    ``x-ratelimit-remaining`` / ``x-ratelimit-reset`` (support.reddithelp.com, Data API rate limits)."""
    path = "/r/homelab/comments/1abcde"
    site.json(f"{path}.json", reddit_thread(filler))
    thread = reddit_thread(filler)
    c = thread[1]["data"]["children"]
    shown = "".join(f"<shreddit-comment author='{x['data']['author']}'><p>{x['data']['body']}</p>"
                    "<button>Reply</button><button>Share</button></shreddit-comment>" for x in c if x["kind"] == "t1")
    site.html(f"{path}/which_ups_for_a_small_rack/", chrome_page(
        "Which UPS for a small rack? : r/homelab", "<shreddit-post><h1>Which UPS for a small rack?</h1><p>Three "
        "mini PCs and a switch, about 120 W. Which UPS would you buy?</p></shreddit-post>"
        f"<shreddit-comment-tree>{shown}</shreddit-comment-tree>", nav_items=70,
        extra="<div class='community-list'>" + "".join(f"<a href='/r/x{i}'>r/community{i}</a>"
                                                      for i in range(50)) + "</div>"))
