"""Language identification per language: the former stop-word detectors against trawl.lang, same run.

    .venv/bin/python benchmarks/bench_lang.py [--baseline REV] [--repeat N]

Reads the question/page table of tests/fixtures/lang/pairs.json. For each language prints how many
questions and pages each detector names right, and "agree": pairs whose question counts as the page's
language (what decides whether BM25 keeps its weight). Detectors:

- ``stop``: the stop-word detectors trawl had before trawl.lang (retrieve/tokenize.guess_lang for the
  question, extract/lang.detect_language for the page), loaded from git at ``--baseline``;
- ``lang``: trawl.lang (CLD2) with the question hinted by the page's detected language, as retrieval does;
  ``q-nohint`` is the question alone;
- ``py3langid``: shown as well when that package is importable (it is not a dependency: it was the
  other candidate; its model takes seconds to load).

Then the cost per call in microseconds (the best of ``--repeat`` passes over the table: the machine is shared).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

from trawl import lang

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "tests" / "fixtures" / "lang" / "pairs.json"
BASELINE = "a47d60e"  # the last commit with the stop-word detectors
Detector = Callable[..., str]


def load_table() -> dict[str, list[tuple[str, str]]]:
    raw = json.loads(TABLE.read_text("utf-8"))
    return {code: [(q, p) for q, p in pairs] for code, pairs in raw.items() if not code.startswith("_")}


def _module_from_git(rev: str, path: str, name: str) -> types.ModuleType:
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:{path}"], check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType(name)
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
    return module


def baseline(rev: str) -> tuple[Detector, Detector, Callable[[str, str], bool | None]] | None:
    try:
        tok = _module_from_git(rev, "daemon/trawl/retrieve/tokenize.py", "old_tokenize")
        ext = _module_from_git(rev, "daemon/trawl/extract/lang.py", "old_extract_lang")
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        print(f"(no stop-word baseline: git show {rev} failed: {exc})")
        return None
    return tok.guess_lang, ext.detect_language, tok.same_language


def py3langid_detector() -> Detector | None:
    if importlib.util.find_spec("py3langid") is None:
        return None
    import py3langid  # type: ignore[import-not-found,unused-ignore]

    t0 = time.perf_counter()
    py3langid.classify("warm up")
    print(f"py3langid model load {time.perf_counter() - t0:.2f} s")
    return lambda text, hint="": str(py3langid.classify(text)[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default=BASELINE, help="git revision holding the stop-word detectors")
    ap.add_argument("--repeat", type=int, default=5, help="timing passes over the table")
    args = ap.parse_args()
    table = load_table()
    old = baseline(args.baseline)
    py3 = py3langid_detector()

    cols = ["n"]
    if old:
        cols += ["stop q", "stop p", "stop agree"]
    cols += ["lang q", "q-nohint", "lang p", "lang agree"]
    if py3:
        cols += ["py3 q", "py3 p"]
    print(f"{'lang':5}" + "".join(f"{c:>11}" for c in cols))
    totals = [0] * len(cols)
    for code, pairs in table.items():
        row = [len(pairs)]
        if old:
            old_q, old_p, old_same = old
            qs = [old_q(q) for q, _ in pairs]
            ps = [old_p(p) for _, p in pairs]
            row += [qs.count(code), ps.count(code), sum(old_same(a, b) is True for a, b in zip(qs, ps, strict=True))]
        ps = [lang.detect_language(p) for _, p in pairs]
        qs = [lang.detect(q, hint=pl) for (q, _), pl in zip(pairs, ps, strict=True)]
        bare = [lang.detect(q) for q, _ in pairs]
        agree = sum(lang.same_language(a, b) is True for a, b in zip(qs, ps, strict=True))
        row += [qs.count(code), bare.count(code), ps.count(code), agree]
        if py3:
            row += [sum(py3(q) == code for q, _ in pairs), sum(py3(p) == code for _, p in pairs)]
        totals = [t + r for t, r in zip(totals, row, strict=True)]
        print(f"{code:5}" + "".join(f"{v:>11}" for v in row))
    print(f"{'all':5}" + "".join(f"{v:>11}" for v in totals))

    questions = [q for pairs in table.values() for q, _ in pairs]
    pages = [p for pairs in table.values() for _, p in pairs]
    # a full page sample per language: its paragraphs repeated to the sample size detection reads
    long_pages = [(" ".join(p for _, p in pairs) * 40)[: lang.SAMPLE_CHARS] for pairs in table.values()]
    timed: list[tuple[str, Detector, list[str]]] = []
    if old:
        timed += [("stop question", old[0], questions), ("stop page", old[1], pages)]
        timed += [("stop 3000-char page", old[1], long_pages)]
    timed += [
        ("lang question", lambda t: lang.detect(t, "en"), questions),
        ("lang page", lang.detect_language, pages),
        ("lang 3000-char page", lang.detect_language, long_pages),
    ]
    if py3:
        timed += [("py3langid question", py3, questions), ("py3langid page", py3, pages)]
    print(f"\n{'cost per call':24} {'best µs':>10}")
    for name, fn, texts in timed:
        passes = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            for text in texts:
                fn(text)
            passes.append((time.perf_counter() - t0) / len(texts) * 1e6)
        print(f"{name:24} {min(passes):10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
