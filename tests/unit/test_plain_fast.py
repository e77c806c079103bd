"""The plain-page path collapses whitespace with a pattern that skips lone spaces (one match per word otherwise);
it must collapse exactly as the plain pattern does, on any mix of the whitespace it knows and other characters."""

from __future__ import annotations

import random

from trawl.extract.plain import _WS, _WS_RUN, PLAIN_MIN_CHARS, plain_markdown

_ALPHABET = [" ", "  ", "\t", "\n", "\r", "\f", "\v", "\u00a0", "\u200b", "\u3000", "\u2003", "a", "é", "字", "-"]


def test_the_fast_collapse_equals_the_plain_one_on_random_text() -> None:
    rng = random.Random(11)
    for _ in range(20_000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 16)))
        assert _WS_RUN.sub(" ", text) == _WS.sub(" ", text), repr(text)


def test_a_plain_page_with_mixed_whitespace_reads_as_before() -> None:
    sentence = "The\u00a0ferry  leaves\tthe harbour\n at\u200bdawn \r\n and returns\u3000late. "
    para = f"<p>{sentence * 4}</p>\n"
    html = "<html><body><h1>Log\t\tbook</h1>" + para * (PLAIN_MIN_CHARS // len(para) + 10) + "</body></html>"
    md = plain_markdown(html)
    assert md is not None
    blocks = md.split("\n\n")
    assert blocks[0] == "# Log book"
    want = _WS.sub(" ", sentence * 4).strip()
    assert blocks[1] == want
    assert want.startswith("The ferry leaves the harbour at dawn and returns\u3000late. The ferry")
    assert len(blocks) == PLAIN_MIN_CHARS // len(para) + 11
