"""JSON, XML and RSS/Atom bodies -> Document, without an HTML extractor in the way.

Each repeated item becomes one record: a heading, its fields as ``key: value`` lines, and a
``---`` line after it so the chunker keeps every record whole. Feeds give one record per
item (title, date, author, summary, link); JSON gives one per element of its main array
(or per top-level key); XML one per child of its main container element. A body that does
not parse comes back as raw text with a warning, never an exception.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

from lxml import etree

from ..settings import Settings
from ..types import Document, Page

log = logging.getLogger("trawl.extract.structured")

_LABEL_KEYS = ("title", "name", "headline", "label", "subject", "summary", "id", "slug", "key", "username", "email")
_WS = re.compile(r"\s+")
_TAG = re.compile(r"<[^>]*>")
_DROP_BLOCKS = re.compile(r"<(script|style)\b.*?</\1\s*>", re.S | re.I)
_BLOCK_TAGS = re.compile(r"</?(p|div|br|li|ul|ol|h[1-6]|tr|table|blockquote|pre|section|article)\b[^>]*>", re.I)
_XSSI = re.compile(r"^\s*(\)\]\}'|while\s*\(1\);|for\s*\(;;\);)\s*")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_LABEL_RANK = {k: i for i, k in enumerate(_LABEL_KEYS)}
_MARK_START = frozenset("#`~-=_*")
_MAX_VALUE_CHARS = 2_000_000  # text values are kept whole (the chunker splits long ones)
_MAX_LIST_CHARS = 20_000  # a list of scalars joined on one line is cut here
_MAX_LABEL_CHARS = 120
_SEP = "---"


def structured_to_document(page: Page, settings: Settings) -> Document:
    text = page.text or ""
    warnings: list[str] = []
    if len(text) > settings.max_passthrough_bytes:
        text = text[: settings.max_passthrough_bytes]
        warnings.append(f"body cut to {settings.max_passthrough_bytes:,} characters")
    try:
        if page.kind == "json":
            markdown, title = _json_markdown(text)
            extractor = "json"
        else:
            root, recovered = _parse_xml(text)
            if recovered:
                warnings.append("the XML has errors; the parts that parse are shown")
            if _local(root) in ("rss", "feed", "RDF"):
                markdown, title = _feed_markdown(root)
                extractor = "feed"
            else:
                markdown, title = _xml_markdown(root)
                extractor = "xml"
            if not markdown.strip() and text.strip():
                raise ValueError("no text found in the parsed XML")
    except (ValueError, etree.XMLSyntaxError, RecursionError, MemoryError) as exc:
        log.info("cannot parse %s body of %s: %s", page.kind, page.url, exc)
        what = "JSON" if page.kind == "json" else "XML"
        warnings.append(f"the {what} does not parse ({_short(exc)}); showing the raw text")
        return Document(markdown=text, title=page.title, extractor=f"{page.kind}-raw", warnings=tuple(warnings))
    return Document(markdown=markdown, title=title or page.title, extractor=extractor, warnings=tuple(warnings))


# ---------------------------------------------------------------- JSON
def _json_markdown(text: str) -> tuple[str, str]:
    body = _XSSI.sub("", text, count=1)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        data = _json_lines(body, exc)
    out: list[str] = []
    title = ""
    if isinstance(data, list):
        _records(out, data, "", 2)
    elif isinstance(data, dict):
        title = _label(data)
        path, main = _main_list(data)
        if main is not None:
            rest = _without(data, path)
            if rest:
                out.append("## " + (title or "Summary"))
                out.append(_block(_field_lines(rest)))
                out.append(_SEP)
            out.append("## " + ".".join(path))
            _records(out, main, path[-1], 3)
        else:
            for key, value in data.items():
                out.append(f"## {_one_line(str(key), _MAX_LABEL_CHARS)}")
                out.append(_block(_field_lines(value)))
                out.append(_SEP)
    else:
        out.append(_scalar(data))
    return "\n\n".join(_trim_sep(out)) + "\n", title


def _json_lines(body: str, first_error: json.JSONDecodeError) -> list[Any]:
    """JSON Lines (one value per line); re-raise the original error when the body is not that either."""
    lines = [ln for ln in body.splitlines() if ln.strip()]
    if len(lines) < 2:
        raise first_error
    try:
        return [json.loads(ln) for ln in lines]
    except json.JSONDecodeError:
        raise first_error from None


def _main_list(data: dict[str, Any]) -> tuple[list[str], list[Any] | None]:
    """The biggest array of records within three levels of objects ("data", "items", "results"...)."""
    best: tuple[int, list[str], list[Any] | None] = (2, [], None)
    stack: list[tuple[list[str], dict[str, Any]]] = [([], data)]
    while stack:
        path, obj = stack.pop()
        for key, value in obj.items():
            if isinstance(value, list) and len(value) > best[0] and any(isinstance(v, dict | list) for v in value[:5]):
                best = (len(value), [*path, str(key)], value)
            elif isinstance(value, dict) and len(path) < 2:
                stack.append(([*path, str(key)], value))
    return best[1], best[2]


def _without(data: dict[str, Any], path: list[str]) -> dict[str, Any]:
    """A shallow copy of ``data`` without the value at ``path`` (and without emptied parents)."""
    head, *tail = path
    out = {k: v for k, v in data.items() if k != head}
    if tail and isinstance(data.get(head), dict):
        inner = _without(data[head], tail)
        if inner:
            out[head] = inner
    return out


def _records(out: list[str], items: list[Any], name: str, level: int) -> None:
    hashes = "#" * level
    for i, item in enumerate(items):
        label = _label(item) if isinstance(item, dict) else ""
        if not label:
            label = f"{name}[{i}]" if name else f"Item {i + 1}"
        out.append(f"{hashes} {label}")
        out.append(_block(_field_lines(item)))
        out.append(_SEP)


def _label(obj: Any) -> str:
    if not isinstance(obj, dict):
        return ""
    best, best_rank = "", len(_LABEL_KEYS)
    for k, v in obj.items():
        rank = _LABEL_RANK.get(str(k).lower(), best_rank)
        if rank < best_rank and isinstance(v, str | int) and not isinstance(v, bool) and str(v).strip():
            best, best_rank = str(v), rank
    return _one_line(best, _MAX_LABEL_CHARS) if best else ""


def _field_lines(value: Any) -> list[str]:
    """``key.sub: value`` lines for a JSON value, walked without recursion (deep nesting is safe)."""
    lines: list[str] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        prefix, v = stack.pop()
        if isinstance(v, dict):
            nested: list[tuple[str, Any]] = []
            for k, sub in v.items():
                key = f"{prefix}.{k}" if prefix else str(k)
                if isinstance(sub, dict | list):
                    nested.append((key, sub))
                elif not nested:  # the common flat case: emit in order, no stack round trip
                    lines.append(_line(key, sub))
                else:
                    nested.append((key, sub))
            stack.extend(reversed(nested))
        elif isinstance(v, list):
            if all(not isinstance(x, dict | list) for x in v):
                lines.append(_line(prefix, _scalar_list(v)))
            else:
                stack.extend((f"{prefix}[{i}]", sub) for i, sub in reversed(list(enumerate(v))))
        else:
            lines.append(_line(prefix, v))
    return lines


def _scalar_list(values: list[Any]) -> str:
    out, size = [], 0
    for i, x in enumerate(values):
        text = _scalar(x)
        size += len(text) + 2
        if size > _MAX_LIST_CHARS:
            out.append(f"... ({len(values) - i} more)")
            break
        out.append(text)
    return ", ".join(out)


def _line(key: str, value: Any) -> str:
    text = value if isinstance(value, str) else _scalar(value)
    if isinstance(value, str):
        text = _one_line(text, _MAX_VALUE_CHARS)
    line = f"{key}: {text}" if key else text
    return _safe(line) if line[:1] in _MARK_START or line[:1].isspace() else line


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


# ---------------------------------------------------------------- XML and feeds
def _parse_xml(text: str) -> tuple[Any, bool]:
    body = _XML_DECL.sub("", text.lstrip("\ufeff"), count=1).encode("utf-8")
    strict = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True, remove_pis=True)
    recovered = False
    try:
        root = etree.fromstring(body, strict)
    except etree.XMLSyntaxError:
        recovered = True
        # Feeds in the wild often carry HTML entities or stray ampersands: parse what can be parsed.
        loose = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True, remove_pis=True,
                                recover=True)
        root = etree.fromstring(body, loose)
    if root is None:
        raise ValueError("no XML element found")
    return root, recovered


def _local(el: Any) -> str:
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def _child(el: Any, *names: str) -> Any:
    for name in names:
        for c in el:
            if _local(c) == name:
                return c
    return None


def _text(el: Any) -> str:
    return _WS.sub(" ", "".join(el.itertext())).strip() if el is not None else ""


def _feed_markdown(root: Any) -> tuple[str, str]:
    kind = _local(root)
    channel = _child(root, "channel") if kind in ("rss", "RDF") else root
    if channel is None:
        channel = root
    title = _one_line(_text(_child(channel, "title")), _MAX_LABEL_CHARS)
    about = _html_text(_text(_child(channel, "description", "subtitle")))
    out: list[str] = []
    if title:
        out.append(f"# {title}")
    if about:
        out.append(_safe(about))
    items = [el for el in (root.iter() if kind == "RDF" else channel) if _local(el) in ("item", "entry")]
    for i, item in enumerate(items):
        out.extend(_feed_item(item, i))
        out.append(_SEP)
    return "\n\n".join(_trim_sep(out)) + "\n", title


def _feed_item(item: Any, i: int) -> Iterator[str]:
    fields: dict[str, Any] = {}
    for c in item:  # one pass: the first child of each name
        name = _local(c)
        if name and name not in fields:
            fields[name] = c

    def first(*names: str) -> Any:
        return next((fields[n] for n in names if n in fields), None)

    title = _one_line(_html_text(_text(first("title"))), _MAX_LABEL_CHARS) or f"Item {i + 1}"
    yield f"## {title}"
    date = _text(first("pubDate", "published", "updated", "date", "issued", "modified"))
    author_el = first("author", "creator")
    author = _text(_child(author_el, "name")) if author_el is not None and len(author_el) else _text(author_el)
    meta = " · ".join(x for x in (date, author) if x)
    if meta:
        yield meta
    body_el = first("encoded", "content", "description", "summary")
    summary = _html_text("".join(body_el.itertext()) if body_el is not None else "")
    for para in summary.split("\n"):
        if para.strip():
            yield _safe(_one_line(para, _MAX_VALUE_CHARS))
    link = _item_link(item, "link" in fields)
    if link:
        yield f"Link: {link}"


def _item_link(item: Any, has_link: bool) -> str:
    for c in item if has_link else ():
        if _local(c) != "link":
            continue
        href = c.get("href")
        if href and c.get("rel", "alternate") == "alternate":
            return str(href).strip()
        if not href and _text(c):
            return _text(c)
    guid = _child(item, "guid", "id")
    text = _text(guid)
    return text if text.startswith(("http://", "https://")) else ""


def _html_text(fragment: str) -> str:
    """Text of an HTML fragment (feed summaries), paragraphs on their own lines."""
    if "<" not in fragment and "&" not in fragment:
        return fragment.strip()
    s = _DROP_BLOCKS.sub(" ", fragment)
    s = _BLOCK_TAGS.sub("\n", s)
    s = html.unescape(_TAG.sub("", s))
    return "\n".join(ln for ln in (_WS.sub(" ", x).strip() for x in s.split("\n")) if ln)


def _xml_markdown(root: Any) -> tuple[str, str]:
    container = root
    # Walk down single-child wrappers (<catalog><books><book/>...</books></catalog>).
    while len(container) == 1 and len(container[0]) > 0:
        container = container[0]
    title = _one_line(_text(_child(root, "title")), _MAX_LABEL_CHARS)
    out: list[str] = []
    children = [c for c in container if isinstance(c.tag, str)]
    if len(children) < 2:
        out.append(_block(_element_lines(root)))
        return "\n\n".join(_trim_sep(out)) + "\n", title
    for i, child in enumerate(children):
        label = child.get("title") or child.get("name") or child.get("id") or _text(_child(child, "title", "name"))
        label = _one_line(label, _MAX_LABEL_CHARS) if label else f"{_local(child)} {i + 1}"
        out.append(f"## {label}")
        out.append(_block(_element_lines(child)))
        out.append(_SEP)
    return "\n\n".join(_trim_sep(out)) + "\n", title


def _element_lines(el: Any) -> list[str]:
    lines: list[str] = []
    for node in el.iter():
        tag = node.tag
        if not isinstance(tag, str):
            continue
        name = tag.rsplit("}", 1)[-1]
        if len(node):
            parts = [node.text or "", *(c.tail or "" for c in node)]
            own = " ".join(t.strip() for t in parts if t and not t.isspace())
        else:
            own = (node.text or "").strip()
        if own:
            lines.append(_line(name, own))
        elif node.attrib and not len(node):
            attrs = ", ".join(f"{etree.QName(k).localname}={v}" for k, v in node.attrib.items() if len(v) < 200)
            if attrs:
                lines.append(_line(name, attrs))
    return lines


# ---------------------------------------------------------------- helpers
def _one_line(text: str, limit: int) -> str:
    if "\n" in text or "\t" in text or "\r" in text or "  " in text or text[:1].isspace() or text[-1:].isspace():
        text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _safe(line: str) -> str:
    """Keep data from reading as markdown structure (headings, breaks, fences)."""
    stripped = line.lstrip()
    if stripped.startswith(("#", "```", "~~~")) or set(stripped) <= {"-", "=", "_", "*", " "}:
        return "\\" + stripped
    return line


def _trim_sep(out: list[str]) -> list[str]:
    out = [b for b in out if b]
    while out and out[-1] == _SEP:
        out.pop()
    return out


def _block(lines: list[str]) -> str:
    """One record's fields as one paragraph, a line each."""
    return "\n".join(ln for ln in lines if ln)


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."
