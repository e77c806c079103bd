"""Builds the article set (README.md beside this file) in WCXB's layout, so bench_extract.py reads it like any split.

    .venv/bin/python benchmarks/data/articles/make_pages.py [QA_DEV_DIR] [OUT_DIR]

Two parts, written to OUT_DIR (default: ``build_dir()``, a folder under the system temp dir):

- **prose** (``p*``): the paragraphs of each ``qa-dev`` page (XQuAD / JSQuAD text, CC BY-SA 4.0, read from
  ``../shared/bench/qa-dev`` at build time, never copied into this repository), split into one or two stories and
  set in one of six news and blog templates with the furniture such sites carry (rails of other headlines with
  teasers, related-story grids, comments, a newsletter box, a cookie banner), in the story's language. The
  furniture is taken from the *other* pages of the same language, so it reads like real headlines and comments.
  Reference = the story's paragraphs, known exactly because the page is built from them.
- **real** (``n*``): real news pages from newspaper4k's test fixtures (``real/``, MIT licence, see ATTRIBUTION.md),
  reference = newspaper4k's expected article text with the hand corrections listed in ``real/corrections.json``.
"""

from __future__ import annotations

import gzip
import html as _html
import json
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
QA_DEV = ROOT.parent / "shared" / "bench" / "qa-dev"
REAL = HERE / "real"
e = _html.escape
_P = re.compile(r"<p>(.*?)</p>", re.S)
_H1 = re.compile(r"<h1[^>]*>(.*?)</h1>", re.S)
_TAG = re.compile(r"<[^>]+>")
_SENT = re.compile(r"(?<=[.!?。！？])\s*")

LABELS: dict[str, dict[str, str]] = {
    "en": {"latest": "Latest news", "related": "Related stories", "comments": "Comments", "most": "Most read",
           "news": "News", "world": "World", "culture": "Culture", "sport": "Sport", "also": "Read also",
           "letter": "Get our morning briefing in your inbox", "cookie": "We use cookies to improve your experience.",
           "by": "By", "share": "Share this story", "tags": "Tags"},
    "de": {"latest": "Neueste Meldungen", "related": "Das könnte Sie auch interessieren", "comments": "Kommentare",
           "most": "Meistgelesen", "news": "Nachrichten", "world": "Welt", "culture": "Kultur", "sport": "Sport",
           "also": "Lesen Sie auch", "letter": "Unser Newsletter am Morgen", "by": "Von",
           "cookie": "Wir verwenden Cookies, um Ihnen ein besseres Erlebnis zu bieten.", "share": "Artikel teilen",
           "tags": "Themen"},
    "ru": {"latest": "Последние новости", "related": "Читайте также", "comments": "Комментарии",
           "most": "Самое читаемое", "news": "Новости", "world": "В мире", "culture": "Культура", "sport": "Спорт",
           "also": "По теме", "letter": "Подпишитесь на утреннюю рассылку", "by": "Автор",
           "cookie": "Мы используем файлы cookie.", "share": "Поделиться", "tags": "Теги"},
    "ja": {"latest": "最新ニュース", "related": "関連記事", "comments": "コメント", "most": "よく読まれている記事",
           "news": "ニュース", "world": "国際", "culture": "文化", "sport": "スポーツ", "also": "あわせて読みたい",
           "letter": "朝のニュースレターを受け取る", "by": "文", "cookie": "当サイトはクッキーを使用しています。",
           "share": "この記事をシェア", "tags": "タグ"},
    "zh": {"latest": "最新消息", "related": "相关报道", "comments": "评论", "most": "热门阅读", "news": "新闻",
           "world": "国际", "culture": "文化", "sport": "体育", "also": "延伸阅读", "letter": "订阅我们的早间简报",
           "by": "作者", "cookie": "本网站使用 Cookie 以改善您的体验。", "share": "分享", "tags": "标签"},
}
NAMES = ("Anna K.", "M. Rossi", "jpark", "Lena_84", "O. Ivanova", "tanaka_h", "Wei L.", "S. Brooks")
TIMES = ("08:15", "09:42", "11:03", "12:30", "14:57", "16:20", "18:45", "21:10")


class Story:
    def __init__(self, sid: str, lang: str, title: str, paragraphs: list[str]) -> None:
        self.sid, self.lang, self.title, self.paragraphs = sid, lang, title, paragraphs

    def reference(self) -> str:
        return "\n\n".join(self.paragraphs)


def _text(fragment: str) -> str:
    return re.sub(r"\s+", " ", _html.unescape(_TAG.sub("", fragment))).strip()


def _headline(par: str, lang: str) -> str:
    """A headline-sized piece of a paragraph: its first sentence, cut to a headline's length."""
    first = _SENT.split(par, maxsplit=1)[0]
    if lang in ("ja", "zh"):
        return first[:28]
    return " ".join(first.split()[:12])


def _teaser(par: str, lang: str) -> str:
    if lang in ("ja", "zh"):
        return par[28:80]
    return " ".join(par.split()[12:34])


def read_sources(qa_dir: Path) -> list[tuple[str, str, str, list[str]]]:
    """(page id, language, title, paragraphs) of every qa-dev page, in a fixed order."""
    out = []
    for path in sorted((qa_dir / "pages").glob("*/*.html")):
        raw = path.read_text(encoding="utf-8")
        m = _H1.search(raw)
        paras = [_text(p) for p in _P.findall(raw.split("<article>", 1)[-1].split("</article>", 1)[0])]
        paras = [p for p in paras if p]
        if paras:
            out.append((path.stem, path.parent.name, _text(m.group(1)) if m else path.stem, paras))
    return out


def stories(qa_dir: Path) -> tuple[list[Story], dict[str, list[str]]]:
    """Each source page's paragraphs as one or two stories (lengths vary: some short, some long), and per
    language the pool of paragraphs furniture is made from (the stories' own, picked away from each story)."""
    out: list[Story] = []
    pool: dict[str, list[str]] = {}
    for i, (pid, lang, title, paras) in enumerate(read_sources(qa_dir)):
        pool.setdefault(lang, []).extend(paras)
        if len(paras) >= 4:  # two stories: the first one or two paragraphs (often short), then the rest
            k = 1 + i % 2
            out.append(Story(f"{pid}a", lang, title, paras[:k]))
            out.append(Story(f"{pid}b", lang, f"{title} (2)", paras[k:]))
        else:
            out.append(Story(pid, lang, title, paras))
    return out, pool


class Furniture:
    """Headlines, teasers and comments for a story, from other pages' paragraphs in its language."""

    def __init__(self, story: Story, pool: list[str], seed: int) -> None:
        own = set(story.paragraphs)
        others = [p for p in pool if p not in own]
        n = len(others)
        self.items = [others[(seed * 7 + j * 5) % n] for j in range(min(12, n))] if n else []
        self.lang = story.lang
        self.lab = LABELS.get(story.lang, LABELS["en"])

    def headlines(self, k: int) -> list[tuple[str, str]]:
        return [(_headline(p, self.lang), _teaser(p, self.lang)) for p in self.items[:k]]

    def comments(self, k: int) -> list[tuple[str, str, str]]:
        sents = [_SENT.split(p)[-2] if len(_SENT.split(p)) > 1 else p[:120] for p in self.items[-k:]]
        return [(NAMES[j % len(NAMES)], TIMES[j % len(TIMES)], s) for j, s in enumerate(sents)]


def _nav(f: Furniture) -> str:
    return "<nav><ul>" + "".join(f'<li><a href="/{k}">{e(f.lab[k])}</a></li>'
                                 for k in ("news", "world", "culture", "sport")) + "</ul></nav>"


def _paras(s: Story, tag: str = "p") -> str:
    return "\n".join(f"<{tag}>{e(p)}</{tag}>" for p in s.paragraphs)


def _head(s: Story, meta: str = "") -> str:
    return (f'<!DOCTYPE html><html lang="{s.lang}"><head><meta charset="utf-8"><title>{e(s.title)} – Daily Courier'
            f"</title>{meta}</head><body>")


def _ld(s: Story, kind: str, body: bool) -> str:
    obj: dict[str, object] = {"@context": "https://schema.org", "@type": kind, "headline": s.title,
                              "inLanguage": s.lang, "datePublished": "2024-03-14T09:00:00Z"}
    if body:
        obj["articleBody"] = s.reference()
    return f'<script type="application/ld+json">{json.dumps(obj, ensure_ascii=False)}</script>'


def newsroom(s: Story, f: Furniture) -> str:
    """og:type article and JSON-LD NewsArticle with its articleBody; a latest-news rail in an <aside>."""
    rail = "".join(f'<li><a href="/n/{j}"><h3>{e(h)}</h3></a><p>{e(t)}</p></li>'
                   for j, (h, t) in enumerate(f.headlines(6)))
    return (_head(s, f'<meta property="og:type" content="article">{_ld(s, "NewsArticle", True)}')
            + f"<header>{_nav(f)}</header><main><article><h1>{e(s.title)}</h1>"
            f'<p class="byline">{e(f.lab["by"])} Maria Berg · 14.03.2024</p>{_paras(s)}</article>'
            f'<aside><h2>{e(f.lab["latest"])}</h2><ul>{rail}</ul></aside></main>'
            f"<footer><p>© Daily Courier</p></footer></body></html>")


def portal(s: Story, f: Furniture) -> str:
    """No semantic tags, no metadata: a most-read column beside the story, a related grid under it."""
    most = "".join(f'<div class="mr-item"><span class="num">{j + 1}</span><a href="/m/{j}">{e(h)}</a></div>'
                   for j, (h, _) in enumerate(f.headlines(5)))
    grid = "".join(f'<div class="card"><a href="/r/{j}"><div class="card-title">{e(h)}</div></a>'
                   f'<div class="card-text">{e(t)}</div></div>' for j, (h, t) in enumerate(f.headlines(10)[5:9]))
    return (_head(s) + f'<div class="top">{_nav(f)}</div><div class="wrap"><div class="col-main">'
            f'<div class="headline">{e(s.title)}</div><div class="story-text">{_paras(s)}</div>'
            f'<div class="related"><div class="rel-label">{e(f.lab["related"])}</div>{grid}</div></div>'
            f'<div class="col-side"><div class="mr-label">{e(f.lab["most"])}</div>{most}</div></div>'
            f'<div class="bottom">© Daily Courier</div></body></html>')


def blog(s: Story, f: Furniture) -> str:
    """JSON-LD BlogPosting (no body), tags and share line, then a comment thread."""
    com = "".join(f'<li class="comment"><div class="comment-author">{e(a)}</div><time>{t}</time>'
                  f"<p>{e(c)}</p></li>" for a, t, c in f.comments(4))
    return (_head(s, _ld(s, "BlogPosting", False)) + f'<div class="site-header">{_nav(f)}</div>'
            f'<div class="post"><h1 class="entry-title">{e(s.title)}</h1><div class="entry-content">{_paras(s)}</div>'
            f'<div class="tags">{e(f.lab["tags"])}: <a href="/t/1">{e(f.lab["culture"])}</a></div>'
            f'<div class="share">{e(f.lab["share"])}</div></div>'
            f'<section id="comments"><h2>{e(f.lab["comments"])}</h2><ol>{com}</ol></section></body></html>')


def rail_first(s: Story, f: Furniture) -> str:
    """The rail of teaser cards comes first in the DOM; the story follows in a plain div (og:type only)."""
    cards = "".join(f'<div class="teaser"><h3><a href="/t/{j}">{e(h)}</a></h3><p>{e(t)}</p></div>'
                    for j, (h, t) in enumerate(f.headlines(8)))
    return (_head(s, '<meta property="og:type" content="article">') + _nav(f)
            + f'<div class="rail"><h2>{e(f.lab["latest"])}</h2>{cards}</div>'
            f'<div id="content"><h1>{e(s.title)}</h1>{_paras(s)}</div><div class="foot">© Daily Courier</div>'
            "</body></html>")


def split(s: Story, f: Furniture) -> str:
    """Microdata Article; the story broken by a read-also box and a newsletter box."""
    half = max(1, len(s.paragraphs) // 2)
    first, rest = Story(s.sid, s.lang, s.title, s.paragraphs[:half]), Story(s.sid, s.lang, s.title, s.paragraphs[half:])
    also = "".join(f'<li><a href="/a/{j}">{e(h)}</a></li>' for j, (h, _) in enumerate(f.headlines(2)))
    return (_head(s) + f"<header>{_nav(f)}</header>"
            f'<div itemscope itemtype="https://schema.org/Article"><h1 itemprop="headline">{e(s.title)}</h1>'
            f'<div itemprop="articleBody">{_paras(first)}'
            f'<div class="read-also"><strong>{e(f.lab["also"])}</strong><ul>{also}</ul></div>'
            f'<div class="newsletter"><p>{e(f.lab["letter"])}</p><form><input type="email"><button>OK</button>'
            f"</form></div>{_paras(rest)}</div></div><footer>© Daily Courier</footer></body></html>")


def minimal(s: Story, f: Furniture) -> str:
    """A bare page: heading and paragraphs, a cookie banner, a footer of links."""
    return (_head(s) + f"<h1>{e(s.title)}</h1>{_paras(s)}"
            f'<div class="cookie-banner"><p>{e(f.lab["cookie"])}</p><button>OK</button></div>'
            f'<div class="footer-links">{_nav(f)}</div></body></html>')


TEMPLATES: dict[str, Callable[[Story, Furniture], str]] = {
    "newsroom": newsroom, "portal": portal, "blog": blog, "rail_first": rail_first, "split": split,
    "minimal": minimal,
}  # fmt: skip


def build_dir() -> Path:
    return Path(tempfile.gettempdir()) / "trawl-articles"


def _write(out: Path, pid: str, html: str, ref: str, url: str, group: str, lang: str) -> None:
    (out / "html" / f"{pid}.html.gz").write_bytes(gzip.compress(html.encode("utf-8"), mtime=0))
    gt = {"url": url, "ground_truth": {"main_content": ref},
          "_internal": {"page_type": {"primary": "article"}, "template": group, "lang": lang}}
    (out / "ground-truth" / f"{pid}.json").write_text(json.dumps(gt, ensure_ascii=False), encoding="utf-8")


def build(qa_dir: Path = QA_DEV, out: Path | None = None) -> Path:
    """Write both parts to ``out`` (rewritten whole); returns it."""
    out = out or build_dir()
    for sub in ("html", "ground-truth"):
        (out / sub).mkdir(parents=True, exist_ok=True)
        for old in (out / sub).iterdir():
            old.unlink()
    names = list(TEMPLATES)
    if qa_dir.exists():
        all_stories, pool = stories(qa_dir)
        for i, s in enumerate(all_stories):
            name = names[i % len(names)]
            html = TEMPLATES[name](s, Furniture(s, pool[s.lang], i))
            _write(out, f"p{i:03d}", html, s.reference(), f"https://courier.example/{s.lang}/{s.sid}", name, s.lang)
    corrections = json.loads((REAL / "corrections.json").read_text(encoding="utf-8"))
    for i, (name, fix) in enumerate(sorted(corrections.items())):
        html = gzip.decompress((REAL / f"{name}.html.gz").read_bytes()).decode("utf-8", "replace")
        ref = gzip.decompress((REAL / f"{name}.txt.gz").read_bytes()).decode("utf-8")
        lines = [ln for ln in ref.split("\n") if ln.strip() not in set(fix.get("drop_lines", []))]
        _write(out, f"n{i:03d}", html, "\n".join(lines).strip(), fix.get("url", ""), "real", fix["lang"])
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    where = build(Path(args[0]) if args else QA_DEV, Path(args[1]) if len(args) > 1 else None)
    print(f"built {len(list((where / 'html').iterdir()))} pages in {where}")
