"""FileSource on real files in tmp_path: kinds, file:// URLs, errors, caps."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from trawl import ErrorCode, Settings, TrawlError
from trawl.sources.base import FetchRequest
from trawl.sources.file import FileSource


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "c", state_dir=tmp_path / "s")


async def read(target: str, settings: Settings):
    return await FileSource().fetch(FetchRequest(target), settings)


async def read_error(target: str, settings: Settings) -> TrawlError:
    with pytest.raises(TrawlError) as info:
        await read(target, settings)
    return info.value


@pytest.mark.parametrize(
    ("name", "body", "kind"),
    [
        ("a.html", b"<html><body>x</body></html>", "html"),
        ("a.md", b"# T\n\ntext", "markdown"),
        ("a.txt", b"plain", "text"),
        ("a.json", b'{"a": 1}', "json"),
        ("a.xml", b"<?xml version='1.0'?><catalog/>", "xml"),
        ("feed.xml", b"<?xml version='1.0'?>\n<!-- c --><rss version='2.0'/>", "feed"),
        ("a.atom", b"<feed/>", "feed"),
        ("noext", b"<!DOCTYPE html><html></html>", "html"),
        ("noext2", b"[1, 2]", "json"),
        ("noext3", b"some words", "text"),
        ("weird.dat", b"<rss><channel/></rss>", "feed"),
        ("page.xml", b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"/>', "html"),
    ],
)
async def test_kinds(tmp_path: Path, settings: Settings, name: str, body: bytes, kind: str) -> None:
    (tmp_path / name).write_bytes(body)
    page = await read(str(tmp_path / name), settings)
    assert page.kind == kind
    assert page.source == "file"
    assert page.final_url.startswith("file://")


async def test_pdf_bytes(tmp_path: Path, settings: Settings) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "hello pdf")
    (tmp_path / "download").write_bytes(doc.tobytes())
    page = await read(str(tmp_path / "download"), settings)
    assert page.kind == "pdf" and page.data is not None and page.data.startswith(b"%PDF")


async def test_file_url_percent_decoded(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "with space ü.html"
    path.write_text("<p>hi</p>", encoding="utf-8")
    url = path.as_uri()
    assert "%20" in url
    page = await read(url, settings)
    assert page.html == "<p>hi</p>"


async def test_missing(tmp_path: Path, settings: Settings) -> None:
    assert (await read_error(str(tmp_path / "nope.html"), settings)).code == ErrorCode.NOT_FOUND
    assert (await read_error((tmp_path / "nope.html").as_uri(), settings)).code == ErrorCode.NOT_FOUND


async def test_directory(tmp_path: Path, settings: Settings) -> None:
    err = await read_error(str(tmp_path), settings)
    assert err.code == ErrorCode.INVALID_REQUEST and "is a directory" in err.message


@pytest.mark.parametrize(
    ("name", "body"),
    [("img.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 50), ("x.dat", b"\x00\x01\x02binary" * 20),
     ("archive", b"PK\x03\x04" + b"z" * 100), ("ctl.txt", bytes(range(1, 9)) * 50)],
)
async def test_binary(tmp_path: Path, settings: Settings, name: str, body: bytes) -> None:
    (tmp_path / name).write_bytes(body)
    assert (await read_error(str(tmp_path / name), settings)).code == ErrorCode.UNSUPPORTED_CONTENT


async def test_too_large(tmp_path: Path, settings: Settings) -> None:
    (tmp_path / "big.html").write_bytes(b"<p>" + b"x" * 5000)
    err = await read_error(str(tmp_path / "big.html"), settings.with_(max_html_bytes=1000))
    assert err.code == ErrorCode.TOO_LARGE


async def test_charset_of_local_file(tmp_path: Path, settings: Settings) -> None:
    (tmp_path / "ru.txt").write_bytes("Привет, как дела? Всё хорошо, спасибо большое.".encode("cp1251"))
    page = await read(str(tmp_path / "ru.txt"), settings)
    assert page.text is not None and "Привет" in page.text


async def test_utf16_with_bom(tmp_path: Path, settings: Settings) -> None:
    (tmp_path / "u16.txt").write_bytes("hello wide world".encode("utf-16"))
    page = await read(str(tmp_path / "u16.txt"), settings)
    assert page.text == "hello wide world"


def test_accepts() -> None:
    src = FileSource()
    assert src.accepts(FetchRequest("/tmp/x.html"))
    assert src.accepts(FetchRequest("file:///tmp/x.html"))
    assert src.accepts(FetchRequest("relative/x.md"))
    for other in ("https://e.org/", "tab:active", "ftp://x", "javascript:alert(1)", "data:text/html,x"):
        assert src.accepts(FetchRequest(other)) is None, other


async def test_remote_file_host_refused(settings: Settings) -> None:
    err = await read_error("file://server/share/x.html", settings)
    assert err.code == ErrorCode.INVALID_REQUEST


async def test_file_changed(tmp_path: Path, settings: Settings) -> None:
    import os
    import time

    from trawl.sources.file import file_changed

    path = tmp_path / "doc.md"
    path.write_text("# v1")
    page = await read(str(path), settings)
    assert not file_changed(page)
    later = time.time() + 5
    os.utime(path, (later, later))
    assert file_changed(page)
    path.unlink()
    assert file_changed(page)


async def test_odd_paths(tmp_path: Path, settings: Settings) -> None:
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert (await read_error(str(fifo), settings)).code == ErrorCode.UNSUPPORTED_CONTENT  # never blocks on open
    assert (await read_error("/tmp/a\x00b.html", settings)).code == ErrorCode.INVALID_REQUEST
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert (await read_error(str(tmp_path / "loop"), settings)).code == ErrorCode.INVALID_REQUEST
    assert (await read_error("/" + "x" * 5000, settings)).code == ErrorCode.INVALID_REQUEST
