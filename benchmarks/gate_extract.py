"""Extraction quality gate: trawl's extractor on the bundled WCXB sample, with pinned floors.

    .venv/bin/python benchmarks/gate_extract.py [WCXB_DIR]     # prints the figures the floors are pinned from

WCXB_DIR defaults to tests/fixtures/wcxb-sample (100 pages, see its ATTRIBUTION.md). The test
tests/unit/test_extract_gate.py runs :func:`measure` and holds the result to :data:`FLOORS`, and
:func:`measure_singles` (rs-trafilatura and trafilatura alone on the same pages, in the same run) and holds
trawl, per page type, to the best of them minus :func:`allowed_gap` (:data:`SINGLE_GAP`, half a point).
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = ROOT / "tests" / "fixtures" / "wcxb-sample"

# Mean F1 floors: overall pinned 0.01 under the figure measured on the sample (see the comments).
# Per-type floors sit ~0.03 under (10-30 pages each, so one page moves them by several points).
FLOORS: dict[str, float] = {
    "ALL": 0.880,  # measured 0.8906 (0.8814 before the article vote and the dedupe, issue 25)
    "article": 0.91,  # 0.9396 (0.9324)
    "collection": 0.81,  # 0.8420 (0.8275)
    "documentation": 0.95,  # 0.9869 (0.9874)
    "forum": 0.83,  # 0.8606 (0.8307)
    "listing": 0.84,  # 0.8756 (0.8634)
    "product": 0.78,  # 0.8172 (0.8168)
    "service": 0.82,  # 0.8545 (0.8554)
}


# Per page type, trawl may trail the best single extractor on the sample by at most this much (issue 14: "never
# below the best single candidate by more than half a point").
SINGLE_GAP = 0.005
# ... except where the sample (10-30 pages a type) already shows a larger gap: there the gap is pinned just above
# the one measured, so it cannot widen (the target itself is measured on the full wcxb-dev split:
# `bench_extract.py --only trawl,rs-trafilatura,trafilatura`). Lower a pin when a change narrows its gap.
# Measured on the sample (trawl minus the best single): article -0.0210 (trafilatura), collection -0.0503
# (rs-trafilatura: its 12 pages include one whose reference leaves out the product grid the fallback reads),
# listing -0.0111 and product -0.0123 (trafilatura). On the full split (all 1,497 wcxb-dev pages, session 5) trawl
# leads both singles in every type (article +0.0051, documentation +0.0021, product +0.0344, ...): these sample gaps
# are the sample's, and the rules of session 5 leave the sample's figures unchanged, so the pins stay as they are.
# Issue 25 (article vote, dedupe): article -0.0140, collection -0.0357, product -0.0104; listing now leads (+0.0024).
PINNED_GAPS: dict[str, float] = {"article": 0.015, "collection": 0.037, "product": 0.011}
SINGLES = ("rs-trafilatura", "trafilatura")


def allowed_gap(page_type: str) -> float:
    return max(SINGLE_GAP, PINNED_GAPS.get(page_type, 0.0))


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_extract", ROOT / "benchmarks" / "bench_extract.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_extract", mod)
    spec.loader.exec_module(mod)
    return mod


def measure(wcxb_dir: Path = SAMPLE_DIR) -> dict[str, float]:
    """Mean F1 of trawl's extractor per page type and overall ("ALL") on ``wcxb_dir``."""
    bench = _bench()
    from trawl.settings import Settings

    pages = bench.load_pages(wcxb_dir)
    scores, _ = bench.score_pages(pages, bench.trawl_extractor(Settings()))
    out: dict[str, float] = {}
    for t in sorted({p.page_type for p in pages}):
        out[t] = statistics.fmean(s.f1 for s, p in zip(scores, pages, strict=True) if p.page_type == t)
    out["ALL"] = statistics.fmean(s.f1 for s in scores)
    return out


def measure_singles(wcxb_dir: Path = SAMPLE_DIR) -> dict[str, dict[str, float]]:
    """Best single extractor per page type and overall on ``wcxb_dir``: {type: {"name": F1 of the best, ...}}.

    Every extractor of :data:`SINGLES` this Python has is run on the same pages as :func:`measure`; the answer
    maps each type to every single's F1 there (the caller takes the best).
    """
    bench = _bench()
    from trawl.settings import Settings

    pages = bench.load_pages(wcxb_dir)
    runs = {k: v for k, v in bench.extractors(Settings()).items() if k in SINGLES}
    out: dict[str, dict[str, float]] = {}
    for name, run in runs.items():
        scores, _ = bench.score_pages(pages, run)
        for t in sorted({p.page_type for p in pages}):
            f1 = statistics.fmean(s.f1 for s, p in zip(scores, pages, strict=True) if p.page_type == t)
            out.setdefault(t, {})[name] = f1
        out.setdefault("ALL", {})[name] = statistics.fmean(s.f1 for s in scores)
    return out


def single_gaps(figures: dict[str, float], singles: dict[str, dict[str, float]]) -> dict[str, tuple[float, str]]:
    """Per type: (trawl's F1 minus the best single's, that single's name); negative when trawl trails."""
    out: dict[str, tuple[float, str]] = {}
    for t, by_name in singles.items():
        if t in figures and by_name:
            best = max(by_name, key=lambda n: by_name[n])
            out[t] = (figures[t] - by_name[best], best)
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    wcxb_dir = Path(args[0]) if args else SAMPLE_DIR
    figures = measure(wcxb_dir)
    gaps = single_gaps(figures, measure_singles(wcxb_dir))
    failed = False
    for name, f1 in figures.items():
        floor = FLOORS.get(name)
        mark = "" if floor is None else (" ok" if f1 >= floor else " BELOW FLOOR")
        failed |= floor is not None and f1 < floor
        line = f"{name:<14} F1 {f1:.4f}" + (f"  floor {floor:.3f}{mark}" if floor is not None else "")
        if name in gaps:
            gap, best = gaps[name]
            worse = gap < -allowed_gap(name)
            failed |= worse
            line += f"  vs {best} {gap:+.4f} (allowed -{allowed_gap(name):.3f}){' BELOW' if worse else ''}"
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
