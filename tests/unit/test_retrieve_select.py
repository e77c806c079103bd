"""Which chunks get embedded first when the dense budget cannot cover the page."""

from __future__ import annotations

import numpy as np
from trawl.retrieve.select import blind_order, section_keys, sighted_order
from trawl.retrieve.tokenize import tokens
from trawl.types import Chunk


def page(n: int, sections: int = 1) -> list[Chunk]:
    per = max(1, n // sections)
    return [
        Chunk(id=f"c{i}", index=i, heading_path=("Page", f"Section {i // per}"), text=f"text {i}") for i in range(n)
    ]


def test_sighted_order_bm25_then_neighbours_then_headings_then_rest() -> None:
    chunks = page(20, sections=4)
    chunks[17] = Chunk(id="c17", index=17, heading_path=("Page", "Harbour history"), text="x")
    bm = np.zeros(20)
    bm[10], bm[3] = 5.0, 2.0
    order = sighted_order(bm, chunks, tokens("harbour"), limit=20)
    assert order[:2] == [10, 3]
    assert set(order[2:6]) == {9, 11, 2, 4}  # neighbours of the best hits
    assert order[6] == 17  # heading shares a query term
    assert sorted(order) == list(range(20))  # small page: everything, in the end


def test_sighted_order_respects_limit() -> None:
    bm = np.arange(50, dtype=float)
    order = sighted_order(bm, page(50), [], limit=8)
    assert len(order) == 8 and order[0] == 49


def test_blind_order_uses_best_sections_and_spreads() -> None:
    chunks = page(40, sections=4)  # sections 0..3, ten chunks each
    bm = np.zeros(40)
    bm[5] = 1.0  # a name that matches across languages
    sections = [("Page", "Section 2"), ("Page", "Section 0")]
    order = blind_order(bm, chunks, sections, limit=16)
    assert order[0] == 5
    assert set(range(20, 30)) <= set(order[:12])  # the best section early
    assert len(order) == 16 and len(set(order)) == 16


def test_blind_order_without_sections_spreads_over_the_page() -> None:
    chunks = [Chunk(id=f"c{i}", index=i, heading_path=(), text="t") for i in range(100)]
    order = blind_order(np.zeros(100), chunks, [], limit=10)
    assert len(order) == 10
    assert max(order) >= 80 and min(order) <= 10  # not just the start of the page


def test_section_keys() -> None:
    chunks = [*page(12, sections=3), Chunk(id="x", index=12, heading_path=(), text="t")]
    assert section_keys(chunks, 10) == [("Page", "Section 0"), ("Page", "Section 1"), ("Page", "Section 2")]
    assert len(section_keys(chunks, 2)) == 2
