"""Every injection fixture, through the engine's stage sequence (stages.prepare) then flag, is flagged."""

from __future__ import annotations

from pathlib import Path

import pytest
from trawl.sanitise import flag
from trawl.settings import Settings
from trawl.stages import prepare
from trawl.types import Page

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "injection"
FILES = sorted(p for p in FIXTURES.iterdir() if p.name[:2].isdigit())


def load(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    url = f"https://fixtures.example/{path.name}"
    if path.suffix == ".html":
        return Page(url=url, final_url=url, kind="html", source="file", html=text)
    kind = "markdown" if path.suffix == ".md" else "text"
    return Page(url=url, final_url=url, kind=kind, source="file", text=text)


def test_there_are_enough_fixtures() -> None:
    assert len(FILES) >= 20


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_fixture_is_flagged(path: Path, settings: Settings) -> None:
    page = load(path)
    ready = prepare(page, settings)  # raises for a wall or an empty page
    doc = ready.doc
    chunks = flag(list(ready.chunks), doc.hidden_text)
    assert chunks, "the fixture must still have readable text"
    flags = {f for c in chunks for f in c.flags}
    assert flags & {"instruction_like", "hidden_instruction"}, [c.text[:80] for c in chunks]
    if doc.hidden_text:
        assert any(w.startswith("hidden_instruction") for w in doc.warnings)
    # Nothing invisible survives into chunk text.
    for c in chunks:
        assert not any(0xE0000 <= ord(ch) <= 0xE007F or ch in "\u200b\u202e\u2060\ufeff" for ch in c.text)
