"""Sentence boundaries: trawl's splitter against the former rules and two libraries, on the boundary set.

    .venv/bin/python benchmarks/bench_sentences.py [--libs]

The set (``tests/fixtures/sentences/boundaries.jsonl``, rules in its README) holds gold sentences in 17
languages: initials, ordinals, abbreviations, numbers, CJK/Arabic/Devanagari stops, Thai without marks.
Per splitter it counts *inside* splits (a boundary inside a gold sentence: what cuts an answer in two),
*missed* gold boundaries (harmless for chunking: a longer sentence), and the time to split ~1 MB of
page-like text. ``--libs`` adds pysbd (pure Python, per language) and ICU's sentence break iterator
(icu4py), when they are installed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from trawl.chunk.split import sentence_pieces

ROOT = Path(__file__).resolve().parent.parent
SET = ROOT / "tests" / "fixtures" / "sentences" / "boundaries.jsonl"

# The rules before issue 15 (one regex), for comparison.
_FORMER = re.compile(
    r"(?:[^.!?…。！？；\n]+|[.!?…]+(?![.!?…\"'”’)\]]*(?:\s|$)))*"
    r"(?:[.!?…]+[\"'”’)\]]*|[。！？；]+[」』”’）]*|\n|$)"
)


def former(text: str, lang: str) -> list[str]:
    return [s.strip() for s in _FORMER.findall(text) if s.strip()]


def trawl(text: str, lang: str) -> list[str]:
    return [p for p, _ in sentence_pieces(text, lang)]


def load() -> list[dict]:
    return [json.loads(line) for line in SET.open(encoding="utf-8")]


def boundaries(pieces: list[str], text: str) -> set[int]:
    """Offsets (in ``text`` without whitespace) where each piece but the last ends."""
    flat = re.sub(r"\s+", "", text)
    out, pos = set(), 0
    for p in pieces[:-1]:
        pos += len(re.sub(r"\s+", "", p))
        out.add(pos)
    assert pos <= len(flat)
    return out


def score(split: Callable[[str, str], list[str]], cases: list[dict]) -> tuple[int, int, int, list[str]]:
    inside = missed = total = 0
    bad: list[str] = []
    for c in cases:
        text = c["sep"].join(c["sentences"])
        gold = boundaries(c["sentences"], text)
        got = boundaries(split(text, c["lang"]), text)
        total += len(gold)
        wrong = got - gold
        inside += len(wrong)
        missed += len(gold - got)
        if wrong:
            bad.append(f"{c['lang']} {c['tests']}: {split(text, c['lang'])}")
    return inside, missed, total, bad


def speed(split: Callable[[str, str], list[str]], cases: list[dict]) -> float:
    """Seconds per MB of text (the set's paragraphs repeated)."""
    paras = [(c["sep"].join(c["sentences"]), c["lang"]) for c in cases]
    size = sum(len(t) for t, _ in paras)
    reps = max(1, 1_000_000 // size)
    t = time.perf_counter()
    for _ in range(reps):
        for text, lang in paras:
            split(text, lang)
    return (time.perf_counter() - t) / (reps * size / 1e6)


def libraries() -> dict[str, Callable[[str, str], list[str]]]:
    out: dict[str, Callable[[str, str], list[str]]] = {}
    try:
        import pysbd

        segs: dict[str, object] = {}

        def with_pysbd(text: str, lang: str) -> list[str]:
            seg = segs.get(lang)
            if seg is None:
                try:
                    seg = pysbd.Segmenter(language=lang, clean=False)
                except ValueError:  # no rules for this language: English ones
                    seg = pysbd.Segmenter(language="en", clean=False)
                segs[lang] = seg
            return [s.strip() for s in seg.segment(text) if s.strip()]  # type: ignore[attr-defined]

        out["pysbd"] = with_pysbd
    except ImportError:
        print("pysbd not installed", file=sys.stderr)
    try:
        from icu4py.breakers import SentenceBreaker

        def with_icu(text: str, lang: str) -> list[str]:
            return [s.strip() for s in SentenceBreaker(text, lang) if s.strip()]

        out["icu"] = with_icu
    except ImportError:
        print("icu4py not installed", file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--libs", action="store_true", help="also pysbd and ICU (icu4py), when installed")
    ap.add_argument("--show", action="store_true", help="print every case split inside a sentence")
    args = ap.parse_args()
    cases = load()
    splitters: dict[str, Callable[[str, str], list[str]]] = {"former rules": former, "trawl": trawl}
    if args.libs:
        splitters.update(libraries())
    langs = len({c["lang"] for c in cases})
    print(f"{len(cases)} cases, {langs} languages")
    print(f"{'splitter':14} {'inside':>6} {'missed':>6} {'of':>4} {'s/MB':>7}")
    for name, split in splitters.items():
        inside, missed, total, bad = score(split, cases)
        print(f"{name:14} {inside:6d} {missed:6d} {total:4d} {speed(split, cases):7.2f}")
        if args.show:
            for b in bad:
                print("   ", b)


if __name__ == "__main__":
    main()
