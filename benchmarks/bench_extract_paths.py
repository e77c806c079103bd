"""F1 of trawl's two extractor paths on WCXB (default wcxb-dev), measured in one run with bench_extract's scorer.

    python benchmarks/bench_extract_paths.py [WCXB_DIR] [--limit N]

trawl extracts with a cascade whose best member is rs-trafilatura when its wheel is installed (CPython 3.12 on
x86-64 Linux today); elsewhere the cascade runs without it. This runs the engine's own stage sequence twice over
the same pages, once as installed and once with rs-trafilatura switched off, and prints each path's F1 (the
figures ``trawl doctor`` and the status page quote, pinned in ``trawl.extract_paths``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_extract import DEFAULT_DIR, load_pages, score_pages, trawl_extractor
from trawl.extract import candidates as cands
from trawl.settings import Settings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wcxb_dir", nargs="?", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--start", type=int, default=0, help="skip the first N pages (to split a long run in parts)")
    ap.add_argument("--paths", choices=["both", "with", "without"], default="both")
    args = ap.parse_args(argv)
    pages = load_pages(args.wcxb_dir, None if args.limit is None else args.start + args.limit)[args.start:]
    if not pages:
        print(f"no WCXB pages under {args.wcxb_dir}", file=sys.stderr)
        return 2
    run = trawl_extractor(Settings())
    have = cands.HAVE_RS
    rows: list[tuple[str, float]] = []
    if have and args.paths != "without":
        scores, _ = score_pages(pages, run, "with rs-trafilatura")
        rows.append(("with rs-trafilatura", statistics.fmean(s.f1 for s in scores)))
    if args.paths != "with":
        cands.HAVE_RS = False
        try:
            scores, _ = score_pages(pages, run, "without rs-trafilatura")
            rows.append(("without rs-trafilatura", statistics.fmean(s.f1 for s in scores)))
        finally:
            cands.HAVE_RS = have
    print(f"WCXB {args.wcxb_dir} — pages {args.start + 1}-{args.start + len(pages)} (Python {sys.version.split()[0]})")
    for name, f1 in rows:
        print(f"{name:<24} F1 {f1:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
