"""Text the page hides from people, cut from or marked in the HTML before the extractors see it.

:func:`trawl.sanitise.hidden.scan` finds it (stylesheet rules with a cascade, inline styles, hiding
attributes, closed ``<details>``, and the ``data-trawl-hidden`` mark the browser sources put on nodes the
browser computed as invisible) and sorts it into invisible, revealable and seen passages.
``settings.hidden_text``:

- ``"drop"`` (default): invisible passages (tiny font, background-coloured, off-screen, clipped, scaled to
  zero) are cut; revealable ones (closed tabs, accordions, menus, ``<details>``: content people open with a
  click, and real pages keep main content there) stay between HIDDEN_OPEN and HIDDEN_CLOSE, so the chunks
  holding them are flagged ``hidden_text``.
- ``"flag"``: nothing is cut; invisible and revealable passages stay between the markers.
- ``"strict"``: invisible and revealable passages are both cut.

A ``hidden_text:`` warning reports what was cut or marked (count, reasons, a sample). Every passage's
text goes into ``Document.hidden_text``, where ``clean_document`` keeps the ones that address an AI reader.
"""

from __future__ import annotations

import logging
from collections import Counter

from ..sanitise.hidden import scan
from ..settings import Settings

log = logging.getLogger("trawl.extract")

HIDDEN_OPEN = "⟦hidden⟧"
HIDDEN_CLOSE = "⟦/hidden⟧"
HIDDEN_WARNING = "hidden_text"
SAMPLE_CHARS = 120


def _gist(text: str) -> str:
    return text if len(text) <= SAMPLE_CHARS else text[: SAMPLE_CHARS - 1] + "…"


def split_hidden(raw: str, settings: Settings, warnings: list[str]) -> tuple[str, tuple[str, ...]]:
    """(the HTML the extractors should read, the texts of every hidden passage); appends the report."""
    mode = settings.hidden_text if settings.hidden_text in ("drop", "flag", "strict") else "drop"
    if "⟦" in raw or "⟧" in raw:  # page text must not forge the markers
        raw = raw.replace("⟦", "[").replace("⟧", "]")
    cut = {"drop": frozenset({"invisible"}), "flag": frozenset(), "strict": frozenset({"invisible", "revealable"})}
    try:
        result = scan(raw, cut=cut[mode], mark=(HIDDEN_OPEN, HIDDEN_CLOSE))
    except Exception as exc:  # a scan failure must not lose the page
        log.warning("hidden-text scan failed: %s", exc)
        return raw, ()
    if not result.passages:
        return raw, ()
    for label, kinds in (("cut from the text", cut[mode]),
                         ("kept between ⟦hidden⟧ markers", frozenset({"invisible", "revealable"}) - cut[mode])):
        group = [p for p in result.passages if p.kind in kinds]
        if not group:
            continue
        reasons = Counter(p.reason for p in group)
        why = ", ".join(f"{r} x{n}" if n > 1 else r for r, n in reasons.most_common(6))
        chars = sum(len(p.text) for p in group)
        warnings.append(f"{HIDDEN_WARNING}: {len(group)} passage(s) the page hides from people ({chars} chars; "
                        f"{why}) {label}; sample: \"{_gist(group[0].text)}\"")
    html = result.html if result.html is not None else raw
    return html, tuple(p.text for p in result.passages)
