"""Benign text in the attacks' languages for the injection detector (issue 24): Debian's translated documentation,
read at run time from the installed packages (never committed; benchmarks/data/injection/README.md names them):

    apt-get install -y debian-reference-{de,es,fr,it,ja,pt,zh-cn,en} manpages-{nl,pl,ru,tr,uk,vi}

The Debian Reference's HTML chapters (/usr/share/debian-reference/*.<lang>.html) and the localized man pages
(each package's files as listed by dpkg, /var/lib/dpkg/info/<pkg>.list) are cut into passages as the real-page
passages are (train_injection.passages); each passage's split is the CRC32 of its text mod 4 (0 fitted, 1
calibrates, 2-3 never seen), as the pages' number mod 4; per language at most CAP_PER_LANG passages, the lowest
CRC32s (an order that knows nothing of the text's content). Documents that are missing are skipped.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

REFERENCE = Path("/usr/share/debian-reference")
DPKG_INFO = Path("/var/lib/dpkg/info")
# language -> (package, how its documents are read)
SOURCES: dict[str, tuple[str, str]] = {
    "de": ("debian-reference-de", "html"), "es": ("debian-reference-es", "html"),
    "fr": ("debian-reference-fr", "html"), "it": ("debian-reference-it", "html"),
    "ja": ("debian-reference-ja", "html"), "pt": ("debian-reference-pt", "html"),
    "zh-cn": ("debian-reference-zh-cn", "html"), "en": ("debian-reference-en", "html"),
    "nl": ("manpages-nl", "man"), "pl": ("manpages-pl", "man"), "ru": ("manpages-ru", "man"),
    "tr": ("manpages-tr", "man"), "uk": ("manpages-uk", "man"), "vi": ("manpages-vi", "man"),
}
CAP_PER_LANG = 120  # passages per language (14 languages: at most 1,680, about 6,000 sentence windows to embed)
SPLITS = ("fit", "calib", "test")  # CRC32 mod 4: 0, 1, 2-3
SPLIT_BY = "passage"  # or "document": the CRC32 of its path decides (no unseen passage's document fitted)


def split_of(text: str) -> str:
    r = zlib.crc32(text.encode("utf-8")) % 4
    return SPLITS[min(r, 2)]


class _Blocks(HTMLParser):
    """The text of an HTML page's paragraphs, list items and table cells, one block each (code blocks left out)."""

    BLOCK: ClassVar[set[str]] = {"p", "li", "dd", "dt", "td", "th", "h1", "h2", "h3", "h4", "title", "div"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.cur: list[str] = []
        self.skip = 0

    def _flush(self) -> None:
        text = " ".join("".join(self.cur).split())
        if text:
            self.blocks.append(text)
        self.cur = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("pre", "script", "style"):
            self.skip += 1
        elif tag in self.BLOCK:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in ("pre", "script", "style"):
            self.skip = max(0, self.skip - 1)
        elif tag in self.BLOCK:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.cur.append(data)


def html_text(html: str) -> str:
    p = _Blocks()
    p.feed(html)
    p.close()
    p._flush()
    return "\n".join(p.blocks)


_ESCAPES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),  # font changes
    (re.compile(r"\\s[+-]?\d+"), ""),  # size changes
    (re.compile(r"\\\*(\[[^\]]*\]|\(..|.)"), ""),  # strings
    (re.compile(r"\\\((em|en)"), "-"), (re.compile(r"\\\((lq|rq|Lq|Rq)"), '"'),
    (re.compile(r"\\\(aq"), "'"), (re.compile(r"\\\(..|\\\[[^\]]*\]"), ""),
    (re.compile(r"\\-"), "-"), (re.compile(r"\\e"), "\\\\"),
    (re.compile(r"\\[&c/,%:|^]"), ""), (re.compile(r"\\ "), " "),
]
_TEXT_MACROS = {"B", "I", "BR", "RB", "IR", "RI", "BI", "IB", "SM", "SB"}


def roff_text(src: str) -> str:
    """The prose of a man page: text lines and the arguments of font macros, paragraphs at .PP/.TP/.SH/.IP and
    blank lines; every other request, comments and headings left out."""
    paras: list[str] = []
    cur: list[str] = []
    skip = False  # inside .nf / .EX (literal) blocks and .TS tables

    def flush() -> None:
        text = " ".join(" ".join(cur).split())
        if text:
            paras.append(text)
        cur.clear()

    for line in src.splitlines():
        if line.startswith((".\\\"", "'\\\"", '.\\"')):
            continue
        if line.startswith((".", "'")):
            name, _, args = line[1:].strip().partition(" ")
            if name in ("nf", "EX", "TS"):
                skip = True
            elif name in ("fi", "EE", "TE"):
                skip = False
            elif name in _TEXT_MACROS and not skip:
                cur.append(args.replace('"', ""))
            else:
                flush()
            continue
        if skip:
            continue
        if not line.strip():
            flush()
            continue
        cur.append(line)
    flush()
    out = "\n".join(paras)
    for pat, rep in _ESCAPES:
        out = pat.sub(rep, out)
    return out.replace("\\\\", "\\")


def _documents(lang: str) -> list[tuple[str, str]]:
    """(path, text) of every document of ``lang``'s package that is installed."""
    pkg, how = SOURCES[lang]
    if how == "html":
        return [(str(f), html_text(f.read_text(encoding="utf-8", errors="replace")))
                for f in sorted(REFERENCE.glob(f"*.{lang}.html"))]
    listing = DPKG_INFO / f"{pkg}.list"
    if not listing.exists():
        return []
    files = sorted(p for p in listing.read_text().split("\n") if "/man/" in p and p.endswith(".gz"))
    out = []
    for p in files:
        f = Path(p)
        if f.is_file() and not f.is_symlink():
            src = gzip.decompress(f.read_bytes()).decode("utf-8", errors="replace")
            if not src.lstrip().startswith(".so "):  # a page that only points at another
                out.append((p, roff_text(src)))
    return out


def passages_by_lang(cut: Callable[[str, int], list[str]], cap: int = CAP_PER_LANG) -> dict[str, list[tuple[str, str]]]:
    """Per language, at most ``cap`` (document path, passage) of its documents (``cut``: train_injection.passages),
    the passages with the lowest CRC32, in that order; a passage met twice is kept once (its first document)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for lang in SOURCES:
        seen: dict[str, str] = {}
        for path, text in _documents(lang):
            for p in cut(text, 10**9):
                seen.setdefault(p, path)
        out[lang] = [(seen[t], t) for t in sorted(seen, key=lambda t: zlib.crc32(t.encode("utf-8")))[:cap]]
    return out


def splits(cut: Callable[[str, int], list[str]], cap: int = CAP_PER_LANG) -> dict[str, list[tuple[str, str]]]:
    """"fit" / "calib" / "test": (language of the package, passage), by :func:`split_of` of the passage (or of its
    document's path, SPLIT_BY "document")."""
    out: dict[str, list[tuple[str, str]]] = {s: [] for s in SPLITS}
    for lang, pairs in passages_by_lang(cut, cap).items():
        for path, t in pairs:
            out[split_of(path if SPLIT_BY == "document" else t)].append((lang, t))
    return out
