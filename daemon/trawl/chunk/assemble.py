"""Blocks → chunks: heading paths, packing to the target size, atomic tables/code/records.

Numbered rules (the names are the knobs):
 1. A heading closes the current run and updates the heading path; it never forms a chunk alone.
 2. Paragraphs and list items of one section form a *run*; a run is packed greedily up to the target
    (TARGET chars, smaller for CJK text); a paragraph longer than the target is cut at sentence ends,
    a sentence longer than HARD_SENTENCE x target is cut at whitespace.
 3. A tiny last piece of a run (< TINY_TAIL x target) joins the piece before it when both fit in
    MERGE_SLACK x target.
 4. Tables and fenced code stay whole up to WHOLE_MAX x target, else they are split into parts of about
    PART x target (tables repeat their header rows, code keeps its fence). A short run right before them
    (< LEAD_IN x target) is kept as their caption.
 5. A ``---`` line is a hard boundary. On a page that has them, a segment between them of at most
    WHOLE_MAX x target is a record and stays one chunk; larger segments are ordinary text. Consecutive
    tiny records (< TINY_RECORD x target) under one heading path are grouped up to the target; a lone
    tiny record joins its neighbour under the same heading path when both fit in WHOLE_MAX x target.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from ..lang import SCRIPT_RANGES
from ..types import Chunk, ChunkKind
from .blocks import Block
from .split import hard_split, split_code, split_table, split_text

HARD_SENTENCE = 2.0
TINY_TAIL = 0.35
MERGE_SLACK = 1.35
WHOLE_MAX = 3.0
PART = 2.0
LEAD_IN = 0.34
TINY_RECORD = 0.17
PREPACK_PIECES = 200  # sentence pieces in one paragraph above which they are pre-joined
CJK_FULL_RATIO = 0.5  # share of word characters at or above which a script's target applies in full
_HAN_KANA = re.compile(f"[{SCRIPT_RANGES['han']}{SCRIPT_RANGES['kana']}]+")
_HANGUL = re.compile(f"[{SCRIPT_RANGES['hangul']}]+")
_NON_WORD = re.compile(r"\W+")


@dataclass(slots=True)
class _Unit:
    text: str
    sep: str  # joins this unit to the one before it
    is_list: bool = False


@dataclass(slots=True)
class _Piece:
    path: tuple[str, ...]
    text: str
    kind: ChunkKind
    whole_record: bool = False  # the only piece of its record


@dataclass(slots=True)
class Assembler:
    target: int
    target_cjk: int  # Chinese and Japanese (Han and kana)
    target_hangul: int = 0  # Korean; 0: the alphabetic target
    lang: str = ""  # the page's language: some sentence rules depend on it (ordinals with a dot)
    pieces: list[_Piece] = field(default_factory=list)
    _stack: list[tuple[int, str]] = field(default_factory=list)
    _run: list[_Unit] = field(default_factory=list)
    _record: int = 0
    _record_start: int = 0
    _is_record: list[bool] = field(default_factory=list)  # per ``---`` segment

    # ------------------------------------------------------------- input
    def feed(self, blocks: list[Block]) -> list[_Piece]:
        self._is_record = self._record_segments(blocks)
        for b in blocks:
            if b.kind == "heading":
                self._flush_run()
                while self._stack and self._stack[-1][0] >= b.level:
                    self._stack.pop()
                self._stack.append((b.level, b.text))
            elif b.kind == "break":
                self._flush_run()
                self._end_record()
            elif b.kind == "para":
                self._run.append(_Unit(b.text, "\n\n"))
            elif b.kind == "list":
                for j, item in enumerate(b.items):
                    self._run.append(_Unit(item, "\n" if j else "\n\n", is_list=True))
            elif b.kind == "table":
                self._atomic(b.text, "table", partial(split_table, b.header, b.items))
            elif b.kind == "code":
                self._atomic(b.text, "code", partial(split_code, b.text))
        self._flush_run()
        self._end_record()
        return _attach_lone_tiny_records(_group_tiny_records(self.pieces, self.target), self.target)

    # ----------------------------------------------------------- helpers
    def _record_segments(self, blocks: list[Block]) -> list[bool]:
        sizes = [0]
        for b in blocks:
            if b.kind == "break":
                sizes.append(0)
            else:
                sizes[-1] += len(b.text) + 2
        if len(sizes) == 1:
            return [False]
        return [0 < n <= WHOLE_MAX * self.target for n in sizes]

    @property
    def records(self) -> bool:
        return self._is_record[self._record] if self._record < len(self._is_record) else False

    @property
    def _path(self) -> tuple[str, ...]:
        return tuple(t for _, t in self._stack)

    def _target_for(self, text: str) -> int:
        """The target for ``text``: the alphabetic one, moved towards the Han/kana and the Hangul targets by
        the share of the text written in those scripts."""
        hangul_target = self.target_hangul or self.target
        if self.target_cjk == self.target == hangul_target:
            return self.target
        if len(text) > 4000:  # a sample is enough to tell the script
            mid = len(text) // 2
            text = text[:1000] + text[mid : mid + 1000] + text[-1000:]
        words = max(1, len(text) - _count(_NON_WORD, text))
        han = min(1.0, _count(_HAN_KANA, text) / words / CJK_FULL_RATIO)
        hangul = min(1.0 - han, _count(_HANGUL, text) / words / CJK_FULL_RATIO)
        return round(self.target - (self.target - self.target_cjk) * han - (self.target - hangul_target) * hangul)

    def _emit(self, text: str, kind: ChunkKind) -> None:
        if text.strip():
            self.pieces.append(_Piece(self._path, text.strip(), kind))

    def _end_record(self) -> None:
        mine = self.pieces[self._record_start :]
        if len(mine) == 1 and mine[0].kind == "record":
            mine[0].whole_record = True
        self._record += 1
        self._record_start = len(self.pieces)

    def _atomic(self, text: str, kind: ChunkKind, splitter: Callable[[int], list[str]]) -> None:
        lead = ""
        if self._run:
            run_text = _join(self._run)
            if len(run_text) <= LEAD_IN * self.target and not any(u.is_list for u in self._run):
                lead, self._run = run_text, []
            else:
                self._flush_run()
        target = self._target_for(text)
        if len(lead) + len(text) + 2 <= WHOLE_MAX * target:
            self._emit(f"{lead}\n\n{text}" if lead else text, kind)
            return
        parts = splitter(int(PART * target))
        for j, part in enumerate(parts):
            for piece in hard_split(part, int(PART * target)) if len(part) > 2 * WHOLE_MAX * target else [part]:
                self._emit(f"{lead}\n\n{piece}" if lead and j == 0 else piece, kind)

    def _flush_run(self) -> None:
        if not self._run:
            return
        units, self._run = self._run, []
        whole = _join(units)
        target = self._target_for(whole)
        list_chars = sum(len(u.text) for u in units if u.is_list)
        kind: ChunkKind = "record" if self.records else ("list" if list_chars * 2 > len(whole) else "text")
        if self.records and len(whole) <= WHOLE_MAX * target and self._record_start == len(self.pieces):
            self._emit(whole, kind)  # a record kept whole
            return
        if len(whole) <= target:
            self._emit(whole, kind)
            return
        # Rule 2: cut long units at sentence ends, then pack.
        small: list[_Unit] = []
        for u in units:
            if len(u.text) <= target:
                small.append(u)
                continue
            pieces = split_text(u.text, target, int(HARD_SENTENCE * target), self.lang)
            if len(pieces) > PREPACK_PIECES:  # a huge blob: fewer, larger units keep packing fast
                pieces = _pack_pieces(pieces, target)
            for j, (s, sep) in enumerate(pieces):
                small.append(_Unit(s, u.sep if j == 0 else sep, u.is_list))
        groups = _pack_units(small, target)
        texts = [_join(g) for g in groups]
        # Rule 3: a tiny tail joins the piece before it.
        if len(texts) >= 2 and len(texts[-1]) < TINY_TAIL * target and \
                len(texts[-2]) + len(texts[-1]) + 2 <= MERGE_SLACK * target:
            texts[-2:] = [_join(groups[-2] + groups[-1])]
        for t in texts:
            self._emit(t, kind)


def _count(pattern: re.Pattern[str], text: str) -> int:
    return len(text) - len(pattern.sub("", text))


def _join(units: list[_Unit]) -> str:
    out: list[str] = []
    for j, u in enumerate(units):
        if j:
            out.append(u.sep)
        out.append(u.text)
    return "".join(out)


def _pack_pieces(pieces: list[tuple[str, str]], target: int) -> list[tuple[str, str]]:
    """Join consecutive (text, separator-before) sentence pieces up to ``target``; fewer, larger units."""
    out: list[tuple[str, str]] = []
    buf: list[str] = []
    first_sep = ""
    size = 0
    for text, sep in pieces:
        if buf and size + len(sep) + len(text) > target:
            out.append(("".join(buf), first_sep))
            buf, size = [], 0
        if not buf:
            first_sep = sep
            buf.append(text)
            size = len(text)
        else:
            buf.append(sep)
            buf.append(text)
            size += len(sep) + len(text)
    if buf:
        out.append(("".join(buf), first_sep))
    return out


def _pack_units(units: list[_Unit], target: int) -> list[list[_Unit]]:
    out: list[list[_Unit]] = []
    cur: list[_Unit] = []
    size = 0
    for u in units:
        extra = len(u.text) + (len(u.sep) if cur else 0)
        if cur and size + extra > target:
            out.append(cur)
            cur, size, extra = [], 0, len(u.text)
        cur.append(u)
        size += extra
    if cur:
        out.append(cur)
    return out


def _group_tiny_records(pieces: list[_Piece], target: int) -> list[_Piece]:
    """Rule 5: consecutive tiny whole records under one heading path share a chunk, up to the target."""
    out: list[_Piece] = []
    tiny = TINY_RECORD * target
    open_group = False  # the last piece in ``out`` is a tiny record or a group of them
    for p in pieces:
        is_tiny = p.whole_record and len(p.text) < tiny
        prev = out[-1] if out else None
        if is_tiny and open_group and prev is not None and prev.path == p.path \
                and len(prev.text) + len(p.text) + 2 <= target:
            prev.text = f"{prev.text}\n\n{p.text}"
            continue
        out.append(p)
        open_group = is_tiny
    return out


def _attach_lone_tiny_records(pieces: list[_Piece], target: int) -> list[_Piece]:
    """Rule 5b: a tiny record left alone (a byline, a source name) joins the next record under the same
    heading path, else the previous one, when the two fit in WHOLE_MAX x target."""
    tiny = TINY_RECORD * target
    cap = WHOLE_MAX * target
    out: list[_Piece] = []
    carry: _Piece | None = None
    for p in pieces:
        if carry is not None:
            if p.kind == "record" and p.path == carry.path and len(carry.text) + len(p.text) + 2 <= cap:
                p.text = f"{carry.text}\n\n{p.text}"
            else:
                out.append(carry)
            carry = None
        if p.whole_record and len(p.text) < tiny:
            prev = out[-1] if out else None
            if prev is not None and prev.kind == "record" and prev.path == p.path and len(prev.text) < tiny:
                out.append(p)  # a group of tiny records stays as _group_tiny_records left it
                continue
            carry = p
            continue
        out.append(p)
    if carry is not None:
        prev = out[-1] if out else None
        if prev is not None and prev.kind == "record" and prev.path == carry.path \
                and len(prev.text) + len(carry.text) + 2 <= cap:
            prev.text = f"{prev.text}\n\n{carry.text}"
        else:
            out.append(carry)
    return out


def make_chunks(pieces: list[_Piece]) -> list[Chunk]:
    seen: dict[str, int] = {}
    chunks: list[Chunk] = []
    for i, p in enumerate(pieces):
        key = "\x1e".join(p.path) + "\x1f" + p.text
        occ = seen.get(key, 0)
        seen[key] = occ + 1
        data = f"{key}\x1f{occ}".encode("utf-8", "surrogatepass")  # lone surrogates from bad JSON escapes
        cid = hashlib.sha1(data, usedforsecurity=False).hexdigest()[:12]
        chunks.append(Chunk(id=cid, index=i, heading_path=p.path, text=p.text, kind=p.kind))
    return chunks
