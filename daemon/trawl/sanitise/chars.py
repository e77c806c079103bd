"""Invisible characters: find what they smuggle, then strip them.

Stripped everywhere:
  - Unicode tag characters U+E0000–E007F (they can spell ASCII text no one sees; :func:`decode_tags`
    reads it back before it is removed),
  - bidi controls U+202A–202E, U+2066–2069, U+200E, U+200F, U+061C,
  - zero-width and invisible format characters U+200B, U+2060–2064, U+FEFF, U+180E, U+00AD (soft hyphen),
    U+FFF9–FFFB (interlinear annotation), U+034F (combining grapheme joiner),
  - C0 control characters other than tab and line breaks, DEL, U+FFFE/FFFF,
  - runs of two or more variation selectors (one selector after a character is normal emoji/CJK use;
    a run is a way to hide bytes).
Kept where they do a job, stripped elsewhere:
  - ZERO WIDTH JOINER U+200D between two emoji (family, profession and flag sequences),
  - ZERO WIDTH NON-JOINER U+200C between two letters of Arabic-script or Indic text, where it is spelling.
"""

from __future__ import annotations

import heapq
import html
import re
from collections.abc import Iterator

_TAG_RUN = re.compile(r"[\U000E0000-\U000E007F]+")
_ALWAYS = (
    "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"  # bidi controls
    "\u200b\u2060-\u2064\ufeff\u180e\u00ad\ufff9-\ufffb\u034f"  # zero-width / invisible format
    "\U000e0000-\U000e007f"  # tag characters
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff"  # control characters and non-characters
)
_ALWAYS_RE = re.compile(f"[{_ALWAYS}]+")
_VS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_VS_RUN = re.compile(f"[{_VS}]{{2,}}")
# The same runs in a text with no character past U+FFFF (beyond_bmp false): the astral selectors cannot occur, and a
# BMP-only class is searched by table, not by trying ranges in turn.
_VS_RUN_BMP = re.compile("[\ufe00-\ufe0f]{2,}")
_EMOJI = "\u00a9\u00ae\u203c-\u3299\U0001f000-\U0001faff\ufe0f\U0001f3fb-\U0001f3ff"
_ZWJ_STRAY = re.compile(f"(?<![{_EMOJI}])\u200d|\u200d(?![{_EMOJI}])")
_JOINING = "\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufefe\u0900-\u0dff"
_ZWNJ_STRAY = re.compile(f"(?<![{_JOINING}])\u200c|\u200c(?![{_JOINING}])")
# Every invisible character, as two classes searched one after the other: a class of BMP characters only is
# compiled to a lookup table, one with astral ranges beside them to a list of ranges tried in turn (twice the time).
_ANY_INVISIBLE_BMP = re.compile(
    "[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u200b\u2060-\u2064\ufeff\u180e\u00ad\ufff9-\ufffb\u034f"
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff\u200c\u200d\ufe00-\ufe0f]")
_ANY_INVISIBLE_ASTRAL = re.compile("[\U000e0000-\U000e007f\U000e0100-\U000e01ef]")
# What decode_tags and decode_variation_runs read: without one of these both find nothing. Its BMP part alone answers
# for a text with no character past U+FFFF.
_SMUGGLING = re.compile("[\ufe00-\ufe0f\U000e0000-\U000e007f\U000e0100-\U000e01ef]")
_SMUGGLING_BMP = re.compile("[\ufe00-\ufe0f]")

TAG_MIN_CHARS = 4  # shorter decoded runs are ignored
_BLACK_FLAG = "\U0001f3f4"


def has_invisible(text: str) -> bool:
    if text.isascii():  # a flag CPython keeps on the string: no scan
        return _ANY_INVISIBLE_BMP.search(text) is not None  # (control characters)
    if _ANY_INVISIBLE_BMP.search(text) is not None:
        return True
    return beyond_bmp(text) and _ANY_INVISIBLE_ASTRAL.search(text) is not None


def beyond_bmp(text: str) -> bool:
    """Whether ``text`` holds a character past U+FFFF: exactly when UTF-16 needs more than two bytes a character
    (a surrogate pair). Encoding is a copy loop, under half the time of searching the astral class (most pages have
    no such character; 15% have emoji)."""
    return len(text.encode("utf-16-le", "surrogatepass")) != 2 * len(text)


def may_smuggle(text: str, astral: bool | None = None) -> bool:
    """Cheap test: could :func:`decode_tags` or :func:`decode_variation_runs` find anything in ``text``?
    ``astral``: beyond_bmp(text), when the caller has it already."""
    if text.isascii():
        return False
    if astral is None:
        astral = beyond_bmp(text)
    return (_SMUGGLING if astral else _SMUGGLING_BMP).search(text) is not None


def decode_tags(text: str, astral: bool | None = None) -> list[str]:
    """ASCII spelled by each run of tag characters (U+E0020–E007E map to ' '..'~').
    ``astral``: beyond_bmp(text), when the caller has it already."""
    if astral is None:
        astral = beyond_bmp(text)
    if not astral:  # tag characters are past U+FFFF: none in this text
        return []
    out: list[str] = []
    for m in _TAG_RUN.finditer(text):
        if m.start() > 0 and text[m.start() - 1] == _BLACK_FLAG:
            continue  # a subdivision flag such as England's: U+1F3F4 + "gbeng" + cancel tag
        decoded = "".join(chr(ord(c) - 0xE0000) for c in m.group(0) if 0xE0020 <= ord(c) <= 0xE007E)
        if len(decoded.strip()) >= TAG_MIN_CHARS:
            out.append(decoded.strip())
    return out


def decode_variation_runs(text: str, astral: bool | None = None) -> list[str]:
    """Bytes hidden in runs of variation selectors (VS1–16 → 0–15, VS17–256 → 16–255), as text.
    ``astral``: beyond_bmp(text), when the caller has it already."""
    if astral is None:
        astral = beyond_bmp(text)
    out: list[str] = []
    for m in (_VS_RUN if astral else _VS_RUN_BMP).finditer(text):
        data = bytearray()
        for c in m.group(0):
            cp = ord(c)
            data.append(cp - 0xFE00 if cp <= 0xFE0F else cp - 0xE0100 + 16)
        decoded = data.decode("utf-8", "replace").strip()
        if len(decoded) >= TAG_MIN_CHARS:
            out.append(decoded)
    return out


_SPLIT_CHARS = (r"(?:[\u200b-\u200d\u2060\u00ad\u034f\u180e\ufeff]"
                r"|&(?:#(?:8203|8204|8205|8288|173|x200[bcd]|x2060|xad)|shy|zwj|zwnj);)+")
_SPLIT_WORD = re.compile(rf"\w{_SPLIT_CHARS}\w", re.IGNORECASE)
_TAGS = re.compile(r"<[^<>]{0,2000}>")
DISGUISE_WINDOW = 300  # characters kept on each side of a word split by invisible characters
MAX_DISGUISED = 50  # windows read per text


# These strings, case as written ("&#8203", "&#x200", "&#X200", "&#xad;", "&#xAD;", "&shy;" ...), in one pass
_INVISIBLE_ENTITY = re.compile(r"&(?:#(?:820[345]|8288|173;|[xX]200|x2060|xad;|xAD;)|shy;|zwj;|zwnj;)")
# The invisible run inside a _SPLIT_WORD match, found from its first character (a pattern that opens with \w is
# tried at every letter of the page): a match is a run with a word character right before and right after it.
_SPLIT_RUN = re.compile(_SPLIT_CHARS, re.IGNORECASE)
_WORD_CHAR = re.compile(r"\w")
# Where such a run can start: ignoring case made the run pattern try every "&" of the page slowly, so its starts are
# found first, case spelled out ("s" and "z" match "S", "Z" and the long s U+017F when case is ignored), by two
# searches that each scan fast (one class; one literal first character), merged in order.
_SPLIT_START_CHAR = re.compile("[\u200b-\u200d\u2060\u00ad\u034f\u180e\ufeff]")
_SPLIT_START_ENTITY = re.compile("&[#sSzZ\u017f]")


def may_split_words(text: str, invisible: bool | None = None) -> bool:
    """Cheap test: could ``text`` hold words split by invisible characters (literal or as HTML entities)?
    ``invisible``: has_invisible(text), when the caller has it already."""
    if invisible is None:
        invisible = has_invisible(text)
    return invisible or _INVISIBLE_ENTITY.search(text) is not None


def _split_words(text: str) -> Iterator[tuple[int, int]]:
    """The spans ``_SPLIT_WORD.finditer(text)`` gives, and spans overlapping the one before them (which
    disguised_snippets skips either way: they start inside the window it has just read)."""
    end = 0
    starts = heapq.merge(_SPLIT_START_CHAR.finditer(text), _SPLIT_START_ENTITY.finditer(text), key=re.Match.start)
    for c in starts:
        if c.start() < end:
            continue
        m = _SPLIT_RUN.match(text, c.start())
        if m is None:
            continue
        s, e = m.span()
        end = e
        if s > 0 and e < len(text) and _WORD_CHAR.match(text, s - 1) and _WORD_CHAR.match(text, e):
            yield s - 1, e + 1


def disguised_snippets(text: str) -> list[str]:
    """Text around words split by zero-width characters ("Dis\u200bregard"), with the invisible
    characters and any markup removed, so the instruction test can read what people would read."""
    out: list[str] = []
    end = -1
    for start, stop in _split_words(text):
        if start < end:
            continue
        lo, end = max(0, start - DISGUISE_WINDOW), stop + DISGUISE_WINDOW
        window = html.unescape(_TAGS.sub(" ", text[lo:end]))
        out.append(" ".join(strip_invisible(window).split()))
        if len(out) >= MAX_DISGUISED:
            break
    return out


def strip_invisible(text: str) -> str:
    """``text`` without the invisible characters listed in the module docstring."""
    if not has_invisible(text):
        return text
    text = _VS_RUN.sub("", text)
    text = _ALWAYS_RE.sub("", text)
    if "\u200d" in text:
        text = _ZWJ_STRAY.sub("", text)
    if "\u200c" in text:
        text = _ZWNJ_STRAY.sub("", text)
    return text
