"""An lxml element tree → trawl markdown, without recursion.

What survives: ATX headings, paragraphs, bullet/numbered lists (nested by indentation), pipe tables,
fenced code blocks and block quotes. What goes: link targets (the anchor text stays), images, scripts,
styles, forms' chrome. Runs of repeated sibling records (cards, listing items, search results, forum
posts) are separated by a ``---`` line so the chunker keeps each record whole.

The walk uses an explicit stack, so a tree of any depth converts in linear time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lxml import etree

from .records import is_record_group

SKIP_TAGS = frozenset(
    {
        "script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed", "canvas",
        "video", "audio", "picture", "img", "source", "track", "map", "button", "select", "option",
        "input", "textarea", "head", "title", "meta", "link", "base", "dialog",
    }
)  # fmt: skip
BLOCK_TAGS = frozenset(
    {
        "p", "div", "section", "article", "main", "aside", "header", "footer", "nav", "figure",
        "figcaption", "address", "details", "summary", "fieldset", "form", "body", "html", "center",
        "dl", "dt", "dd", "caption", "hgroup", "search",
        # reached only inside layout tables (data tables become pipe tables whole)
        "table", "thead", "tbody", "tfoot", "tr", "td", "th",
    }
)  # fmt: skip
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_WS = re.compile(r"[ \t\r\n\f\v\u00a0\u200b]+")
_MAX_TABLE_CELL = 400
_LAYOUT_CELL_CHARS = 400  # a cell holding more text than this means the table lays out a page
_LAYOUT_MARKERS = ".//table|.//h1|.//h2|.//h3|.//article|.//pre"
# Elements a browser draws as a box of their own (form controls, media, embedded frames): skipped for their
# text, but the words on either side of them are not one word.
BOX_TAGS = frozenset(
    {
        "img", "input", "button", "select", "textarea", "video", "audio", "canvas", "iframe", "object", "embed",
        "svg", "math", "picture", "meter", "progress",
    }
)  # fmt: skip
# An inline style that makes any element a block (or a box) of its own.
_BOX_DISPLAY = re.compile(r"display\s*:\s*(inline-)?(?:block|flex|grid|table|list-item|flow-root)\b", re.I)


@dataclass
class _State:
    blocks: list[str] = field(default_factory=list)
    inline: list[str] = field(default_factory=list)
    prefix: str = ""  # prefix of the paragraph being collected ("## ", "- ", "> ")
    lists: list[list[int | str]] = field(default_factory=list)  # [kind, counter] per open list
    quote: int = 0  # block-quote depth

    def flush(self) -> None:
        if not self.inline:
            self.prefix = ""
            return
        text = _WS.sub(" ", "".join(self.inline)).strip()
        self.inline.clear()
        prefix, self.prefix = self.prefix, ""
        if not text:
            return
        self.blocks.append("> " * self.quote + prefix + text)

    def add_block(self, text: str) -> None:
        self.flush()
        if text:
            self.blocks.append(text)


def _tag(el: etree._Element) -> str:
    tag = el.tag
    # comments and processing instructions have a function as tag; HTML parsers give lowercase names
    return tag if isinstance(tag, str) else ""


def _hidden(el: etree._Element) -> bool:
    if el.get("hidden") is not None or el.get("aria-hidden") == "true":
        return True
    style = el.get("style")
    if style:
        s = style.replace(" ", "").lower()
        return "display:none" in s or "visibility:hidden" in s
    return False


def _styled_box(el: etree._Element) -> str:
    """"block" or "inline" when the element's own style makes it a box of its own, else ""."""
    style = el.get("style")
    if not style:
        return ""
    m = _BOX_DISPLAY.search(style)
    return "" if m is None else ("inline" if m.group(1) else "block")


def element_text(el: etree._Element) -> str:
    """Text of an element, whitespace-collapsed, skipping scripts, styles and other non-text parts."""
    parts: list[str] = []
    stack: list[etree._Element | str] = [el]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            parts.append(node)
            continue
        if node is not el and node.tail:
            stack.append(node.tail)
        if _tag(node) in SKIP_TAGS or not isinstance(node.tag, str):
            continue
        stack.extend(reversed(node))
        if node.text:
            parts.append(node.text)
    return _WS.sub(" ", " ".join(parts)).strip()


def is_layout_table(table: etree._Element) -> bool:
    """A table used to lay out a page (nested tables, headings, long cells), not to hold data."""
    if table.xpath(_LAYOUT_MARKERS):
        return True
    for cell in table.iter("td", "th"):
        if len(etree.tostring(cell, method="text", encoding="unicode", with_tail=False)) > _LAYOUT_CELL_CHARS:
            return True
    return False


def _table_markdown(table: etree._Element) -> str:
    rows: list[list[str]] = []
    for tr in table.iter("tr"):
        cells = [_WS.sub(" ", " ".join(c.itertext())).strip()[:_MAX_TABLE_CELL] for c in tr if _tag(c) in ("td", "th")]
        cells = [c.replace("|", "/") for c in cells]
        if any(cells):
            rows.append(cells)
    if not rows:
        return ""
    if len(rows) == 1 and len(rows[0]) == 1:
        return rows[0][0]
    width = max(len(r) for r in rows)
    if width == 1:  # a one-column "table" is a list of lines
        return "\n\n".join(r[0] for r in rows if r[0])
    out = []
    for i, r in enumerate(rows):
        r = r + [""] * (width - len(r))
        out.append("| " + " | ".join(r) + " |")
        if i == 0:
            out.append("|" + "---|" * width)
    return "\n".join(out)


GUTTER_MIN_LINES = 3


def split_line_numbers(code: str) -> str:
    """``code`` with a line-number gutter set apart from the lines it numbers (a code viewer's
    ``<span>1</span>// first line`` reads ``1// first line``, one token of number and code): every line starts with its
    own number, 1, 2, 3... in order, no further digit after it. The numbers stay, as the page shows them."""
    lines = code.split("\n")
    if len(lines) < GUTTER_MIN_LINES:
        return code
    out: list[str] = []
    for i, line in enumerate(lines, 1):
        num = str(i)
        rest = line[len(num) :]
        if not line.startswith(num) or rest[:1].isdigit():
            return code
        out.append(f"{num} {rest}" if rest and not rest[0].isspace() else line)
    return "\n".join(out)


def _pre_markdown(pre: etree._Element) -> str:
    code = split_line_numbers("".join(pre.itertext()).strip("\n"))
    if not code.strip():
        return ""
    fence = "````" if "```" in code else "```"
    return f"{fence}\n{code}\n{fence}"


def to_markdown(
    root: etree._Element, *, records: bool = True, groups: list[list[etree._Element]] | None = None
) -> str:
    """Convert ``root`` (and its descendants) to markdown. ``records`` enables ``---`` between records.

    ``groups``, when given, receives the members of every record group found (for the cascade's evidence).
    """
    st = _State()
    # Stack items: ("open", element) or ("close", element) or ("tail", text) or ("sep", "")
    stack: list[tuple[str, object]] = [("open", root)]
    while stack:
        action, obj = stack.pop()
        if action == "tail":
            st.inline.append(str(obj))
            continue
        if action == "sep":
            st.add_block("---")
            continue
        if action == "flush":
            st.flush()
            continue
        el = obj
        assert isinstance(el, etree._Element)
        tag = _tag(el)
        if action == "close":
            _close(st, el, tag)
            continue
        if not tag or tag in SKIP_TAGS or _hidden(el):
            if tag in BOX_TAGS:
                st.inline.append(" ")
            if el.tail and el is not root:
                st.inline.append(el.tail)
            continue
        if el.tail and el is not root:
            stack.append(("tail", el.tail))
        if tag == "table" and not is_layout_table(el):
            st.add_block(_table_markdown(el))
            continue
        if tag == "pre":
            st.add_block(_pre_markdown(el))
            continue
        if tag == "br":
            st.inline.append("\n")
            continue
        if tag == "hr":
            st.add_block("---")
            continue
        if tag not in BLOCK_TAGS and tag not in HEADINGS and (box := _styled_box(el)):
            # an inline element its own style lays out as a block (a block boundary either side) or an inline box
            # (a space either side)
            if box == "block":
                st.flush()
            else:
                st.inline.append(" ")
            stack.append(("flush" if box == "block" else "tail", " "))
        _open(st, el, tag)
        stack.append(("close", el))
        children = [c for c in el if isinstance(c.tag, str)]
        group = records and len(children) >= 3 and is_record_group(el, children)
        if group and groups is not None:
            groups.append(children)
        for i, child in enumerate(reversed(children)):
            stack.append(("open", child))
            if group and i < len(children) - 1:
                stack.append(("sep", ""))
        if el.text:
            st.inline.append(el.text)
    st.flush()
    return _tidy(st.blocks)


def _open(st: _State, el: etree._Element, tag: str) -> None:
    if tag in HEADINGS:
        st.flush()
        st.prefix = "#" * HEADINGS[tag] + " "
    elif tag in ("ul", "ol", "menu"):
        st.flush()
        start = el.get("start", "1")
        st.lists.append([tag, int(start) if start.isdigit() else 1])
    elif tag == "li":
        st.flush()
        depth = max(len(st.lists) - 1, 0)
        if st.lists and st.lists[-1][0] == "ol":
            n = st.lists[-1][1]
            st.lists[-1][1] = int(n) + 1
            st.prefix = "   " * depth + f"{n}. "
        else:
            st.prefix = "  " * depth + "- "
    elif tag == "blockquote":
        st.flush()
        st.quote += 1
    elif tag in BLOCK_TAGS:
        st.flush()


def _close(st: _State, el: etree._Element, tag: str) -> None:
    if tag in HEADINGS or tag == "li" or tag in BLOCK_TAGS:
        st.flush()
    elif tag in ("ul", "ol", "menu"):
        st.flush()
        if st.lists:
            st.lists.pop()
    elif tag == "blockquote":
        st.flush()
        st.quote = max(st.quote - 1, 0)
    elif tag in ("td", "th"):
        st.inline.append(" ")


def _tidy(blocks: list[str]) -> str:
    out: list[str] = []
    for b in blocks:
        if b == "---" and (not out or out[-1] == "---"):
            continue  # no leading or doubled breaks
        out.append(b)
    while out and out[-1] == "---":
        out.pop()
    # Blocks that are bare repeats of the previous one (sticky headers, duplicated labels) are noise.
    dedup: list[str] = []
    for b in out:
        if dedup and b == dedup[-1] and b != "---":
            continue
        dedup.append(b)
    return _join(dedup)


def _join(blocks: list[str]) -> str:
    """Join blocks with blank lines, but keep consecutive list items on adjacent lines."""
    parts: list[str] = []
    prev_item = False
    for b in blocks:
        item = _is_list_item(b)
        if parts:
            parts.append("\n" if item and prev_item else "\n\n")
        parts.append(b)
        prev_item = item
    return "".join(parts).strip()


_ITEM = re.compile(r"^\s*(?:- |\d+\. )")


def _is_list_item(block: str) -> bool:
    return bool(_ITEM.match(block))
