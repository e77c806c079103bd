"""Page profiles: per site, the element that holds a page's main content, learnt from the rendered DOM and the
extraction result, reused on the site's next pages while it keeps matching and agreeing with the extractor.

A site is an origin: scheme, host and port (``https://docs.python.org:443``); another port or scheme of the same
host name is another site (another server, perhaps another user's) and never shares its profile.

    learn(html, doc)           -> Selector | None   the smallest element whose text is the extracted text
    region(html, sel, ...)     -> Region | None     that element's markdown on a new page (chrome and hidden text out)
    agrees(doc_text, region)   -> bool              the extractor's words lie in the region, which is not much more
    Profiles(settings)                              the per-site store (the cache's one DiskStore) and the policy
    Profiles.extractor()       -> stages.Extractor  the extract stage with profiles (``page_profiles="on"``)

A selector is one element step: ``tag#id``, ``tag.class.class`` or a lone ``tag`` (main, article), kept only when
it names exactly one element of the page it was learnt from and its names look stable (no long digit runs, no
build hashes). It is stored as data (tag, id, classes) validated by a strict pattern and matched by an XPath built
from those names, never as text the page wrote.

Policy: a site's profile is learnt from a page whose extraction it reproduces (F1 >= LEARN_F1), from an element
that does not hold (nearly) the whole page: never ``body`` or ``html``, never an element with fewer than
OUTSIDE_MIN_WORDS of the page's words outside it, chrome included (a page whose text sits directly in its body
would otherwise teach "read everything" to every later page of its site, the comment boxes and notes the extractor
leaves out included). On a later page, when the selector names exactly one element, that element does not hold
(nearly) the whole page, and its region agrees with the extractor (it holds AGREE_CONTAINS of the extractor's words
and at most AGREE_MAX_RATIO times as many), the region's markdown is the document (the profile's reading: all of
the content element, where the extractor may have dropped a table or a list); otherwise the extractor's document
stands and the profile counts a miss. The extractor always runs: a profile never reads a page alone. A profile
that no longer matches the page, or misses MAX_MISSES pages in a row, is dropped (and a new one may be learnt from
that page). ``profile_page`` shows and resets a site's profile.

Measured (benchmarks/bench_profiles.py, wcxb-dev's hosts with several pages): see the README; profiles are off by
default (``TRAWL_PAGE_PROFILES=off``) because they did not raise F1 there.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from lxml import etree

from .cache.salt import cache_key, keyed_name
from .cache.store import DiskStore
from .extract import extract
from .extract.dom import parse_html, strip_chrome
from .extract.guard import strip_heavy, trim_html
from .extract.markdown import element_text, to_markdown
from .extract.shadow import flatten_shadow_roots
from .extract.visibility import apply_hidden, find_hidden
from .settings import Settings
from .types import Document, Page

log = logging.getLogger("trawl.profiles")

LEARN_F1 = 0.85  # a profile is learnt only from an element that reproduces the extraction this well
AGREE_CONTAINS = 0.85  # reuse: this share of the extractor's words must lie in the region ...
AGREE_MAX_RATIO = 1.2  # ... and the region may hold at most this many times the extractor's words
OUTSIDE_MIN_WORDS = 8  # an element with fewer of the page's words outside it (chrome included) is the whole page
MAX_MISSES = 2  # consecutive disagreements that drop a profile
MIN_WORDS = 30  # pages with less extracted text teach nothing
CANDIDATE_TAGS = frozenset({"div", "main", "article", "section", "td"})  # never body/html: the whole page
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_UNSTABLE = re.compile(r"\d{4,}|^(?:css|sc|jsx|svelte|emotion)-|[0-9a-f]{8,}|__[A-Za-z0-9]{5,}$", re.I)
_WORD = re.compile(r"\w+")
_HOST = re.compile(r"^[a-z0-9.-]{1,253}$")
_ORIGIN = re.compile(r"^https?://[a-z0-9.-]{1,253}:\d{1,5}$")
_PORTS = {"http": 80, "https": 443}
_SUFFIX = ".profile"


@dataclass(frozen=True)
class Selector:
    tag: str
    id: str = ""
    classes: tuple[str, ...] = ()

    def css(self) -> str:
        return self.tag + (f"#{self.id}" if self.id else "") + "".join(f".{c}" for c in self.classes)

    def xpath(self) -> str:
        """The XPath that finds it; every name was checked against _NAME, so none can break out of a literal."""
        conds = [f"@id='{self.id}'"] if self.id else []
        conds += [f"contains(concat(' ', normalize-space(@class), ' '), ' {c} ')" for c in self.classes]
        return f"//{self.tag}" + "".join(f"[{c}]" for c in conds)

    @classmethod
    def of(cls, data: Any) -> Selector:
        """From stored data; ValueError when any name is not a plain, safe one."""
        if not isinstance(data, dict):
            raise ValueError("not a selector")
        tag, id_, classes = data.get("tag"), data.get("id", ""), data.get("classes", [])
        if not isinstance(classes, list | tuple) or len(classes) > 4:
            raise ValueError("bad classes")
        names = [tag, *([id_] if id_ else []), *classes]
        if not all(isinstance(n, str) and _NAME.match(n) for n in names) or tag not in CANDIDATE_TAGS:
            raise ValueError("bad name")
        return cls(tag=str(tag), id=str(id_), classes=tuple(str(c) for c in classes))


@dataclass
class Profile:
    host: str
    selector: Selector
    learnt_at: float
    learnt_f1: float
    hits: int = 0
    misses: int = 0  # consecutive
    pages: int = 0  # pages seen since it was learnt

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["selector"] = {"tag": self.selector.tag, "id": self.selector.id, "classes": list(self.selector.classes)}
        return d

    @classmethod
    def from_json(cls, data: Any) -> Profile:
        if not isinstance(data, dict):
            raise ValueError("not a profile")
        ints = [data.get(k, 0) for k in ("hits", "misses", "pages")]
        if not all(isinstance(v, int) and v >= 0 for v in ints):
            raise ValueError("bad counters")
        host, at, f1 = data.get("host"), data.get("learnt_at"), data.get("learnt_f1")
        if not isinstance(host, str) or not isinstance(at, int | float) or not isinstance(f1, int | float):
            raise ValueError("bad fields")
        return cls(host=host, selector=Selector.of(data.get("selector")), learnt_at=float(at), learnt_f1=float(f1),
                   hits=ints[0], misses=ints[1], pages=ints[2])


@dataclass(frozen=True)
class Region:
    markdown: str
    hidden_text: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)
    outside: int = 0  # the page's words outside the element (chrome included): few means the whole page


# --- the DOM side ------------------------------------------------------------------------------------------------


def _words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in _WORD.findall(text))


def _prepared_root(html: str, settings: Settings) -> etree._Element | None:
    html, _ = trim_html(strip_heavy(flatten_shadow_roots(html)), settings.extract_max_html_chars)
    return parse_html(html)


def _stable(name: str) -> bool:
    return bool(_NAME.match(name)) and not _UNSTABLE.search(name)


def _selector_for(el: etree._Element, root: etree._Element) -> Selector | None:
    """A one-step selector naming ``el`` and nothing else on the page; None when no stable one exists."""
    tag = el.tag if isinstance(el.tag, str) else ""
    if tag not in CANDIDATE_TAGS:
        return None
    options: list[Selector] = []
    id_ = (el.get("id") or "").strip()
    if id_ and _stable(id_):
        options.append(Selector(tag, id=id_))
    classes = [c for c in (el.get("class") or "").split() if _stable(c)][:3]
    if classes:
        options.append(Selector(tag, classes=tuple(classes)))
    if tag in ("main", "article"):
        options.append(Selector(tag))
    for sel in options:
        found = root.xpath(sel.xpath())
        if len(found) == 1 and found[0] is el:
            return sel
    return None


def _f1(a: Counter[str], b: Counter[str]) -> float:
    common = sum((a & b).values())
    if not common:
        return 0.0
    p, r = common / sum(b.values()), common / sum(a.values())
    return 2 * p * r / (p + r)


def _count(text: str) -> int:
    return len(_WORD.findall(text))


def _whole(root: etree._Element) -> int:
    """The words of the page's body, chrome included (what 'the whole page' is measured against)."""
    body = root.find("body")
    return _count(element_text(body if body is not None else root))


def _is_whole_page(words: int, whole: int) -> bool:
    return whole - words < OUTSIDE_MIN_WORDS


def learn(html: str, doc_markdown: str, settings: Settings) -> tuple[Selector, float] | None:
    """The selector of the element whose text best reproduces ``doc_markdown`` (with its F1), if one does well and
    does not hold (nearly) the whole page."""
    want = _words(doc_markdown)
    n = sum(want.values())
    if n < MIN_WORDS:
        return None
    root = _prepared_root(html, settings)
    if root is None:
        return None
    whole = _whole(root)
    strip_chrome(root)  # the same chrome the region reader drops
    best: tuple[float, int, etree._Element] | None = None
    for el in root.iter(*CANDIDATE_TAGS):
        text = element_text(el)
        if len(text) < 0.25 * len(doc_markdown):  # far too little text to hold the extraction
            continue
        if _is_whole_page(_count(text), whole):  # the page itself, not its content element: never learnt
            continue
        f1 = _f1(want, _words(text))
        # near-ties (the same F1 to two places) go to the smaller element: the content, not a wrapper of it
        if best is None or (round(f1, 2), -len(text)) >= (round(best[0], 2), -best[1]):  # later = deeper
            best = (f1, len(text), el)
    if best is None or best[0] < LEARN_F1:
        return None
    # The best element may have no stable name: its nearest named ancestor that still reproduces the text will do.
    node: etree._Element | None = best[2]
    while node is not None:
        sel = _selector_for(node, root)
        if sel is not None:
            text = element_text(node)
            if _is_whole_page(_count(text), whole):
                return None
            f1 = best[0] if node is best[2] else _f1(want, _words(text))
            return (sel, round(f1, 4)) if f1 >= LEARN_F1 else None
        node = node.getparent()
    return None


def region(html: str, sel: Selector, settings: Settings) -> Region | None:
    """The selected element's markdown on this page (chrome out, hidden text cut or marked as the extractor does);
    None when the selector does not name exactly one element."""
    raw = flatten_shadow_roots(html.replace("\x00", ""))
    root = _prepared_root(raw, settings)
    if root is None:
        return None
    found = root.xpath(sel.xpath())
    if len(found) != 1 or not isinstance(found[0], etree._Element):
        return None
    outside = _whole(root) - _count(element_text(found[0]))
    el = copy.deepcopy(found[0])
    holder = etree.Element("div")
    holder.append(el)
    strip_chrome(holder)
    md = to_markdown(holder)
    warnings: list[str] = []
    md, hidden = apply_hidden(md, find_hidden(raw), settings, warnings)
    return Region(md, hidden, tuple(warnings), outside)


def agrees(doc_markdown: str, region_markdown: str) -> bool:
    a, b = _words(doc_markdown), _words(region_markdown)
    na, nb = sum(a.values()), sum(b.values())
    if not na or not nb:
        return False
    return sum((a & b).values()) >= AGREE_CONTAINS * na and nb <= AGREE_MAX_RATIO * na


def host_of(page: Page) -> str:
    """The page's site, the key of its profile: ``scheme://host:port`` (the port always written out); "" when the
    page is not an http(s) page with a plain host name."""
    return origin_key(page.final_url or page.url)


def origin_key(text: str) -> str:
    """``scheme://host:port`` from a URL, or from a bare ``host`` / ``host:port`` (https assumed); "" if none."""
    from urllib.parse import urlsplit

    text = text.strip()
    try:
        parts = urlsplit(text if "://" in text else f"https://{text}")
        port = parts.port
    except ValueError:
        return ""
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in _PORTS or not _HOST.match(host):
        return ""
    return f"{scheme}://{host}:{port or _PORTS[scheme]}"


def _site(text: str) -> str:
    return text if _ORIGIN.match(text) else origin_key(text)


# --- the store and the policy ------------------------------------------------------------------------------------


class Profiles:
    """Per-site profiles in the cache's one store (``<cache_dir>/profiles``, HMAC-named files, 0600), keyed by
    origin (:func:`origin_key`; :meth:`get` and :meth:`reset` take a URL or host too)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._disk = DiskStore(Path(settings.cache_dir), Path(settings.cache_dir) / "profiles", suffix=_SUFFIX,
                               max_bytes=2_000_000, log=log)
        self._salt: bytes | None = None
        self._lock = threading.Lock()

    def _name(self, site: str) -> str:
        if self._salt is None:
            self._salt = cache_key(self.settings.state_dir)
        return keyed_name(self._salt, b"profile\x00" + _site(site).encode())

    def get(self, site: str) -> Profile | None:
        host = _site(site)
        if not host:
            return None
        blob = self._disk.read(self._name(host))
        if blob is None:
            return None
        try:
            prof = Profile.from_json(json.loads(blob))
        except (ValueError, UnicodeDecodeError, RecursionError):
            self._disk.discard(self._name(host))
            return None
        return prof if _site(prof.host) == host else None

    def put(self, prof: Profile) -> None:
        self._disk.write(self._name(prof.host), json.dumps(prof.to_json()).encode())

    def reset(self, site: str) -> bool:
        host = _site(site)
        if not host:
            return False
        had = self.get(host) is not None
        self._disk.discard(self._name(host))
        return had

    def apply(self, page: Page, doc: Document) -> tuple[Document, str]:
        """The document for ``page`` given the extractor's ``doc``, and what the profile did (for warnings and the
        benchmark): "reused", "learnt", "missed", "dropped", or "" (nothing to do)."""
        host = host_of(page)
        if page.kind != "html" or not host or not page.html or not doc.markdown.strip():
            return doc, ""
        with self._lock:
            prof = self.get(host)
            if prof is not None:
                prof.pages += 1
                reg = region(page.html, prof.selector, self.settings)
                if reg is not None and reg.outside >= OUTSIDE_MIN_WORDS and agrees(doc.markdown, reg.markdown):
                    prof.hits += 1
                    prof.misses = 0
                    self.put(prof)
                    return replace(doc, markdown=reg.markdown, extractor=f"profile+{doc.extractor}",
                                   hidden_text=tuple(dict.fromkeys((*doc.hidden_text, *reg.hidden_text))),
                                   warnings=tuple(dict.fromkeys((*doc.warnings, *reg.warnings)))), "reused"
                prof.misses += 1
                if reg is not None and prof.misses < MAX_MISSES:
                    self.put(prof)
                    return doc, "missed"
                self._disk.discard(self._name(host))  # it stopped matching: learn again from this page
                learnt = self._learn(host, page.html, doc)
                return doc, "learnt" if learnt else "dropped"
            return doc, "learnt" if self._learn(host, page.html, doc) else ""

    def _learn(self, host: str, html: str, doc: Document) -> bool:
        got = learn(html, doc.markdown, self.settings)
        if got is None:
            return False
        self.put(Profile(host=host, selector=got[0], learnt_at=time.time(), learnt_f1=got[1]))
        return True

    def extractor(self) -> Any:
        """The extract stage with profiles: the extractor runs, then the host's profile is applied or learnt."""

        def run(page: Page, settings: Settings) -> Document:
            doc = extract(page, settings)
            try:
                return self.apply(page, doc)[0]
            except Exception:  # a profile must never cost the page
                log.exception("page profile failed on %s", host_of(page))
                return doc

        return run
