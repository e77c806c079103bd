"""search_tabs' one pass: all tabs' chunks as one list, each traced back to its tab; the tab_event frames."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trawl.browser import protocol
from trawl.capabilities.tabs import union
from trawl.types import Chunk


@dataclass
class _Doc:
    lang: str
    hidden_text: tuple[str, ...] = ()


@dataclass
class _Prep:
    key: str
    doc: _Doc
    chunks: tuple[Chunk, ...]


@dataclass
class _Entry:
    tab_id: int
    prep: Any

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return tuple(self.prep.chunks)


def _entry(tab: int, key: str, lang: str, texts: list[str]) -> Any:
    chunks = tuple(Chunk(id=f"c{i}", index=i, heading_path=(), text=t) for i, t in enumerate(texts))
    return _Entry(tab, _Prep(key, _Doc(lang), chunks))


def test_union_keeps_every_chunk_once_with_ids_unique_across_tabs() -> None:
    a = _entry(3, "k-a", "en", ["quince pruning", "codling moth"])
    b = _entry(9, "k-b", "de", ["Apfelwein"])
    c = _entry(12, "k-c", "en", ["fish stalls close at one"])
    chunks, back, key, lang = union([a, b, c])
    assert [ch.text for ch in chunks] == ["quince pruning", "codling moth", "Apfelwein", "fish stalls close at one"]
    assert len({ch.id for ch in chunks}) == 4  # both tabs have a "c0"; the union's ids differ
    entry, orig = back[chunks[2].id]
    assert entry is b and orig.id == "c0" and orig.text == "Apfelwein"
    assert lang == "en"  # the language of most chunks
    # The key names the set of pages: another set of tabs is another BM25 index.
    assert key != union([a, b])[2] and key == union([a, b, c])[2]


def test_tab_event_frames_follow_the_protocol() -> None:
    tab = {"id": 4, "window_id": 1, "url": "https://example.org/", "title": "Example", "active": True,
           "status": "complete"}
    assert protocol.check({"type": "tab_event", "event": "ready", "tab_id": 4, "tab": tab}, "extension") is None
    assert protocol.check({"type": "tab_event", "event": "closed", "tab_id": 4}, "extension") is None
    assert "not one of" in str(protocol.check({"type": "tab_event", "event": "focused", "tab_id": 4}, "extension"))
    assert protocol.check({"type": "tab_event", "event": "closed", "tab_id": 4}, "daemon") is not None
    held = {"tab_id": 4, "title": "Example", "host": "example.org", "chunks": 7, "embedded": 3}
    assert protocol.check({"type": "indexed", "tabs": [held]}, "daemon") is None
    assert protocol.check({"type": "indexed", "tabs": [{**held, "text": "page text"}]}, "daemon") is not None
