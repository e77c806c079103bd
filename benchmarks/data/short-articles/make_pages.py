"""Builds the written part of the short-article check: each article of texts.py in several page templates.

    .venv/bin/python benchmarks/data/short-articles/make_pages.py     # rewrites html/ and ground-truth/

Output is in WCXB's layout (html/NNNN.html.gz, ground-truth/NNNN.json with ``ground_truth.main_content`` and
``_internal.page_type``), so benchmarks/bench_extract.py reads it like any WCXB split. The reference is the
article's paragraphs and subheadings: not its title, byline or date, and none of the furniture around it.
The templates differ in markup on purpose (semantic tags or div soup, metadata or none, the rail before or
after the article, records with or without headings); see README.md for the rules.
"""

from __future__ import annotations

import gzip
import html as _html
import json
from collections.abc import Callable
from pathlib import Path

from texts import ARTICLES, COMMENTS, LABELS, RAILS, TEASERS, Article

HERE = Path(__file__).resolve().parent
e = _html.escape


def _body(a: Article, p_tag: str = "p", h_tag: str = "h2") -> str:
    out = []
    for para in a.paragraphs:
        if para.startswith("## "):
            out.append(f"<{h_tag}>{e(para[3:])}</{h_tag}>")
        else:
            out.append(f"<{p_tag}>{e(para)}</{p_tag}>")
    return "\n".join(out)


def _nav(lang: str, cls: str = "nav") -> str:
    lab = LABELS[lang]
    items = "".join(f'<li><a href="/{k}">{e(lab[k])}</a></li>' for k in ("home", "news", "sport", "culture"))
    return f'<ul class="{cls}">{items}</ul>'


def _head(a: Article, meta: str) -> str:
    return (f'<!DOCTYPE html><html lang="{a.lang}"><head><meta charset="utf-8"><title>{e(a.title)} | The Gazette'
            f"</title>{meta}</head>")


def _ld(a: Article, kind: str, graph: bool = False) -> str:
    obj = {"@type": kind, "headline": a.title, "datePublished": a.date, "author": {"@type": "Person",
           "name": a.byline}, "inLanguage": a.lang}
    data = {"@context": "https://schema.org", "@graph": [{"@type": "WebSite", "name": "Gazette"}, obj]} if graph \
        else {"@context": "https://schema.org", **obj}
    return f'<script type="application/ld+json">{json.dumps(data, ensure_ascii=False)}</script>'


def classic(a: Article) -> str:
    """Semantic markup, og:type article; a latest-news rail (headline, byline, time) in an <aside>."""
    lab = LABELS[a.lang]
    rail = "".join(f'<li><a href="/n/{i}">{e(h)}</a> <span class="by">{e(b)}</span> <time>{e(t)}</time></li>'
                   for i, (h, b, t) in enumerate(RAILS[a.lang]))
    return (_head(a, f'<meta property="og:type" content="article"><meta property="og:title" content="{e(a.title)}">')
            + f"<body><header><a class=logo href=/>The Gazette</a><nav>{_nav(a.lang)}</nav></header>"
            + f'<main><article><h1>{e(a.title)}</h1><p class="byline">{e(a.byline)} · <time>{a.date}</time></p>'
            + _body(a) + f'</article><aside class="latest"><h2>{e(lab["latest"])}</h2><ul>{rail}</ul></aside></main>'
            + "<footer><p>© 2026 The Gazette</p></footer></body></html>")


def divsoup(a: Article) -> str:
    """No semantic tags and no metadata; more-stories items and reader comments as sibling divs."""
    lab = LABELS[a.lang]
    more = "".join(f'<div class="item"><a href="/s/{i}"><h3>{e(h)}</h3></a><p>{e(s)}</p>'
                   f'<span class="time">{e(RAILS[a.lang][i][2])}</span></div>'
                   for i, (h, s) in enumerate(TEASERS[a.lang]))
    comments = "".join(f'<div class="comment"><span class="author">{e(n)}</span> <span class="when">{e(t)}</span>'
                       f"<div class=text>{e(c)}</div></div>" for n, t, c in COMMENTS[a.lang])
    return (_head(a, "") + f'<body><div id="page"><div class="top">{_nav(a.lang, "menu")}</div>'
            + f'<div class="story"><div class="story-title"><h1>{e(a.title)}</h1></div>'
            + f'<div class="meta">{e(a.byline)} | {a.date}</div><div class="story-text">{_body(a)}</div></div>'
            + f'<div class="more-stories"><div class="label">{e(lab["more"])}</div>{more}</div>'
            + f'<div class="comments"><div class="label">{e(lab["comments"])} ({len(COMMENTS[a.lang])})</div>'
            + f"{comments}</div></div></body></html>")


def breaking(a: Article) -> str:
    """JSON-LD NewsArticle; a top-stories section of <article> cards (heading, byline, time) after the story."""
    lab = LABELS[a.lang]
    cards = "".join(f'<article class="card"><h2><a href="/t/{i}">{e(h)}</a></h2><p class="byline">{e(b)}</p>'
                    f"<time>{e(t)}</time></article>" for i, (h, b, t) in enumerate(RAILS[a.lang]))
    return (_head(a, _ld(a, "NewsArticle")) + f"<body><header>{_nav(a.lang)}</header><div class=wrap>"
            + f'<article class="story"><h1>{e(a.title)}</h1><div class="byline">{e(a.byline)}</div>'
            + f'<div class="story-body">{_body(a)}</div><div class="share">{e(lab["share"])}</div></article>'
            + f'<section class="top-stories"><h2>{e(lab["top"])}</h2>{cards}</section></div></body></html>')


def blog(a: Article) -> str:
    """A blog theme: BlogPosting JSON-LD, a comment list of <li>s, a recent-posts widget."""
    lab = LABELS[a.lang]
    comments = "".join(
        f'<li class="comment"><div class="comment-author"><b>{e(n)}</b></div><div class="comment-meta">{e(t)}</div>'
        f'<div class="comment-content"><p>{e(c)}</p></div></li>' for n, t, c in COMMENTS[a.lang])
    recent = "".join(f'<li><a href="/p/{i}">{e(h)}</a></li>' for i, (h, _) in enumerate(TEASERS[a.lang]))
    return (_head(a, _ld(a, "BlogPosting")) + "<body><div class=site>"
            + f'<main id="main"><article class="post"><header class="entry-header"><h1>{e(a.title)}</h1>'
            + f'<div class="post-meta">{e(a.byline)} — {a.date}</div></header><div class="entry-content">'
            + _body(a) + f'</div></article><section id="comments"><h2>{e(lab["comments"])}</h2>'
            + f'<ol class="commentlist">{comments}</ol></section></main>'
            + f'<div class="widget-area"><section class="widget"><h2>{e(lab["latest"])}</h2><ul>{recent}</ul>'
            + "</section></div></div></body></html>")


def magazine(a: Article) -> str:
    """JSON-LD Article inside an @graph; a numbered side rail, a related-articles tile grid, cookie and newsletter
    boxes; the story's paragraphs split over several blocks."""
    lab = LABELS[a.lang]
    side = "".join(f'<li><a href="/m/{i}"><span class="title">{e(h)}</span></a><span class="time">{e(t)}</span>'
                   "</li>" for i, (h, _, t) in enumerate(RAILS[a.lang]))
    tiles = "".join(f'<a class="tile" href="/r/{i}"><h4>{e(h)}</h4><p>{e(s)}</p></a>'
                    for i, (h, s) in enumerate(TEASERS[a.lang]))
    blocks = []
    paras = list(a.paragraphs)
    for i in range(0, len(paras), 2):
        chunk = Article(a.slug, a.lang, a.title, a.byline, a.date, tuple(paras[i:i + 2]))
        blocks.append(f'<div class="text-block">{_body(chunk, h_tag="h3")}</div>')
    return (_head(a, _ld(a, "Article", graph=True))
            + f'<body><div id="cookie-banner"><p>{e(lab["cookies"])}</p><button>OK</button></div>'
            + f'<div class="layout"><div class="col-main"><h1 class="headline">{e(a.title)}</h1>'
            + f'<div class="author-line">{e(a.byline)}<br>{a.date}</div>' + "".join(blocks)
            + f'<div class="grid"><h3 class="grid-title">{e(lab["related"])}</h3>{tiles}</div></div>'
            + f'<div class="col-side"><h3>{e(lab["latest"])}</h3><ol>{side}</ol>'
            + f'<form class="signup"><p>{e(lab["newsletter"])}</p><input type=email></form></div></div></body></html>')


def rail_first(a: Article) -> str:
    """The rail comes first in the DOM (a left column of news items with headings and snippets), the article
    after it in a plain <div id="content">; og:type article only."""
    lab = LABELS[a.lang]
    items = "".join(f'<div class="news-item"><h4><a href="/x/{i}">{e(h)}</a></h4><p>{e(s)}</p></div>'
                    for i, (h, s) in enumerate(TEASERS[a.lang]))
    return (_head(a, '<meta property="og:type" content="article">')
            + f'<body><div class="columns"><div class="left-col"><h3>{e(lab["next"])}</h3>{items}</div>'
            + f'<div id="content"><h1>{e(a.title)}</h1><p class="date">{a.date} — {e(a.byline)}</p>'
            + f'<div class="text">{_body(a)}</div></div></div></body></html>')


TEMPLATES: tuple[Callable[[Article], str], ...] = (classic, divsoup, breaking, blog, magazine, rail_first)
PER_ARTICLE = 3  # each article appears in this many templates (rotating), so every template meets every language


def reference(a: Article) -> str:
    return "\n\n".join(p[3:] if p.startswith("## ") else p for p in a.paragraphs)


def main() -> None:
    for sub in ("html", "ground-truth"):
        (HERE / sub).mkdir(exist_ok=True)
        for old in (HERE / sub).iterdir():
            old.unlink()
    n = 0
    for i, a in enumerate(ARTICLES):
        for k in range(PER_ARTICLE):
            tpl = TEMPLATES[(i + 2 * k) % len(TEMPLATES)]
            n += 1
            fid = f"{n:04d}"
            url = f"https://gazette.example/{a.lang}/{a.slug}-{tpl.__name__}"
            (HERE / "html" / f"{fid}.html.gz").write_bytes(gzip.compress(tpl(a).encode("utf-8"), mtime=0))
            gt = {"url": url, "file_id": fid,
                  "_internal": {"page_type": {"primary": "article"}, "template": tpl.__name__, "lang": a.lang},
                  "ground_truth": {"title": a.title, "main_content": reference(a)}}
            (HERE / "ground-truth" / f"{fid}.json").write_text(json.dumps(gt, ensure_ascii=False, indent=1) + "\n",
                                                             encoding="utf-8")
    print(f"wrote {n} pages")


if __name__ == "__main__":
    main()
