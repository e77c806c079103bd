"""Calibrate the absolute "does any passage match?" signal (trawl.scores.match_of) on qa-dev.

    .venv/bin/python benchmarks/bench_match.py [--pages 24] [--per-page 3] [--data ../shared/bench]

Each sampled question is ranked twice with the real retriever: on its own page (the answer is there) and on an
unrelated page of the same language (taken in turn from the other sampled pages). For each ranking the two pieces
of evidence match_of reads are recorded: the best raw cosine between the question and a chunk compared by meaning,
and the idf-weighted share of the question's words found on the page. Prints their distributions for own and
unrelated pages per language pair, and how often the current thresholds call each "weak" (own pages called weak
are false alarms; unrelated pages called weak are the catches). On own pages it also counts the answers in the
returned set before and after passages with no evidence (score 0) are left out (trawl.scores.judged).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from bench_qa import prepare_file
from gate_qa import found
from trawl.retrieve import Retriever
from trawl.scores import judged, match_of
from trawl.settings import Settings


def _quantiles(xs: list[float]) -> str:
    if not xs:
        return "-"
    xs = sorted(xs)
    q = [xs[int(p * (len(xs) - 1))] for p in (0.05, 0.25, 0.5, 0.75, 0.95)]
    return " ".join(f"{v:.3f}" for v in q)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "bench"))
    ap.add_argument("--pages", type=int, default=24)
    ap.add_argument("--per-page", type=int, default=3)
    ap.add_argument("--offset", type=int, default=0, help="skip this many pages of the round-robin (a held-out set)")
    ap.add_argument("--out", default="", help="write every ranking's evidence as JSON lines here")
    args = ap.parse_args()
    root = Path(args.data) / "qa-dev"
    by_page: dict[str, list[dict[str, str]]] = defaultdict(list)
    for line in (root / "questions.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        by_page[q["html_path"]].append(q)
    by_lang: dict[str, list[str]] = defaultdict(list)
    for path in sorted(by_page):
        by_lang[path.split("/")[1]].append(path)
    picked: list[str] = []  # round-robin over languages, so every language is in a small run
    depth = 0
    while len(picked) < args.offset + args.pages and any(depth < len(v) for v in by_lang.values()):
        picked.extend(v[depth] for v in by_lang.values() if depth < len(v))
        depth += 1
    picked = picked[args.offset:args.offset + args.pages]
    with tempfile.TemporaryDirectory(prefix="trawl-bench-match-") as cache:
        settings = Settings.from_env(cache_dir=Path(cache), embed_ahead=False)
        retriever = Retriever(settings)
        chunks = {p: prepare_file(root / p, settings, by_page[p][0].get("url", "")) for p in picked}
        rows: list[dict[str, object]] = []
        for pi, path in enumerate(picked):
            lang = path.split("/")[1]
            others = [p for p in picked if p != path and p.split("/")[1] == lang and chunks[p][1]]
            if not chunks[path][1] or not others:
                continue
            # questions of several pairs on this page (en>de and de>de ...), spread
            qs = sorted(by_page[path], key=lambda q: (q["question_lang"] == q["lang"], q["id"]))
            step = max(1, len(qs) // args.per_page)
            for qi, q in enumerate(qs[::step][:args.per_page]):
                other = others[(pi + qi) % len(others)]
                for kind, page in (("own", path), ("unrelated", other)):
                    _, cs, plang = chunks[page]
                    r = retriever.rank(q["question"], cs, plang, None, f"{page}")
                    kept = judged(r.chunks, r.mode, r.meaning, r.words, r.typical, same=r.same_language).chunks
                    answers = [str(a) for a in q["answers"]]
                    rows.append({"answer_before": found(answers, "\n".join(c.text for c in r.chunks)),
                                 "answer_after": found(answers, "\n".join(c.text for c in kept)),
                                 "dropped": len(r.chunks) - len(kept),
                                 "pair": f"{q['question_lang']}>{q['lang']}", "kind": kind, "page": page,
                                 "meaning": r.meaning, "words": round(r.words, 4), "typical": r.typical,
                                 "compared": len(cs),
                                 "weak": match_of(r.meaning, r.words, r.typical, r.same_language) == "weak",
                                 "same": r.same_language, "mode": r.mode})
        retriever.close()
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    groups: dict[tuple[str, str], list[dict[str, object]]] = defaultdict(list)
    for r in rows:
        groups[(str(r["pair"]), str(r["kind"]))].append(r)
        groups[("all", str(r["kind"]))].append(r)
    print(f"{'pair':8} {'kind':9} {'n':>4}  meaning q05 q25 q50 q75 q95       words q05 q25 q50 q75 q95        weak")
    for (pair, kind), rs in sorted(groups.items()):
        meaning = [float(r["meaning"]) for r in rs if r["meaning"] is not None]  # type: ignore[arg-type]
        words = [float(r["words"]) for r in rs]  # type: ignore[arg-type]
        weak = sum(1 for r in rs if r["weak"])
        print(f"{pair:8} {kind:9} {len(rs):4}  {_quantiles(meaning):34} {_quantiles(words):34} "
              f"{weak}/{len(rs)} ({weak / len(rs):.0%})")
    own = [r for r in rows if r["kind"] == "own"]
    if own:
        print(f"\nmean words on own pages {statistics.mean(float(r['words']) for r in own):.3f}")  # type: ignore[arg-type]
        before = sum(1 for r in own if r["answer_before"])
        after = sum(1 for r in own if r["answer_after"])
        print(f"own pages: answer in the returned set {before} -> {after} of {len(own)} with score-0 passages left out "
              f"({sum(int(r['dropped']) for r in own)} passages left out)")  # type: ignore[call-overload]


if __name__ == "__main__":
    main()
