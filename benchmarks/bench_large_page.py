"""The whole stage sequence (extract, clean, walls, chunk) on a very large page of plain paragraphs (issue 11: a 6 MB
page in at most 3 s), beside another tree's in the same run.

    .venv/bin/python benchmarks/bench_large_page.py [--mb 6] [--reps 3] [--before DIR]

The page is written here (no data files): chapters of ~400-character paragraphs with headings, a navigation bar and
a footer, as a book-length log or transcript is served. Prints, per repetition and as medians, the wall and CPU
seconds of ``trawl.stages.prepare`` with its stage split, the extractor that answered and the number of chunks.
``--before DIR`` (e.g. ``git worktree add /tmp/base <commit>``) runs DIR's daemon on the same page in a child process,
repetitions interleaved with this tree's, so both figures come from the same moments of a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("TRAWL_BENCH_DAEMON") or str(ROOT / "daemon"))

from trawl.settings import Settings  # noqa: E402
from trawl.stages import prepare  # noqa: E402
from trawl.types import Page  # noqa: E402

_TEXT = ("the ferry leaves the harbour at dawn and returns before the tide turns while gulls circle over the old "
         "stone pier and the fish market opens its shutters to the first carts of the morning")
_WORDS = _TEXT.split(" ")


def build_page(mb: float) -> str:
    parts: list[str] = []
    size = 0
    i = 0
    while size < mb * 1_000_000:
        words = " ".join(_WORDS[(i * 7 + k) % len(_WORDS)] for k in range(64))
        para = f"<p>Entry {i}: {words}.</p>\n"
        if i % 40 == 0:
            para = f"<h2>Chapter {i // 40 + 1}</h2>\n" + para
        parts.append(para)
        size += len(para)
        i += 1
    return ("<!doctype html><html><head><title>Harbour log</title></head><body><nav><a href='/'>Home</a> "
            "<a href='/logs'>Logs</a></nav><h1>Harbour log</h1>" + "".join(parts) +
            "<footer>Harbour office, all rights reserved</footer></body></html>")


def run_once(html: str) -> dict[str, object]:
    page = Page(url="http://localhost/log", final_url="http://localhost/log", kind="html", source="file", html=html)
    c, w = time.process_time(), time.perf_counter()
    prepared = prepare(page, Settings())
    return {"wall": time.perf_counter() - w, "cpu": time.process_time() - c, "extractor": prepared.doc.extractor,
            "chunks": len(prepared.chunks), "stages": {k: round(v) for k, v in prepared.timings_ms.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=6.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--before", type=Path, default=None, help="another checkout whose trawl runs beside this one")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # one repetition, JSON on stdout
    args = ap.parse_args(argv)
    html = build_page(args.mb)
    if args.child:
        print(json.dumps(run_once(html)))
        return 0
    trees = {"this tree": None} | ({"before": args.before.resolve()} if args.before else {})
    results: dict[str, list[dict[str, object]]] = {name: [] for name in trees}
    print(f"page: {len(html) / 1e6:.1f} MB of plain paragraphs")
    for rep in range(args.reps):
        for name, tree in trees.items():
            env = dict(os.environ)
            if tree is not None:
                env["TRAWL_BENCH_DAEMON"] = str(tree / "daemon")
            out = subprocess.run([sys.executable, __file__, "--mb", str(args.mb), "--child"], env=env,
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            results[name].append(r)
            print(f"rep {rep + 1} {name:<10} wall {r['wall']:6.2f} s  cpu {r['cpu']:6.2f} s  {r['extractor']}, "
                  f"{r['chunks']} chunks, stages ms {r['stages']}")
    for name, rs in results.items():
        wall = statistics.median(float(r["wall"]) for r in rs)  # type: ignore[arg-type]
        cpu = statistics.median(float(r["cpu"]) for r in rs)  # type: ignore[arg-type]
        print(f"median {name:<10} wall {wall:6.2f} s  cpu {cpu:6.2f} s  (target: 3 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
