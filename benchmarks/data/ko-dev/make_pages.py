"""Builds the ko-dev pages (``pages/*.html``) and ``questions.jsonl`` from ``texts.py``; deterministic.

    .venv/bin/python benchmarks/data/ko-dev/make_pages.py
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from texts import PAGES, QUESTIONS  # noqa: E402


def render(title: str, sections: list[tuple[str, list[str]]]) -> str:
    body = [f"<h1>{html.escape(title)}</h1>"]
    for heading, paras in sections:
        body.append(f"<h2>{html.escape(heading)}</h2>")
        body.extend(f"<p>{html.escape(p)}</p>" for p in paras)
    return (
        '<!DOCTYPE html>\n<html lang="ko"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)} - 백과</title></head>\n<body>\n"
        '<nav><a href="/">대문</a> <a href="/random">임의 문서</a> <a href="/help">도움말</a></nav>\n'
        "<main><article>\n" + "\n".join(body) + "\n</article></main>\n"
        "<footer><p>이 문서는 ko-dev 점검용으로 쓴 가상의 내용입니다.</p></footer>\n</body></html>\n"
    )


def main() -> None:
    (HERE / "pages").mkdir(exist_ok=True)
    for name, (title, sections) in PAGES.items():
        (HERE / "pages" / f"{name}.html").write_text(render(title, sections), encoding="utf-8")
    counts: dict[str, int] = {}
    with (HERE / "questions.jsonl").open("w", encoding="utf-8") as out:
        for page, qlang, question, answers in QUESTIONS:
            text = " ".join(p for _, paras in PAGES[page][1] for p in paras)
            missing = [a for a in answers if a not in text]
            assert len(missing) < len(answers), f"no answer of {question!r} is on its page"
            n = counts[page] = counts.get(page, 0) + 1
            row = {
                "id": f"{qlang}>ko-{page}-q{n}", "url": f"https://ko-dev.invalid/wiki/{page}",
                "html_path": f"pages/{page}.html", "title": PAGES[page][0], "question": question,
                "answers": answers, "question_lang": qlang, "lang": "ko",
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
