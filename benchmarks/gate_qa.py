"""The answer-recall quality gate: a small qa-dev sample, pinned floors.

    .venv/bin/python benchmarks/gate_qa.py build [--data ../shared/bench]   # (re)write tests/fixtures/qa-sample/
    .venv/bin/python benchmarks/gate_qa.py run                              # print the sample's figures

``build`` copies ~200 qa-dev questions, spread over every language pair, and
their pages into ``tests/fixtures/qa-sample/`` (CC BY-SA 4.0, see its
ATTRIBUTION.md). ``run`` prints the figures that ``tests/unit/test_qa_gate.py``
pins its floors just under. Both use :func:`evaluate`, which the test calls too.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from trawl.retrieve import Retriever
from trawl.settings import Settings
from trawl.stages import prepare
from trawl.types import Page, TrawlError

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "fixtures" / "qa-sample"
PAIRS = ["en>en", "de>de", "ru>ru", "ja>ja", "zh>zh", "en>de", "en>ru", "en>zh"]
PAGES_PER_LANG = 2
QUESTIONS_PER_PAGE_PAIR = 13
_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().casefold()


def found(answers: list[str], text: str) -> bool:
    t = _norm(text)
    return any(_norm(a) and _norm(a) in t for a in answers)


@dataclass
class Figures:
    n: int = 0
    ceiling: int = 0
    r1: int = 0
    rk: int = 0
    bm_r1: int = 0
    bm_rk: int = 0
    tokens: int = 0
    page_tokens: int = 0

    def rate(self, name: str) -> float:
        return getattr(self, name) / self.n if self.n else 0.0


def evaluate(sample: Path, cache_dir: Path) -> dict[str, Figures]:
    """Figures per pair (and "all") on the sample; each page embedded once, ahead of its questions."""
    from trawl.text import approx_tokens

    settings = Settings(cache_dir=cache_dir, state_dir=cache_dir / "state", embed_ahead=False)
    hybrid = Retriever(settings)
    bm25 = Retriever(settings.with_(dense="none"))
    hybrid.warm()
    by_page: dict[str, list[dict]] = defaultdict(list)
    for line in (sample / "questions.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        by_page[q["html_path"]].append(q)
    out: dict[str, Figures] = defaultdict(Figures)
    for html_path, qs in sorted(by_page.items()):
        html = (sample / html_path).read_text(encoding="utf-8")
        page = Page(url=f"file:///{html_path}", final_url=f"file:///{html_path}", kind="html", source="file", html=html)
        try:
            ready = prepare(page, settings)  # the engine's own stage sequence, walls included
        except TrawlError:  # a wall or an empty page: the user gets an error, so every question misses
            for q in qs:
                for f in (out[f"{q['question_lang']}>{q['lang']}"], out["all"]):
                    f.n += 1
            continue
        doc, chunks = ready.doc, list(ready.chunks)
        hybrid.prefetch(chunks)
        page_tokens = sum(approx_tokens(c.text) for c in chunks)
        for q in qs:
            h = hybrid.rank(q["question"], chunks, doc.lang, None, html_path)
            b = bm25.rank(q["question"], chunks, doc.lang, None, html_path)
            for f in (out[f"{q['question_lang']}>{q['lang']}"], out["all"]):
                f.n += 1
                f.ceiling += found(q["answers"], doc.markdown)
                f.r1 += bool(h.chunks) and found(q["answers"], h.chunks[0].text)
                f.rk += found(q["answers"], "\n".join(c.text for c in h.chunks))
                f.bm_r1 += bool(b.chunks) and found(q["answers"], b.chunks[0].text)
                f.bm_rk += found(q["answers"], "\n".join(c.text for c in b.chunks))
                f.tokens += sum(approx_tokens(c.text) for c in h.chunks)
                f.page_tokens += page_tokens
    hybrid.close()
    return dict(out)


def build(data: Path) -> None:
    qs = [json.loads(line) for line in (data / "qa-dev" / "questions.jsonl").open(encoding="utf-8")]
    pages_by_lang: dict[str, list[str]] = defaultdict(list)
    for q in qs:
        if q["html_path"] not in pages_by_lang[q["lang"]]:
            pages_by_lang[q["lang"]].append(q["html_path"])
    chosen = {p for lang, ps in pages_by_lang.items() for p in sorted(ps)[:PAGES_PER_LANG]}
    picked: list[dict] = []
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for q in qs:
        if q["html_path"] in chosen:
            groups[(q["html_path"], q["question_lang"])].append(q)
    for key in sorted(groups):
        picked.extend(sorted(groups[key], key=lambda q: q["id"])[:QUESTIONS_PER_PAGE_PAIR])
    if SAMPLE.exists():
        shutil.rmtree(SAMPLE / "pages", ignore_errors=True)
    SAMPLE.mkdir(parents=True, exist_ok=True)
    for p in sorted(chosen):
        (SAMPLE / p).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data / "qa-dev" / p, SAMPLE / p)
    with (SAMPLE / "questions.jsonl").open("w", encoding="utf-8") as f:
        for q in picked:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"wrote {len(picked)} questions over {len(chosen)} pages to {SAMPLE}")


def report(figs: dict[str, Figures]) -> None:
    print(f"{'pair':7} {'n':>4} {'ceil':>6} {'R@1':>6} {'R@ret':>6} {'bm R@1':>7} {'bm R@ret':>8} {'tok/page':>9}")
    for pair in [*PAIRS, "all"]:
        f = figs.get(pair)
        if f is None:
            continue
        print(
            f"{pair:7} {f.n:4d} {f.rate('ceiling'):6.3f} {f.rate('r1'):6.3f} {f.rate('rk'):6.3f}"
            f" {f.rate('bm_r1'):7.3f} {f.rate('bm_rk'):8.3f} {f.tokens / max(1, f.page_tokens):9.3f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["build", "run"])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "bench"))
    ap.add_argument("--cache-dir", default=None, help="embedding cache (default: a fresh temporary directory)")
    args = ap.parse_args()
    if args.command == "build":
        build(Path(args.data))
        return
    if args.cache_dir:
        report(evaluate(SAMPLE, Path(args.cache_dir)))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            report(evaluate(SAMPLE, Path(tmp)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
