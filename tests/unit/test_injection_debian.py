"""Debian's translated documentation as benign text for the injection window detectors (benchmarks/injection_debian.py):
the man-page and HTML readers, the CRC32 split, and the installed packages when they are there."""

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
