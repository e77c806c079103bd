"""The cache package's one store: exact accounting on overwrite, stale temp files swept, privacy, memory LRU."""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from pathlib import Path

import numpy as np
from trawl.atomicfile import TEMP_PREFIX
from trawl.cache.embeddings import EmbeddingCache
from trawl.cache.store import STALE_TEMP_S, DiskStore, MemoryLRU

log = logging.getLogger("test.store")


def _on_disk(root: Path, suffix: str) -> tuple[int, int]:
    files = [p for p in root.rglob(f"*{suffix}") if not p.name.startswith(TEMP_PREFIX)]
    return sum(p.stat().st_size for p in files), len(files)


def test_overwriting_an_entry_counts_it_once(tmp_path: Path) -> None:
    store = DiskStore(tmp_path, tmp_path / "s", suffix=".e", max_bytes=10_000, log=log)
    for i in range(12):
        assert store.write("ab" * 32, bytes(100 + i))  # the same entry, rewritten
    store.write("cd" * 32, b"x" * 50)
    assert store.usage() == (111 + 50, 2) == _on_disk(tmp_path / "s", ".e")


def test_embedding_cache_rewrites_do_not_inflate_its_size_or_evict_others(tmp_path: Path) -> None:
    v = np.ones(64, dtype=np.float32)
    size = 10 + v.nbytes
    c = EmbeddingCache(tmp_path, "m", 0, size * 5)
    keep = [c.key(f"keep {i}") for i in range(3)]
    c.put_many({k: v for k in keep})
    hot = c.key("rewritten")
    for _ in range(30):  # the same text embedded again and again (another page, a restart): one file
        c.put_many({hot: v})
    st = c.stats()
    assert (st["disk_bytes"], st["disk_files"]) == (4 * size, 4) == _on_disk(tmp_path, ".vec")
    assert set(c.get_many(keep)) == set(keep)  # a miscounted size would have trimmed these away


def test_stale_temp_files_are_swept_and_fresh_ones_kept(tmp_path: Path) -> None:
    c = EmbeddingCache(tmp_path, "m", 0, 1_000_000)
    c.put_many({c.key("a"): np.ones(8, dtype=np.float32)})
    (sub,) = [p for p in tmp_path.rglob("*") if p.is_dir() and len(p.name) == 2]
    stale, fresh = sub / f"{TEMP_PREFIX}dead.x.vec", sub / f"{TEMP_PREFIX}live.y.vec"
    stale.write_bytes(b"half a vec")
    fresh.write_bytes(b"being written")
    old = time.time() - STALE_TEMP_S - 60
    os.utime(stale, (old, old))
    again = EmbeddingCache(tmp_path, "m", 0, 1_000_000)  # a new process: its first write scans the directory
    again.put_many({again.key("b"): np.ones(8, dtype=np.float32)})
    assert not stale.exists() and fresh.exists()
    assert again.stats()["disk_files"] == 2  # temp files are not entries


def test_the_store_makes_every_directory_private(tmp_path: Path) -> None:
    base = tmp_path / "cache"
    (base / "kind").mkdir(parents=True)
    for d in (base, base / "kind"):
        os.chmod(d, 0o755)
    store = DiskStore(base, base / "kind" / "model", suffix=".e", max_bytes=10_000, log=log)
    assert stat.S_IMODE(base.stat().st_mode) == 0o700  # an existing loose directory, tightened on open
    store.write("ef" * 32, b"secret")
    for d in (base, base / "kind", base / "kind" / "model", base / "kind" / "model" / "ef"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    assert stat.S_IMODE(store.path("ef" * 32).stat().st_mode) == 0o600


def test_threads_writing_the_same_entries_keep_the_count_exact(tmp_path: Path) -> None:
    store = DiskStore(tmp_path, tmp_path / "s", suffix=".e", max_bytes=10_000_000, log=log)
    names = [f"{i:02x}" * 32 for i in range(10)]

    def work(n: int) -> None:
        for i in range(200):
            store.write(names[(n + i) % 10], bytes(50 + (n * i) % 97))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.usage() == _on_disk(tmp_path / "s", ".e")


def test_trim_keeps_the_recently_used(tmp_path: Path) -> None:
    store = DiskStore(tmp_path, tmp_path / "s", suffix=".e", max_bytes=1000, log=log)
    names = [f"{i:02x}" * 32 for i in range(9)]
    for i, n in enumerate(names):
        store.write(n, bytes(100))
        os.utime(store.path(n), (time.time() - 1000 + i, time.time() - 1000 + i))
    assert store.read(names[0]) is not None  # used: now the newest
    store.write("ff" * 32, bytes(150))  # 1050 > 1000: trim to 900
    total, _ = store.usage()
    assert total is not None and total <= 900 and store.usage() == _on_disk(tmp_path / "s", ".e")
    assert store.read(names[0]) is not None and store.read(names[1]) is None


def test_memory_lru_bounds() -> None:
    lru: MemoryLRU[str, bytes] = MemoryLRU(max_bytes=100, max_entries=3, max_item_bytes=60, size=len)
    lru.put("a", b"1" * 30)
    lru.put("b", b"2" * 30)
    lru.put("huge", b"3" * 61)  # bigger than one item may be: not kept, nothing evicted
    assert "huge" not in lru and len(lru) == 2
    assert lru.get("a") is not None  # touch: b is now the oldest
    lru.put("c", b"4" * 30)
    lru.put("d", b"5" * 30)  # 4 entries > 3: the least recently used (b) goes
    assert "b" not in lru and {"a", "c", "d"} == {k for k in ("a", "b", "c", "d") if k in lru}
    lru.put("a", b"6" * 50)  # replace: 50 + 30 + 30 = 110 > 100, so c goes
    assert lru.bytes == 80 and "c" not in lru
