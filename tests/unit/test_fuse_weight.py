"""BM25's weight in the fusion: floored when question and page share a language, never across languages."""

from __future__ import annotations

from trawl.retrieve import fuse


def test_same_language_keeps_bm25_at_the_floor() -> None:
    assert fuse.fusion_weight(0.0, True) == fuse.SAME_LANGUAGE_FLOOR
    assert fuse.fusion_weight(0.9, True) == 0.9


def test_other_or_unknown_language_is_not_floored() -> None:
    w = fuse.bm25_weight(False, 1.0)
    assert w == fuse.CROSS_LANGUAGE_WEIGHT
    assert fuse.fusion_weight(w, False) == w
    assert fuse.fusion_weight(0.1, None) == 0.1
