"""Stack Exchange questions through API v2.3: the question and every answer, with votes and the accepted one.

    <site>/questions/<id>[/<slug>]   GET /questions/{id}?site=<site>&filter=withbody
    <site>/q/<id>                    GET /questions/{id}/answers?site=<site>&filter=withbody&sort=votes

``site`` is the site's domain (stackoverflow.com, unix.stackexchange.com...), which the API accepts in place
of its short name. One heading per post: "Answer by <name> (score 12, accepted)"; the accepted answer comes
first, then the others by votes. Errors come as ``{error_id, error_name, error_message}``; a throttle
(``throttle_violation``, id 502) or a spent quota reads the page instead, and says so.
"""

from __future__ import annotations

import asyncio
import html as htmllib
import re
from typing import Any
from urllib.parse import urlencode, urlsplit

from ...settings import Settings
from ...types import ErrorCode, Page
from ..base import FetchRequest
from .base import (
    ApiResponse,
    Reader,
    ReaderFallback,
    code_label,
    expect_json,
    flatten_headings,
    html_to_markdown,
    label,
    markdown_page,
    on_host,
    status_fallback,
    title_label,
)

HOSTS = frozenset({"stackoverflow.com", "superuser.com", "serverfault.com", "askubuntu.com", "mathoverflow.net",
                   "stackapps.com", "meta.stackoverflow.com", "ru.stackoverflow.com", "es.stackoverflow.com",
                   "pt.stackoverflow.com", "ja.stackoverflow.com", "meta.superuser.com", "meta.serverfault.com",
                   "meta.askubuntu.com", "meta.mathoverflow.net"})
SUFFIXES = (".stackexchange.com",)
_PATH = re.compile(r"^/(?:questions|q)/(\d+)(?:/[^/]*(?:/(\d+))?)?/?$")  # a question, or one of its answers
_ANSWER = re.compile(r"^/a/(\d+)(?:/\d+)?/?$")  # an answer's share link (/a/<answer>/<user>)
_THROTTLE = frozenset({"throttle_violation", "temporarily_unavailable"})


class StackExchangeReader(Reader):
    name = "stackexchange"
    api = "Stack Exchange API"

    def match(self, url: str, settings: Settings) -> tuple[str, int, int] | None:
        """(site, question id or 0, linked answer id or 0)."""
        if not on_host(url, HOSTS, SUFFIXES, (settings.reader_stackexchange_api,)):
            return None
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().removeprefix("www.")
        if host == "api.stackexchange.com":
            return None
        m = _PATH.match(parts.path)
        a = _ANSWER.match(parts.path)
        if not m and not a:
            return None
        site = host if host in HOSTS or host.endswith(SUFFIXES) else "stackoverflow.com"
        if a:
            return site, 0, int(a.group(1))
        assert m is not None
        return site, int(m.group(1)), int(m.group(2) or 0)

    def reason(self, what: tuple[str, int, int]) -> str:
        return "Stack Exchange question: API v2.3 gives the question and answers with votes and the accepted one"

    async def read(self, what: tuple[str, int, int], req: FetchRequest, settings: Settings) -> Page:
        site, qid, linked = what
        base = settings.reader_stackexchange_api.rstrip("/")
        common = {"site": site, "filter": "withbody"}
        warnings: list[str] = []
        async with self.session(settings, headers={"Accept": "application/json"}) as s:
            if not qid:  # an answer's share link: which question is it on?
                found = _items(await s.get(f"{base}/answers/{linked}?{urlencode({'site': site})}"), self.api)
                on = found[0].get("question_id") if found else None
                if not isinstance(on, int):
                    raise ReaderFallback(ErrorCode.NOT_FOUND, f"answer {linked} is not on {site} (deleted or missing)",
                                         "Stack Exchange API has no such answer (deleted or missing)")
                qid = on
            q = _items(await s.get(f"{base}/questions/{qid}?{urlencode(common)}"), self.api)
            if not q:
                raise ReaderFallback(ErrorCode.NOT_FOUND, f"question {qid} is not on {site} (deleted or missing)",
                                     "Stack Exchange API has no such question (deleted or missing)")
            question = q[0]
            params = {**common, "sort": "votes", "order": "desc", "pagesize": "100"}
            answers = _items(await s.get(f"{base}/questions/{qid}/answers?{urlencode(params)}"), self.api)
        accepted = question.get("accepted_answer_id")
        answers.sort(key=lambda a: (not a.get("is_accepted") and a.get("answer_id") != accepted, -_score(a)))
        title = htmllib.unescape(str(question.get("title") or f"Question {qid}"))
        tags = ", ".join(label(t, 40) for t in question.get("tags") or [])
        meta = [f"{site} question {qid}", f"score {_score(question)}", f"{len(answers)} answers"]
        if tags:
            meta.append(f"tags: {tags}")
        if accepted:
            meta.append("has an accepted answer")
        # The summary line opens the question: a line alone would be a chunk of its own.

        def build() -> str:  # the posts' HTML is parsed off the event loop, like the pipeline's own stages
            parts = [f"# {title_label(title, 200)}", _post("Question", question, settings, warnings,
                                                           lead=" · ".join(meta))]
            parts.extend(_post("Answer", a, settings, warnings, accepted, linked=linked) for a in answers)
            return "\n\n".join(parts)

        return markdown_page(req, self.name, await asyncio.to_thread(build), title, warnings)


def _items(resp: ApiResponse, api: str) -> list[dict[str, Any]]:
    data = resp.json()
    if isinstance(data, dict) and ("error_id" in data or "error_name" in data):
        name = code_label(data.get("error_name"))
        if name in _THROTTLE or data.get("error_id") in (502, 503):
            # "... more requests available in 80000 seconds": the documented throttle message names the wait
            wait = re.search(r"available in (\d+) seconds", str(data.get("error_message") or ""))
            raise ReaderFallback(ErrorCode.HTTP_ERROR, f"{api} throttled the request ({name})",
                                 f"{api} rate limit reached ({name})",
                                 retry_after=float(wait.group(1)) if wait else 60.0)
        raise ReaderFallback(ErrorCode.HTTP_ERROR, f"{api} error {data.get('error_id')} ({name})",
                             f"{api} error ({name})")
    if resp.status != 200:
        raise status_fallback(resp, api)
    data = expect_json(resp, api)
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ReaderFallback(ErrorCode.HTTP_ERROR, f"{api} sent no items", f"{api} answered in an unexpected shape")
    return [i for i in items if isinstance(i, dict)]


def _score(post: dict[str, Any]) -> int:
    s = post.get("score")
    return s if isinstance(s, int) else 0


def _post(kind: str, post: dict[str, Any], settings: Settings, warnings: list[str], accepted: Any = None,
          lead: str = "", linked: int = 0) -> str:
    owner = post.get("owner") if isinstance(post.get("owner"), dict) else {}
    name = label(htmllib.unescape(str((owner or {}).get("display_name") or "anonymous")), 40)
    notes = [f"score {_score(post)}"]
    if kind == "Answer" and (post.get("is_accepted") or (accepted and post.get("answer_id") == accepted)):
        notes.append("accepted")
    if linked and post.get("answer_id") == linked:
        notes.append("the linked answer")
    body = html_to_markdown(str(post.get("body") or ""), settings, warnings)
    text = flatten_headings(body) or "(no text)"
    return f"## {kind} by {name} ({', '.join(notes)})\n\n" + (f"{lead}\n\n{text}" if lead else text)
