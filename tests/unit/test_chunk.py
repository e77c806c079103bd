"""Chunker: heading paths, sizes, atomic tables/code/records, stable ids."""

from __future__ import annotations

import re

from trawl.chunk import chunk_document
from trawl.settings import Settings
from trawl.types import Chunk, Document

S = Settings()


def chunks_of(md: str, settings: Settings = S) -> list[Chunk]:
    return chunk_document(Document(markdown=md), settings)


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def sentence_para(n: int, start: int = 0, word: str = "topic") -> str:
    return " ".join(f"Sentence {i} explains one more detail about the {word}." for i in range(start, start + n))


def test_empty_and_blank_documents_give_no_chunks() -> None:
    assert chunks_of("") == []
    assert chunks_of("  \n\n \n") == []


def test_heading_paths_follow_nesting_and_headings_alone_are_not_chunks() -> None:
    md = (
        "# Guide\n\nIntro.\n\n## Install\n\nRun it.\n\n### Linux\n\nUse apt.\n\n"
        "## Usage\n\n### Empty\n\n## Last\n\nBye."
    )
    got = [(c.heading_path, c.text) for c in chunks_of(md)]
    assert got == [
        (("Guide",), "Intro."),
        (("Guide", "Install"), "Run it."),
        (("Guide", "Install", "Linux"), "Use apt."),
        (("Guide", "Last"), "Bye."),
    ]


def test_heading_titles_lose_markup_and_closing_hashes() -> None:
    md = "## **Bold** [link text](https://example.com/x) `code` ##\n\nBody text."
    (c,) = chunks_of(md)
    assert c.heading_path == ("Bold link text code",)
    assert "https://" not in " ".join(c.heading_path)


def test_no_heading_before_text_gives_empty_path_and_skipped_levels_work() -> None:
    md = "Preface text.\n\n### Deep first\n\nA.\n\n# Top\n\nB.\n\n### Skipped\n\nC."
    paths = [c.heading_path for c in chunks_of(md)]
    assert paths == [(), ("Deep first",), ("Top",), ("Top", "Skipped")]


def test_small_paragraphs_of_a_section_are_merged_up_to_the_target() -> None:
    paras = [f"Short paragraph number {i} with a few words." for i in range(30)]
    cs = chunks_of("## S\n\n" + "\n\n".join(paras))
    assert 2 < len(cs) < 10
    assert all(len(c.text) <= S.chunk_chars * 1.35 for c in cs)
    assert words(" ".join(c.text for c in cs)) == words(" ".join(paras))


def test_paragraphs_of_different_sections_are_not_merged() -> None:
    cs = chunks_of("## A\n\nalpha text\n\n## B\n\nbeta text")
    assert [c.text for c in cs] == ["alpha text", "beta text"]


def test_long_paragraph_splits_at_sentence_ends_without_cutting_words() -> None:
    para = sentence_para(60)
    cs = chunks_of(para)
    assert len(cs) >= 5
    for c in cs:
        assert len(c.text) <= S.chunk_chars * 1.35
        assert c.text.startswith("Sentence ") and c.text.endswith(".")
    assert words(" ".join(c.text for c in cs)) == words(para)


def test_cjk_text_uses_the_smaller_target_and_splits_at_cjk_stops() -> None:
    text = "".join(f"これは第{i}番目の日本語の文で、内容を説明しています。" for i in range(80))
    cs = chunks_of(text)
    assert all(len(c.text) <= S.chunk_chars_cjk * 1.35 for c in cs)
    assert all(c.text.endswith("。") for c in cs)
    assert "".join(c.text for c in cs) == text
    # The same characters with a larger CJK target give fewer chunks.
    assert len(chunk_document(Document(markdown=text), S.with_(chunk_chars_cjk=450))) < len(cs)


def test_enormous_sentence_is_hard_split_at_whitespace_then_anywhere() -> None:
    blob = " ".join(f"word{i}" for i in range(2000))  # no sentence marks at all
    cs = chunks_of(blob)
    assert all(len(c.text) <= S.chunk_chars * 1.35 for c in cs)
    assert words(" ".join(c.text for c in cs)) == words(blob)
    nospace = "x" * 5000
    cs = chunks_of(nospace)
    assert "".join(c.text for c in cs) == nospace
    assert max(len(c.text) for c in cs) <= S.chunk_chars * 1.35


def test_newlines_are_sentence_boundaries_for_heading_less_blobs() -> None:
    lines = [f"line {i} of a log without punctuation" for i in range(100)]
    cs = chunks_of("\n".join(lines))
    assert len(cs) > 3
    assert all(re.fullmatch(r"(line \d+ of a log without punctuation\n?)+", c.text) for c in cs)
    assert "\n".join(c.text for c in cs) == "\n".join(lines)


def test_small_table_stays_whole_with_kind_table() -> None:
    table = "| Name | Price |\n|---|---|\n| Apple | 1 |\n| Pear | 2 |"
    cs = chunks_of(f"## Prices\n\nOur prices:\n\n{table}\n\nAfter the table.")
    kinds = [c.kind for c in cs]
    assert "table" in kinds
    t = cs[kinds.index("table")]
    assert table in t.text
    assert t.text.startswith("Our prices:")  # a short lead-in stays with the table
    assert cs[-1].text == "After the table."


def test_long_table_is_split_by_rows_with_the_header_repeated() -> None:
    header = "| Product name | Description | Price |\n|---|---|---|"
    rows = [f"| Product {i} | A fairly long description of product {i} | {i}.99 |" for i in range(80)]
    cs = chunks_of(header + "\n" + "\n".join(rows))
    assert len(cs) > 2
    assert all(c.kind == "table" and c.text.startswith(header + "\n") for c in cs)
    body = [line for c in cs for line in c.text.split("\n")[2:]]
    assert body == rows
    assert all(len(c.text) <= S.chunk_chars * 3 for c in cs)


def test_table_that_fits_three_targets_is_not_split() -> None:
    header = "| a | b |\n|---|---|"
    rows = [f"| row {i} | value {i} |" for i in range(50)]
    table = header + "\n" + "\n".join(rows)
    assert S.chunk_chars < len(table) <= S.chunk_chars * 3
    (c,) = chunks_of(table)
    assert c.text == table and c.kind == "table"


def test_code_block_kept_whole_and_not_parsed_as_markdown() -> None:
    code = "```python\n# not a heading\ndef f():\n\n    return 1\n---\n| not | table |\n```"
    cs = chunks_of(f"## Code\n\n{code}\n\nText after.")
    assert cs[0].kind == "code" and cs[0].text == code
    assert cs[0].heading_path == ("Code",)
    assert cs[1].text == "Text after." and cs[1].heading_path == ("Code",)


def test_long_code_block_split_by_lines_keeping_the_fence() -> None:
    lines = [f"    value_{i} = compute_something({i}, option=True)" for i in range(120)]
    code = "```python\n" + "\n".join(lines) + "\n```"
    cs = chunks_of(code)
    assert len(cs) > 1
    for c in cs:
        assert c.kind == "code"
        assert c.text.startswith("```python\n") and c.text.endswith("\n```")
    assert [line for c in cs for line in c.text.split("\n")[1:-1]] == lines


def test_unclosed_fence_runs_to_the_end_without_error() -> None:
    cs = chunks_of("Intro text here that is long enough.\n\n```\ncode line\nmore code")
    assert cs[-1].kind == "code" and "more code" in cs[-1].text


def test_records_between_breaks_are_one_chunk_each() -> None:
    recs = [f"### Item {i}\n\n{sentence_para(6, word=f'item{i}')}\n\nPrice: {i} EUR" for i in range(5)]
    md = "## Results\n\n" + "\n\n---\n\n".join(recs)
    cs = chunks_of(md)
    # The first record shares its segment with the section start; the others are records.
    assert [c.heading_path[-1] for c in cs] == [f"Item {i}" for i in range(5)]
    assert all(c.kind == "record" for c in cs[1:])
    for i, c in enumerate(cs):
        assert c.text.endswith(f"Price: {i} EUR")


def test_tiny_records_are_grouped_under_one_heading_path() -> None:
    md = "## Tags\n\n" + "\n\n---\n\n".join(f"tag{i}" for i in range(30))
    cs = chunks_of(md)
    assert 1 <= len(cs) < 10
    assert words(" ".join(c.text for c in cs)) == [f"tag{i}" for i in range(30)]


def test_a_break_never_joins_text_across_it() -> None:
    alpha, beta = sentence_para(3, word="alpha"), sentence_para(3, word="beta")
    assert len(alpha) + len(beta) < S.chunk_chars  # they would be merged if the break were not there
    cs = chunks_of(f"{alpha}\n\n---\n\n{beta}")
    assert [c.text for c in cs] == [alpha, beta]
    assert [c.kind for c in cs] == ["record", "record"]


def test_lists_keep_items_together_with_kind_list() -> None:
    items = [f"- item {i}: a short description" for i in range(5)]
    cs = chunks_of("## Options\n\n" + "\n".join(items))
    assert len(cs) == 1 and cs[0].kind == "list" and cs[0].text == "\n".join(items)


def test_long_list_splits_between_items() -> None:
    items = [f"{i}. step number {i} of the long procedure, with some explanation attached" for i in range(1, 40)]
    cs = chunks_of("\n".join(items))
    assert len(cs) > 2
    assert all(c.kind == "list" for c in cs)
    for c in cs:
        for line in c.text.split("\n"):
            assert re.match(r"\d+\. step number", line)


def test_setext_like_dash_line_and_star_breaks_are_boundaries() -> None:
    cs = chunks_of("first part\n***\nsecond part")
    assert all(not ("first" in c.text and "second" in c.text and "***" in c.text) for c in cs)


def test_ids_are_stable_distinct_for_repeats_and_indexes_are_in_order() -> None:
    md = "## A\n\nsame text\n\n## B\n\nother\n\n## A\n\nsame text"
    a, b = chunks_of(md), chunks_of(md)
    assert [c.id for c in a] == [c.id for c in b]
    assert len({c.id for c in a}) == len(a) == 3
    assert [c.index for c in a] == [0, 1, 2]
    # A different heading path gives a different id for the same text.
    c1 = chunks_of("## X\n\nsame text")[0]
    c2 = chunks_of("## Y\n\nsame text")[0]
    assert c1.id != c2.id


def test_ids_do_not_depend_on_unrelated_earlier_text() -> None:
    tail = "## Section\n\nThe stable paragraph."
    one = chunks_of("Intro A.\n\n" + tail)[-1]
    two = chunks_of("A different intro.\n\n" + tail)[-1]
    assert one.id == two.id


def test_crlf_and_odd_whitespace_do_not_break_parsing() -> None:
    cs = chunks_of("# T\r\n\r\nline one\r\n\r\n## U\r\n\r\nline two\r\n")
    assert [(c.heading_path, c.text) for c in cs] == [(("T",), "line one"), (("T", "U"), "line two")]


def test_every_word_survives_on_a_mixed_document() -> None:
    md = "\n\n".join(
        [
            "# Title",
            sentence_para(12),
            "- a\n- b\n- c",
            "| h1 | h2 |\n|----|----|\n| x | y |",
            "```\ncode here\n```",
            "## Sub",
            sentence_para(3, 100),
            "---",
            "record body",
        ]
    )
    out = " ".join(c.text for c in chunks_of(md))
    expected = [w for w in words(md) if w not in {"Title", "Sub"}]
    assert sorted(words(out)) == sorted(expected)


def test_200kb_page_is_chunked_whole_and_in_order() -> None:
    # Speed is measured by benchmarks/bench_sanitise.py (chunk_document's time per page), not asserted here;
    # a quadratic slip would still trip the suite's per-test timeout.
    parts: list[str] = []
    i = 0
    while sum(len(p) for p in parts) < 200_000:
        parts.append(f"## Section {i}")
        parts.append(sentence_para(8, i))
        parts.append("\n".join(f"- item {j} of list {i}" for j in range(6)))
        parts.append("| a | b |\n|---|---|\n" + "\n".join(f"| {j} | {j * i} |" for j in range(10)))
        i += 1
    md = "\n\n".join(parts)
    cs = chunk_document(Document(markdown=md), S)
    assert len(cs) > 300
    assert [c.index for c in cs] == list(range(len(cs))) and len({c.id for c in cs}) == len(cs)
    heading_words = {w for line in md.split("\n") if line.startswith("## ") for w in words(line)}
    assert [w for c in cs for w in words(c.text) if w not in heading_words] == \
        [w for w in words(md) if w not in heading_words]
    sections = [int(c.heading_path[-1].split()[-1]) for c in cs if c.heading_path]
    assert sections == sorted(sections) and sections[-1] == i - 1


def test_random_markdown_never_raises_and_keeps_every_non_heading_word() -> None:
    import random

    rng = random.Random(7)
    pieces = ["# H", "## Sub", "---", "```", "| a | b |", "|---|---|", "- item", "1. step", "> quote", "", "",
              "plain words here.", "long " * 120, "。中文句子。", "~~~", "* * *", "    indented", "\x00\x01 junk"]
    for _ in range(200):
        md = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        cs = chunk_document(Document(markdown=md), S)
        heading_words = {w for line in md.split("\n") if re.match(r"^ {0,3}#{1,6}\s", line) for w in words(line)}
        got = sorted(w for c in cs for w in words(c.text))
        want = sorted(w for w in words(md) if w not in heading_words)
        # Headings inside code fences stay in the text, so only compare words that are not heading words.
        assert [w for w in got if w not in heading_words] == want
        assert [c.index for c in cs] == list(range(len(cs)))
        assert len({c.id for c in cs}) == len(cs)
        assert all(c.text.strip() for c in cs)


def test_lone_tiny_record_joins_its_neighbour() -> None:
    body = sentence_para(8, word="tutoring")
    md = f"## News\n\n#### Story\n\n---\n\n| Education Week\n\n---\n\n{body}\n\n---\n\n#### Next\n\n{sentence_para(2)}"
    cs = chunks_of(md)
    joined = next(c for c in cs if "Education Week" in c.text)
    assert body in joined.text and joined.kind == "record"
    assert joined.heading_path == ("News", "Story")
    assert all(len(c.text) > 20 for c in cs)


def test_lone_surrogates_and_control_characters_do_not_break_ids() -> None:
    cs = chunks_of("# T\n\nbad \ud800 text\x00 here.")
    assert len(cs) == 1 and len(cs[0].id) == 12
