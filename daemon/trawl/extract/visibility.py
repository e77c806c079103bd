"""Text the page hides from people: cut from, or marked in, the extracted markdown.

:func:`trawl.sanitise.hidden.scan` reads the raw HTML (stylesheet rules with a cascade, inline styles,
hiding attributes, closed ``<details>``, and the ``data-trawl-hidden`` mark the browser sources put on
nodes the browser computed as invisible) and sorts the hidden passages into invisible, revealable and
seen ones. The extractors still read the page as served (re-serialising it through lxml changes what
they extract); the passages are then located in their markdown by their words. ``settings.hidden_text``:

- ``"drop"`` (default): invisible passages (tiny font, background-coloured, off-screen, clipped, scaled to
  zero, marked invisible by the browser) are cut; revealable ones (closed tabs, accordions, menus,
  ``<details>``: content people open with a click, where real pages keep main content) stay between
  HIDDEN_OPEN and HIDDEN_CLOSE, so the chunks holding them are flagged ``hidden_text``.
- ``"flag"``: nothing is cut; invisible and revealable passages stay between the markers.
- ``"strict"``: invisible and revealable passages are both cut.

A passage whose words also appear in the page's visible text is left alone (a menu hidden for mobile
repeats the visible one). A ``hidden_text:`` warning reports what was cut or marked (count, reasons, a
sample). Every passage's text goes into ``Document.hidden_text``, where ``clean_document`` keeps the
ones that address an AI reader, whether or not the extractor kept them.
"""

from __future__ import annotations

import logging
import re
from collections import Counter

from ..sanitise.hidden import Passage, Scan, scan
from ..settings import Settings

log = logging.getLogger("trawl.extract")

HIDDEN_OPEN = "⟦hidden⟧"
HIDDEN_CLOSE = "⟦/hidden⟧"
HIDDEN_WARNING = "hidden_text"
SAMPLE_CHARS = 120
MIN_WORDS = 3  # shorter passages are reported, not located in the markdown
ANCHOR_WORDS = 10  # long passages are located by their first and last words
_WORD = re.compile(r"\w+")
_LINK_TARGET = re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_CUT = {"drop": frozenset({"invisible"}), "flag": frozenset(), "strict": frozenset({"invisible", "revealable"})}


def find_hidden(raw: str) -> Scan:
    try:
        return scan(raw)
    except Exception as exc:  # a scan failure must not lose the page
        log.warning("hidden-text scan failed: %s", exc)
        return Scan((), "")


class _Words:
    """The markdown's words (link targets skipped) with their character offsets."""

    def __init__(self, markdown: str) -> None:
        masked = _LINK_TARGET.sub(lambda m: "]" + " " * (len(m.group(0)) - 1), markdown)
        self.spans: list[tuple[int, int]] = []
        words: list[str] = []
        for m in _WORD.finditer(masked):
            self.spans.append(m.span())
            words.append(m.group(0).lower())
        self.joined = " ".join(words)
        self.starts: list[int] = []  # offset in ``joined`` of each word
        pos = 0
        for w in words:
            self.starts.append(pos)
            pos += len(w) + 1

    def _index(self, offset: int) -> int:
        lo, hi = 0, len(self.starts)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.starts[mid] < offset:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def locate(self, words: list[str], after: int = 0) -> tuple[int, int] | None:
        """Character span in the markdown of the word sequence (or of its first..last anchors)."""
        if len(words) <= 2 * ANCHOR_WORDS:
            at = self._find(" ".join(words), after)
            return None if at is None else (at, at + len(words) - 1)
        head = self._find(" ".join(words[:ANCHOR_WORDS]), after)
        if head is None:
            return None
        tail = self._find(" ".join(words[-ANCHOR_WORDS:]), self.starts[head])
        if tail is None or tail - head > 2 * len(words):
            return None
        return head, tail + ANCHOR_WORDS - 1

    def _find(self, needle: str, after: int) -> int | None:
        at = self.joined.find(needle, after)
        while at != -1:
            idx = self._index(at)
            end = at + len(needle)
            whole = end == len(self.joined) or self.joined[end] == " "
            if idx < len(self.starts) and self.starts[idx] == at and whole:
                return idx
            at = self.joined.find(needle, at + 1)
        return None


def apply_hidden(markdown: str, found: Scan, settings: Settings, warnings: list[str]) -> tuple[str, tuple[str, ...]]:
    """(the markdown with hidden passages cut or marked, the texts of every hidden passage)."""
    if markdown and ("⟦" in markdown or "⟧" in markdown):  # page text must not forge the markers
        markdown = markdown.replace("⟦", "[").replace("⟧", "]")
    if found.unchecked:
        warnings.append(
            f"{HIDDEN_WARNING}: the page's stylesheets outran the hidden-text check ({found.unchecked} selectors "
            "not evaluated); text they hide may be read here as visible, unflagged"
        )
    if not found.passages:
        return markdown, ()
    mode = settings.hidden_text if settings.hidden_text in _CUT else "drop"
    cut_kinds = _CUT[mode]
    edits: list[tuple[int, int, bool]] = []  # (start char, end char, cut?) in the markdown
    done: dict[str, list[Passage]] = {"cut from the text": [], "kept between ⟦hidden⟧ markers": []}
    words_md = _Words(markdown) if markdown else None
    for p in found.passages:
        if p.kind == "seen" or words_md is None:
            continue
        words = [w.lower() for w in _WORD.findall(p.text)]
        if len(words) < MIN_WORDS or (found.visible_words and " ".join(words) in found.visible_words):
            continue
        span = words_md.locate(words)
        if span is None:
            continue
        start, end = words_md.spans[span[0]][0], words_md.spans[span[1]][1]
        if any(s < end and start < e for s, e, _ in edits):
            continue
        cut = p.kind in cut_kinds
        edits.append((start, end, cut))
        done["cut from the text" if cut else "kept between ⟦hidden⟧ markers"].append(p)
    for start, end, cut in sorted(edits, reverse=True):
        if cut:
            markdown = markdown[:start] + markdown[end:]
        else:
            markdown = f"{markdown[:start]}{HIDDEN_OPEN} {markdown[start:end]} {HIDDEN_CLOSE}{markdown[end:]}"
    for label, group in done.items():
        if not group:
            continue
        reasons = Counter(p.reason for p in group)
        why = ", ".join(f"{r} x{n}" if n > 1 else r for r, n in reasons.most_common(6))
        chars = sum(len(p.text) for p in group)
        sample = group[0].text if len(group[0].text) <= SAMPLE_CHARS else group[0].text[: SAMPLE_CHARS - 1] + "…"
        warnings.append(f"{HIDDEN_WARNING}: {len(group)} passage(s) the page hides from people ({chars} chars; "
                        f"{why}) {label}; sample: \"{sample}\"")
    if edits:
        markdown = re.sub(r"\n{3,}", "\n\n", markdown).strip()
    return markdown, tuple(p.text for p in found.passages)
