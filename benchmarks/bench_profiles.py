"""Page profiles (trawl.profiles) on hosts with several pages: F1 and extraction time with and without, same run.

    .venv/bin/python benchmarks/bench_profiles.py [WCXB_DIR] [--min-pages 2] [--extra DIR ...]

The set: every host of WCXB_DIR (default ../shared/bench/wcxb-dev) with at least ``--min-pages`` pages, read in
file order per host, so each page after a host's first may meet a profile learnt from the pages before it (as a
user reading a site does). ``--extra DIR`` adds directories laid out like WCXB (html/*.html.gz, ground-truth/*.json)
with more pages per host. Each page goes through the engine's stage sequence (``trawl.stages.prepare``) twice: with
trawl's extractor, and with the profile extractor (``Profiles.extractor()``, a fresh profile store for the run).
Printed: mean F1 / P / R over the pages where a profile could apply (each host's second page on), the same over
the pages where one was reused, what the profiles did (reused, learnt, missed, dropped), and the extraction time
per page with and without (median and mean, CPU seconds of this process: the steadier figure on a shared machine).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlsplit

from bench_extract import DEFAULT_DIR, WcxbPage, load_pages
from trawl.extract.score import PRF, mean_prf, score_markdown
from trawl.profiles import Profiles
from trawl.settings import Settings
from trawl.stages import prepare
from trawl.types import Page, TrawlError


def host_pages(dirs: list[Path], min_pages: int) -> dict[str, list[WcxbPage]]:
    by_host: dict[str, list[WcxbPage]] = defaultdict(list)
    for d in dirs:
        for p in load_pages(d):
            host = (urlsplit(p.url).hostname or "").lower()
            if host:
                by_host[host].append(p)
    return {h: ps for h, ps in sorted(by_host.items()) if len(ps) >= min_pages}


def run(page: Page, settings: Settings, extractor: object | None) -> str:
    try:
        return prepare(page, settings, extractor=extractor).doc.markdown  # type: ignore[arg-type]
    except TrawlError:
        return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wcxb_dir", nargs="?", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--extra", type=Path, action="append", default=[])
    ap.add_argument("--min-pages", type=int, default=2)
    args = ap.parse_args()
    hosts = host_pages([args.wcxb_dir, *args.extra], args.min_pages)
    with tempfile.TemporaryDirectory(prefix="trawl-bench-profiles-") as tmp:
        settings = Settings(cache_dir=Path(tmp) / "cache", state_dir=Path(tmp) / "state")
        profiles = Profiles(settings)
        with_profiles = profiles.extractor()
        plain_s: list[PRF] = []
        prof_s: list[PRF] = []
        reused_plain: list[PRF] = []
        reused_prof: list[PRF] = []
        t_plain: list[float] = []
        t_prof: list[float] = []
        did: Counter[str] = Counter()
        n = sum(len(v) for v in hosts.values())
        done = 0
        for pages in hosts.values():
            for i, wp in enumerate(pages):
                html = wp.html()
                page = Page(url=wp.url, final_url=wp.url, kind="html", source="file", html=html)
                c = time.process_time()
                plain = run(page, settings, None)
                t_plain.append(time.process_time() - c)
                before = profiles.get(wp.url)  # profiles are kept per site (scheme, host, port)
                c = time.process_time()
                prof = run(page, settings, with_profiles)
                t_prof.append(time.process_time() - c)
                after = profiles.get(wp.url)
                reused = before is not None and after is not None and after.hits > before.hits
                what = "reused" if reused else ("learnt" if before is None and after is not None else
                                                "missed" if before is not None and after is not None else
                                                "dropped" if before is not None else "none")
                did[what] += 1
                if i > 0:
                    sp, sq = score_markdown(plain, wp.reference), score_markdown(prof, wp.reference)
                    plain_s.append(sp)
                    prof_s.append(sq)
                    if reused:
                        reused_plain.append(sp)
                        reused_prof.append(sq)
                done += 1
                if done % 25 == 0 or done == n:
                    print(f"\r{done}/{n} pages", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)

    def line(label: str, s: list[PRF]) -> str:
        m = mean_prf(s) if s else PRF(0.0, 0.0, 0.0)
        return f"  {label:<22} n={len(s):<4} F1 {m.f1:.4f}  P {m.precision:.4f}  R {m.recall:.4f}"

    print(f"{len(hosts)} hosts with >= {args.min_pages} pages, {n} pages ({len(plain_s)} after a host's first)")
    print("pages after a host's first:")
    print(line("extractor", plain_s))
    print(line("with profiles", prof_s))
    print("pages where a profile was reused:")
    print(line("extractor", reused_plain))
    print(line("with profiles", reused_prof))
    print("what the profiles did: " + ", ".join(f"{k} {v}" for k, v in did.most_common()))
    for label, ts in (("extractor", t_plain), ("with profiles", t_prof)):
        print(f"  {label:<22} extraction CPU ms/page: median {statistics.median(ts) * 1000:.1f}  "
              f"mean {statistics.fmean(ts) * 1000:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
