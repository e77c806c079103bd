"""What every site reader shares: the guarded API session, the fallback error, and the Markdown it writes.

A reader is a :class:`~trawl.sources.base.Source` (priority 5: before the browser tab and plain HTTP) that
accepts the URLs of one site and reads them through the site's public API. It writes Markdown whose ATX
headings carry the structure (one heading per comment or answer, with its author and votes; one per
transcript window, with its timestamps), so the normal stages (extract -> clean -> walls -> chunk) keep it.

Safety: every API request goes through :class:`ApiSession`, which checks the user's site policy on every
URL and redirect hop and connects through :class:`~trawl.netguard.PinnedTransport` (the private-network
rule); a refusal there is final, like for any source. API text is page text: it reaches the same sanitiser
and framing as a page. Authors' own headings never become headings (they could forge an author or a
score): they become bold lines inside the record. An optional token goes only to its API's own origin.

When the API cannot give the page (an error, a rate limit, private or missing content, an unexpected
answer) a reader raises :class:`ReaderFallback`; the engine then tries the next source (the browser tab,
plain HTTP) and names the reason in ``source_reason``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from ...netguard import NetGuard, PinnedTransport, Resolver
from ...policy import check_url
from ...settings import Settings
from ...types import ErrorCode, Page, PageKind, TrawlError
from ..base import FetchRequest
from ..http import server_address
from ..urls import classify

log = logging.getLogger("trawl.sources.readers")

READER_PRIORITY = 5  # file 0 < readers 5 < extension 10 < http 20 < playwright 30
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


MAX_QUIET_S = 3600.0  # the longest a rate limit keeps a reader from asking its API again


class ReaderFallback(TrawlError):
    """The API could not give this page. ``fallback`` is the short reason the engine puts in source_reason;
    ``retry_after`` (seconds), when the API rate-limited us: the reader leaves the API alone that long."""

    def __init__(self, code: ErrorCode, message: str, why: str, hint: str | None = None, *,
                 retry_after: float | None = None) -> None:
        super().__init__(code, message, hint)
        self.fallback = why
        self.retry_after = retry_after


def seconds(value: Any, default: float | None = None) -> float | None:
    """A Retry-After style number of seconds, or ``default`` when it is not one."""
    try:
        n = float(str(value).strip())
    except ValueError:
        return default
    return n if 0 <= n < 1e9 else default


@dataclass(frozen=True, slots=True)
class ApiResponse:
    status: int
    headers: httpx.Headers
    body: bytes
    url: str

    def json(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8", "replace"))
        except ValueError:
            return None

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of ``url``: the unit a token is bound to."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower().rstrip("."), parts.port or (443 if scheme == "https" else 80)


def host_port(url: str) -> str:
    _, host, port = origin(url)
    return f"{host}:{port}"


# The API sessions one reader fetch opened (Reader.fetch reads what they connected to and sent).
_SESSIONS_OF_FETCH: ContextVar[list[ApiSession] | None] = ContextVar("trawl_reader_sessions", default=None)


class ApiSession:
    """One guarded HTTP client for one reader fetch: policy on every hop, pinned connections, capped bodies.

    ``token`` (with ``token_url``) is sent as a bearer token only to requests whose origin is
    ``token_url``'s origin, so a redirect elsewhere never carries it.
    """

    def __init__(self, settings: Settings, *, resolver: Resolver | None = None, token: str = "",
                 token_url: str = "", headers: dict[str, str] | None = None) -> None:
        self.settings = settings
        self.token = token
        self.token_origin = origin(token_url) if token and token_url else None
        # What the exit rule needs of this session's reads (Reader.fetch puts it on the page): the addresses its
        # connections went to, and whether the user's credential was sent (what it unlocked is private content).
        self.addresses: list[str] = []
        self.sent_credential = False
        if (opened := _SESSIONS_OF_FETCH.get()) is not None:
            opened.append(self)
        self.transport = PinnedTransport(NetGuard(settings, resolver),
                                         limits=httpx.Limits(max_connections=8, max_keepalive_connections=4))
        self.client = httpx.AsyncClient(
            transport=self.transport, follow_redirects=False,
            headers={"User-Agent": settings.user_agent, "Accept-Language": "en;q=0.9, *;q=0.5", **(headers or {})},
        )

    async def __aenter__(self) -> ApiSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()

    async def get(self, url: str, *, headers: dict[str, str] | None = None, cap: int | None = None) -> ApiResponse:
        settings = self.settings
        cap = cap or settings.max_passthrough_bytes
        timeout = httpx.Timeout(settings.http_timeout_s, connect=settings.connect_timeout_s)
        seen = [url]
        for _ in range(settings.max_redirects + 1):
            if classify(url).kind != "http":
                raise ReaderFallback(ErrorCode.UNSUPPORTED_SCHEME, f"the API redirected to {url!r}",
                                     "the API redirected off http(s)")
            check_url(url, settings)  # the user's site policy, on every URL and hop: refusals are final
            hdrs = dict(headers or {})
            if self.token_origin is not None and origin(url) == self.token_origin:
                hdrs["Authorization"] = f"Bearer {self.token}"
                self.sent_credential = True
            try:
                request = self.client.build_request("GET", url, headers=hdrs, timeout=timeout)
                response = await self.client.send(request, stream=True)
            except httpx.TimeoutException:
                raise ReaderFallback(ErrorCode.TIMEOUT, f"{host_port(url)} did not answer in time",
                                     f"{host_port(url)} timed out") from None
            except httpx.HTTPError as exc:
                raise ReaderFallback(ErrorCode.NETWORK_ERROR, f"cannot reach {host_port(url)}: {type(exc).__name__}",
                                     f"{host_port(url)} unreachable") from None
            peer = server_address(response)
            if peer and peer not in self.addresses and len(self.addresses) < 64:
                self.addresses.append(peer)
            try:
                if response.status_code in _REDIRECTS and "location" in response.headers:
                    url = urljoin(url, response.headers["location"].strip())
                    if url in seen:
                        raise ReaderFallback(ErrorCode.REDIRECT_LOOP, f"the API redirects in a loop at {url}",
                                             "the API redirects in a loop")
                    seen.append(url)
                    continue
                body = bytearray()
                async for piece in response.aiter_bytes():
                    body += piece
                    if len(body) > cap:
                        raise ReaderFallback(ErrorCode.TOO_LARGE, f"{host_port(url)} sent more than {cap:,} bytes",
                                             "the API answer is too large")
                return ApiResponse(response.status_code, response.headers, bytes(body), url)
            except httpx.HTTPError as exc:
                raise ReaderFallback(ErrorCode.NETWORK_ERROR, f"reading from {host_port(url)} failed: {exc}",
                                     f"{host_port(url)} broke off") from None
            finally:
                await response.aclose()
        raise ReaderFallback(ErrorCode.REDIRECT_LOOP, f"more than {settings.max_redirects} redirects from {seen[0]}",
                             "the API redirects too often")


def status_fallback(resp: ApiResponse, api: str) -> ReaderFallback:
    """The generic reading of a failed API answer (each reader checks its own documented signals first)."""
    status = resp.status
    if status == 429:
        retry = resp.headers.get("retry-after", "")
        after = f", retry after {retry} s" if retry.strip().isdigit() else ""
        return ReaderFallback(ErrorCode.HTTP_ERROR, f"{api} rate-limited the request (HTTP 429{after})",
                              f"{api} rate limit reached (HTTP 429{after})", retry_after=seconds(retry, 60.0))
    if status in (404, 410):
        return ReaderFallback(ErrorCode.NOT_FOUND, f"{api} answered HTTP {status}",
                              f"{api} answered {status}: private, removed or missing")
    if status in (401, 403):
        return ReaderFallback(ErrorCode.LOGIN_REQUIRED, f"{api} refused the request (HTTP {status})",
                              f"{api} refused access (HTTP {status})")
    return ReaderFallback(ErrorCode.HTTP_ERROR, f"{api} failed (HTTP {status})", f"{api} failed (HTTP {status})")


# ------------------------------------------------------------------------------------------- Markdown
_LABEL_DROP = re.compile(r"[#\[\]()<>*_`|⟦⟧\\]+")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")


def label(text: Any, limit: int = 80) -> str:
    """A name or value safe inside a heading: one line, no Markdown or bracket characters, bounded."""
    s = _LABEL_DROP.sub(" ", str(text or ""))
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def code_label(text: Any, limit: int = 40) -> str:
    """An API's error code or status word (``throttle_violation``, ``LOGIN_REQUIRED``): letters, digits, ``_.-``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "", str(text or ""))[:limit]


def title_label(text: Any, limit: int = 200) -> str:
    """A document title for the top heading: one line, no heading or marker characters, bounded."""
    s = " ".join(re.sub(r"[#⟦⟧\\]+", " ", str(text or "")).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


_URL_LINE = re.compile(r"https?://[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]{1,2000}")


def url_line(text: Any) -> str:
    """A URL written into the Markdown as is (a link post's target): one line of URL characters, or ``""``.
    Whitespace, controls, angle brackets or quotes would let it open a heading or a block of its own."""
    s = str(text or "")
    return s if _URL_LINE.fullmatch(s) and "⟦" not in s else ""


def count(value: Any) -> int | None:
    """An API's number field, only when it is one (a string could carry a line of Markdown)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def neutral(text: str) -> str:
    """Page text must not forge the hidden-text markers the sanitiser reads."""
    return text.replace("⟦", "[").replace("⟧", "]").replace("\r\n", "\n").replace("\x00", "")


def _lines(md: str) -> Iterator[tuple[str, bool]]:
    """Each line of ``md`` and whether it is code (a fence of a fenced block, or inside one): left as written."""
    fence = ""
    for line in md.split("\n"):
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            yield line, True
        elif m:
            fence = m.group(1)
            yield line, True
        else:
            yield line, False


def flatten_headings(md: str) -> str:
    """An author's headings as bold lines: inside a comment or answer they must not open a section."""
    out: list[str] = []
    for line, code in _lines(md):
        if not code and (h := _ATX.match(line)):
            line = f"**{h.group(2).strip()}**" if (h.group(2) or "").strip() else ""
        out.append(line)
    return "\n".join(out)


def demote(md: str, by: int) -> str:
    """A document's own headings pushed ``by`` levels down (at most level 6) under the reader's title."""
    out: list[str] = []
    for line, code in _lines(md):
        if not code and (h := _ATX.match(line)) and (h.group(2) or "").strip():
            line = "#" * min(6, len(h.group(1)) + by) + " " + h.group(2).strip()
        out.append(line)
    return "\n".join(out)


_BADGE_LINK = re.compile(r"\[!\[[^\]\n]*\]\([^)\n]*\)\]\([^)\n]*\)")  # [![alt](img)](link): a badge
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\n]*\)")
_LAYOUT_TAG = re.compile(r"</?(?:p|div|br|img|picture|source|a|span|center|h[1-6]|sup|sub|details|summary)\b[^>\n]*>",
                         re.I)


# A link reference definition used as a comment: ``[//]: # (text)``, ``[comment]: <> "text"``. GitHub renders
# no definition; one whose target is ``#`` or empty links nowhere, so it exists only to hide its title.
_COMMENT_DEF = re.compile(
    r"[ ]{0,3}\[[^\]\n]{1,200}\]:[ \t]*(?:\n[ \t]*)?(?:#|<#?>)"
    r"(?:[ \t]*(?:\n[ \t]*)?(?:\"(?:[^\"\\\n]|\\.|\n(?![ \t]*\n))*\"|'(?:[^'\\\n]|\\.|\n(?![ \t]*\n))*'"
    r"|\((?:[^()\\\n]|\\.|\n(?![ \t]*\n))*\)))?[ \t]*(?=\n|\Z)")


def _unrendered(md: str) -> list[tuple[int, int, str]]:
    """(start, end, why) of the Markdown GitHub renders as nothing: HTML comments (closed, or opened at the start
    of a line and left open, which hides everything to the end) and comment-style link reference definitions.
    Code blocks and code spans are shown as written, so what sits inside them is left alone."""
    spans: list[tuple[int, int, str]] = []
    n, pos, fence, line_start = len(md), 0, "", True
    last_close = md.rfind("-->")  # no search past it: many unclosed "<!--" stay linear
    while pos < n:
        nl = md.find("\n", pos)
        end = n if nl < 0 else nl
        line = md[pos:end]
        if line_start:
            m = _FENCE.match(line)
            if fence:
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                    fence = ""
                pos = end + 1
                continue
            if m:
                fence = m.group(1)
                pos = end + 1
                continue
            d = _COMMENT_DEF.match(md, pos)
            if d:
                spans.append((pos, d.end(), "comment link definition"))
                pos = d.end() + 1
                continue
        k = line.find("<!--")
        if k < 0 or line.count("`", 0, k) % 2:  # no comment, or one inside a code span
            pos, line_start = end + 1, True
            continue
        start = pos + k
        close = md.find("-->", start + 4) if start + 4 <= last_close else -1
        if close < 0:
            if line_start and k <= 3 and not line[:k].strip():
                spans.append((start, n, "HTML comment left open to the end"))
                break
            pos, line_start = end + 1, True
            continue
        spans.append((start, close + 3, "HTML comment"))
        pos, line_start = close + 3, False
    return spans


def hide_unrendered(md: str, settings: Settings | None, warnings: list[str] | None) -> str:
    """Markdown the site does not render, treated like a page's hidden text (``settings.hidden_text``): such text
    is never shown, so ``drop`` and ``strict`` cut it and ``flag`` keeps it between the hidden-text markers. A
    ``hidden_text`` warning reports it (count, reasons, a sample); text in it addressed to AI readers adds a
    ``hidden_instruction`` warning. Without settings the text is cut and nothing is reported."""
    spans = _unrendered(md)
    if not spans:
        return md
    from collections import Counter

    from ...extract.visibility import HIDDEN_CLOSE, HIDDEN_OPEN, HIDDEN_WARNING, MIN_WORDS, SAMPLE_CHARS
    from ...sanitise import is_instruction

    flag = settings is not None and settings.hidden_text == "flag"
    texts: list[tuple[str, str]] = []
    for start, end, why in reversed(spans):
        raw = md[start:end]
        inner = raw[4:-3] if why == "HTML comment" else raw[4:] if why.startswith("HTML") else raw
        words = re.findall(r"\w+", inner)
        keep = flag and len(words) >= MIN_WORDS
        md = md[:start] + (f"{HIDDEN_OPEN} {' '.join(inner.split())} {HIDDEN_CLOSE}" if keep else "") + md[end:]
        if len(words) >= MIN_WORDS:
            texts.append((" ".join(inner.split()), why))
    if warnings is not None and texts:
        texts.reverse()
        reasons = Counter(why for _, why in texts)
        chars = sum(len(t) for t, _ in texts)
        first = texts[0][0]
        sample = first if len(first) <= SAMPLE_CHARS else first[: SAMPLE_CHARS - 1] + "…"
        done = "kept between ⟦hidden⟧ markers" if flag else "cut from the text"
        why = ", ".join(f"{r} x{k}" if k > 1 else r for r, k in reasons.most_common())
        warnings.append(f"{HIDDEN_WARNING}: {len(texts)} passage(s) the Markdown hides from people ({chars} chars; "
                        f"{why}) {done}; sample: \"{sample}\"")
        for text, _ in texts:
            if is_instruction(text):
                warnings.append(f"hidden_instruction: the Markdown hides text addressed to AI readers: "
                                f"\"{text[:160]}\"")
    return md


def tidy_markdown(md: str, settings: Settings | None = None, warnings: list[str] | None = None) -> str:
    """A README's decoration out: badges, images (their alt text stays), layout tags; what GitHub does not
    render (HTML comments, comment-style link definitions) goes through :func:`hide_unrendered`.

    Code blocks are left as they are. Headings written as HTML (``<h1 align=center>``) lose their tags and
    stay as text.
    """
    md = hide_unrendered(md, settings, warnings)
    out: list[str] = []
    for line, code in _lines(md):
        if not code:
            line = _LAYOUT_TAG.sub("", _IMAGE.sub(lambda g: g.group(1), _BADGE_LINK.sub("", line)))
            if not line.strip() and out and not out[-1].strip():
                continue  # a line emptied by the tidy-up: no runs of blank lines
        out.append(line)
    return "\n".join(out).strip()


def body_text(md: Any, settings: Settings | None = None, warnings: list[str] | None = None, *,
              html: bool = False) -> str:
    """An author's Markdown body, ready to sit under a record heading. ``html``: the site renders Markdown with
    raw HTML (GitHub), so what it does not show (comments) goes through :func:`hide_unrendered`."""
    text = neutral(str(md or ""))
    if html:
        text = hide_unrendered(text, settings, warnings)
    return flatten_headings(text).strip()


def html_to_markdown(html: str, settings: Settings, warnings: list[str]) -> str:
    """API-provided HTML -> Markdown with the page rules: hidden passages cut or marked like on any page."""
    from ...extract.dom import parse_html
    from ...extract.markdown import to_markdown
    from ...extract.visibility import apply_hidden, find_hidden

    html = neutral(html)
    root = parse_html(html)
    if root is None:
        return ""
    md = to_markdown(root, records=False)
    md, hidden = apply_hidden(md, find_hidden(html), settings, warnings)
    # A markdown page has no HTML for the sanitiser to scan again: name hidden instructions here.
    from ...sanitise import is_instruction

    for text in hidden:
        if is_instruction(text):
            gist = " ".join(text.split())[:160]
            warnings.append(f"hidden_instruction: the API's HTML hides text addressed to AI readers: \"{gist}\"")
    return md.strip()


def fence(code: str, lang: str = "") -> str:
    longest = max((len(m.group(0)) for m in re.finditer(r"`{3,}", code)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{code.rstrip()}\n{ticks}"


def markdown_page(req: FetchRequest, source: str, markdown: str, title: str,
                  warnings: list[str] | tuple[str, ...] = (), kind: PageKind = "markdown") -> Page:
    return Page(url=req.target, final_url=req.target, kind=kind, source=source, content_type="text/markdown",
                text=markdown, title=title_label(title), status=200, warnings=tuple(warnings))


# ------------------------------------------------------------------------------------------- the source
class Reader:
    """The Source shape every reader shares; subclasses give ``match`` and ``read``."""

    name: str = "reader"
    api: str = "the API"  # for messages: "GitHub API", "Stack Exchange API"...
    priority = READER_PRIORITY

    def __init__(self, settings: Settings | None = None, *, resolver: Resolver | None = None) -> None:
        self.settings = settings or Settings()
        self._resolver = resolver  # None: the system resolver
        self._quiet_until = 0.0  # after a rate limit: no API request before this (time.monotonic())
        self._quiet_why = ""

    def match(self, url: str, settings: Settings) -> Any:
        """What the reader needs from ``url`` (an id, a path), or None when it does not read this URL."""
        raise NotImplementedError

    def reason(self, what: Any) -> str:
        raise NotImplementedError

    async def read(self, what: Any, req: FetchRequest, settings: Settings) -> Page:
        raise NotImplementedError

    def session(self, settings: Settings, **kw: Any) -> ApiSession:
        return ApiSession(settings, resolver=self._resolver, **kw)

    def accepts(self, req: FetchRequest) -> str | None:
        if not self.settings.readers or classify(req.target).kind != "http":
            return None
        try:
            what = self.match(req.target, self.settings)
        except ValueError:
            return None
        return self.reason(what) if what is not None else None

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        try:
            what = self.match(req.target, settings) if classify(req.target).kind == "http" else None
        except ValueError:
            what = None
        if what is None:
            raise TrawlError(ErrorCode.INVALID_REQUEST, f"the {self.name} reader does not read {req.target!r}")
        left = self._quiet_until - time.monotonic()
        if left > 0:  # the API asked us to wait: honour it (asking again while limited can get an address banned)
            raise ReaderFallback(ErrorCode.HTTP_ERROR, f"{self.api} is rate-limited for another {left:.0f} s",
                                 f"{self._quiet_why}; not asking again for {left:.0f} s")
        sessions: list[ApiSession] = []
        token = _SESSIONS_OF_FETCH.set(sessions)
        try:
            async with asyncio.timeout(settings.http_timeout_s):
                return self._judged(await self.read(what, req, settings), sessions)
        except ReaderFallback as err:
            if err.retry_after is not None:
                self._quiet_until = time.monotonic() + min(max(err.retry_after, 1.0), MAX_QUIET_S)
                self._quiet_why = err.fallback
            raise
        except TrawlError as err:
            if err.code == ErrorCode.BLOCKED_BY_POLICY:
                raise  # the site policy or the private-network rule: final, no other source
            raise ReaderFallback(err.code, err.message, f"{self.api} failed ({err.code})", err.hint) from None
        except TimeoutError:
            raise ReaderFallback(ErrorCode.TIMEOUT, f"{self.api} did not answer within {settings.http_timeout_s:g} s",
                                 f"{self.api} timed out") from None
        except Exception as exc:  # an answer in a shape the reader does not know: read the page instead
            log.warning("%s reader failed on %s", self.name, req.target, exc_info=True)
            raise ReaderFallback(ErrorCode.HTTP_ERROR, f"{self.api} answered in an unexpected shape "
                                 f"({type(exc).__name__})", f"{self.api} answered in an unexpected shape") from None
        finally:
            _SESSIONS_OF_FETCH.reset(token)

    def _judged(self, page: Page, sessions: list[ApiSession]) -> Page:
        """``page`` with what the exit rule judges it by: the addresses the API connections went to (a self-hosted
        wiki or GitHub Enterprise at a loopback or private address is a local service, whatever its name says), and,
        when the user's credential was sent, the page is private content (a token reads private repositories)."""
        addresses = tuple(dict.fromkeys([*page.addresses, *(a for s in sessions for a in s.addresses)]))
        private = page.private or (f"read from the {self.api} with the user's credential"
                                   if any(s.sent_credential for s in sessions) else "")
        return replace(page, addresses=addresses, private=private)


def expect_json(resp: ApiResponse, api: str) -> Any:
    data = resp.json()
    if data is None:
        raise ReaderFallback(ErrorCode.HTTP_ERROR, f"{api} did not answer with JSON", f"{api} did not answer JSON")
    return data


def on_host(url: str, hosts: frozenset[str], suffixes: tuple[str, ...], bases: tuple[str, ...]) -> bool:
    """``url`` is on one of the site's public hosts, or on the host:port of a configured API/base URL."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower().rstrip(".")
    if host in hosts or any(host.endswith(s) for s in suffixes):
        return True
    with contextlib.suppress(ValueError):
        here = host_port(url)
        return any(b and here == host_port(b) for b in bases)
    return False


def clock(seconds: float) -> str:
    s = max(0, int(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"
