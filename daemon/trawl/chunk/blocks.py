"""Markdown → a flat list of blocks, in one pass over the lines (no recursion).

Block kinds:
  heading  ATX ``#``..``######``; ``level`` and ``text`` (the cleaned title)
  break    a thematic break (``---``, ``***``, ``___``): a hard boundary between records
  code     a fenced code block, fences included (an unclosed fence runs to the end)
  table    a run of pipe-table lines; ``header`` holds the header + delimiter rows when present
  list     a run of list items; ``items`` holds each item's text (continuation lines included)
  para     anything else, split at blank lines (block quotes and stray HTML count as paragraphs)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

BlockKind = Literal["heading", "break", "code", "table", "list", "para"]

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_LIST_ITEM = re.compile(r"^[ \t]{0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_TABLE_DELIM = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|`)(?=\S)(.+?)(?<=\S)\1")


@dataclass(slots=True)
class Block:
    kind: BlockKind
    text: str = ""
    level: int = 0  # headings only
    header: tuple[str, ...] = ()  # tables: header row (+ delimiter row)
    items: list[str] = field(default_factory=list)  # lists: one entry per item; tables: body rows


def clean_title(raw: str) -> str:
    """Heading text without closing hashes, link targets or emphasis markers."""
    text = _CLOSING_HASHES.sub("", raw).strip()
    text = _LINK.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\2", text)
    return " ".join(text.split())


def _is_table_line(line: str) -> bool:
    s = line.strip()
    return s.startswith("|") and s.count("|") >= 2


def parse_blocks(markdown: str) -> list[Block]:
    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[Block] = []
    para: list[str] = []
    n = len(lines)
    i = 0

    def flush_para() -> None:
        if para:
            text = "\n".join(para).strip()
            if text:
                blocks.append(Block("para", text))
            para.clear()

    while i < n:
        line = lines[i].rstrip()
        if not line.strip():
            flush_para()
            i += 1
            continue

        fence = _FENCE.match(line)
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            flush_para()
            mark = fence.group(1)
            body = [line]
            i += 1
            while i < n:
                cur = lines[i].rstrip()
                body.append(cur)
                i += 1
                stripped = cur.strip()
                if stripped.startswith(mark[0] * len(mark)) and not stripped.strip(mark[0]):
                    break
            blocks.append(Block("code", "\n".join(body)))
            continue

        heading = _HEADING.match(line)
        if heading:
            flush_para()
            title = clean_title(heading.group(2) or "")
            if title:
                blocks.append(Block("heading", title, level=len(heading.group(1))))
            i += 1
            continue

        if _BREAK.match(line):
            flush_para()
            blocks.append(Block("break"))
            i += 1
            continue

        if _is_table_line(line):
            flush_para()
            rows: list[str] = []
            while i < n and _is_table_line(lines[i]):
                rows.append(lines[i].strip())
                i += 1
            header: tuple[str, ...] = ()
            if len(rows) >= 2 and _TABLE_DELIM.match(rows[1]):
                header, rows = (rows[0], rows[1]), rows[2:]
            blocks.append(Block("table", "\n".join((*header, *rows)), header=header, items=rows))
            continue

        if _LIST_ITEM.match(line) and (not para or line.lstrip()[0] in "-*+"):
            flush_para()
            items: list[str] = []
            cur_item: list[str] = [line]
            i += 1
            while i < n:
                nxt = lines[i].rstrip()
                if not nxt.strip():
                    # A blank line ends the list unless the next line continues it.
                    j = i + 1
                    if j < n and (_LIST_ITEM.match(lines[j]) or lines[j].startswith(("  ", "\t"))) \
                            and not _FENCE.match(lines[j]):
                        cur_item.append("")
                        i = j
                        continue
                    break
                if _LIST_ITEM.match(nxt):
                    items.append("\n".join(cur_item).strip())
                    cur_item = [nxt]
                elif _HEADING.match(nxt) or _BREAK.match(nxt) or _FENCE.match(nxt) or _is_table_line(nxt):
                    break
                else:
                    cur_item.append(nxt)
                i += 1
            items.append("\n".join(cur_item).strip())
            items = [it for it in items if it]
            blocks.append(Block("list", "\n".join(items), items=items))
            continue

        para.append(line)
        i += 1

    flush_para()
    return blocks
