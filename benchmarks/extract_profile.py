"""Per-stage CPU profile of trawl's extraction (``bench_extract.py --profile``).

Wraps the functions each stage runs (module attributes, looked up at call time) with a CPU-time stack: every stage's
figure is its *own* time (the stages it calls are counted under their own names), so the rows add up to the whole.
``lxml.etree.fromstring`` is wrapped too: every lxml parse of a page (or of an extractor's output) is counted, under
the stage that asked for it, with the characters it parsed. rs-trafilatura parses inside its native call
(html5ever): that parse is part of its row and counted once per call.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

_now = time.process_time


class StageProfile:
    def __init__(self) -> None:
        self.own: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.parses: dict[str, int] = defaultdict(int)  # parent stage -> lxml parses
        self.parsed_chars: dict[str, int] = defaultdict(int)
        self._stack: list[list[Any]] = []  # [label, start, child seconds]
        self._undo: list[tuple[Any, str, Any]] = []

    def _enter(self, label: str) -> None:
        self._stack.append([label, _now(), 0.0])

    def _leave(self) -> None:
        label, start, child = self._stack.pop()
        spent = _now() - start
        self.own[label] += spent - child
        self.calls[label] += 1
        if self._stack:
            self._stack[-1][2] += spent

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        fn = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            self._enter(label)
            try:
                return fn(*args, **kwargs)
            finally:
                self._leave()

        self._undo.append((owner, attr, fn))
        setattr(owner, attr, timed)

    def wrap_parse(self) -> None:
        from lxml import etree

        fn = etree.fromstring

        def parse(text: Any, *args: Any, **kwargs: Any) -> Any:
            parent = self._stack[-1][0] if self._stack else "(outside)"
            self.parses[parent] += 1
            self.parsed_chars[parent] += len(text)
            self._enter("lxml parse")
            try:
                return fn(text, *args, **kwargs)
            finally:
                self._leave()

        self._undo.append((etree, "fromstring", fn))
        etree.fromstring = parse

    def undo(self) -> None:
        for owner, attr, fn in reversed(self._undo):
            setattr(owner, attr, fn)
        self._undo.clear()


def install() -> StageProfile:
    """Wrap trawl's extraction stages (and the stage sequence after it) for profiling."""
    import trafilatura
    import trafilatura.core
    from trawl import stages
    from trawl.extract import align, candidates, code, dom, ensemble, evidence, headings, html, markdown, visibility

    prof = StageProfile()
    w = prof.wrap
    w(stages.extract_stage, "extract", "extract dispatch (rest)")
    w(html, "extract_html", "cascade glue (rest)")
    for name in ("flatten_shadow_roots", "strip_heavy", "trim_html", "too_deep", "looks_binary", "plain_markdown"):
        w(html, name, "guard / plain check")
    w(html, "unread_frames", "guard / plain check")
    w(visibility, "scan", "hidden-text scan")
    w(html, "apply_hidden", "hidden-text locate")
    if candidates._rs is not None:
        w(candidates._rs, "extract", "rs-trafilatura native")
    w(candidates, "run_rs", "rs: markdown of content_html")
    w(candidates, "trim_trailing_teasers", "rs: teaser trim")
    w(candidates, "align_markdown", "rs: align md to text")
    w(candidates, "restore_code", "rs: restore code")
    w(candidates, "restore_headings", "rs: restore headings")
    w(trafilatura.core, "extract", "trafilatura")
    w(candidates._traf, "extract", "trafilatura")
    w(candidates, "clean_markdown", "trafilatura")
    w(candidates, "extract_dom", "dom reader")
    w(dom, "strip_chrome", "dom reader: strip chrome")
    w(dom, "find_main", "dom reader: find main")
    w(dom, "comment_sections", "dom reader: comments")
    for mod in (candidates, dom):
        w(mod, "to_markdown", "markdown (lxml -> md)")
    for name in ("record_shares", "comment_shares", "records_spanned", "declares_article", "declares_discussion"):
        w(html, name, "evidence")
    w(html, "_contained", "evidence")
    w(html, "agreed_span", "vote alignment (agreed_span)")
    w(html, "dedupe_blocks", "dedupe")
    w(html, "detect_language", "language id")
    w(html, "declared_language", "title / meta")
    w(html, "html_title", "title / meta")
    w(stages.sanitise_stage, "clean_document", "clean (sanitise)")
    w(stages.walls, "detect", "walls")
    w(stages.chunk_stage, "chunk_document", "chunk")
    del align, code, ensemble, evidence, headings, markdown  # imported so their names resolve above
    prof.wrap_parse()
    return prof


def report(prof: StageProfile, pages: int, cpu_total: float) -> str:
    lines = [f"per-stage CPU profile over {pages} pages ({cpu_total:.1f} CPU-s, {pages / max(cpu_total, 1e-9):.1f} "
             "pages/CPU-s; own time: callees counted under their own rows)"]
    lines.append(f"{'stage':<32} {'ms/page':>8} {'share':>6} {'calls/page':>10}")
    total = sum(prof.own.values()) or 1e-9
    for label, secs in sorted(prof.own.items(), key=lambda kv: -kv[1]):
        lines.append(f"{label:<32} {secs * 1000 / pages:8.2f} {secs / total:6.1%} {prof.calls[label] / pages:10.2f}")
    lines.append(f"{'(all rows)':<32} {total * 1000 / pages:8.2f}")
    lines.append("")
    lines.append("lxml parses per page, by the stage that asked (rs-trafilatura's own html5ever parse not included)")
    for parent, n in sorted(prof.parses.items(), key=lambda kv: -kv[1]):
        kchars = prof.parsed_chars[parent] / max(n, 1) / 1000
        lines.append(f"  {parent:<32} {n / pages:6.2f}  ({kchars:.0f}k chars each)")
    lines.append(f"  {'(all)':<32} {sum(prof.parses.values()) / pages:6.2f}")
    return "\n".join(lines)


Wrapped = Callable[..., Any]
