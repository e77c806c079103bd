"""Main-content extraction on WCXB pages: trawl's cascade against each single candidate, same run.

    .venv/bin/python benchmarks/bench_extract.py [WCXB_DIR] [--limit N] [--only trawl,rs-trafilatura,...]
    .venv/bin/python benchmarks/bench_extract.py --short [WCXB_DIR]    # the short-article check
    .venv/bin/python benchmarks/bench_extract.py --articles --no-rs   # the path without rs-trafilatura's wheel
    .venv/bin/python benchmarks/bench_extract.py --jobs 2 --cache /tmp/trawl-bench --per-page out.json
        # the single extractors' per-page figures kept on disk (a rerun extracts with trawl only), every
        # extractor's per-page F1 written out; --ids FILE: only the pages listed (those a change can touch)
    .venv/bin/python benchmarks/bench_extract.py --every 3 --residue 1   # held-out pages for a rule tuned on residue 0
    .venv/bin/python benchmarks/bench_extract.py --every 3 --profile     # per-stage CPU of trawl's extraction

WCXB_DIR defaults to ../shared/bench/wcxb-dev (html/NNNN.html.gz + ground-truth/NNNN.json). ``--short`` runs
the short-article check instead (benchmarks/data/short-articles/README.md): the WCXB_DIR articles whose
reference has fewer than 400 words, plus the written news and blog pages, with a row per page template. Prints, for
trawl and every baseline: mean F1 / precision / recall and pages per second (extraction time only; for
trawl, its whole stage sequence: extract, clean, walls, chunk), then
a per-page-type F1 table. ``trawl-cascade`` is trawl with the ensemble's vote off (rs-trafilatura and the DOM
fallback, first wins): the row the vote's cost is stated against. Speed is given per wall second and per CPU
second of this process (the second is the steadier figure when other work shares the machine). Scoring
(trawl.extract.score): markdown syntax stripped, lowercase, \\w+ tokens, multiset overlap, mean over pages; an
empty reference scores 1 only for an empty output.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# --before runs this file again with another tree's daemon/ here (its trawl, this file's pages and scorer).
sys.path.insert(0, os.environ.get("TRAWL_BENCH_DAEMON") or str(ROOT / "daemon"))

from trawl.extract import candidates as cands  # noqa: E402
from trawl.extract.score import PRF, mean_prf, score_markdown  # noqa: E402
from trawl.settings import Settings  # noqa: E402
from trawl.stages import prepare  # noqa: E402
from trawl.types import Page, TrawlError  # noqa: E402

DEFAULT_DIR = ROOT.parent / "shared" / "bench" / "wcxb-dev"


@dataclass(frozen=True, slots=True)
class WcxbPage:
    id: str
    url: str
    page_type: str
    reference: str  # "" when the page has no main text: only an empty output scores
    html_path: Path
    group: str = ""  # a finer grouping for the report (the written pages' template)

    def html(self) -> str:
        with gzip.open(self.html_path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")


def load_pages(root: Path, limit: int | None = None) -> list[WcxbPage]:
    pages: list[WcxbPage] = []
    for gt_path in sorted((root / "ground-truth").glob("*.json")):
        html_path = root / "html" / f"{gt_path.stem}.html.gz"
        if not html_path.exists():
            continue
        data = json.loads(gt_path.read_text(encoding="utf-8"))
        internal = data.get("_internal") or {}
        pt = internal.get("page_type")
        page_type = (pt.get("primary") if isinstance(pt, dict) else pt) or internal.get("category") or "unknown"
        gt = data.get("ground_truth") or {}
        pages.append(
            WcxbPage(
                id=gt_path.stem,
                url=data.get("url") or "",
                page_type="collection" if page_type == "category" else str(page_type),
                reference=gt.get("main_content") or "",
                html_path=html_path,
                group=str(internal.get("template") or ""),
            )
        )
        if limit is not None and len(pages) >= limit:
            break
    return pages


SHORT_DIR = ROOT / "benchmarks" / "data" / "short-articles"
SHORT_WORDS = 400  # a WCXB article is "short" when its reference has fewer \w+ words than this


def load_short(wcxb_dir: Path) -> list[WcxbPage]:
    """The short-article check: short WCXB articles (group "wcxb-short") and the written pages (their template)."""
    from dataclasses import replace

    from trawl.extract.score import tokens

    short = [
        replace(p, group="wcxb-short")
        for p in load_pages(wcxb_dir)
        if p.page_type == "article" and p.reference and len(tokens(p.reference)) < SHORT_WORDS
    ]
    return short + load_pages(SHORT_DIR)


ARTICLES_DIR = ROOT / "benchmarks" / "data" / "articles"


def load_articles() -> list[WcxbPage]:
    """The article set (benchmarks/data/articles/README.md), built into a temp folder first (its prose part is made
    from ../shared/bench/qa-dev at build time)."""
    built = os.environ.get("TRAWL_ARTICLES_DIR")  # set for the child processes: built once, by the parent
    if not built:
        spec = importlib.util.spec_from_file_location("article_pages", ARTICLES_DIR / "make_pages.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        built = str(mod.build())
        os.environ["TRAWL_ARTICLES_DIR"] = built
    return load_pages(Path(built))


Extractor = Callable[[str, str], str]


def trawl_extractor(settings: Settings) -> Extractor:
    """The markdown the engine's stage sequence keeps (``trawl.stages.prepare``); "" for a wall or an empty page."""

    def run(html: str, url: str) -> str:
        page = Page(url=url or "http://localhost/", final_url=url or "http://localhost/", kind="html",
                    source="file", html=html)  # fmt: skip
        try:
            return prepare(page, settings).doc.markdown
        except TrawlError:  # the user gets an error, not this page's text
            return ""

    return run


def cascade_extractor(settings: Settings) -> Extractor:
    """trawl's stage sequence without trafilatura (``html.Trafilatura`` reads nothing: no vote, no check on the
    fallback or the shell): the first-wins cascade of rs-trafilatura and the DOM fallback, with its dedupe; the row
    the ensemble's cost is stated against."""
    from trawl.extract import html as html_mod

    run = trawl_extractor(settings)

    class Nothing(html_mod.Trafilatura):
        text = ""
        candidate = None

    def cascade(html: str, url: str) -> str:
        reader, html_mod.Trafilatura = html_mod.Trafilatura, Nothing
        try:
            return run(html, url)
        finally:
            html_mod.Trafilatura = reader

    return cascade


def _cand(fn: Callable[[str, str], cands.Candidate | None], field: str = "markdown") -> Extractor:
    def run(html: str, url: str) -> str:
        c = fn(html, url)
        return getattr(c, field) if c is not None else ""

    return run


def extractors(settings: Settings) -> dict[str, Extractor]:
    out: dict[str, Extractor] = {"trawl": trawl_extractor(settings), "trawl-cascade": cascade_extractor(settings)}
    if cands.HAVE_RS:
        out["rs-trafilatura"] = _cand(cands.run_rs, "text")
    out["trafilatura"] = _cand(lambda h, u: cands.run_trafilatura(h, u))
    out["dom"] = _cand(lambda h, u: cands.run_dom(h))
    return out


def _page_key(p: WcxbPage) -> str:
    st = p.html_path.stat()
    return f"{p.html_path.resolve()}:{st.st_size}:{st.st_mtime_ns}:{len(p.reference)}"


CACHEABLE = frozenset({"rs-trafilatura", "trafilatura"})  # the dom candidate is this tree's: never cached


def cache_file(cache_dir: Path, name: str) -> Path:
    """Where a single extractor's per-page figures are kept, named by the extractor's own version."""
    from importlib.metadata import PackageNotFoundError, version

    dist = {"rs-trafilatura": "rs-trafilatura", "trafilatura": "trafilatura"}.get(name, "trawl-reader")
    try:
        ver = version(dist)
    except PackageNotFoundError:
        ver = "0"
    return cache_dir / f"{name}-{ver}.json"


def score_pages(
    pages: list[WcxbPage],
    run: Extractor,
    label: str = "",
    cpu_times: list[float] | None = None,
    cache: Path | None = None,
) -> tuple[list[PRF], list[float]]:
    """Scores and per-page extraction seconds (wall) for one extractor; a progress line on stderr.

    ``cpu_times``, when given, receives the per-page CPU seconds of this process (a steadier figure than
    wall time on a machine shared with other work). ``cache``: a JSON file of per-page figures (score and
    seconds) read before and written after, so a rerun only extracts the pages it has not seen; for the
    single extractors only (their output does not change with this tree).
    """
    scores: list[PRF] = []
    times: list[float] = []
    seen: dict[str, list[float]] = json.loads(cache.read_text()) if cache is not None and cache.exists() else {}
    fresh = 0
    for i, p in enumerate(pages):
        key = _page_key(p) if cache is not None else ""
        if key in seen:
            prec, rec, f1, wall, cpu_s = seen[key]
            scores.append(PRF(prec, rec, f1))
            times.append(wall)
            if cpu_times is not None:
                cpu_times.append(cpu_s)
            continue
        html = p.html()
        t = time.perf_counter()
        c = time.process_time()
        out = run(html, p.url)
        times.append(time.perf_counter() - t)
        cpu_s = time.process_time() - c
        if cpu_times is not None:
            cpu_times.append(cpu_s)
        scores.append(score_markdown(out, p.reference))
        if cache is not None:
            s = scores[-1]
            seen[key] = [s.precision, s.recall, s.f1, times[-1], cpu_s]
            fresh += 1
            if fresh % 100 == 0:
                _write_cache(cache, seen)
        if label and (i % 50 == 0 or i == len(pages) - 1):
            f1 = statistics.fmean(s.f1 for s in scores)
            print(f"\r{label}: {i + 1}/{len(pages)} F1 {f1:.4f}", end="", file=sys.stderr, flush=True)
    if label:
        print(file=sys.stderr)
    if cache is not None and fresh:
        _write_cache(cache, seen)
    return scores, times


def _write_cache(cache: Path, seen: dict[str, list[float]]) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(json.dumps(seen))
    tmp.replace(cache)


def _child(args: argparse.Namespace, name: str, out: Path, before: bool = False) -> subprocess.Popen[bytes]:
    """One extractor of this benchmark in a child process (same pages, same scorer), per-page figures to ``out``;
    ``before``: trawl from ``args.before``'s daemon/."""
    cmd = [sys.executable, str(Path(__file__).resolve()), str(args.wcxb_dir), "--only", name, "--dump", str(out)]
    if args.short:
        cmd.append("--short")
    if args.articles:
        cmd.append("--articles")
    if args.no_rs:
        cmd.append("--no-rs")
    if args.limit is not None:
        cmd += ["--limit", str(args.limit)]
    if args.ids is not None:
        cmd += ["--ids", str(args.ids)]
    cmd += ["--every", str(args.every), "--residue", str(args.residue)]
    if args.cache is not None:
        cmd += ["--cache", str(args.cache)]
    env = dict(os.environ)
    if before:
        env["TRAWL_BENCH_DAEMON"] = str(args.before.resolve() / "daemon")
    return subprocess.Popen(cmd, env=env)


def _run_children(args: argparse.Namespace, names: list[str]) -> dict[str, dict[str, Any]]:
    """Run ``names`` (``trawl@before`` = the --before tree's trawl) in child processes, ``args.jobs`` at a time."""
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        todo = list(names)
        running: list[tuple[str, Path, subprocess.Popen[bytes]]] = []
        while todo or running:
            while todo and len(running) < max(1, args.jobs):
                name = todo.pop(0)
                path = Path(tmp) / f"{len(todo)}.json"
                before = name == "trawl@before"
                running.append((name, path, _child(args, "trawl" if before else name, path, before)))
            name, path, proc = running.pop(0)
            if proc.wait() != 0:
                raise SystemExit(f"the {name} run failed")
            out[name] = json.loads(path.read_text())
    return out


def profile(pages: list[WcxbPage], settings: Settings) -> int:
    """``--profile``: trawl's stage sequence over ``pages`` with every stage timed (CPU), and its F1."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import extract_profile

    prof = extract_profile.install()
    run = trawl_extractor(settings)

    def timed(html: str, url: str) -> str:
        prof._enter("stage sequence (rest)")
        try:
            return run(html, url)
        finally:
            prof._leave()

    cpu: list[float] = []
    try:
        scores, _ = score_pages(pages, timed, "trawl --profile", cpu)
    finally:
        prof.undo()
    print(f"trawl F1 {mean_prf(scores).f1:.4f} on {len(pages)} pages (timers on)")
    print(extract_profile.report(prof, len(pages), sum(cpu)))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wcxb_dir", nargs="?", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--every", type=int, default=1,
                    help="every K-th page only (a spread-out subset of every page type, for a loaded machine)")
    ap.add_argument("--residue", type=int, default=0,
                    help="with --every K: the pages whose index is this residue mod K (another spread-out subset: "
                    "held-out pages for a rule tuned on residue 0)")
    ap.add_argument("--only", default="", help="comma-separated extractor names (default: all)")
    ap.add_argument("--short", action="store_true", help="the short-article check (see the module docstring)")
    ap.add_argument("--articles", action="store_true",
                    help="the article set of benchmarks/data/articles (a row per template, and its short articles)")
    ap.add_argument("--before", type=Path, default=None,
                    help="another checkout (e.g. a `git worktree` of the base commit): its trawl is run on the same "
                    "pages in a child process, reported as trawl@before beside this tree's")
    ap.add_argument("--jobs", type=int, default=1,
                    help="run the extractors in this many child processes at once (figures per CPU second stay "
                    "comparable; per wall second they do not)")
    ap.add_argument("--cache", type=Path, default=None,
                    help="keep the single extractors' per-page figures in this directory (e.g. /tmp/trawl-bench): "
                    "a rerun extracts only with trawl and the pages not seen yet")
    ap.add_argument("--per-page", type=Path, default=None,
                    help="write every extractor's per-page F1 here (JSON: page id, type, group, F1 by extractor)")
    ap.add_argument("--ids", type=Path, default=None,
                    help="a file of page ids (one a line): only these pages (e.g. the pages a change can touch)")
    ap.add_argument("--no-rs", action="store_true",
                    help="run as where rs-trafilatura has no wheel (3.11, 3.13, macOS, ARM): trawl's cascade without "
                    "it, and no rs-trafilatura column")
    ap.add_argument("--profile", action="store_true",
                    help="trawl only: a per-stage CPU profile of its extraction (own time per stage, lxml parses per "
                    "page by the stage that asked; benchmarks/extract_profile.py)")
    ap.add_argument("--dump", type=Path, default=None, help=argparse.SUPPRESS)  # the child's per-page figures
    args = ap.parse_args(argv)
    if args.articles:
        pages = load_articles()[: args.limit]
    elif args.short:
        pages = load_short(args.wcxb_dir)[: args.limit]
    else:
        pages = load_pages(args.wcxb_dir, args.limit)
    pages = pages[args.residue :: max(1, args.every)]
    if args.ids is not None:
        wanted_ids = set(args.ids.read_text().split())
        pages = [p for p in pages if p.id in wanted_ids]
    if not pages:
        print(f"no WCXB pages under {args.wcxb_dir}", file=sys.stderr)
        return 2
    if args.no_rs:
        cands.HAVE_RS = False  # the switch the cascade reads (trawl.extract.html._primary), as on a Python without it
    settings = Settings()
    if args.profile:
        return profile(pages, settings)
    runs = extractors(settings)
    if args.only:
        wanted = {n.strip() for n in args.only.split(",")}
        runs = {k: v for k, v in runs.items() if k in wanted}
    results: dict[str, list[PRF]] = {}
    speed: dict[str, float] = {}
    cpu_speed: dict[str, float] = {}
    children: list[str] = []
    if args.jobs > 1 and args.dump is None:
        children = list(runs)
    if args.before is not None and "trawl" in runs:
        children.insert(children.index("trawl") + 1 if "trawl" in children else 0, "trawl@before")
    done = _run_children(args, children) if args.jobs > 1 else {}
    for name, run in runs.items():
        if name in done:
            continue
        cpu: list[float] = []
        cache = cache_file(args.cache, name) if args.cache is not None and name in CACHEABLE else None
        scores, times = score_pages(pages, run, name, cpu, cache)
        results[name] = scores
        speed[name] = len(times) / max(sum(times), 1e-9)
        cpu_speed[name] = len(cpu) / max(sum(cpu), 1e-9)
        if name == "trawl" and args.before is not None:
            done.update(_run_children(args, ["trawl@before"]))
            results["trawl@before"] = []  # keeps the report's order: filled below
    for name in children:
        figures = done[name]
        results[name] = [PRF(*s) for s in figures["scores"]]
        speed[name], cpu_speed[name] = figures["speed"], figures["cpu_speed"]
    if args.dump is not None:
        name = next(iter(results))
        args.dump.write_text(json.dumps({"scores": [[s.precision, s.recall, s.f1] for s in results[name]],
                                         "speed": speed[name], "cpu_speed": cpu_speed[name]}))
        return 0
    if args.per_page is not None:
        rows_out = [{"id": p.id, "type": p.page_type, "group": p.group,
                     **{n: round(results[n][i].f1, 4) for n in results}} for i, p in enumerate(pages)]
        args.per_page.write_text(json.dumps(rows_out, indent=0))
    every = f" (every {args.every}th page from page {args.residue})" if args.every > 1 else ""
    path = " — without rs-trafilatura (--no-rs)" if args.no_rs else ""
    print(f"WCXB {args.wcxb_dir} — {len(pages)} pages{every}{path}")
    print(f"{'extractor':<16} {'F1':>7} {'P':>7} {'R':>7} {'pages/s':>8} {'pages/cpu-s':>11}")
    for name, scores in results.items():
        m = mean_prf(scores)
        print(f"{name:<16} {m.f1:7.4f} {m.precision:7.4f} {m.recall:7.4f} {speed[name]:8.1f} {cpu_speed[name]:11.1f}")
    types = sorted({p.page_type for p in pages})
    groups = sorted({p.group for p in pages if p.group})
    names = list(results)
    print()
    print(f"{'page type':<14} {'n':>5} " + " ".join(f"{n[:14]:>14}" for n in names) + "  best single")
    rows = [(t, [i for i, p in enumerate(pages) if t in ("ALL", p.page_type)]) for t in types]
    rows += [(g, [i for i, p in enumerate(pages) if p.group == g]) for g in groups]
    if args.short:
        rows.append(("written", [i for i, p in enumerate(pages) if p.group and p.group != "wcxb-short"]))
    if args.articles:
        from trawl.extract.score import tokens

        short = [i for i, p in enumerate(pages) if len(tokens(p.reference)) < SHORT_WORDS]
        rows.append((f"short<{SHORT_WORDS}", short))
    rows.append(("ALL", list(range(len(pages)))))
    for t, idx in rows:
        f1s = {n: statistics.fmean(results[n][i].f1 for i in idx) for n in names}
        singles = {n: v for n, v in f1s.items() if not n.startswith("trawl")}
        best = max(singles, key=lambda n: singles[n]) if singles else ""
        flag = ""
        if "trawl" in f1s and best and f1s["trawl"] + 1e-9 < singles[best]:
            flag = f"  trawl {f1s['trawl'] - singles[best]:+.4f}"
        print(f"{t:<14} {len(idx):>5} " + " ".join(f"{f1s[n]:14.4f}" for n in names) + f"  {best}{flag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
