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
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "daemon"))

from trawl.sanitise import learned  # noqa: E402
from trawl.sanitise.detect import normalise  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "injection"
MARGIN = 0.25  # added to the highest calibration-negative score
STEPS = 200
MAX_FIT_NEG = 20_000  # negative windows fitted (an even sample of them)


def read_jsonl(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def attacks() -> list[dict[str, str]]:
    return read_jsonl(DATA / "attacks.jsonl")


def hard_negatives(split: str) -> list[dict[str, str]]:
    return [r for r in read_jsonl(DATA / "hard_negatives.jsonl") if r["split"] == split]


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


def fit_matrix(x: Matrix, y: np.ndarray, l2: float = 1e-4, steps: int = STEPS, lr: float = 0.05) -> tuple[
        np.ndarray, float]:
    """Class-balanced logistic regression, full batch, Adam."""
    n_pos = float(y.sum())
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
    fams = sorted({r["family"] for r in rows})
    out: dict[str, tuple[bool, str]] = {}
    for fam in fams:
        keep = np.array([i for i in range(x.n) if i >= len(rows) or rows[i]["family"] != fam])
        w, b = fit_matrix(subset(x, keep), y[keep])
        model = learned.Model(weights=w, bias=b, threshold=threshold(w, b, calib))
        for r, p in zip(rows, pos, strict=True):
            if r["family"] == fam:
                out[r["id"]] = (model.best(p)[0] >= model.threshold, fam)
    return out


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
