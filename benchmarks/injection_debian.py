"""Benign text in the attacks' languages for the injection detector (issue 24), read at run time from installed
packages (never committed; benchmarks/data/injection/README.md names them and their licences):

    apt-get install -y debian-reference-{de,es,fr,it,ja,pt,zh-cn,en} manpages-{nl,pl,ru,tr,uk,vi}
    apt-get install -y --no-install-recommends gnome-user-docs

Two corpora. "debian": the Debian Reference's HTML chapters (/usr/share/debian-reference/*.<lang>.html) and the
localized man pages (each package's files as listed by dpkg, /var/lib/dpkg/info/<pkg>.list); each passage's split
is the CRC32 of its text mod 4 (0 fitted, 1 calibrates, 2-3 never seen), as the pages' number mod 4 (or of its
document's path, SPLIT_BY "document"); per language at most CAP_PER_LANG passages, the lowest CRC32s (an order that
knows nothing of the text's content). "gnome": the GNOME desktop help (gnome-user-docs, Mallard pages under
/usr/share/help/<lang>/gnome-help/, the same page id in every language: instructions to people, "Click Settings,
then ..."); a page's blocks left untranslated (the English block itself) are left out; the split is always the
CRC32 of the page id, so a page falls in the same split in every language and no parallel copy of an unseen page
is fitted; per language the passages of the pages with the lowest CRC32s first, so the languages hold the same
pages. Both are cut into passages as the real-page passages are (train_injection.passages). Documents that are
missing are skipped. :func:`gnome_pairs` gives the help's aligned blocks (a language's block and the English one
it translates) for the language-direction analysis.
"""

from __future__ import annotations

import gzip
import re
import xml.etree.ElementTree as ET
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
HELP = Path("/usr/share/help")
# language (the attacks' code) -> the GNOME help's directory; tr and hi left out: gnome-user-docs 43 has 7 and 20 of
# their 3,238 blocks translated
GNOME: dict[str, str] = {
    "en": "C", "de": "de", "fr": "fr", "es": "es", "it": "it", "pt": "pt_BR", "nl": "nl", "pl": "pl", "ru": "ru",
    "uk": "uk", "zh": "zh_CN", "ja": "ja", "ko": "ko", "vi": "vi", "id": "id",
}
CORPORA = ("debian", "gnome")
PAIR_CAP = 60  # aligned block pairs per language and split (gnome_pairs)
PAIR_MIN_CHARS = 40  # of the English block
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


_MAL = "{http://projectmallard.org/1.0/}"
_MAL_SKIP = {"info", "screen", "code", "media", "comment", "synopsis"}


def mallard_blocks(path: Path) -> list[str]:
    """The text of a Mallard page's titles and paragraphs (list items' and table cells' included), one block each, in
    document order; the page's <info> (credits, links), literal <screen>/<code> blocks and media left out."""
    out: list[str] = []

    def walk(e: ET.Element) -> None:
        tag = e.tag.removeprefix(_MAL) if isinstance(e.tag, str) else ""
        if tag in _MAL_SKIP:
            return
        if tag in ("p", "title"):
            text = " ".join("".join(e.itertext()).split())
            if text:
                out.append(text)
            return
        for c in e:
            walk(c)

    walk(ET.parse(path).getroot())
    return out


def _gnome_pages(lang: str) -> list[tuple[str, list[str], list[str]]]:
    """(page id, its blocks in ``lang``, the English blocks) of every GNOME help page installed in both."""
    base, en = HELP / GNOME[lang] / "gnome-help", HELP / "C" / "gnome-help"
    return [(f.stem, mallard_blocks(f), mallard_blocks(en / f.name)) for f in sorted(base.glob("*.page"))
            if (en / f.name).is_file()]


def _translated(blocks: list[str], english: list[str], lang: str) -> list[str]:
    """``blocks`` without the ones left in English (for English itself: all)."""
    if lang == "en":
        return blocks
    same = set(english)
    return [b for b in blocks if b not in same]


def gnome_pairs(split: str, cap: int = PAIR_CAP) -> list[tuple[str, str, str]]:
    """(language, block, the English block it translates) from the GNOME help pages of ``split`` ("fit" / "calib" /
    "test", by the page id's CRC32 as :func:`splits`), pages whose blocks align one to one with the English page's
    (the translation keeps the page's structure), translated blocks of English at least PAIR_MIN_CHARS; per
    language at most ``cap``, the pages with the lowest CRC32s first. No attack involved."""
    out: list[tuple[str, str, str]] = []
    for lang in GNOME:
        if lang == "en" or not (HELP / GNOME[lang] / "gnome-help").is_dir():
            continue
        mine: list[tuple[int, int, str, str]] = []
        for page, blocks, english in _gnome_pages(lang):
            if split_of(page) != split or len(blocks) != len(english):
                continue
            crc = zlib.crc32(page.encode("utf-8"))
            mine += [(crc, n, b, e) for n, (b, e) in enumerate(zip(blocks, english, strict=True))
                     if b != e and len(e) >= PAIR_MIN_CHARS]
        out += [(lang, b, e) for _, _, b, e in sorted(mine)[:cap]]
    return out


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


def passages_by_lang(cut: Callable[[str, int], list[str]], cap: int = CAP_PER_LANG,
                     corpus: str = "debian") -> dict[str, list[tuple[str, str]]]:
    """Per language, at most ``cap`` (document, passage) of ``corpus``'s documents (``cut``: train_injection.passages;
    document: the Debian file's path, the GNOME page id), a passage met twice kept once (its first document). Debian:
    the passages with the lowest CRC32, in that order; GNOME: the passages of the pages with the lowest CRC32 first,
    in page order (the same pages in every language)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for lang in SOURCES if corpus == "debian" else GNOME:
        seen: dict[str, str] = {}
        if corpus == "debian":
            for path, text in _documents(lang):
                for p in cut(text, 10**9):
                    seen.setdefault(p, path)
            out[lang] = [(seen[t], t) for t in sorted(seen, key=lambda t: zlib.crc32(t.encode("utf-8")))[:cap]]
            continue
        if not (HELP / GNOME[lang] / "gnome-help").is_dir():
            out[lang] = []
            continue
        pages = sorted(_gnome_pages(lang), key=lambda p: zlib.crc32(p[0].encode("utf-8")))
        for page, blocks, english in pages:
            for p in cut("\n".join(_translated(blocks, english, lang)), 10**9):
                seen.setdefault(p, page)
            if len(seen) >= cap:
                break
        out[lang] = [(seen[t], t) for t in list(seen)[:cap]]
    return out


def splits(cut: Callable[[str, int], list[str]], cap: int = CAP_PER_LANG,
           corpus: str = "debian") -> dict[str, list[tuple[str, str]]]:
    """"fit" / "calib" / "test": (language of the package, passage), by :func:`split_of` of the passage (or of its
    document's path, SPLIT_BY "document"; GNOME: always of its page id)."""
    out: dict[str, list[tuple[str, str]]] = {s: [] for s in SPLITS}
    by_doc = SPLIT_BY == "document" or corpus == "gnome"
    for lang, pairs in passages_by_lang(cut, cap, corpus).items():
        for doc, t in pairs:
            out[split_of(doc if by_doc else t)].append((lang, t))
    return out
