"""Check the paraphrase dev set against its rules (benchmarks/data/paraphrase-dev/README.md).

    .venv/bin/python benchmarks/check_paraphrase.py [--data ../shared/bench] [--set benchmarks/data/paraphrase-dev]

Rules, each enforced here (exit status 1 and one line per broken rule):

1. every question names a wcxb-dev page whose reference text has at least ``MIN_WORDS`` words;
2. every answer is copied from the reference text: it occurs there exactly once (case-folded,
   whitespace-normalised), so an answer found in returned chunks is the right place;
3. the question shares no run of ``RUN`` consecutive words with the sentence that holds the answer
   (words are lower-cased ``\\w+`` matches, the same tokens the extraction score uses);
4. the answer does not occur in the question;
5. ids are unique; at least ``MIN_QUESTIONS`` questions over at least ``MIN_TYPES`` page types.

``--fill`` rewrites ``questions.jsonl`` with the derived fields (page type, url, html path, the
answer's sentence) after the checks pass; the question and answer fields are never changed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

RUN = 4
MIN_WORDS = 1000
MIN_QUESTIONS = 150
MIN_TYPES = 5

_WORD = re.compile(r"\w+")
# A sentence ends at . ! ? (optionally followed by a closing quote or bracket) before whitespace,
# or at a blank line / a line break (headings, list items, table rows).
_END = re.compile(r"""(?<=[.!?])["'”’)\]]*\s+|\n""")


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def runs(ws: list[str], n: int = RUN) -> set[tuple[str, ...]]:
    return {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)}


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence(s) of ``text`` covering ``text[start:end]``.

    Hard-wrapped prose (manual pages, kernel docs) breaks lines inside sentences, so a single line
    break only ends a sentence when the line before it ends in . ! ? or is short (a heading)."""
    bounds = [0]
    for m in _END.finditer(text):
        if m.group(0) == "\n":
            line_start = text.rfind("\n", 0, m.start()) + 1
            line = text[line_start : m.start()].rstrip()
            if line and len(line) > 60 and not line.endswith((".", "!", "?", ":")):
                continue  # a wrapped line: the sentence goes on
        bounds.append(m.end())
    bounds.append(len(text))
    lo = max(b for b in bounds if b <= start)
    hi = min(b for b in bounds if b >= end)
    return text[lo:hi].strip()


def find_once(haystack: str, needle: str) -> tuple[int, int, int]:
    """(count, start, end) of ``needle`` in ``haystack``, case-folded with whitespace runs matched loosely."""
    parts = [re.escape(p) for p in needle.split()]
    pat = re.compile(r"\s+".join(parts), re.IGNORECASE)
    hits = list(pat.finditer(haystack))
    if not hits:
        return 0, -1, -1
    return len(hits), hits[0].start(), hits[0].end()


def check(rows: list[dict[str, Any]], gt_dir: Path) -> tuple[list[str], list[dict[str, Any]]]:
    errors: list[str] = []
    filled: list[dict[str, Any]] = []
    ids = Counter(r.get("id") for r in rows)
    for i, n in ids.items():
        if n > 1:
            errors.append(f"{i}: id used {n} times")
    cache: dict[str, dict[str, Any]] = {}
    for r in rows:
        qid, fid, question = r["id"], r["file_id"], r["question"]
        if fid not in cache:
            cache[fid] = json.loads((gt_dir / f"{fid}.json").read_text(encoding="utf-8"))
        gt = cache[fid]
        text: str = gt["ground_truth"].get("main_content") or ""
        if len(text.split()) < MIN_WORDS:
            errors.append(f"{qid}: page {fid} has {len(text.split())} words (< {MIN_WORDS})")
        sentences = []
        for answer in r["answers"]:
            count, start, end = find_once(text, answer)
            if count != 1:
                errors.append(f"{qid}: answer {answer!r} occurs {count} times on page {fid} (must be once)")
                continue
            if norm(answer) in norm(question):
                errors.append(f"{qid}: the answer {answer!r} is in the question")
            sent = sentence_around(text, start, end)
            shared = runs(words(question)) & runs(words(sent))
            if shared:
                errors.append(f"{qid}: shares {sorted(' '.join(s) for s in shared)} with {sent[:120]!r}")
            sentences.append(re.sub(r"\s+", " ", sent))
        pt = gt.get("_internal", {}).get("page_type", {})
        filled.append(
            {
                "id": qid,
                "file_id": fid,
                "page_type": pt.get("primary") or pt.get("category") or "unknown",
                "url": gt.get("url", ""),
                "html_path": f"html/{fid}.html.gz",
                "question": question,
                "answers": r["answers"],
                "answer_sentences": sentences,
                "lang": r.get("lang", "en"),
                "question_lang": r.get("question_lang", "en"),
            }
        )
    types = Counter(f["page_type"] for f in filled)
    if len(rows) < MIN_QUESTIONS:
        errors.append(f"{len(rows)} questions (< {MIN_QUESTIONS})")
    if len(types) < MIN_TYPES:
        errors.append(f"{len(types)} page types (< {MIN_TYPES}): {dict(types)}")
    return errors, filled


def main() -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(here.parent.parent / "shared" / "bench"))
    ap.add_argument("--set", default=str(here / "data" / "paraphrase-dev"))
    ap.add_argument("--fill", action="store_true", help="write the derived fields back after the checks pass")
    args = ap.parse_args()
    path = Path(args.set) / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    errors, filled = check(rows, Path(args.data) / "wcxb-dev" / "ground-truth")
    for e in errors:
        print(e)
    types = Counter(f["page_type"] for f in filled)
    pages = len({f["file_id"] for f in filled})
    print(f"{len(rows)} questions, {pages} pages, types {dict(sorted(types.items()))}: "
          f"{'FAIL, ' + str(len(errors)) + ' broken rules' if errors else 'all rules hold'}")
    if errors:
        return 1
    if args.fill:
        path.write_text("".join(json.dumps(f, ensure_ascii=False) + "\n" for f in filled), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
