"""The topic-removal helpers of the injection detector's training code (benchmarks/train_injection.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import train_injection as ti


def test_top_directions_find_the_spread_and_project_out_removes_it() -> None:
    rng = np.random.default_rng(1)
    topic = np.zeros(8, np.float32)
    topic[2] = 1.0
    v = rng.normal(0, 0.01, (200, 8)).astype(np.float32) + np.outer(rng.normal(0, 1, 200), topic)
    basis = ti.top_directions(v, 1)
    assert basis.shape == (8, 1)
    assert abs(float(basis[:, 0] @ topic)) > 0.99
    x = np.concatenate([v, np.ones((200, 2), np.float32)], axis=1)  # two columns after the vector (cues)
    out = ti.project_out(x, basis, 8)
    assert float(np.abs(out[:, :8] @ basis).max()) < 1e-4
    assert np.array_equal(out[:, 8:], x[:, 8:])  # the cues are left alone
    assert np.array_equal(x[:, :8], v)  # the input is not changed


def test_no_directions_for_too_few_rows() -> None:
    v = np.ones((1, 4), np.float32)
    assert ti.top_directions(v, 3).shape == (4, 0)
    x = np.ones((3, 4), np.float32)
    assert ti.project_out(x, ti.top_directions(v, 3), 4) is x


def test_vector_modifiers_name_the_shaping() -> None:
    import bench_sanitise

    spec, sh = bench_sanitise._shaping("e5.mine3.mineh1.xh2+cues")
    assert spec == "e5+cues"
    assert (sh.mine, sh.mine_hard, sh.hard_folds, sh.pca, sh.fam) == (3, 1, 2, 0, 0)
    spec, sh = bench_sanitise._shaping("e5.pc16.fam+cues+rules")
    assert spec == "e5+cues+rules"
    assert (sh.pca, sh.fam) == (16, -1)
    assert bench_sanitise._extra_columns(spec) == len(ti.learned.STRUCT_NAMES) + 1
