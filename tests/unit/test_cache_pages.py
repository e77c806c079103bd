"""PageCache on a real directory: round trips, freshness, LRU trimming, corruption, privacy, concurrency."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from trawl import Settings
from trawl.cache import PageCache
from trawl.types import Page


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", page_ttl_s=600)


def html_page(url: str, body: str = "<p>hello</p>", source: str = "http", age: float = 0.0) -> Page:
    return Page(url=url, final_url=url + "#final", kind="html", source=source, html=body, status=200,
                content_type="text/html", title="T", fetched_at=time.time() - age, warnings=("w1",))


def entry_files(settings: Settings) -> list[Path]:
    return sorted((Path(settings.cache_dir) / "pages").rglob("*.page"))


def test_round_trip_from_disk(settings: Settings) -> None:
    PageCache(settings).put("https://e.org/a", html_page("https://e.org/a"))
    pdf = Page(url="u", final_url="u", kind="pdf", source="http", data=b"%PDF-1.4\x00\xff")
    PageCache(settings).put("u", pdf)
    fresh = PageCache(settings)  # a new process: nothing in memory
    got = fresh.get("https://e.org/a", "http", None)
    assert got is not None and got.html == "<p>hello</p>" and got.final_url == "https://e.org/a#final"
    assert got.warnings == ("w1",) and got.status == 200 and got.title == "T"
    assert fresh.get("u", "http", None) == pdf
    st = fresh.stats()
    assert st["hits"] == 2 and st["entries"] == 2 and st["bytes"] > 0


def test_miss_counts_and_source_is_part_of_key(settings: Settings) -> None:
    cache = PageCache(settings)
    cache.put("https://e.org/a", html_page("https://e.org/a"))
    assert cache.get("https://e.org/a", "playwright", None) is None
    assert cache.get("https://e.org/b", "http", None) is None
    assert cache.stats()["misses"] == 2


def test_ttl_and_max_age(settings: Settings) -> None:
    cache = PageCache(settings)
    cache.put("old", html_page("old", age=900))
    cache.put("new", html_page("new", age=100))
    assert cache.get("old", "http", None) is None  # older than page_ttl_s
    assert cache.get("old", "http", 1000) is not None  # the caller accepts older pages
    assert cache.get("new", "http", None) is not None
    assert cache.get("new", "http", 50) is None
    assert cache.get("new", "http", 0) is None  # 0 = refetch


def test_extension_pages_stay_in_memory(settings: Settings) -> None:
    cache = PageCache(settings)
    cache.put("https://bank.example/account", html_page("https://bank.example/account", source="extension"))
    assert cache.get("https://bank.example/account", "extension", None) is not None
    assert entry_files(settings) == []
    assert PageCache(settings).get("https://bank.example/account", "extension", None) is None


def test_local_files_not_cached(settings: Settings) -> None:
    cache = PageCache(settings)
    cache.put("/tmp/x.html", html_page("/tmp/x.html", source="file"))
    assert cache.get("/tmp/x.html", "file", None) is None
    assert entry_files(settings) == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupt_entry_discarded(settings: Settings, damage: str, caplog: pytest.LogCaptureFixture) -> None:
    PageCache(settings).put("k", html_page("k", body="<p>" + "x" * 1000 + "</p>"))
    (path,) = entry_files(settings)
    blob = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(blob[: len(blob) - 10])
    elif damage == "flip":
        path.write_bytes(blob[:-5] + b"Z" + blob[-4:])
    elif damage == "garbage":
        path.write_bytes(os.urandom(200))
    else:
        path.write_bytes(b"")
    cache = PageCache(settings)
    with caplog.at_level("WARNING", logger="trawl.cache.pages"):
        assert cache.get("k", "http", None) is None
    assert not path.exists()
    assert "corrupt" in caplog.text
    assert cache.stats()["errors"] == 1
    cache.put("k", html_page("k"))  # and it can be cached again
    assert PageCache(settings).get("k", "http", None) is not None


def test_lru_trim_under_cap(settings: Settings) -> None:
    s = settings.with_(cache_max_bytes=60_000)
    cache = PageCache(s, mem_entries=1)
    body = "<p>" + "y" * 9_000 + "</p>"
    for i in range(5):
        cache.put(f"p{i}", html_page(f"p{i}", body=body))
    # use p0 so that it is the most recently used entry on disk (each use is stamped after the one before)
    assert PageCache(s).get("p0", "http", None) is not None
    for i in range(5, 9):
        cache.put(f"p{i}", html_page(f"p{i}", body=body))
    st = cache.stats()
    assert st["bytes"] <= 60_000
    on_disk = PageCache(s)
    assert on_disk.get("p0", "http", None) is not None  # recently used: kept
    assert on_disk.get("p1", "http", None) is None  # least recently used: gone
    assert on_disk.get("p8", "http", None) is not None


def test_unwritable_dir_is_not_fatal(tmp_path: Path) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    cache = PageCache(Settings(cache_dir=blocker, state_dir=tmp_path / "s"))
    cache.put("k", html_page("k"))  # cannot write: logged, counted, served from memory
    assert cache.get("k", "http", None) is not None
    assert cache.stats()["errors"] >= 1


def test_concurrent_threads(settings: Settings) -> None:
    cache = PageCache(settings.with_(cache_max_bytes=200_000), mem_entries=4)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(40):
                key = f"k{(n * 7 + i) % 15}"
                cache.put(key, html_page(key, body=f"<p>{key} " + "z" * 3000 + "</p>"))
                got = cache.get(key, "http", None)
                assert got is None or (got.html or "").startswith(f"<p>{key} ")
        except BaseException as exc:  # collected for the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.stats()["bytes"] <= 200_000
    assert not list((Path(settings.cache_dir) / "pages").rglob(".tmp-*"))


def test_two_caches_share_a_directory(settings: Settings) -> None:
    a, b = PageCache(settings), PageCache(settings)
    a.put("shared", html_page("shared", body="<p>from a</p>"))
    got = b.get("shared", "http", None)
    assert got is not None and got.html == "<p>from a</p>"
    b.put("shared", html_page("shared", body="<p>from b</p>"))
    assert PageCache(settings).get("shared", "http", None).html == "<p>from b</p>"  # type: ignore[union-attr]


def test_clear(settings: Settings) -> None:
    cache = PageCache(settings)
    cache.put("a", html_page("a"))
    cache.clear()
    assert cache.get("a", "http", None) is None
    assert cache.stats()["entries"] == 0


_WRITER = r"""
import sys, time
from pathlib import Path
from trawl import Settings
from trawl.cache import PageCache
from trawl.types import Page
cache = PageCache(Settings(cache_dir=Path(sys.argv[1]), cache_max_bytes=150_000), mem_entries=1)
tag = sys.argv[2]
bad = 0
for i in range(150):
    key = f"k{i % 20}"
    cache.put(key, Page(url=key, final_url=key, kind="html", source="http", html=f"<p>{key} {tag} " + "q" * 4000))
    got = PageCache(Settings(cache_dir=Path(sys.argv[1]), cache_max_bytes=150_000)).get(key, "http", None)
    if got is not None and not (got.html or "").startswith(f"<p>{key} "):
        bad += 1
print(bad, cache.stats()["errors"])
"""


def test_two_processes_share_a_directory(settings: Settings) -> None:
    import subprocess
    import sys

    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(settings.cache_dir), tag],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for tag in ("A", "B")]
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert out.split() == ["0", "0"], (out, err)
    cache = PageCache(settings.with_(cache_max_bytes=150_000))
    assert cache.stats()["bytes"] <= 150_000 + 5 * 4200  # each process trims; a last write may overshoot a little
    assert not list((Path(settings.cache_dir) / "pages").rglob(".tmp-*"))
