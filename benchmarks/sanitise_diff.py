"""Differential check for speed work in trawl.sanitise: this tree's outputs against another tree's, page by page.

    .venv/bin/python benchmarks/sanitise_diff.py --before /tmp/before   # a `git archive HEAD daemon` extract

Runs, in one child process per tree, over every WCXB dev page (../shared/bench/wcxb-dev/html/*.html.gz), every
file of tests/fixtures/injection and tests/fixtures/walls, and a set of generated strings mixing letters, invisible
characters and their entities: the hidden-text scan (passages with reasons, visible words, unchecked count),
clean_document on a Document built from the page (its extractor empty, so the page is scanned there too), and the
character tests (has_invisible, may_split_words, disguised_snippets, decode_tags, decode_variation_runs,
strip_invisible). Prints the pages whose outputs differ; exits 1 if any does.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import pickle
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WCXB = ROOT.parent / "shared" / "bench" / "wcxb-dev" / "html"

_PIECES = ["a", "b", "Z", "é", "1", "_", " ", "-", "&", ";", "#", "x", "shy", "&shy;", "&SHY;", "&zwj;", "&zwnj;",
           "&#8203;", "&#x200b;", "&#X200D;", "&#173;", "&#xad;", "&#xAD;", "&#x2060;", "&#8288;", "&#8203",
           "\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\u034f", "\u180e", "\ufeff", "\u200e", "\u202e",
           "\ufe0f", "\ufe00", "\U000e0041", "\U000e0020", "\U000e0100", "\U0001f3f4", "\U0001f600", "\x01", "\x7f",
           "<b>", "</b>", "ignore", "previous", "instructions", "ق", "क"]


def inputs() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for f in sorted(WCXB.glob("*.html.gz")):
        with gzip.open(f, "rb") as fh:
            out.append((f.name, fh.read().decode("utf-8", "replace")))
    for d in ("injection", "walls"):
        for f in sorted((ROOT / "tests" / "fixtures" / d).rglob("*")):
            if f.is_file():
                out.append((str(f.relative_to(ROOT)), f.read_text(encoding="utf-8", errors="replace")))
    rng = random.Random(25)
    for i in range(3000):
        out.append((f"generated-{i}", "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 60)))))
    return out


def child(daemon: str, dump: str) -> None:
    sys.path.insert(0, daemon)
    from trawl.sanitise import chars, clean_document
    from trawl.sanitise.hidden import scan
    from trawl.types import Document, Page

    results: dict[str, str] = {}
    for name, text in inputs():
        got: list[object] = []
        for t in (text, text[:20_000]):
            got += [chars.has_invisible(t), chars.may_split_words(t), chars.disguised_snippets(t),
                    chars.decode_tags(t), chars.decode_variation_runs(t), chars.strip_invisible(t)]
        if not name.startswith("generated-"):
            s = scan(text)
            got += [[(p.reason, p.text) for p in s.passages], s.visible_words, s.unchecked]
        page = Page(url="https://example.org/", final_url="https://example.org/", kind="html", source="file",
                    html=text)
        doc = Document(markdown=text[:20_000], title=text[:300])
        d = clean_document(doc, page)
        got += [d.markdown, d.title, d.hidden_text, d.warnings]
        results[name] = hashlib.sha256(pickle.dumps(got)).hexdigest()
    Path(dump).write_text(json.dumps(results))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="a tree holding daemon/trawl (the base commit's)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for label, daemon in (("before", args.before / "daemon"), ("after", ROOT / "daemon")):
            out = Path(tmp) / f"{label}.json"
            env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
            subprocess.run([sys.executable, __file__, "--before", str(args.before), "--child", str(daemon), str(out)],
                           check=True, env=env)
            runs.append(json.loads(out.read_text()))
    before, after = runs
    differ = [k for k in before if before[k] != after.get(k)]
    print(f"{len(before)} inputs ({sum(not k.startswith('generated-') for k in before)} pages and fixtures), "
          f"{len(differ)} differ")
    for k in differ[:50]:
        print("  differs:", k)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
