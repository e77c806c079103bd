"""Latency of a question on a ~200 KB page, through the whole pipeline, cold and warm.

    .venv/bin/python benchmarks/bench_latency.py [--data ../shared/bench] [--reps 5] [--work DIR]

Builds two pages from qa-dev-long (kept out of git, under ``--work``): English
and Japanese articles merged into ~200 KB of HTML each, with realistic
boilerplate (navigation, scripts, styles). Prints:

- model load: the first ``warm()`` in this process (the daemon does it once at start);
- cold: the first question on a fresh page (fresh engine and embedding cache, model loaded);
- warm: another question on the same page right after (the page is prepared, the
  rest of it is being embedded ahead in the background);
- the split by stage (``result.timings_ms``), medians over the repetitions.

Each page is measured twice per repetition, with the first-answer path (``first_answer="words"``: BM25
over the whole page when it sees the question, the dense model reordering its best chunks within
``first_dense_s``; across languages the dense budget as before) and with the old one
(``first_answer="dense"``: up to ``dense_budget_s`` of dense work), so the two figures come from the same
moment. The third page is German with English questions (across languages).

Goals (issue 11): first question <= 400 ms when question and page share a language, <= 1.0 s across
languages; warm <= 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from trawl.pipeline import Engine
from trawl.settings import Settings

_SECTION = re.compile(r"<section[^>]*>.*?</section>", re.S | re.I)


def build_page(data: Path, lang: str, target_bytes: int, out: Path, qlang: str = "") -> tuple[Path, list[str]]:
    """Merge the article sections of one language's long pages into one article of about ``target_bytes``."""
    root = data / "qa-dev-long"
    pages = sorted((root / "pages" / lang).glob("*.html"))
    parts: list[str] = []
    size = 0
    for p in pages:
        for section in _SECTION.findall(p.read_text(encoding="utf-8")):
            parts.append(section)
            size += len(section.encode())
        if size >= target_bytes * 0.8:
            break
    nav = "".join(f'<li><a href="/wiki/Link_{i}">Related topic {i}</a></li>' for i in range(300))
    style = "<style>" + "".join(f".c{i}{{margin:{i % 7}px;color:#{i:06x}}}" for i in range(1500)) + "</style>"
    body = "".join(parts)
    # Scripts make up the rest, as on real pages of this size.
    filler = max(0, target_bytes - len(body.encode()) - len(nav) - len(style) - 500)
    script = "<script>var data=" + json.dumps("x" * filler) + ";</script>"
    html = (
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8"><title>Merged {lang} articles</title>'
        f"{style}{script}</head><body><nav><ul>{nav}</ul></nav><main><article><h1>Merged {lang} articles</h1>"
        f"{body}</article></main>"
        f"<footer><p>Footer text, licence and links.</p></footer></body></html>"
    )
    path = out / f"bench-{lang}.html"
    path.write_text(html, encoding="utf-8")
    qs = [
        json.loads(line)["question"]
        for line in (root / "questions.jsonl").open(encoding="utf-8")
        if json.loads(line)["lang"] == lang and json.loads(line)["question_lang"] == (qlang or lang)
    ]
    return path, qs


async def one_rep(
    path: Path, q_cold: str, q_warm: str, cache: Path, first_answer: str = "words"
) -> tuple[dict, dict, float, float, list[str]]:
    engine = Engine(Settings.from_env(cache_dir=cache, state_dir=cache / "state", first_answer=first_answer))
    engine.retriever.warm()  # already loaded in this process: no cost
    t = time.perf_counter()
    cold = await engine.fetch(str(path), q_cold)
    cold_s = time.perf_counter() - t
    t = time.perf_counter()
    warm = await engine.fetch(str(path), q_warm)
    warm_s = time.perf_counter() - t
    if not cold.ok or not warm.ok:
        raise SystemExit(f"fetch failed: {cold.error or warm.error}")
    engine.retriever.close()
    await engine.aclose()
    return dict(cold.timings_ms), dict(warm.timings_ms), cold_s, warm_s, list(cold.warnings)


Run = tuple[dict, dict, float, float, list[str]]


def summarise(name: str, runs: list[Run], old: list[Run], mode: str, chunks: int) -> None:
    print(f"\n## {name}  ({chunks} chunks, mode {mode})")
    print(f"{'':22} {'first answer (words)':>22} {'old path (dense budget)':>24}")
    for label, a, b in (
        ("cold", [r[2] * 1000 for r in runs], [r[2] * 1000 for r in old]),
        ("warm", [r[3] * 1000 for r in runs], [r[3] * 1000 for r in old]),
    ):
        print(f"{label} median / max ms     {statistics.median(a):9.1f} / {max(a):8.1f}"
              f"   {statistics.median(b):9.1f} / {max(b):8.1f}")
    stages = sorted({k for r in runs + old for k in r[0]})
    print("stage (cold, median)   words ms   old ms")
    for s in stages:
        c = statistics.median(r[0].get(s, 0.0) for r in runs)
        o = statistics.median(r[0].get(s, 0.0) for r in old)
        print(f"{s:20} {c:10.1f} {o:8.1f}")
    notes = {w for r in runs for w in r[4] if w.startswith("first question")}
    if notes:
        print("warning (words, one rep):", sorted(notes)[0])


def main() -> None:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(here.parent.parent / "shared" / "bench"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--size", type=int, default=200_000, help="target HTML bytes per page")
    ap.add_argument("--work", default=None, help="where generated pages and caches go (default: a temp dir)")
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="trawl-latency-"))
    work.mkdir(parents=True, exist_ok=True)

    probe = Engine(Settings.from_env(cache_dir=work / "probe", state_dir=work / "probe"))
    t = time.perf_counter()
    load_s = probe.retriever.warm()
    print(f"model load: {load_s * 1000:.0f} ms (warm() call {1000 * (time.perf_counter() - t):.0f} ms)")
    print(f"describe: {probe.retriever.describe()}")

    for lang, qlang in (("en", "en"), ("ja", "ja"), ("de", "en")):
        path, qs = build_page(Path(args.data), lang, args.size, work, qlang)
        size_kb = path.stat().st_size / 1000
        runs: list[Run] = []
        old: list[Run] = []
        mode, chunks = "", 0
        for rep in range(args.reps):
            # the two paths alternate within a repetition: same page, same questions, same moment
            cache = work / f"cache-{lang}-{qlang}-{rep}"
            runs.append(asyncio.run(one_rep(path, qs[2 * rep], qs[2 * rep + 1], cache)))
            cache = work / f"cache-{lang}-{qlang}-{rep}-old"
            old.append(asyncio.run(one_rep(path, qs[2 * rep], qs[2 * rep + 1], cache, "dense")))
            print(f"\r{qlang}>{lang}: rep {rep + 1}/{args.reps}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        # One more run just to report the mode and chunk count.
        eng = Engine(Settings.from_env(cache_dir=work / f"cache-{lang}-{qlang}-0", state_dir=work / "s"))
        res = asyncio.run(eng.fetch(str(path), qs[0]))
        mode, chunks = res.mode, res.coverage.chunks_total
        eng.retriever.close()
        summarise(f"{qlang}>{lang} page {size_kb:.0f} KB", runs, old, mode, chunks)


if __name__ == "__main__":
    main()
