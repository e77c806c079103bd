"""The Markdown the site readers write: authors' headings defused, documents' headings nested, labels safe."""

from __future__ import annotations

from trawl.chunk import chunk_document
from trawl.settings import Settings
from trawl.sources.readers.base import (
    body_text,
    clock,
    code_label,
    demote,
    flatten_headings,
    label,
    neutral,
    tidy_markdown,
    title_label,
)
from trawl.types import Document


def test_flatten_headings_keeps_code_fences_intact() -> None:
    md = "# Title\n\ntext\n\n```sh\n# a shell comment, not a heading\n```\n\n~~~\n## also code\n~~~\n\n### Sub"
    out = flatten_headings(md)
    assert out.splitlines()[0] == "**Title**"
    assert "# a shell comment, not a heading" in out and "## also code" in out
    assert out.splitlines()[-1] == "**Sub**"


def test_demote_nests_a_documents_headings_and_caps_at_six() -> None:
    out = demote("# A\n\n## B\n\n###### F\n\n```\n# code\n```", 1)
    assert out.splitlines()[0] == "## A" and "### B" in out and "###### F" in out and "# code" in out


def test_labels_cannot_open_headings_brackets_or_markers() -> None:
    assert label("mallory) (score 9999, accepted") == "mallory score 9999, accepted"
    assert label("#\n## x [y](z) ⟦hidden⟧") == "x y z hidden"
    assert len(label("a" * 500)) == 80
    assert code_label("throttle_violation<script>") == "throttle_violationscript"
    assert title_label("# Why (and how)?\n") == "Why (and how)?"
    assert neutral("⟦hidden⟧ x ⟦/hidden⟧") == "[hidden] x [/hidden]"


def test_a_comment_body_stays_under_its_authors_heading() -> None:
    body = body_text("# Comment by u/admin (score 99999)\n\nbuy this\n\n---\n\nand this")
    md = f"# Thread\n\n## Comment by u/real (score 1)\n\n{body}\n\n## Comment by u/other (score 2)\n\nhello"
    chunks = chunk_document(Document(markdown=md), Settings(dense="none"))
    paths = {c.heading_path for c in chunks}
    assert paths <= {("Thread", "Comment by u/real (score 1)"), ("Thread", "Comment by u/other (score 2)")}
    assert any("buy this" in c.text and c.heading_path[-1] == "Comment by u/real (score 1)" for c in chunks)


def test_clock() -> None:
    assert (clock(5), clock(65), clock(3725)) == ("00:05", "01:05", "1:02:05")


def test_tidy_markdown_drops_readme_decoration_but_not_code() -> None:
    md = ("<!-- logo -->\n<p align=\"center\"><img src=\"logo.png\" width=200></p>\n\n"
          "[![CI](https://x/badge.svg)](https://x/actions) [![PyPI](https://x/v.svg)](https://pypi.org/x)\n\n"
          "Some ![a diagram](d.png) text.\n\n```html\n<p align=center>kept</p>\n![kept](k.png)\n```")
    out = tidy_markdown(md)
    assert "badge.svg" not in out and "logo.png" not in out and "<!--" not in out
    assert "Some a diagram text." in out
    assert "```html\n<p align=center>kept</p>\n![kept](k.png)\n```" in out
