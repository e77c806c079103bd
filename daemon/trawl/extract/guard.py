"""Input guards for HTML extraction: size trimming and a cheap check for pathological nesting.

Some extractors slow down quadratically with nesting depth (rs-trafilatura takes ~1 s at 1,000 levels and
~90 s at 10,000), so a page nested deeper than :data:`MAX_SAFE_DEPTH` skips them and goes to the lxml
fallback, whose parser caps depth itself. The depth check is a vectorised upper bound over tag openings
and closings (a few hundred microseconds on a typical page).
"""

from __future__ import annotations

import numpy as np

MAX_SAFE_DEPTH = 400
_LT, _SLASH, _BANG = ord("<"), ord("/"), ord("!")


def trim_html(html: str, max_chars: int) -> tuple[str, bool]:
    """Cut ``html`` to ``max_chars`` at a tag boundary; returns (html, trimmed?)."""
    if len(html) <= max_chars:
        return html, False
    cut = html.rfind("<", max(0, max_chars - 2000), max_chars)
    return html[: cut if cut > 0 else max_chars], True


def nesting_upper_bound(html: str) -> int:
    """An over-estimate of the element nesting depth (void and unclosed elements inflate it)."""
    if not html:
        return 0
    b = np.frombuffer(html.encode("utf-8", "replace"), dtype=np.uint8)
    if b.size < 4:
        return 0
    lt = np.flatnonzero(b[:-3] == _LT)
    if lt.size == 0:
        return 0
    c1 = b[lt + 1]
    low1 = c1 | 0x20
    low2 = b[lt + 2] | 0x20
    low3 = b[lt + 3] | 0x20
    is_letter = (low1 >= ord("a")) & (low1 <= ord("z"))
    void = (
        ((low1 == ord("b")) & (low2 == ord("r")))
        | ((low1 == ord("i")) & ((low2 == ord("m")) | (low2 == ord("n"))))
        | ((low1 == ord("m")) & (low2 == ord("e")))
        | ((low1 == ord("l")) & (low2 == ord("i")) & (low3 == ord("n")))
        | ((low1 == ord("h")) & (low2 == ord("r")))
        | ((low1 == ord("w")) & (low2 == ord("b")))
        | ((low1 == ord("s")) & (low2 == ord("o")) & (low3 == ord("u")))
        | ((low1 == ord("p")) & (low2 == ord("a")) & (low3 == ord("t")))  # svg <path/>
    )
    steps = np.where(is_letter & ~void, 1, 0) - np.where(c1 == _SLASH, 1, 0)
    return int(np.cumsum(steps, dtype=np.int64).max())


def too_deep(html: str) -> bool:
    """Whether the page may nest deeper than extractors handle in bounded time."""
    return nesting_upper_bound(html) > MAX_SAFE_DEPTH
