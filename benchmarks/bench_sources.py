"""Figures for the sources stage: HTTP fetch, page cache, PDF and JSON conversion, charset decoding.

    .venv/bin/python benchmarks/bench_sources.py [WCXB_DIR] [--limit 300]

WCXB_DIR defaults to ../shared/bench/wcxb-dev (html/NNNN.html.gz). Its pages are served
gzipped from a local aiohttp server on 127.0.0.1 and fetched with HttpSource; the baseline
is a bare httpx client fetching the same pages in the same run. Every figure is a median
(and p95 where useful) measured here; ratios compare against the baseline of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pymupdf
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "daemon"))

from trawl import Settings  # noqa: E402
from trawl.cache import PageCache  # noqa: E402
from trawl.extract.pdf import pdf_to_document  # noqa: E402
from trawl.extract.structured import structured_to_document  # noqa: E402
from trawl.sources.base import FetchRequest  # noqa: E402
from trawl.sources.body import build_page  # noqa: E402
from trawl.sources.decode import decode_body  # noqa: E402
from trawl.sources.http import HttpSource  # noqa: E402
from trawl.types import Page  # noqa: E402

from tests.fixtures.bad_inputs import big_json  # noqa: E402


def ms(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(len(xs) * 0.95))]
    return f"median {statistics.median(xs) * 1000:7.2f} ms  p95 {p95 * 1000:7.2f} ms"


async def bench_http(pages: list[bytes], settings: Settings) -> tuple[float, list[Page]]:
    app = web.Application()

    async def serve(request: web.Request) -> web.Response:
        gz = pages[int(request.match_info["n"])]
        return web.Response(body=gz, headers={"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip"})

    app.router.add_get("/p/{n}", serve)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    urls = [f"{base}/p/{i}" for i in range(len(pages))]

    raw: list[float] = []
    async with httpx.AsyncClient() as client:
        for u in urls:
            t = time.perf_counter()
            r = await client.get(u)
            _ = r.text
            raw.append(time.perf_counter() - t)

    src = HttpSource(settings)
    ours: list[float] = []
    got: list[Page] = []
    errors = 0
    for u in urls:
        t = time.perf_counter()
        try:
            got.append(await src.fetch(FetchRequest(u), settings))
        except Exception as exc:  # counted and shown, the run goes on
            errors += 1
            print(f"  error on {u}: {exc}", file=sys.stderr)
        ours.append(time.perf_counter() - t)
    await src.aclose()
    await runner.cleanup()

    print(f"HTTP fetch, {len(urls)} WCXB pages served gzipped from 127.0.0.1")
    print(f"  baseline httpx get + .text : {ms(raw)}")
    print(f"  HttpSource.fetch           : {ms(ours)}   errors {errors}")
    print(f"  ratio (median)             : {statistics.median(ours) / statistics.median(raw):.2f}x baseline")
    print(f"  throughput                 : {len(urls) / sum(ours):.0f} pages/s sequential")
    return statistics.median(ours), got


def bench_cache(got: list[Page], settings: Settings, fetch_median: float) -> None:
    with tempfile.TemporaryDirectory(prefix="trawl-bench-cache-") as d:
        s = settings.with_(cache_dir=Path(d))
        cache = PageCache(s)
        puts, mem, disk = [], [], []
        for p in got:
            t = time.perf_counter()
            cache.put(p.url, p)
            puts.append(time.perf_counter() - t)
        for p in got[-16:]:  # the memory layer holds the most recent entries
            t = time.perf_counter()
            assert cache.get(p.url, "http", None) is not None
            mem.append(time.perf_counter() - t)
        cold = PageCache(s)
        for p in got:
            t = time.perf_counter()
            assert cold.get(p.url, "http", None) is not None
            disk.append(time.perf_counter() - t)
        st = cold.stats()
        size = statistics.median(len(p.html or "") for p in got)
        print(f"Page cache, {len(got)} pages (median {size / 1000:.0f} K chars), {st['bytes'] / 1e6:.1f} MB on disk")
        print(f"  put (memory + atomic disk write) : {ms(puts)}")
        print(f"  get from memory                  : {ms(mem)}")
        print(f"  get from disk (new process view) : {ms(disk)}")
        print(f"  disk get vs HTTP fetch (median)  : {statistics.median(disk) / fetch_median:.3f}x")


def bench_pdf(settings: Settings, n_pages: int = 100) -> None:
    doc = pymupdf.open()
    para = ("The committee reviewed the budget for the harbour works and agreed to fund the new pier, the dredging "
            "of the channel and the repair of the breakwater before the winter storms. ")
    for i in range(n_pages):
        pg = doc.new_page()
        pg.insert_textbox(pymupdf.Rect(72, 72, 523, 770), f"Section {i}. " + para * 12, fontsize=10)
    doc.set_toc([[1, f"Chapter {i // 10 + 1}", i + 1] for i in range(0, n_pages, 10)])
    data = doc.tobytes()
    page = Page(url="x.pdf", final_url="x.pdf", kind="pdf", source="file", data=data)
    base, ours = [], []
    for _ in range(3):
        t = time.perf_counter()
        d2 = pymupdf.open(stream=data, filetype="pdf")
        _ = "".join(p.get_text() for p in d2)
        base.append(time.perf_counter() - t)
        t = time.perf_counter()
        md = pdf_to_document(page, settings).markdown
        ours.append(time.perf_counter() - t)
    print(f"PDF, {n_pages} text pages ({len(data) / 1e6:.1f} MB), {len(md) / 1000:.0f} K chars of markdown")
    print(f"  baseline page.get_text() loop : {ms(base)}")
    print(f"  pdf_to_document               : {ms(ours)}  ({n_pages / statistics.median(ours):.0f} pages/s)")
    print(f"  ratio (median)                : {statistics.median(ours) / statistics.median(base):.2f}x baseline")


def bench_json(settings: Settings) -> None:
    data = big_json()
    page = build_page("u", "u", "json", data, "application/json", source="http")
    base, ours = [], []
    for _ in range(3):
        t = time.perf_counter()
        json.loads(page.text or "")
        base.append(time.perf_counter() - t)
        t = time.perf_counter()
        structured_to_document(page, settings)
        ours.append(time.perf_counter() - t)
    print(f"JSON, {len(data) / 1e6:.1f} MB body")
    print(f"  baseline json.loads      : {ms(base)}")
    print(f"  structured_to_document   : {ms(ours)}")
    print(f"  ratio (median)           : {statistics.median(ours) / statistics.median(base):.1f}x baseline")


def bench_decode(pages: list[bytes]) -> None:
    raw = [gzip.decompress(g) for g in pages[:200]]
    base, ours = [], []
    for b in raw:
        t = time.perf_counter()
        b.decode("utf-8", errors="replace")
        base.append(time.perf_counter() - t)
        t = time.perf_counter()
        decode_body(b, "text/html; charset=utf-8")
        ours.append(time.perf_counter() - t)
    ru = ("<p>Съешь же ещё этих мягких французских булок, да выпей чаю.</p>" * 9000).encode("cp1251")
    det = []
    for _ in range(5):
        t = time.perf_counter()
        out = decode_body(ru, "text/html; charset=utf-8")
        det.append(time.perf_counter() - t)
    print(f"Charset decoding, {len(raw)} pages")
    print(f"  baseline bytes.decode('utf-8')          : {ms(base)}")
    print(f"  decode_body (declared utf-8, valid)     : {ms(ours)}")
    print(f"  decode_body, 1 MB cp1251 labelled utf-8 : {ms(det)} -> {out.charset}")


async def main_async(args: argparse.Namespace) -> None:
    files = sorted((Path(args.wcxb) / "html").glob("*.html.gz"))[: args.limit]
    if not files:
        sys.exit(f"no pages under {args.wcxb}/html")
    pages = [f.read_bytes() for f in files]
    with tempfile.TemporaryDirectory(prefix="trawl-bench-") as d:
        settings = Settings(cache_dir=Path(d) / "cache", state_dir=Path(d) / "state")
        fetch_median, got = await bench_http(pages, settings)
        bench_cache(got, settings, fetch_median)
        bench_pdf(settings)
        bench_json(settings)
        bench_decode(pages)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("wcxb", nargs="?", default=str(ROOT.parent / "shared" / "bench" / "wcxb-dev"))
    p.add_argument("--limit", type=int, default=300)
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
