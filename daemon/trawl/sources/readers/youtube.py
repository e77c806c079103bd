"""YouTube videos: the transcript (captions), which the watch page's HTML does not hold, in timestamped chunks.

    youtube.com/watch?v=<id>, youtu.be/<id>, /shorts/<id>, /live/<id>, /embed/<id>

The watch page carries the player's data (``ytInitialPlayerResponse``): ``videoDetails`` (title, channel,
length, description), ``playabilityStatus`` and ``captions.playerCaptionsTracklistRenderer.captionTracks``
(``baseUrl``, ``languageCode``, ``kind: "asr"`` for automatic captions). The chosen track's ``baseUrl`` with
``fmt=json3`` answers ``{"events": [{"tStartMs", "dDurationMs", "segs": [{"utf8"}]}]}``; the XML timedtext
forms (``<text start dur>``, ``<p t d>``) are read too. The transcript is cut into windows, each under a
heading with its time span ("Transcript 02:00–03:05"), so every chunk says where in the video it is.
A video that needs a login (members-only, age-restricted), has no captions, or whose caption URL leaves
the configured YouTube origin is read through the browser tab or the page instead.
"""

from __future__ import annotations

import html as htmllib
import json
import re
from dataclasses import dataclass
from itertools import pairwise
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

from lxml import etree

from ...settings import Settings
from ...types import ErrorCode, Page
from ..base import FetchRequest
from .base import (
    Reader,
    ReaderFallback,
    clock,
    code_label,
    flatten_headings,
    label,
    markdown_page,
    neutral,
    on_host,
    origin,
    status_fallback,
    title_label,
)

HOSTS = frozenset({"youtube.com", "www.youtube.com", "m.youtube.com", "youtu.be", "music.youtube.com"})
_ID = re.compile(r"^[A-Za-z0-9_-]{11}$")
_PLAYER = re.compile(r"ytInitialPlayerResponse\s*=\s*")
WINDOW_S = 90.0  # a transcript window spans at most this long...
WINDOW_CHARS = 900  # ...or this many characters, whichever comes first


@dataclass(frozen=True, slots=True)
class Line:
    start: float
    end: float
    text: str


class YouTubeReader(Reader):
    name = "youtube"
    api = "YouTube"

    def match(self, url: str, settings: Settings) -> str | None:
        if not on_host(url, HOSTS, (), (settings.reader_youtube_base,)):
            return None
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        segs = [s for s in parts.path.split("/") if s]
        vid = ""
        if host == "youtu.be" and segs:
            vid = segs[0]
        elif segs[:1] == ["watch"]:
            vid = (parse_qs(parts.query).get("v") or [""])[0]
        elif len(segs) >= 2 and segs[0] in ("shorts", "live", "embed", "v"):
            vid = segs[1]
        return vid if _ID.match(vid) else None

    def reason(self, what: str) -> str:
        return "YouTube video: the transcript with timestamps (the page's HTML does not hold it)"

    async def read(self, what: str, req: FetchRequest, settings: Settings) -> Page:
        base = settings.reader_youtube_base.rstrip("/")
        async with self.session(settings, headers={"Accept": "text/html,application/json;q=0.9"}) as s:
            watch = await s.get(f"{base}/watch?v={what}", cap=settings.max_html_bytes)
            if watch.status != 200:
                raise status_fallback(watch, "YouTube")
            player = _player(watch.text())
            status = player.get("playabilityStatus") if isinstance(player.get("playabilityStatus"), dict) else {}
            state = str((status or {}).get("status") or "OK")
            if state in ("LOGIN_REQUIRED", "AGE_CHECK_REQUIRED", "CONTENT_CHECK_REQUIRED"):
                raise ReaderFallback(ErrorCode.LOGIN_REQUIRED, "YouTube wants a login for this video",
                                     f"YouTube needs a login for this video ({code_label(state)})")
            if state not in ("OK", "LIVE_STREAM_OFFLINE"):
                raise ReaderFallback(ErrorCode.NOT_FOUND, f"YouTube cannot play this video ({state})",
                                     f"YouTube says the video is unavailable ({code_label(state)})")
            track = _track(player)
            if track is None:
                raise ReaderFallback(ErrorCode.EMPTY_CONTENT, "the video has no captions",
                                     "the video has no captions, so no transcript")
            url = urljoin(base + "/", str(track.get("baseUrl") or ""))
            if origin(url) != origin(base):
                raise ReaderFallback(ErrorCode.HTTP_ERROR, "the caption URL leaves YouTube",
                                     "the caption URL points off the YouTube origin")
            sep = "&" if "?" in url else "?"
            caps = await s.get(f"{url}{sep}fmt=json3")
        if caps.status != 200:
            raise status_fallback(caps, "YouTube captions")
        lines = _lines(caps.body)
        if not lines:
            raise ReaderFallback(ErrorCode.EMPTY_CONTENT, "the caption track is empty", "the caption track is empty")
        details = player.get("videoDetails") if isinstance(player.get("videoDetails"), dict) else {}
        details = details or {}
        title = str(details.get("title") or f"YouTube video {what}")
        auto = track.get("kind") == "asr"
        meta = [f"YouTube video by {label(details.get('author'), 60)}" if details.get("author") else "YouTube video"]
        length = details.get("lengthSeconds")
        if isinstance(length, str) and length.isdigit():
            meta.append(f"length {clock(int(length))}")
        meta.append(f"transcript: {label(track.get('languageCode'), 12)}" + (" (automatic captions)" if auto else ""))
        desc = neutral(str(details.get("shortDescription") or "")).strip()
        about = " · ".join(meta) + ("\n\n" + _paras(desc) if desc else "")
        parts = [f"# {title_label(title, 200)}", f"## About the video\n\n{about}"]
        chapters = _chapters(desc)
        level = "###" if chapters else "##"
        chapter = -1
        for window in _windows(lines, [start for start, _ in chapters]):
            now = _chapter_at(chapters, window[0].start)
            if now != chapter:
                chapter = now
                start, name = chapters[now]
                parts.append(f"## Chapter {clock(start)} {label(name, 100)}")
            span = f"{clock(window[0].start)}–{clock(window[-1].end)}"
            text = " ".join(line.text for line in window)
            # captions are one line; one that starts with '#' must not open a heading of its own
            parts.append(f"{level} Transcript {span}\n\n{flatten_headings(neutral(text))}")
        return markdown_page(req, self.name, "\n\n".join(parts), title)


def _paras(text: str) -> str:
    """A description's lines as paragraphs; a line starting with '#' (a hashtag) must not read as a heading."""
    lines = [ln.strip() for ln in text.splitlines()]
    return "\n\n".join(("\\" + ln if ln.startswith("#") else ln) for ln in lines if ln)


def _player(page: str) -> dict[str, Any]:
    m = _PLAYER.search(page)
    if m is None:
        raise ReaderFallback(ErrorCode.EMPTY_CONTENT, "the watch page holds no player data (a consent or bot page?)",
                             "YouTube's watch page held no player data")
    try:
        data, _ = json.JSONDecoder().raw_decode(page, m.end())
    except ValueError:
        raise ReaderFallback(ErrorCode.EMPTY_CONTENT, "the player data on the watch page is not JSON",
                             "YouTube's player data was unreadable") from None
    if not isinstance(data, dict):
        raise ReaderFallback(ErrorCode.EMPTY_CONTENT, "no player data", "YouTube's player data was unreadable")
    return data


def _track(player: dict[str, Any]) -> dict[str, Any] | None:
    caps = player.get("captions")
    renderer = caps.get("playerCaptionsTracklistRenderer") if isinstance(caps, dict) else None
    tracks = renderer.get("captionTracks") if isinstance(renderer, dict) else None
    if not isinstance(tracks, list):
        return None
    tracks = [t for t in tracks if isinstance(t, dict) and t.get("baseUrl")]
    if not tracks:
        return None

    def rank(t: dict[str, Any]) -> tuple[int, int]:
        manual = t.get("kind") != "asr"
        english = str(t.get("languageCode") or "").lower().startswith("en")
        return (0 if manual else 1, 0 if english else 1)

    return sorted(tracks, key=rank)[0]


def _lines(body: bytes) -> list[Line]:
    text = body.decode("utf-8", "replace").lstrip()
    out: list[Line] = []
    if text.startswith("{"):
        data = json.loads(text)
        for ev in data.get("events") or []:
            if not isinstance(ev, dict) or not isinstance(ev.get("segs"), list):
                continue
            words = "".join(str(seg.get("utf8") or "") for seg in ev["segs"] if isinstance(seg, dict))
            words = " ".join(words.split())
            if not words:
                continue
            start = float(ev.get("tStartMs") or 0) / 1000.0
            out.append(Line(start, start + float(ev.get("dDurationMs") or 0) / 1000.0, words))
        return out
    if text.startswith("<"):
        root = etree.fromstring(text.encode("utf-8"), etree.XMLParser(resolve_entities=False, no_network=True,
                                                                       huge_tree=False))
        for el in root.iter("text", "p"):
            words = " ".join(htmllib.unescape("".join(el.itertext())).split())
            if not words:
                continue
            if el.tag == "text":
                start, dur = float(el.get("start") or 0), float(el.get("dur") or 0)
            else:
                start, dur = float(el.get("t") or 0) / 1000.0, float(el.get("d") or 0) / 1000.0
            out.append(Line(start, start + dur, words))
    return out


_CHAPTER = re.compile(r"^\s*[-•*]?\s*\(?((?:\d{1,2}:)?\d{1,2}:\d{2})\)?\s*[-–—:|]?\s*(\S.{0,120})$")


def _chapters(description: str) -> list[tuple[float, str]]:
    """Chapters the way YouTube reads them from a description: timestamped lines, the first at 0:00, at least
    three, in ascending order. Anything else: no chapters."""
    found: list[tuple[float, str]] = []
    for line in description.splitlines():
        m = _CHAPTER.match(line)
        if m:
            parts = [int(p) for p in m.group(1).split(":")]
            while len(parts) < 3:
                parts.insert(0, 0)
            secs = float(parts[0] * 3600 + parts[1] * 60 + parts[2])
            found.append((secs, m.group(2).strip()))
    if len(found) < 3 or found[0][0] != 0 or any(b[0] <= a[0] for a, b in pairwise(found)):
        return []
    return found


def _chapter_at(chapters: list[tuple[float, str]], t: float) -> int:
    at = -1
    for i, (start, _) in enumerate(chapters):
        if start <= t:
            at = i
    return at


def _windows(lines: list[Line], cuts: list[float] | None = None) -> list[list[Line]]:
    """Lines grouped into windows of at most WINDOW_S seconds and WINDOW_CHARS characters; a chapter start
    (``cuts``) always opens a new window."""
    windows: list[list[Line]] = []
    cur: list[Line] = []
    size = 0
    cuts = sorted(cuts or [])
    for line in lines:
        crosses = any(cur[0].start < c <= line.start for c in cuts) if cur else False
        if cur and (crosses or line.start - cur[0].start >= WINDOW_S or size + len(line.text) > WINDOW_CHARS):
            windows.append(cur)
            cur, size = [], 0
        cur.append(line)
        size += len(line.text) + 1
    if cur:
        windows.append(cur)
    return windows
