"""Sentence boundaries (issue 15): no split inside a name, an initial, an ordinal or an abbreviation."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from trawl.chunk import chunk_document
from trawl.chunk.split import sentence_pieces
from trawl.settings import Settings
from trawl.types import Document

SET = Path(__file__).resolve().parent.parent / "fixtures" / "sentences" / "boundaries.jsonl"
CASES = [json.loads(line) for line in SET.open(encoding="utf-8")]
_WS = re.compile(r"\s+")


def _ends(pieces: list[str]) -> set[int]:
    """Where each piece but the last ends, counted in non-space characters."""
    out, pos = set(), 0
    for p in pieces[:-1]:
        pos += len(_WS.sub("", p))
        out.add(pos)
    return out


def test_the_set_covers_eight_languages_and_the_named_hard_cases() -> None:
    assert len({c["lang"] for c in CASES}) >= 8
    text = " ".join(" ".join(c["sentences"]) for c in CASES)
    for needle in ("T. T. Tsui", "20. Jahrhundert", "Mio.", "et al.", "z. B.", "Dr.", "。", "؟", "।", "서울"):
        assert needle in text


@pytest.mark.parametrize("case", CASES, ids=[f"{c['lang']}-{c['tests']}-{i}" for i, c in enumerate(CASES)])
def test_no_boundary_inside_a_gold_sentence(case: dict) -> None:
    text = case["sep"].join(case["sentences"])
    pieces = [p for p, _ in sentence_pieces(text, case["lang"])]
    inside = _ends(pieces) - _ends(case["sentences"])
    assert not inside, pieces
    assert _WS.sub("", "".join(pieces)) == _WS.sub("", text)  # nothing lost


def test_plain_boundaries_are_found_in_every_script() -> None:
    found = total = 0
    for c in CASES:
        if c["tests"] in ("plain", "question", "cjk stops", "danda", "ordinal", "initials"):
            text = c["sep"].join(c["sentences"])
            gold = _ends(c["sentences"])
            total += len(gold)
            found += len(gold & _ends([p for p, _ in sentence_pieces(text, c['lang'])]))
    assert total >= 20 and found == total


def test_the_named_failures_of_the_issue_stay_whole() -> None:
    text = "The T. T. Tsui Gallery opened. Im 20. Jahrhundert wuchs sie. Er zahlte 30 Mio. GBP. Fertig."
    assert [p for p, _ in sentence_pieces(text, "de")] == [
        "The T. T. Tsui Gallery opened.", "Im 20. Jahrhundert wuchs sie.", "Er zahlte 30 Mio. GBP.", "Fertig.",
    ]


def test_separators_report_newlines_and_spaces() -> None:
    got = sentence_pieces("One. Two!\n\nThree? 四。五")
    assert got == [("One.", ""), ("Two!", " "), ("Three?", "\n"), ("四。", " "), ("五", "")]


def test_random_text_loses_nothing_and_never_raises() -> None:
    rng = random.Random(15)
    alphabet = [*"abc XYZ. .. ! ? … 。 ！ T. z. B. 20. Mio. \n \n\n ؟ । ” ) ( « ", "et al.", "U.S.", "т. д."]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        pieces = sentence_pieces(text)
        assert _WS.sub("", "".join(p for p, _ in pieces)) == _WS.sub("", text)
        assert all(p and p == p.strip() and sep in ("", " ", "\n") for p, sep in pieces)


def test_a_chunk_boundary_never_falls_inside_an_initialled_name() -> None:
    # Sentences packed to a small target: every chunk still holds the whole name.
    para = " ".join(f"Fact {i} is about the T. T. Tsui Gallery of Art in room {i}." for i in range(40))
    chunks = chunk_document(Document(markdown=para), Settings(chunk_chars=120))
    assert len(chunks) > 5
    for c in chunks:
        assert c.text.count("T. T. Tsui Gallery") == c.text.count("Fact ")


def test_ordinals_hold_in_german_and_a_sentence_ending_in_a_number_still_ends_in_english() -> None:
    de = "Im 20. Jahrhundert wuchs die Stadt. Sie hat 3 Parks."
    assert [p for p, _ in sentence_pieces(de, "de")] == ["Im 20. Jahrhundert wuchs die Stadt.", "Sie hat 3 Parks."]
    en = "The gallery is in room 12. The museum opens at nine."
    assert [p for p, _ in sentence_pieces(en, "en")] == ["The gallery is in room 12.", "The museum opens at nine."]


def test_a_long_german_run_of_number_ended_sentences_is_cut_at_them_not_inside_a_name() -> None:
    # Every sentence ends in a number before a capital: the ordinal rule joins them, and the run, too long for
    # one chunk, is cut at those weak ends first, never inside "T. T. Tsui".
    para = " ".join(f"Fakt {i} betrifft die T. T. Tsui Galerie in Raum {i}." for i in range(40))
    chunks = chunk_document(Document(markdown=para, lang="de"), Settings(chunk_chars=120))
    assert len(chunks) > 5
    for c in chunks:
        assert c.text.count("T. T. Tsui Galerie") == c.text.count("Fakt ")
