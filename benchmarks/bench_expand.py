"""Query expansion (HyDE) on qa-dev's cross-language pairs: answer recall with and without it, in the same run.

    .venv/bin/python benchmarks/bench_expand.py --expand-url http://127.0.0.1:8080 [--expand-model NAME]
        [--pairs en>de,en>ru,en>zh] [--limit N] [--data ../shared/bench]

The expansion endpoint is any OpenAI-compatible ``/v1/chat/completions`` server (llama-server, vLLM, Ollama...);
its key, if any, comes from TRAWL_EXPAND_API_KEY. Each page goes through the real stages once
(``bench_qa.prepare_file``) and is embedded ahead; then every question is ranked twice by the same kind of retriever
on the same cached vectors, once with the question alone and once with the question blended with the endpoint's
hypothetical answer (``trawl.retrieve.expand``). Printed per pair: n, recall@1 and recall@returned for both, the
share of questions where expansion fell back (its warnings), and the expansion's latency (p50, p95).

Without ``--expand-url`` there is nothing to measure: the script says so and exits 0. No endpoint is available on
the development machine, so the figure in the README is "no measured win yet".
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bench_qa import load_questions, prepare_file
from gate_qa import found
from trawl.retrieve import Retriever
from trawl.settings import Settings

CROSS_PAIRS = "en>de,en>ru,en>zh"


@dataclass
class Row:
    n: int = 0
    plain_r1: int = 0
    plain_rk: int = 0
    hyde_r1: int = 0
    hyde_rk: int = 0
    fallbacks: int = 0
    ms: list[float] = field(default_factory=list)


def main() -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--expand-url", default="", help="OpenAI-compatible chat endpoint base URL")
    ap.add_argument("--expand-model", default="")
    ap.add_argument("--pairs", default=CROSS_PAIRS)
    ap.add_argument("--limit", type=int, default=None, help="questions, spread over the pairs")
    ap.add_argument("--data", default=str(here.parent.parent / "shared" / "bench"))
    ap.add_argument("--cache-dir", default="/tmp/trawl-bench-cache")
    args = ap.parse_args()
    if not args.expand_url:
        print("no expansion endpoint given (--expand-url): nothing measured; HyDE has no measured win yet")
        return 0
    root = Path(args.data) / "qa-dev"
    base = Settings.from_env(cache_dir=Path(args.cache_dir), embed_ahead=False)
    plain = Retriever(base.with_(expand_url=""))
    hyde = Retriever(base.with_(expand_url=args.expand_url, expand_model=args.expand_model))
    plain.warm()
    hyde.warm()
    rows: dict[str, Row] = defaultdict(Row)
    pages = load_questions(root, args.limit, args.pairs)
    for pi, (html_path, qs) in enumerate(pages.items()):
        _, chunks, lang = prepare_file(root / html_path, base)
        plain.prefetch(chunks)  # both retrievers share the embedding cache: the same vectors for both
        for q in qs:
            row = rows[f"{q['question_lang']}>{q['lang']}"]
            row.n += 1
            p = plain.rank(q["question"], chunks, lang, None, f"plain:{html_path}")
            t = time.perf_counter()
            h = hyde.rank(q["question"], chunks, lang, None, f"hyde:{html_path}")
            row.ms.append((time.perf_counter() - t) * 1000)
            row.fallbacks += any("query expansion" in w for w in h.warnings)
            for name, rk in (("plain", p), ("hyde", h)):
                r1 = bool(rk.chunks) and found(q["answers"], rk.chunks[0].text)
                rall = found(q["answers"], "\n".join(c.text for c in rk.chunks))
                setattr(row, f"{name}_r1", getattr(row, f"{name}_r1") + r1)
                setattr(row, f"{name}_rk", getattr(row, f"{name}_rk") + rall)
        print(f"\rpage {pi + 1}/{len(pages)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(f"{'pair':<8} {'n':>4}  {'plain r@1':>9} {'hyde r@1':>9}  {'plain r@k':>9} {'hyde r@k':>9}  "
          f"{'fallback':>8}  {'rank ms p50/p95':>16}")
    total = Row()
    for pair, r in sorted(rows.items()):
        _print(pair, r)
        for f in ("n", "plain_r1", "plain_rk", "hyde_r1", "hyde_rk", "fallbacks"):
            setattr(total, f, getattr(total, f) + getattr(r, f))
        total.ms += r.ms
    _print("all", total)
    plain.close()
    hyde.close()
    return 0


def _print(pair: str, r: Row) -> None:
    def pc(a: int) -> str:
        return f"{a / r.n:.3f}" if r.n else "-"

    p95 = statistics.quantiles(r.ms, n=20)[-1] if len(r.ms) >= 2 else (r.ms[0] if r.ms else 0.0)
    p50 = statistics.median(r.ms) if r.ms else 0.0
    print(f"{pair:<8} {r.n:>4}  {pc(r.plain_r1):>9} {pc(r.hyde_r1):>9}  {pc(r.plain_rk):>9} {pc(r.hyde_rk):>9}  "
          f"{pc(r.fallbacks):>8}  {p50:>7.0f}/{p95:.0f}")


if __name__ == "__main__":
    sys.exit(main())
