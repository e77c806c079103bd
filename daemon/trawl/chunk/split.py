"""Cutting text, tables and code that are too long for one chunk.

Every function returns pieces in order and loses no non-space text.
"""

from __future__ import annotations

import re

# Sentence marks, and where a sentence may end. Marks written before a space (. ! ? … and the Arabic, Urdu,
# Devanagari, Ethiopic, Myanmar and Armenian stops, with closing quotes/brackets) end a sentence only before
# whitespace or the end of the text; CJK stops end one wherever they stand; a newline always does.
_SPACED_MARKS = ".!?…؟۔।॥።။։"
_CANDIDATE = re.compile(
    rf"[{_SPACED_MARKS}]+[\"'”’»)\]]*(?=\s|$)|[。！？；]+[」』”’）]*|\n"
)
_SPACE = re.compile(r"\s")
# The word before a candidate full stop (opening quotes and brackets dropped).
_WORD_BEFORE = re.compile(r"[\"'“‘«(\[]*([^\s\"'“‘«(\[]*)$")
_DIGITS = re.compile(r"\d{1,3}")
_NEXT = re.compile(r"\s*[\"'“‘«(\[]*(.)", re.DOTALL)
_DOTTED = re.compile(r"[^\W\d_]{1,4}(?:\.[^\W\d_]{1,4})+")  # U.S, e.g, z.B, т.е (the last dot stripped)

# Abbreviations that are followed by more of their sentence (a name, a number, a unit): a full stop after one
# never ends a sentence. Casefolded, without the dot; the rules around them are in :func:`_boundary`.
_ABBREVIATIONS = (
    # English titles and references
    "mr mrs ms dr prof st jr sr rev gen col capt lt sgt gov sen rep hon messrs mt ft no nos vol vols fig figs "
    "eq eqs ch chap sec pp ed eds al approx dept est inc ltd co corp bros vs viz cf ca jan feb mar apr jun jul "
    "aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun "
    # German
    "nr hr fr frl mio mrd tsd bzw ggf vgl sog evtl inkl zzgl ca bd jh jhd abs str geb gest "
    # French, Spanish, Italian, Portuguese, Dutch
    "mme mlle mm av bd sra srta dña dra sres sig sigg dott ing arch avv pág págs núm aprox dto "
    # Russian and other Cyrillic
    "г гг в вв ул пр д кв им др proc тыс млн млрд руб коп проф акад св ст см рис стр табл "
    # Polish, Czech, Slovak, Turkish and others
    "mil tys zł cca tzv prof doç yrd"
)
ABBREVIATIONS = frozenset(_ABBREVIATIONS.split())
# Dotted abbreviations that often end a sentence (before a capital they do).
_MAY_END = frozenset(("т.д", "т.п", "и.т.д", "etc", "u.s.w"))


# Languages that write ordinal numbers with a full stop ("20. Jahrhundert", "3. října", "19. yüzyıl").
ORDINAL_DOT_LANGS = frozenset(
    ("de", "da", "no", "nb", "nn", "is", "fo", "fi", "et", "lv", "cs", "sk", "sl", "hr", "sr", "bs", "pl", "hu", "tr")
)
# Strength of a candidate boundary: none, only where a sentence is too long otherwise, or a sentence end.
NEVER, WEAK, END = 0, 1, 2


def _boundary(text: str, start: int, end: int, lang: str) -> int:
    """How surely the mark text[start:end] (followed by whitespace or the end) ends a sentence."""
    mark = text[start:end]
    if mark == "\n" or mark[0] in "。！？；":
        return END
    m = _NEXT.match(text, end)
    if m is None:
        return END  # the end of the text
    nxt = m.group(1)
    # A sentence seldom starts with a small letter or a digit: "e.g. copper", "ca. 500", "Er wartete ... dann".
    if nxt.islower() or nxt.isdigit():
        return NEVER
    if mark != ".":
        return END  # ! ? … and stops with a closing quote end it before anything else
    word = _WORD_BEFORE.search(text, max(0, start - 40), start)
    w = word.group(1) if word else ""
    if not w:
        return END
    if len(w) == 1 and w.isalpha():
        if w.isupper():
            return NEVER  # an initial: "T. T. Tsui", "Howard W. Odum", "Л. Н. Толстой"
        if w.islower() and re.match(r"\s*[^\W\d_]\.", text[end : end + 8]):
            return NEVER  # "z. B. Füchse", "и т. д. Лес": a lone small letter with another after it
        return END
    folded = w.casefold()
    if folded in ABBREVIATIONS:
        return NEVER  # "Dr. Smith", "30 Mio. GBP", "et al. (2019)"
    if _DOTTED.fullmatch(w):
        return END if folded in _MAY_END else NEVER  # "U.S. Senate", "z.B. Bäume"; "и т.д. Потом" ends
    if _DIGITS.fullmatch(w) and nxt.isalpha() and (lang in ORDINAL_DOT_LANGS):
        return WEAK  # an ordinal: "Im 20. Jahrhundert", "am 3. Oktober" (or "Raum 5. Dort")
    return END


def _sep(space: str) -> str:
    return "\n" if "\n" in space else (" " if space else "")


def sentence_pieces(text: str, lang: str = "", least: int = END) -> list[tuple[str, str]]:
    """Split at sentence ends, each piece (keeping its punctuation) with the separator that stood before it
    ("\n", " " or "").

    A full stop after an initial or a known abbreviation does not end a sentence, nor does a mark followed
    by a small letter or a digit; in a language that writes ordinals with a dot (``lang``), a number's full
    stop before a word is a weak end, taken only with ``least=WEAK`` (see :func:`_boundary`). The boundary
    test set in ``tests/fixtures/sentences`` holds the rules' cases in 17 languages.
    """
    out: list[tuple[str, str]] = []
    pending = ""  # whitespace seen since the last piece
    pos = 0
    n = len(text)
    for m in _CANDIDATE.finditer(text):
        if m.start() < pos or _boundary(text, m.start(), m.end(), lang) < least:
            continue
        pending = _add(out, text[pos : m.end()], pending)
        pos = m.end()
        while pos < n and text[pos].isspace():  # the whitespace after the mark goes with the next piece
            pending += text[pos]
            pos += 1
    if pos < n:
        _add(out, text[pos:], pending)
    return out


def _add(out: list[tuple[str, str]], chunk: str, pending: str) -> str:
    """Append ``chunk`` (stripped) with its separator; returns the whitespace still pending."""
    piece = chunk.strip()
    if not piece:
        return pending + chunk
    lead = chunk[: len(chunk) - len(chunk.lstrip())]
    out.append((piece, _sep(pending + lead)))
    return chunk[len(chunk.rstrip()) :]


def hard_split(text: str, limit: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` chars, at whitespace when there is any nearby."""
    return [p for p, _ in hard_pieces(text, limit)]


def hard_pieces(text: str, limit: int) -> list[tuple[str, str]]:
    """:func:`hard_split` with the separator before each piece ("" where a word had to be cut)."""
    limit = max(limit, 16)
    out: list[tuple[str, str]] = []
    text = text.strip()
    sep = ""
    while len(text) > limit:
        cut = -1
        # The last whitespace in the window, but not before its middle.
        for m in _SPACE.finditer(text, limit // 2, limit + 1):
            cut = m.start()
        if cut <= 0:
            cut = limit
        head, text = text[:cut], text[cut:]
        out.append((head.strip(), sep))
        sep = _sep(text[: len(text) - len(text.lstrip())])
        text = text.strip()
    if text:
        out.append((text, sep))
    return [(p, s) for p, s in out if p]


def pack(pieces: list[str], target: int, sep: str) -> list[str]:
    """Greedily join consecutive pieces with ``sep`` while the result stays within ``target``."""
    out: list[str] = []
    cur: list[str] = []
    size = 0
    for p in pieces:
        extra = len(p) + (len(sep) if cur else 0)
        if cur and size + extra > target:
            out.append(sep.join(cur))
            cur, size = [], 0
            extra = len(p)
        cur.append(p)
        size += extra
    if cur:
        out.append(sep.join(cur))
    return out


def split_text(text: str, target: int, hard_limit: int, lang: str = "") -> list[tuple[str, str]]:
    """(piece, separator before it) for ``text`` cut at sentence ends; a sentence longer than ``hard_limit``
    is cut at its weak ends (ordinals that may end it), then at whitespace into pieces of at most ``target``."""
    pieces: list[tuple[str, str]] = []
    for s, sep in sentence_pieces(text, lang):
        if len(s) <= hard_limit:
            pieces.append((s, sep))
            continue
        for j, (w, wsep) in enumerate(sentence_pieces(s, lang, WEAK)):
            first = sep if j == 0 else wsep
            if len(w) <= hard_limit:
                pieces.append((w, first))
                continue
            for k, (h, hsep) in enumerate(hard_pieces(w, target)):
                pieces.append((h, first if k == 0 else hsep))
    return pieces


def split_table(header: tuple[str, ...], rows: list[str], part_chars: int) -> list[str]:
    """Table parts of about ``part_chars``, each starting with the header rows."""
    head = "\n".join(header)
    budget = max(part_chars - len(head) - 1, part_chars // 3)
    parts: list[str] = []
    for group in pack(rows, budget, "\n"):
        parts.append(f"{head}\n{group}" if head else group)
    return parts


def split_code(code: str, part_chars: int) -> list[str]:
    """Split a fenced block by lines; every part is re-fenced with the opening fence line."""
    lines = code.split("\n")
    opening = lines[0]
    fence_chars = opening.lstrip()
    mark = fence_chars[: len(fence_chars) - len(fence_chars.lstrip(fence_chars[0]))] if fence_chars else "```"
    body = lines[1:]
    if body and body[-1].strip().startswith(mark) and not body[-1].strip().strip(mark[0]):
        body = body[:-1]
    budget = max(part_chars - len(opening) - len(mark) - 2, 64)
    units: list[str] = []
    for line in body:
        if len(line) > budget:
            units.extend(hard_split(line, budget))
        else:
            units.append(line)
    return [f"{opening}\n{group}\n{mark}" for group in pack(units, budget, "\n")]
