"""Stage 6: strip invisible characters, collect hidden instructions, flag instruction-like chunks.

Page text is untrusted. Nothing is deleted except invisible characters, and what those spell is read
first: ``clean_document`` decodes Unicode tag characters and variation-selector runs, strips the
invisible characters from the markdown and title, and collects text the HTML hides from people
(CSS, ``hidden``, ``aria-hidden``, off-screen) when it addresses an AI reader; each such text goes
into ``Document.hidden_text`` and its gist into ``Document.warnings``. ``flag`` then annotates chunks:
``instruction_like`` when a chunk's own text (or heading) addresses the AI reading it, and
``hidden_instruction`` on every chunk of a page that hid such text.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from ..types import Chunk, Document, Page
from .chars import (
    beyond_bmp,
    decode_tags,
    decode_variation_runs,
    disguised_snippets,
    has_invisible,
    may_smuggle,
    may_split_words,
    strip_invisible,
)
from .detect import find_instructions, is_instruction
from .hidden import hidden_texts

HIDDEN_OPEN = "⟦hidden⟧"  # the markers trawl.extract.visibility puts around kept hidden passages
HIDDEN_CLOSE = "⟦/hidden⟧"

__all__ = ["clean_document", "find_instructions", "flag", "is_instruction", "strip_invisible"]

log = logging.getLogger("trawl.sanitise")

INSTRUCTION_LIKE = "instruction_like"
HIDDEN_TEXT = "hidden_text"  # the chunk holds text the page hides from people (settings.hidden_text == "flag")
HIDDEN_INSTRUCTION = "hidden_instruction"
MAX_HIDDEN_KEPT = 20  # hidden instruction texts kept per page
GIST_CHARS = 160
MAX_RAW_SCAN_CHARS = 6_000_000  # of the raw page searched for invisible-character smuggling


def _gist(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= GIST_CHARS else text[: GIST_CHARS - 1] + "…"


def _smuggled(*texts: str | None) -> list[str]:
    """Text spelled by invisible characters (tag characters, variation-selector runs)."""
    out: list[str] = []
    for t in texts:  # may_smuggle's characters are all invisible ones: no has_invisible gate needed before it
        if not t:
            continue
        astral = beyond_bmp(t)  # read by the three searches below: their astral classes are skipped without it
        if may_smuggle(t, astral):
            for s in (*decode_tags(t, astral), *decode_variation_runs(t, astral)):
                if s not in out:
                    out.append(s)
    return out


def clean_document(doc: Document, page: Page) -> Document:
    """Strip invisible characters from the markdown and title; collect the page's hidden instructions."""
    warnings = list(doc.warnings)
    hidden: list[str] = []

    raw = page.html if page.kind == "html" else page.text
    raw = raw[:MAX_RAW_SCAN_CHARS] if raw else raw
    raw_invisible = has_invisible(raw) if raw else False  # one scan of the raw page, read by both tests below
    smuggled = _smuggled(doc.markdown, doc.title, raw if raw_invisible else None)
    for s in smuggled:
        if is_instruction(s):
            hidden.append(s)
            warnings.append(f"{HIDDEN_INSTRUCTION}: invisible characters spell an instruction: \"{_gist(s)}\"")
        else:
            warnings.append(f"invisible characters on the page spell text: \"{_gist(s)}\"")

    # Words split by zero-width characters read as whole words to people; extractors may turn the
    # characters into spaces and hide the phrase from the flagger, so test the raw text as people see it.
    if raw and may_split_words(raw, raw_invisible):
        for snippet in disguised_snippets(raw):
            hits = find_instructions(snippet)
            if hits and len(hidden) < MAX_HIDDEN_KEPT:
                gist = hits[0].snippet
                hidden.append(gist)
                warnings.append(f"{HIDDEN_INSTRUCTION}: words split by invisible characters spell an instruction: "
                                f"\"{_gist(gist)}\"")
                break

    # The extract stage hands over every hidden passage in doc.hidden_text; a Document built elsewhere
    # (no extractor named) gets the page scanned here. Only passages that address an AI reader stay.
    texts: list[str] = list(doc.hidden_text)
    if not doc.extractor and not texts and page.kind == "html" and page.html:
        try:
            texts = hidden_texts(page.html)
        except Exception as exc:  # a sanitiser failure must not lose the page
            log.warning("hidden-text scan failed for %s: %s", page.final_url or page.url, exc)
            texts = []
    for t in dict.fromkeys(texts):  # each text judged once: menus hidden for mobile repeat on most pages
        if len(hidden) >= MAX_HIDDEN_KEPT:
            break
        if t not in hidden and is_instruction(t):
            hidden.append(t)
            warnings.append(f"{HIDDEN_INSTRUCTION}: the page hides text addressed to AI readers: \"{_gist(t)}\"")

    if doc.title and is_instruction(doc.title):
        warnings.append(f"{INSTRUCTION_LIKE}: the page title addresses the AI reader: \"{_gist(doc.title)}\"")

    markdown = strip_invisible(doc.markdown)
    title = strip_invisible(doc.title)
    if markdown is doc.markdown and title is doc.title and tuple(hidden) == doc.hidden_text \
            and len(warnings) == len(doc.warnings):
        return doc
    return replace(doc, markdown=markdown, title=title, hidden_text=tuple(hidden), warnings=tuple(warnings))


def flag(chunks: list[Chunk], hidden_text: tuple[str, ...]) -> list[Chunk]:
    """Annotate chunks; never drops or rewrites their text."""
    out: list[Chunk] = []
    for c in chunks:
        flags = list(c.flags)
        if HIDDEN_TEXT not in flags and (HIDDEN_OPEN in c.text or HIDDEN_CLOSE in c.text):
            flags.append(HIDDEN_TEXT)
        if INSTRUCTION_LIKE not in flags and find_instructions(c.text, c.heading_path):
            flags.append(INSTRUCTION_LIKE)
        if hidden_text and HIDDEN_INSTRUCTION not in flags:
            flags.append(HIDDEN_INSTRUCTION)
        out.append(c if len(flags) == len(c.flags) else replace(c, flags=tuple(flags)))
    return out
