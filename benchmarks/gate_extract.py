"""Extraction quality gate: trawl's extractor on the bundled WCXB sample, with pinned floors.

    .venv/bin/python benchmarks/gate_extract.py [WCXB_DIR]     # prints the figures the floors are pinned from

WCXB_DIR defaults to tests/fixtures/wcxb-sample (100 pages, see its ATTRIBUTION.md). The test
tests/unit/test_extract_gate.py runs :func:`measure` and holds the result to :data:`FLOORS`.
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
    "ALL": 0.866,  # measured 0.8767
    "article": 0.90,  # 0.9324
    "collection": 0.80,  # 0.8275
    "documentation": 0.95,  # 0.9874
    "forum": 0.76,  # 0.7886
    "listing": 0.83,  # 0.8634
    "product": 0.78,  # 0.8168
    "service": 0.82,  # 0.8554
}


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


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    wcxb_dir = Path(args[0]) if args else SAMPLE_DIR
    figures = measure(wcxb_dir)
    failed = False
    for name, f1 in figures.items():
        floor = FLOORS.get(name)
        mark = "" if floor is None else (" ok" if f1 >= floor else " BELOW FLOOR")
        failed |= floor is not None and f1 < floor
        print(f"{name:<14} F1 {f1:.4f}" + (f"  floor {floor:.3f}{mark}" if floor is not None else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
