"""GitHub through its REST API: issues and pull requests with their comments, READMEs, and files.

    github.com/<owner>/<repo>                    GET /repos/{o}/{r}/readme
    github.com/<owner>/<repo>/issues/<n>         GET /repos/{o}/{r}/issues/{n} + /issues/{n}/comments
    github.com/<owner>/<repo>/pull/<n>           GET /repos/{o}/{r}/pulls/{n} + /issues/{n}/comments
                                                 + /pulls/{n}/comments (review comments) + /pulls/{n}/reviews
    github.com/<owner>/<repo>/blob/<ref>/<path>  GET /repos/{o}/{r}/contents/{path}?ref={ref}

One heading per comment, with its author, role and 👍 count. Rate limits follow the documented signals
(403 or 429 with ``x-ratelimit-remaining: 0``, or ``retry-after`` for the secondary limit); a private
repository answers 404. Either way the page is read through the browser tab or plain HTTP instead.
``reader_github_api`` points at GitHub Enterprise (``https://<host>/api/v3``) as well; URLs on that host
are read too. The optional token (``reader_github_token``) goes only to that API's origin.
"""

from __future__ import annotations

import base64
import binascii
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from ...settings import Settings
from ...types import ErrorCode, Page
from ..base import FetchRequest
from .base import (
    ApiResponse,
    ApiSession,
    Reader,
    ReaderFallback,
    body_text,
    code_label,
    demote,
    expect_json,
    fence,
    label,
    markdown_page,
    neutral,
    on_host,
    origin,
    seconds,
    status_fallback,
    tidy_markdown,
    title_label,
)

HOSTS = frozenset({"github.com", "www.github.com"})
PUBLIC_API = "https://api.github.com"  # the API of github.com (reader_github_api's default)
# First path segments that are GitHub's own pages, not owners.
RESERVED = frozenset({
    "about", "apps", "codespaces", "collections", "contact", "customer-stories", "enterprise", "events", "explore",
    "features", "issues", "join", "login", "logout", "marketplace", "new", "notifications", "orgs", "organizations",
    "pricing", "pulls", "search", "security", "settings", "site", "sponsors", "team", "topics", "trending", "users",
    "readme", "signup", "sessions", "dashboard", "stars", "watching", "account", "github-copilot", "resources",
})  # fmt: skip
MAX_COMMENT_PAGES = 5  # 100 comments a page
MAX_REF_SEGMENTS = 3  # a branch name in a file URL may hold up to this many "/"-separated parts
_MARKDOWN_EXT = (".md", ".markdown", ".mdown", ".mkd")
_TEXT_EXT = (".txt", ".rst", ".adoc", ".org", "")
API_VERSION = "2022-11-28"


@dataclass(frozen=True, slots=True)
class Target:
    kind: str  # "readme" | "issue" | "pull" | "file"
    owner: str
    repo: str
    number: int = 0
    ref: str = ""
    path: str = ""
    api: str = ""  # the API this URL belongs to: api.github.com for github.com, else the configured one


class GitHubReader(Reader):
    name = "github"
    api = "GitHub API"

    def match(self, url: str, settings: Settings) -> Target | None:
        # An API answers only for its own site: github.com URLs are read from api.github.com (the configured
        # token only if that is the configured API), a GitHub Enterprise API only its own web host's URLs. A
        # github.com URL must never be answered from (or carry the token of) an Enterprise server.
        configured = settings.reader_github_api.rstrip("/")
        if on_host(url, HOSTS, (), ()):
            api = PUBLIC_API
        elif configured and origin(configured) != origin(PUBLIC_API) and on_host(url, frozenset(), (), (configured,)):
            api = configured
        else:
            return None
        parts = urlsplit(url)
        segs = [s for s in parts.path.split("/") if s]
        api_path = urlsplit(api).path.strip("/")
        if api_path and "/".join(segs).startswith(api_path):
            return None  # a URL of the API itself
        if len(segs) < 2 or segs[0].lower() in RESERVED or any(g in (".", "..") for g in segs):
            return None
        owner, repo = segs[0], segs[1].removesuffix(".git")
        rest = segs[2:]
        if not rest:
            return Target("readme", owner, repo, api=api)
        if len(rest) == 2 and rest[0] in ("issues", "pull") and rest[1].isdigit():
            return Target("issue" if rest[0] == "issues" else "pull", owner, repo, int(rest[1]), api=api)
        if len(rest) >= 3 and rest[0] == "blob":
            return Target("file", owner, repo, ref=rest[1], path="/".join(rest[2:]), api=api)
        return None

    def reason(self, what: Target) -> str:
        return {
            "readme": "GitHub repository: its README through the REST API (no page chrome)",
            "issue": "GitHub issue: the REST API gives every comment with author and reactions",
            "pull": "GitHub pull request: the REST API gives the conversation and review comments",
            "file": "GitHub file: its raw text through the REST API (no page chrome)",
        }[what.kind]

    async def read(self, what: Target, req: FetchRequest, settings: Settings) -> Page:
        base = (what.api or PUBLIC_API).rstrip("/")
        configured = settings.reader_github_api.rstrip("/")
        # The token belongs to the configured API: it goes nowhere else (origin-bound again in ApiSession).
        token = settings.reader_github_token.get_secret_value() if origin(base) == origin(configured) else ""
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}
        async with self.session(settings, token=token, token_url=base, headers=headers) as s:
            repo = f"{base}/repos/{quote(what.owner, safe='')}/{quote(what.repo, safe='')}"
            if what.kind == "readme":
                return await self._readme(s, repo, what, req, settings)
            if what.kind == "file":
                return await self._file(s, repo, what, req, settings)
            return await self._thread(s, repo, what, req, settings)

    # ------------------------------------------------------------------ API calls
    async def _get(self, s: ApiSession, url: str, private_hint: bool = True) -> Any:
        resp = await s.get(url)
        if resp.status != 200:
            raise _fallback(resp, private_hint)
        return expect_json(resp, self.api)

    async def _pages(self, s: ApiSession, url: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for page in range(1, MAX_COMMENT_PAGES + 1):
            batch = await self._get(s, f"{url}?per_page=100&page={page}")
            if not isinstance(batch, list):
                raise ReaderFallback(ErrorCode.HTTP_ERROR, "GitHub API sent no list of comments",
                                     "GitHub API answered in an unexpected shape")
            items.extend(c for c in batch if isinstance(c, dict))
            if len(batch) < 100:
                break
        return items

    async def _readme(self, s: ApiSession, repo: str, what: Target, req: FetchRequest, settings: Settings) -> Page:
        data = await self._get(s, f"{repo}/readme")
        name = str(data.get("name") or "README")
        text = _decode(data)
        title = f"{what.owner}/{what.repo}"
        markdown = name.lower().endswith(_MARKDOWN_EXT) or "." not in name
        warnings: list[str] = []
        body = demote(tidy_markdown(neutral(text), settings, warnings), 1) if markdown else neutral(text)
        md = f"# {title_label(title)}\n\n{body}"
        return markdown_page(req, self.name, md, title, warnings)

    async def _file(self, s: ApiSession, repo: str, what: Target, req: FetchRequest, settings: Settings) -> Page:
        # "blob/release/1.2/src/a.py": the URL does not say where the branch name ends. Try the shortest ref
        # first, then one more segment, a few times, only while the API answers 404.
        ref, rest = what.ref, what.path.split("/")
        for tries_left in range(MAX_REF_SEGMENTS - 1, -1, -1):
            resp = await s.get(f"{repo}/contents/{quote('/'.join(rest), safe='/')}?ref={quote(ref, safe='')}")
            if resp.status == 404 and tries_left and len(rest) > 1:
                ref, rest = f"{ref}/{rest[0]}", rest[1:]
                continue
            if resp.status != 200:
                raise _fallback(resp, True)
            break
        what = Target("file", what.owner, what.repo, ref=ref, path="/".join(rest), api=what.api)
        data = expect_json(resp, self.api)
        if not isinstance(data, dict) or data.get("type") != "file":
            raise ReaderFallback(ErrorCode.UNSUPPORTED_CONTENT, "the GitHub path is not a single file",
                                 "the GitHub path is a directory or a link, not a file")
        text = _decode(data)
        name = what.path.rsplit("/", 1)[-1]
        title = f"{what.owner}/{what.repo}: {what.path} ({what.ref})"
        lower = name.lower()
        warnings: list[str] = []
        if lower.endswith(_MARKDOWN_EXT):
            body = demote(tidy_markdown(neutral(text), settings, warnings), 1)
        elif any(lower.endswith(e) for e in _TEXT_EXT if e) or "." not in lower:
            body = neutral(text)
        else:
            body = fence(neutral(text), label(lower.rsplit(".", 1)[-1], 16))
        md = f"# {title_label(title, 200)}\n\n{body}"
        return markdown_page(req, self.name, md, title, warnings)

    async def _thread(self, s: ApiSession, repo: str, what: Target, req: FetchRequest, settings: Settings) -> Page:
        n = what.number
        item = await self._get(s, f"{repo}/pulls/{n}" if what.kind == "pull" else f"{repo}/issues/{n}")
        if not isinstance(item, dict):
            raise ReaderFallback(ErrorCode.HTTP_ERROR, "GitHub API sent no issue object",
                                 "GitHub API answered in an unexpected shape")
        comments = await self._pages(s, f"{repo}/issues/{n}/comments")
        reviews: list[dict[str, Any]] = []
        review_comments: list[dict[str, Any]] = []
        if what.kind == "pull":
            reviews = [r for r in await self._pages(s, f"{repo}/pulls/{n}/reviews") if (r.get("body") or "").strip()]
            review_comments = await self._pages(s, f"{repo}/pulls/{n}/comments")
        kind = "pull request" if what.kind == "pull" else "issue"
        title = f"{item.get('title') or kind} ({kind} {n})"
        state = label(item.get("state"), 20)  # every field of the summary and headings: one safe line
        if what.kind == "pull" and item.get("merged"):
            state = "merged"
        labels = [label(x.get("name"), 40) for x in item.get("labels") or [] if isinstance(x, dict)]
        meta = [f"{what.owner}/{what.repo} {kind} #{n}", state, f"opened by {_who(item)}", _day(item.get("created_at")),
                f"{len(comments)} comments"]
        if labels:
            meta.append("labels: " + ", ".join(labels))
        # The summary line opens the first record: a line alone would be a chunk of its own.
        warnings: list[str] = []
        parts = [f"# {title_label(title, 160)}",
                 _record(f"{kind.capitalize()} by {_who(item)}", item, settings, warnings,
                         " · ".join(m for m in meta if m))]
        events: list[tuple[str, str, str, dict[str, Any]]] = []  # (time, kind, where, item)
        for c in comments:
            events.append((str(c.get("created_at") or ""), "Comment", "", c))
        for r in reviews:
            verdict = code_label(r.get("state")).lower().replace("_", " ")
            events.append((str(r.get("submitted_at") or ""), f"Review ({verdict})", "", r))
        for c in review_comments:
            where = label(c.get("path"), 100)
            line = c.get("line") or c.get("original_line")
            at = f" on {where}" + (f" line {line}" if isinstance(line, int) else "") if where else ""
            events.append((str(c.get("created_at") or ""), "Review comment", at, c))
        events.sort(key=lambda e: e[0])
        for i, (_, event, at, c) in enumerate(events, 1):
            parts.append(_record(f"{event} {i} by {_who(c)}{at}", c, settings, warnings))
        total = item.get("comments")
        if isinstance(total, int) and total > len(comments):
            warnings.append(f"only the first {len(comments)} of {total} comments were read")
        return markdown_page(req, self.name, "\n\n".join(parts), title, warnings)


def _who(c: dict[str, Any]) -> str:
    user = c.get("user") if isinstance(c.get("user"), dict) else {}
    return label((user or {}).get("login") or "ghost", 40)


def _day(stamp: Any) -> str:
    day = stamp[:10] if isinstance(stamp, str) else ""
    return day if re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) else ""  # an ISO date, or nothing


def _record(head: str, c: dict[str, Any], settings: Settings, warnings: list[str], lead: str = "") -> str:
    notes = []
    role = str(c.get("author_association") or "").upper()
    if role in ("OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR"):
        notes.append(role.lower())
    reactions = c.get("reactions") if isinstance(c.get("reactions"), dict) else {}
    plus = (reactions or {}).get("+1")
    if isinstance(plus, int) and plus:
        notes.append(f"+{plus}")
    day = _day(c.get("created_at") or c.get("submitted_at"))
    if day:
        notes.append(day)
    heading = f"## {head}" + (f" ({', '.join(notes)})" if notes else "")
    body = body_text(c.get("body"), settings, warnings, html=True) or "(no text)"
    hunk = c.get("diff_hunk")
    if isinstance(hunk, str) and hunk.strip():
        body = fence(neutral(hunk)[-1200:], "diff") + "\n\n" + body
    return f"{heading}\n\n{lead}\n\n{body}" if lead else f"{heading}\n\n{body}"


def _decode(data: Any) -> str:
    if not isinstance(data, dict):
        raise ReaderFallback(ErrorCode.HTTP_ERROR, "GitHub API sent no content object",
                             "GitHub API answered in an unexpected shape")
    if data.get("encoding") != "base64" or not isinstance(data.get("content"), str):
        raise ReaderFallback(ErrorCode.TOO_LARGE, "GitHub API sent the file without its content (too large)",
                             "the file is too large for the contents API")
    try:
        raw = base64.b64decode(data["content"], validate=False)
    except (binascii.Error, ValueError):
        raise ReaderFallback(ErrorCode.HTTP_ERROR, "GitHub API sent undecodable content",
                             "GitHub API sent undecodable content") from None
    if b"\x00" in raw[:8192]:
        raise ReaderFallback(ErrorCode.UNSUPPORTED_CONTENT, "the file is binary", "the file is binary")
    return raw.decode("utf-8", "replace")


def _fallback(resp: ApiResponse, private_hint: bool) -> ReaderFallback:
    h = resp.headers
    if resp.status in (403, 429):
        if h.get("x-ratelimit-remaining") == "0":
            reset = h.get("x-ratelimit-reset", "")
            when = ""
            if reset.isdigit():
                when = ", resets at " + time.strftime("%H:%M UTC", time.gmtime(int(reset)))
            wait = (seconds(reset, 0.0) or 0.0) - time.time()
            return ReaderFallback(ErrorCode.HTTP_ERROR, f"GitHub API rate limit reached{when}",
                                  f"GitHub API rate limit reached (x-ratelimit-remaining: 0{when})",
                                  "Set TRAWL_READER_GITHUB_TOKEN for a higher limit.",
                                  retry_after=wait if wait > 0 else 60.0)
        if "retry-after" in h:
            retry = h.get("retry-after", "")
            return ReaderFallback(ErrorCode.HTTP_ERROR, f"GitHub API secondary rate limit (retry after {retry} s)",
                                  f"GitHub API secondary rate limit (retry-after: {label(retry, 12)})",
                                  retry_after=seconds(retry, 60.0))
    if resp.status == 404 and private_hint:
        return ReaderFallback(ErrorCode.NOT_FOUND, "GitHub API answered 404 (a private repository or a missing item)",
                              "GitHub API answered 404: private repository or missing item",
                              "A private repository needs TRAWL_READER_GITHUB_TOKEN or your browser session.")
    if resp.status == 401:
        return ReaderFallback(ErrorCode.LOGIN_REQUIRED, "GitHub API refused the token (HTTP 401)",
                              "GitHub API refused the token (401)", "Check TRAWL_READER_GITHUB_TOKEN.")
    return status_fallback(resp, "GitHub API")
