"""Extraction quality gate on tests/fixtures/wcxb-sample (100 WCXB dev pages, CC-BY-4.0, see ATTRIBUTION.md).

Runs trawl's real extractor on every page, scores it with the shared scorer (trawl.extract.score) and
holds mean F1 to the floors in benchmarks/gate_extract.py, pinned just under the measured figures
(``.venv/bin/python benchmarks/gate_extract.py`` prints them). A drop below a floor is the regression
this test exists to catch; when a change lifts a figure, raise its floor. And per page type, trawl may trail the
best single extractor (rs-trafilatura, trafilatura), run on the same pages in the same test, by at most half a
point (or the pinned gap of a type whose sample already trails more: it may not widen).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "fixtures" / "wcxb-sample"


def _gate():
    spec = importlib.util.spec_from_file_location("gate_extract", ROOT / "benchmarks" / "gate_extract.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def figures() -> dict[str, float]:
    from trawl.extract import candidates

    if not candidates.HAVE_RS:  # the floors are the rs-trafilatura path's; the other path is in extractor_path.py
        pytest.skip("the F1 floors are pinned for the rs-trafilatura path, which this Python cannot install")
    return _gate().measure(SAMPLE)


def test_sample_is_complete():
    html = sorted(p.name.split(".")[0] for p in (SAMPLE / "html").glob("*.html.gz"))
    truth = sorted(p.stem for p in (SAMPLE / "ground-truth").glob("*.json"))
    assert len(html) == 100 and html == truth
    assert (SAMPLE / "LICENSE").exists() and (SAMPLE / "ATTRIBUTION.md").exists()


def test_f1_holds_its_floors(figures):
    floors = _gate().FLOORS
    below = {k: (round(figures[k], 4), v) for k, v in floors.items() if figures[k] < v}
    assert not below, f"extraction F1 below its floor (measured, floor): {below}"


def test_every_page_type_is_measured(figures):
    assert {"article", "collection", "documentation", "forum", "listing", "product", "service"} <= set(figures)


@pytest.fixture(scope="module")
def singles(figures) -> dict[str, dict[str, float]]:
    return _gate().measure_singles(SAMPLE)


def test_every_type_near_the_best_single_extractor(figures, singles):
    gate = _gate()
    gaps = gate.single_gaps(figures, singles)
    assert {"article", "collection", "documentation", "forum", "listing", "product", "service", "ALL"} <= set(gaps)
    assert all(set(by_name) == set(gate.SINGLES) for by_name in singles.values())
    wider = {t: (round(g, 4), best) for t, (g, best) in gaps.items() if g < -gate.allowed_gap(t)}
    assert not wider, f"trawl trails the best single extractor by more than allowed (gap, extractor): {wider}"


def test_single_gap_check_flags_a_type_that_trails():
    gate = _gate()
    singles = {"forum": {"rs-trafilatura": 0.84, "trafilatura": 0.70}, "listing": {"rs-trafilatura": 0.80}}
    gaps = gate.single_gaps({"forum": 0.83, "listing": 0.797}, singles)
    assert gaps["forum"][1] == "rs-trafilatura" and gaps["forum"][0] == pytest.approx(-0.01)
    assert gaps["forum"][0] < -gate.SINGLE_GAP <= gaps["listing"][0]
    assert all(gate.allowed_gap(t) >= gate.SINGLE_GAP for t in ("forum", "listing", "ALL"))
