"""Embedding cache: memory LRU by bytes, atomic disk files, corrupt files discarded, disk cap trimming."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
from trawl.cache.embeddings import EmbeddingCache


def vec(seed: int, dim: int = 384) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def test_roundtrip_memory_and_disk(tmp_path: Path) -> None:
    c = EmbeddingCache(tmp_path, "model-a", 10_000_000, 10_000_000)
    k = c.key("hello")
    c.put_many({k: vec(1)})
    assert np.array_equal(c.get_many([k])[k], vec(1))
    # A new process (fresh object) finds it on disk.
    c2 = EmbeddingCache(tmp_path, "model-a", 10_000_000, 10_000_000)
    assert not c2.contains_mem(k)
    got = c2.get_many([k])
    assert np.array_equal(got[k], vec(1))
    assert c2.contains_mem(k)
    assert c2.get_many([c2.key("other")]) == {}


def test_keys_depend_on_model_and_text(tmp_path: Path) -> None:
    a = EmbeddingCache(tmp_path, "model-a", 1_000_000, 1_000_000)
    b = EmbeddingCache(tmp_path, "model-b", 1_000_000, 1_000_000)
    assert a.key("x") != b.key("x")
    assert a.key("x") != a.key("y")
    a.put_many({a.key("x"): vec(1)})
    assert b.get_many([a.key("x")]) == {}  # another model's directory


def test_memory_lru_is_bounded_by_bytes(tmp_path: Path) -> None:
    one = vec(0).nbytes
    c = EmbeddingCache(None, "m", one * 3, 0)  # memory only
    keys = [c.key(str(i)) for i in range(5)]
    for i, k in enumerate(keys):
        c.put_many({k: vec(i)})
    c.get_many([keys[2]])  # touch: most recent now
    c.put_many({c.key("new"): vec(9)})
    st = c.stats()
    assert st["memory_bytes"] <= one * 3
    assert c.contains_mem(keys[2]) and c.contains_mem(c.key("new"))
    assert not c.contains_mem(keys[0]) and not c.contains_mem(keys[1])


def test_corrupt_and_truncated_files_are_discarded(tmp_path: Path) -> None:
    c = EmbeddingCache(tmp_path, "m", 0, 10_000_000)  # no memory level: every read hits the disk
    ks = [c.key(t) for t in ("a", "b", "c")]
    c.put_many({k: vec(i) for i, k in enumerate(ks)})
    files = {p.stem: p for p in tmp_path.rglob("*.vec")}
    assert set(files) == set(ks)
    raw = files[ks[0]].read_bytes()
    files[ks[0]].write_bytes(raw[:-7])  # truncated
    files[ks[1]].write_bytes(raw[:20] + bytes([raw[20] ^ 0xFF]) + raw[21:])  # flipped bit: CRC fails
    got = c.get_many(ks)
    assert set(got) == {ks[2]}
    assert not files[ks[0]].exists() and not files[ks[1]].exists()
    files[ks[2]].write_bytes(b"")
    assert c.get_many([ks[2]]) == {}


def test_writes_are_atomic_no_temp_files_left(tmp_path: Path) -> None:
    c = EmbeddingCache(tmp_path, "m", 0, 10_000_000)
    c.put_many({c.key(str(i)): vec(i) for i in range(20)})
    assert not [p for p in tmp_path.rglob(".tmp-*")]
    assert len(list(tmp_path.rglob("*.vec"))) == 20


def test_disk_cap_trims_least_recently_used(tmp_path: Path) -> None:
    size = 10 + vec(0).nbytes  # header + payload
    c = EmbeddingCache(tmp_path, "m", 0, size * 10)
    keys = [c.key(str(i)) for i in range(10)]
    for i, k in enumerate(keys):
        c.put_many({k: vec(i)})
        p = next(tmp_path.rglob(f"{k}.vec"))
        os.utime(p, (time.time() - 1000 + i, time.time() - 1000 + i))  # older first
    c.get_many([keys[0]])  # reading refreshes its mtime: now the newest
    c.put_many({c.key("x"): vec(99)})  # over the cap: trims to 90%
    left = {p.stem for p in tmp_path.rglob("*.vec")}
    total = sum(p.stat().st_size for p in tmp_path.rglob("*.vec"))
    assert total <= size * 10 * 0.9
    assert keys[0] in left and c.key("x") in left
    assert keys[1] not in left


def test_unwritable_directory_is_not_fatal(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    c = EmbeddingCache(blocker, "m", 1_000_000, 1_000_000)
    k = c.key("a")
    c.put_many({k: vec(1)})  # cannot write to disk: memory still works
    assert k in c.get_many([k])
