"""Context around a hit (issue 15): returned neighbours under one heading become one passage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from trawl.retrieve.context import PASSAGE_MAX, passages
from trawl.types import Chunk


def page(paths: list[str]) -> list[Chunk]:
    return [
        Chunk(id=f"c{i}", index=i, heading_path=(p,), text=f"text {i}", flags=(f"f{i}",) if i == 3 else ())
        for i, p in enumerate(paths)
    ]


def test_adjacent_returned_chunks_join_in_document_order_at_the_better_rank() -> None:
    chunks = page(["A"] * 6)
    fused = np.array([0.1, 0.2, 0.9, 0.7, 0.0, 0.5])
    out = passages(chunks, [2, 3, 5, 1], 4, fused)
    # 2 is best; 3 and 1 stand next to it (same heading): one passage "1 2 3" at rank 1, then 5 alone.
    assert [c.id for c in out] == ["c2", "c5"]
    assert out[0].text == "text 1\n\ntext 2\n\ntext 3"
    assert out[0].index == 1 and out[0].score == 0.9 and out[0].flags == ("f3",)
    assert out[1].text == "text 5" and out[1].score == 0.5


def test_the_best_chunks_better_neighbour_joins_it_in_place_of_the_weakest() -> None:
    chunks = page(["A", "A", "A", "B", "A", "B"])
    fused = np.array([0.2, 0.9, 0.6, 0.8, 0.1, 0.7])
    out = passages(chunks, [1, 3, 5], 3, fused)
    # 1 is best; of its neighbours 0 (0.2) and 2 (0.6), 2 scores better and joins; 3 (other heading) stays alone,
    # and 5, the weakest returned, gives its place: the returned set keeps its size.
    assert [c.text for c in out] == ["text 1\n\ntext 2", "text 3"]
    assert out[0].id == "c1" and out[0].score == 0.9
    # When the weakest returned chunk is in the best passage itself, nothing gives way.
    out = passages(chunks, [1, 0], 2, fused)
    assert [c.text for c in out] == ["text 0\n\ntext 1\n\ntext 2"]
    # A neighbour under another heading never joins.
    alone = passages(page(["A", "B", "C"]), [1], 1, np.array([0.5, 0.9, 0.5]))
    assert [c.text for c in alone] == ["text 1"]


def test_a_neighbour_without_evidence_stays_out() -> None:
    """Scored 0 or less (not closer by meaning than the page's median, no BM25 match; on a cold page: not
    embedded and no word in common), the neighbour does not join and nothing gives way."""
    chunks = page(["A"] * 5)
    out = passages(chunks, [2, 4], 2, np.array([0.0, 0.0, 0.9, -0.1, 0.4]))
    assert [c.text for c in out] == ["text 2", "text 4"]


def test_nothing_is_lost_or_repeated() -> None:
    chunks = page(["A", "A", "B", "B", "A", "A", "A", "A"])
    fused = np.linspace(1, 0, len(chunks))
    order = [7, 0, 3, 6, 2, 1, 5]
    out = passages(chunks, order, len(order), fused)
    got = [t for c in out for t in c.text.split("\n\n")]
    assert len(got) == len(set(got))
    assert set(got) >= {f"text {i}" for i in order} and len(got) <= len(order) + 1


def test_a_different_heading_keeps_neighbours_apart() -> None:
    chunks = page(["A", "B"])
    out = passages(chunks, [0, 1], 2, np.array([0.9, 0.8]))
    assert [c.text for c in out] == ["text 0", "text 1"]


def test_a_passage_holds_at_most_passage_max_chunks() -> None:
    chunks = page(["A"] * 10)
    order = list(range(10))
    out = passages(chunks, order, 10, np.linspace(1, 0, 10))
    assert all(c.text.count("text ") <= PASSAGE_MAX for c in out)
    assert sum(c.text.count("text ") for c in out) == 10


def test_without_join_every_chunk_stands_alone() -> None:
    chunks = page(["A"] * 4)
    out = passages(chunks, [1, 2, 0], 3, np.array([0.3, 0.9, 0.8, 0.1]), join=False)
    assert [c.id for c in out] == ["c1", "c2", "c0"] and [c.score for c in out] == [0.9, 0.8, 0.3]


def test_the_answer_in_the_chunk_after_the_best_hit_comes_first_with_the_real_retriever(tmp_path: Path) -> None:
    from trawl.retrieve import Retriever
    from trawl.settings import Settings

    texts = [
        "The museum has three floors and a garden with old trees.",
        "The T. T. Tsui Gallery of Chinese Art opened on the third floor of the museum in 1991.",
        "Its founding gift came from the businessman Tsui Tsin-tong, a collector from Hong Kong.",
        "The shop sells books, prints and postcards.",
        "Trains to the museum leave the central station every ten minutes.",
        "The cafe serves lunch from noon.",
    ]
    chunks = [Chunk(id=f"c{i}", index=i, heading_path=("Museum",), text=t) for i, t in enumerate(texts)]
    r = Retriever(Settings(cache_dir=tmp_path / "c", state_dir=tmp_path / "s", embed_ahead=False, dense_budget_s=60))
    r.warm()
    try:
        one = r.rank("When did the T. T. Tsui Gallery open?", chunks, "en", 1, "p")
        assert one.chunks[0].id == "c1" and "Tsin-tong" not in one.chunks[0].text  # explicit k: chunks
        rk = r.rank("Who gave the founding gift for the T. T. Tsui Gallery?", chunks, "en", None, "p")
        assert "Tsui Tsin-tong" in rk.chunks[0].text and "T. T. Tsui Gallery" in rk.chunks[0].text
    finally:
        r.close()


def texts_page(texts: list[str], paths: list[str] | None = None) -> list[Chunk]:
    return [
        Chunk(id=f"c{i}", index=i, heading_path=((paths or ["A"] * len(texts))[i],), text=t)
        for i, t in enumerate(texts)
    ]


def test_a_chunk_that_refers_back_joins_the_passage_it_continues() -> None:
    texts = [
        "Kublai founded the Yuan dynasty.",
        "Kublai moved the capital to Dadu in 1272.",
        "This government adopted a paper currency.",
        "Trade on the Silk Road grew.",
    ]
    fused = np.array([0.0, 0.9, -0.2, -0.3])  # the next chunk has no evidence of its own: only its opening
    out = passages(texts_page(texts), [1, 3], 2, fused, lang="en")
    assert out[0].text == texts[1] + "\n\n" + texts[2]
    assert out[0].id == "c1" and out[0].score == 0.9
    # The group's own first chunk refers back too: the chunk before it joins as well.
    texts[1] = "All of this set the stage for the move to Dadu."
    out = passages(texts_page(texts), [1, 3], 2, fused, lang="en")
    assert out[0].text == "\n\n".join(texts[:3])
    # Not across headings, not in a language without a list, and not when the opening stands alone.
    texts[1] = "Kublai moved the capital to Dadu in 1272."
    assert passages(texts_page(texts, ["A", "A", "B", "B"]), [1, 3], 2, fused, lang="en")[0].text == texts[1]
    assert passages(texts_page(texts), [1, 3], 2, fused, lang="sw")[0].text == texts[1]
    texts[2] = "The government adopted a paper currency."
    assert passages(texts_page(texts), [1, 3], 2, fused, lang="en")[0].text == texts[1]
