"""Debian's translated documentation and the GNOME help as benign text for the injection window detectors
(benchmarks/injection_debian.py): the man-page, HTML and Mallard readers, the CRC32 splits, and the installed packages
when they are there."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import injection_debian as deb
import train_injection as ti

MAN = r""".\" a comment
.TH LS 1 "2022" "coreutils"
.SH ИМЯ
ls \- выводит список содержимого каталога
.PP
Сортирует записи в алфавитном порядке, если не указан ни \fB\-\-sort\fP, ни один из параметров
\fB\-cftuvSUX\fP.
.TP
.B \-a
не скрывать файлы
.nf
literal block kept out
.fi
.TS
l l.
T{ a table cell T}
.TE
"""


def test_roff_text_keeps_the_prose_and_drops_requests_comments_literals_and_tables() -> None:
    text = deb.roff_text(MAN)
    assert text.split("\n") == [
        "ls - выводит список содержимого каталога",
        "Сортирует записи в алфавитном порядке, если не указан ни --sort, ни один из параметров -cftuvSUX.",
        "-a не скрывать файлы",
    ]


def test_html_text_reads_blocks_and_leaves_code_out() -> None:
    html = ("<html><head><title>Kapitel 1</title><style>p{}</style></head><body><p>Öffnen Sie die <code>"
            "sources.list</code>\n Datei.</p><pre>apt-get update</pre><ul><li>Erster Schritt</li></ul></body></html>")
    assert deb.html_text(html).split("\n") == ["Kapitel 1", "Öffnen Sie die sources.list Datei.", "Erster Schritt"]


def test_split_is_the_crc32_of_the_text() -> None:
    for t in ("Öffnen Sie die Datei.", "ls - выводит список", "一", "Bản dịch tiếng Việt"):
        assert deb.split_of(t) == ("fit", "calib", "test", "test")[zlib.crc32(t.encode()) % 4]


@pytest.mark.skipif(not (deb.REFERENCE / "ch01.de.html").exists(), reason="debian-reference-de not installed")
def test_installed_documents_give_capped_passages_split_three_ways() -> None:
    by_lang = deb.passages_by_lang(ti.passages, cap=10)
    assert len(by_lang["de"]) == 10
    assert all(40 <= len(p) <= ti.PASSAGE_CHARS and path.endswith(".de.html") for path, p in by_lang["de"])
    crcs = [zlib.crc32(p.encode()) for _, p in by_lang["de"]]
    assert crcs == sorted(crcs)
    sp = deb.splits(ti.passages, cap=10)
    assert sum(len(v) for v in sp.values()) == sum(len(v) for v in by_lang.values())
    assert all(deb.split_of(t) == name for name, pairs in sp.items() for _, t in pairs)


PAGE = """<?xml version="1.0" encoding="utf-8"?>
<page xmlns="http://projectmallard.org/1.0/" type="topic" id="printing-cancel-job" xml:lang="de">
  <info><credit type="author"><name>Phil Bull</name></credit><desc>Einen Druckauftrag abbrechen.</desc></info>
  <title>Druckauftrag abbrechen</title>
  <p>Sie können einen <gui>wartenden</gui> Auftrag
     abbrechen.</p>
  <steps><item><p>Öffnen Sie die <gui xref="shell">Aktivitäten</gui>-Übersicht.</p></item></steps>
  <screen>lpstat -o</screen>
  <p>Click <gui>Printers</gui>.</p>
</page>
"""


def test_mallard_blocks_reads_titles_and_paragraphs_and_leaves_info_and_screens_out(tmp_path: Path) -> None:
    f = tmp_path / "printing-cancel-job.page"
    f.write_text(PAGE, encoding="utf-8")
    assert deb.mallard_blocks(f) == ["Druckauftrag abbrechen", "Sie können einen wartenden Auftrag abbrechen.",
                                     "Öffnen Sie die Aktivitäten-Übersicht.", "Click Printers."]
    english = ["Cancel a print job", "You can cancel a waiting job.", "Open the Activities overview.",
               "Click Printers."]
    assert deb._translated(deb.mallard_blocks(f), english, "de")[-1] == "Öffnen Sie die Aktivitäten-Übersicht."
    assert deb._translated(english, english, "en") == english


GNOME_INSTALLED = (deb.HELP / "C" / "gnome-help").is_dir() and (deb.HELP / "ko" / "gnome-help").is_dir()


@pytest.mark.skipif(not GNOME_INSTALLED, reason="gnome-user-docs not installed")
def test_gnome_help_passages_split_by_page_in_every_language() -> None:
    by_lang = deb.passages_by_lang(ti.passages, cap=12, corpus="gnome")
    assert len(by_lang["ko"]) == 12 and len(by_lang["en"]) == 12
    assert all(40 <= len(p) <= ti.PASSAGE_CHARS for pairs in by_lang.values() for _, p in pairs)
    first = {lang: pairs[0][0] for lang, pairs in by_lang.items() if pairs}
    assert first["ko"] == first["en"] == first["de"]  # the same lowest-CRC32 page opens every language
    sp = deb.splits(ti.passages, cap=12, corpus="gnome")
    page_of = {(lang, p): page for lang, pairs in by_lang.items() for page, p in pairs}
    assert all(deb.split_of(page_of[(lang, t)]) == name for name, pairs in sp.items() for lang, t in pairs)
    pairs = deb.gnome_pairs("fit", cap=5)
    assert {g for g, _, _ in pairs} >= {"ko", "id", "de"} and "en" not in {g for g, _, _ in pairs}
    assert all(t != e and len(e) >= deb.PAIR_MIN_CHARS for _, t, e in pairs)
