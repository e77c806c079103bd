"""Reddit threads through their ``.json`` view: the post and its comment tree, one comment per chunk.

    reddit.com/r/<sub>/comments/<id>[/<slug>[/<comment>]]  ->  GET <same path>.json?raw_json=1&limit=500

The answer is two Listings: the post (``kind: "t3"``: ``title``, ``selftext``, ``author``, ``score``, ``url``,
``num_comments``) and the comments (``kind: "t1"``: ``author``, ``body``, ``score``, ``score_hidden``,
``is_submitter``, ``replies`` which is ``""`` or another Listing; ``kind: "more"`` stands for replies not
sent). A comment's heading holds its author and score, and its level follows the reply depth, so a reply's
heading path names the comments it answers. A private or quarantined community (403 with ``reason``), a
missing thread (404) or the rate limit (429, ``x-ratelimit-*`` headers) reads the page instead.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from ...settings import Settings
from ...types import ErrorCode, Page
from ..base import FetchRequest
from .base import (
    ApiResponse,
    Reader,
    ReaderFallback,
    body_text,
    code_label,
    count,
    expect_json,
    label,
    markdown_page,
    on_host,
    seconds,
    status_fallback,
    title_label,
    url_line,
)

HOSTS = frozenset({"reddit.com", "www.reddit.com", "old.reddit.com", "new.reddit.com", "np.reddit.com",
                   "m.reddit.com", "i.reddit.com"})
_PATH = re.compile(r"^(/r/[A-Za-z0-9_]{2,21})?/comments/([a-z0-9]{1,12})(?:/([^/]*)(?:/([a-z0-9]{1,12}))?)?/?$")
MAX_COMMENTS = 800


class RedditReader(Reader):
    name = "reddit"
    api = "Reddit JSON"

    def match(self, url: str, settings: Settings) -> str | None:
        if not on_host(url, HOSTS, (), (settings.reader_reddit_base,)):
            return None
        m = _PATH.match(urlsplit(url).path)
        if not m:
            return None
        path = f"{m.group(1) or ''}/comments/{m.group(2)}"
        if m.group(4):
            path += f"/{m.group(3) or '_'}/{m.group(4)}"
        return path

    def reason(self, what: str) -> str:
        return "Reddit thread: the .json view gives the post and every comment with author and score"

    async def read(self, what: str, req: FetchRequest, settings: Settings) -> Page:
        base = settings.reader_reddit_base.rstrip("/")
        async with self.session(settings, headers={"Accept": "application/json"}) as s:
            resp = await s.get(f"{base}{what}.json?raw_json=1&limit=500")
        if resp.status != 200:
            raise _fallback(resp)
        data = expect_json(resp, self.api)
        if not (isinstance(data, list) and len(data) >= 2):
            raise ReaderFallback(ErrorCode.HTTP_ERROR, "Reddit sent no thread", "Reddit JSON answered in an "
                                 "unexpected shape")
        posts = _children(data[0])
        if not posts or posts[0].get("kind") != "t3":
            raise ReaderFallback(ErrorCode.NOT_FOUND, "Reddit sent no post", "Reddit JSON held no post")
        post = posts[0].get("data") or {}
        title = str(post.get("title") or "Reddit thread")
        sub = label(post.get("subreddit_name_prefixed") or "", 30)
        meta = [sub or "Reddit", f"posted by u/{label(post.get('author'), 30)}", _score(post),
                f"{count(post.get('num_comments')) or 0} comments"]
        parts = [f"# {title_label(title, 200)}"]
        body = body_text(post.get("selftext"))
        link = url_line(post.get("url"))  # one line of URL characters, or nothing: no forged headings
        if not post.get("is_self") and link:
            body = (f"Link: {link}\n\n" + body).strip()
        summary = " · ".join(m for m in meta if m)  # opens the post: a line alone would be a chunk of its own
        parts.append(f"## Post by u/{label(post.get('author'), 30)} ({_score(post)})\n\n{summary}\n\n"
                     f"{body or '(no text)'}")
        state = {"count": 0, "more": 0}
        _walk(_children(data[1]), 0, parts, state)
        warnings = []
        if state["more"]:
            warnings.append(f"{state['more']} more replies are not in Reddit's answer (\"load more comments\")")
        return markdown_page(req, self.name, "\n\n".join(parts), title, warnings)


def _children(listing: Any) -> list[dict[str, Any]]:
    data = listing.get("data") if isinstance(listing, dict) else None
    kids = data.get("children") if isinstance(data, dict) else None
    return [k for k in kids if isinstance(k, dict)] if isinstance(kids, list) else []


def _score(d: dict[str, Any]) -> str:
    if d.get("score_hidden"):
        return "score hidden"
    s = d.get("score")
    return f"score {s}" if isinstance(s, int) else "score unknown"


def _walk(children: list[dict[str, Any]], depth: int, parts: list[str], state: dict[str, int]) -> None:
    # Iterative, depth-first in thread order: a deep thread cannot exhaust the stack.
    stack: list[tuple[dict[str, Any], int]] = [(c, depth) for c in reversed(children)]
    while stack and state["count"] < MAX_COMMENTS:
        thing, d = stack.pop()
        data = thing.get("data") if isinstance(thing.get("data"), dict) else {}
        data = data or {}
        if thing.get("kind") == "more":
            n = data.get("count")
            state["more"] += n if isinstance(n, int) else 0
            continue
        if thing.get("kind") != "t1":
            continue
        replies = data.get("replies")
        kids = _children(replies) if isinstance(replies, dict) else []
        stack.extend((k, d + 1) for k in reversed(kids))
        body = body_text(data.get("body"))
        if body in ("[deleted]", "[removed]") and not kids:
            continue
        state["count"] += 1
        notes = [_score(data)]
        if data.get("is_submitter"):
            notes.append("OP")
        if data.get("stickied"):
            notes.append("pinned")
        who = "Comment" if d == 0 else "Reply"
        level = min(2 + d, 6)
        parts.append(f"{'#' * level} {who} by u/{label(data.get('author'), 30)} ({', '.join(notes)})\n\n"
                     f"{body or '(no text)'}")


def _fallback(resp: ApiResponse) -> ReaderFallback:
    data = resp.json()
    reason = code_label(data.get("reason")) if isinstance(data, dict) else ""
    if resp.status == 403 and reason:
        return ReaderFallback(ErrorCode.LOGIN_REQUIRED, f"Reddit refused the thread ({reason})",
                              f"Reddit says the community is {reason}")
    if resp.status == 429 or resp.headers.get("x-ratelimit-remaining", "").strip() in ("0", "0.0"):
        reset = resp.headers.get("x-ratelimit-reset", "").strip()
        after = f", resets in {label(reset, 12)} s" if reset else ""
        return ReaderFallback(ErrorCode.HTTP_ERROR, f"Reddit rate limit reached{after}",
                              f"Reddit rate limit reached (HTTP {resp.status}{after})",
                              retry_after=seconds(reset, 60.0))
    return status_fallback(resp, "Reddit JSON")
