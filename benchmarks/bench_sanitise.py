"""Sanitiser figures: false flags on real pages, recall on injection fixtures, cost per page.

    .venv/bin/python benchmarks/bench_sanitise.py [WCXB_DIR] [--fixtures DIR] [--limit N]
        [--extractor trawl|trafilatura] [--skip-wcxb]

WCXB_DIR defaults to ../shared/bench/wcxb-dev (1,497 real pages). Every page goes through
the engine's stage sequence (``trawl.stages.prepare``: extract -> clean -> walls -> chunk), then
flag. Prints: how many pages got any flag (each one
listed with the rule and a snippet, to be justified or fixed), how many pages carried hidden
instructions, the recall over the fixtures (every fixture must be flagged), and the time
clean_document + flag take per page against a baseline measured in the same run (lxml parsing the
same HTML once), plus chunk_document's time per page. With --qa DIR it also reports how often a QA
answer span survives inside a single chunk.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from pathlib import Path

from lxml import html as lxml_html
from trawl.sanitise import find_instructions, flag
from trawl.settings import Settings
from trawl.stages import prepare
from trawl.types import Chunk, Document, Page, TrawlError

ROOT = Path(__file__).resolve().parent.parent


def extractor(name: str):  # type: ignore[no-untyped-def]
    if name == "trafilatura":
        import trafilatura

        def via_trafilatura(page: Page, settings: Settings) -> Document:
            if page.kind != "html":
                return Document(markdown=page.text or "", title=page.title)
            md = trafilatura.extract(page.html or "", output_format="markdown", include_tables=True) or ""
            return Document(markdown=md, title=page.title, extractor="trafilatura")

        return via_trafilatura
    from trawl.extract import extract

    return extract


CHUNK_TIMES: list[tuple[float, int]] = []  # (seconds, markdown chars) per page


def run_page(page: Page, settings: Settings, extract) -> tuple[Document, list[Chunk], float, float]:  # type: ignore[no-untyped-def]
    """The engine's stage sequence (``trawl.stages.prepare``, walls included), then ``flag``."""
    ready = prepare(page, settings, extractor=extract)
    CHUNK_TIMES.append((ready.timings_ms["chunk"] / 1000.0, len(ready.doc.markdown)))
    t = time.perf_counter()
    flagged = flag(list(ready.chunks), ready.doc.hidden_text)
    t_flag = time.perf_counter() - t
    return ready.doc, flagged, ready.timings_ms["clean"] / 1000.0, t_flag


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def bench_wcxb(wcxb: Path, limit: int | None, extract, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    files = sorted((wcxb / "html").glob("*.html.gz"))[:limit]
    if not files:
        print(f"no pages under {wcxb / 'html'}")
        return
    flagged_pages: list[tuple[str, str, list[str]]] = []
    hidden_pages: list[tuple[str, tuple[str, ...]]] = []
    t_clean: list[float] = []
    t_flag: list[float] = []
    t_parse: list[float] = []
    n_chunks = 0
    errors = 0
    for i, f in enumerate(files):
        html = gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
        page = Page(url=f"https://wcxb.example/{f.name}", final_url=f"https://wcxb.example/{f.name}",
                    kind="html", source="file", html=html)
        t = time.perf_counter()
        lxml_html.document_fromstring(html) if html.strip() else None
        t_parse.append(time.perf_counter() - t)
        try:
            doc, chunks, tc, tf = run_page(page, settings, extract)
        except Exception as exc:  # count, keep going
            errors += 1
            print(f"  {f.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        t_clean.append(tc)
        t_flag.append(tf)
        n_chunks += len(chunks)
        if doc.hidden_text:
            hidden_pages.append((f.name, doc.hidden_text))
        for c in chunks:
            if "instruction_like" in c.flags:
                hits = find_instructions(c.text, c.heading_path)
                flagged_pages.append((f.name, c.text, [f"{h.rule}: {h.snippet}" for h in hits]))
                break
        if (i + 1) % 100 == 0:
            print(f"  {i + 1}/{len(files)} pages", file=sys.stderr)

    print(f"\n== WCXB: {len(files)} pages, {n_chunks} chunks, {errors} refused or failed (walls, empty, errors)")
    print(f"pages with an instruction_like chunk: {len(flagged_pages)}")
    for name, _text, hits in flagged_pages:
        for h in hits:
            print(f"  {name}  {h}")
    print(f"pages with hidden instructions: {len(hidden_pages)}")
    for name, texts in hidden_pages:
        for t in texts:
            print(f"  {name}  hidden: {t[:160]!r}")
    ms = 1000.0
    print("cost per page (ms)            median    p95     max")
    for label, vals in (("lxml parse (baseline)", t_parse), ("clean_document", t_clean), ("flag (all chunks)", t_flag)):
        print(f"  {label:26s} {statistics.median(vals) * ms:7.2f} {pct(vals, 0.95) * ms:7.2f} {max(vals) * ms:7.2f}")
    print(f"  clean_document / lxml parse, median ratio: {statistics.median(t_clean) / statistics.median(t_parse):.2f}")
    t_chunk = [t for t, _ in CHUNK_TIMES]
    big = [t for t, n in CHUNK_TIMES if n >= 100_000]
    print(f"  chunk_document             {statistics.median(t_chunk) * ms:7.2f} {pct(t_chunk, 0.95) * ms:7.2f} "
          f"{max(t_chunk) * ms:7.2f}   ({len(big)} pages with >= 100k chars of markdown: "
          f"max {max(big, default=0) * ms:.1f} ms)")


def bench_qa(qa: Path, extract, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    """Chunker check: how often the answer span survives inside one chunk (vs. anywhere in the text)."""
    questions = [json.loads(line) for line in (qa / "questions.jsonl").open(encoding="utf-8")]

    def norm(t: str) -> str:
        return " ".join(t.split()).casefold()

    pages: dict[str, tuple[str, list[str]]] = {}
    in_text = in_chunk = 0
    for q in questions:
        if q["html_path"] not in pages:
            html = (qa / q["html_path"]).read_text(encoding="utf-8")
            page = Page(url=q["url"], final_url=q["url"], kind="html", source="file", html=html)
            try:
                ready = prepare(page, settings, extractor=extract)
                pages[q["html_path"]] = (norm(ready.doc.markdown), [norm(c.text) for c in ready.chunks])
            except TrawlError:  # a wall or an empty page: nothing reaches the agent
                pages[q["html_path"]] = ("", [])
        text, chunks = pages[q["html_path"]]
        answers = [norm(a) for a in q["answers"]]
        if any(a in text for a in answers):
            in_text += 1
            in_chunk += any(a in c for a in answers for c in chunks)
    n_chunks = sum(len(c) for _, c in pages.values())
    print(f"\n== QA answers kept whole by the chunker: {qa}")
    print(f"{len(questions)} questions, {len(pages)} pages, {n_chunks} chunks; answer in extracted text: {in_text}; "
          f"inside one chunk: {in_chunk} ({in_chunk / max(1, in_text):.4f})")


def fixture_page(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    url = f"https://fixtures.example/{path.name}"
    if path.suffix == ".html":
        return Page(url=url, final_url=url, kind="html", source="file", html=text)
    return Page(url=url, final_url=url, kind="markdown" if path.suffix == ".md" else "text", source="file", text=text)


def bench_fixtures(fixtures: Path, extract, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    files = sorted(p for p in fixtures.iterdir() if p.name[:2].isdigit())
    caught = 0
    print(f"\n== injection fixtures: {fixtures}")
    for f in files:
        doc, chunks, _, _ = run_page(fixture_page(f), settings, extract)
        flags = sorted({fl for c in chunks for fl in c.flags})
        rules = sorted({h.rule for c in chunks for h in find_instructions(c.text, c.heading_path)})
        hidden_rules = sorted({h.rule for t in doc.hidden_text for h in find_instructions(t)})
        ok = bool(flags)
        caught += ok
        print(f"  {'ok  ' if ok else 'MISS'} {f.name:36s} flags={','.join(flags) or '-'} "
              f"rules={','.join(rules + hidden_rules) or '-'}")
    print(f"recall: {caught}/{len(files)} = {caught / max(1, len(files)):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wcxb", nargs="?", default=str(ROOT.parent / "shared" / "bench" / "wcxb-dev"))
    ap.add_argument("--fixtures", default=str(ROOT / "tests" / "fixtures" / "injection"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--extractor", choices=["trawl", "trafilatura"], default="trawl")
    ap.add_argument("--skip-wcxb", action="store_true")
    ap.add_argument("--qa", default=None, help="also check answer spans against chunks (e.g. ../shared/bench/qa-dev)")
    args = ap.parse_args()
    settings = Settings()
    extract = extractor(args.extractor)
    print(f"extractor: {args.extractor}")
    bench_fixtures(Path(args.fixtures), extract, settings)
    if args.qa:
        bench_qa(Path(args.qa), extract, settings)
    if not args.skip_wcxb:
        bench_wcxb(Path(args.wcxb), args.limit, extract, settings)


if __name__ == "__main__":
    main()
