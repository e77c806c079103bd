"""Gaps found re-checking issues 12 and 13 as a new user (session 5), each shown fixed with the real CLI, daemon
and ./dev: the store archive carries the icons the store asks for, `trawl fetch` leaves its usage record when the
usage file is on, `trawl stats` asks the running daemon when the file is off, an unknown --source names every
source, and ./dev on a machine with no supported Python says what to install on each system."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest
from trawl import packaging, usage
from trawl.server.runner import RunningDaemon

from .test_daemon_helpers import daemon_settings, write_pages
from .test_first_hour import DEMO, ROOT, _run_async, _trawl


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _referenced(manifest: dict[str, object]) -> set[str]:
    """Every file of the extension the manifest names."""
    names: set[str] = set()
    bg = manifest.get("background")
    if isinstance(bg, dict) and isinstance(bg.get("service_worker"), str):
        names.add(bg["service_worker"])
    for key, field in (("action", "default_popup"), ("options_ui", "page")):
        part = manifest.get(key)
        if isinstance(part, dict) and isinstance(part.get(field), str):
            names.add(part[field])
    icons = manifest.get("icons")
    if isinstance(icons, dict):
        names.update(v for v in icons.values() if isinstance(v, str))
    return names


# -- the store archive: icons (the store's listing and install dialog need a 128x128 one), nothing local --------
def test_store_archive_names_and_carries_its_icons(tmp_path: Path) -> None:
    r = _trawl(tmp_path, "extension", "--zip", "--dest", str(tmp_path / "store.zip"))
    assert r.returncode == 0, r.stderr
    with zipfile.ZipFile(tmp_path / "store.zip") as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("manifest.json"))
        icons = manifest.get("icons")
        assert isinstance(icons, dict) and {"16", "48", "128"} <= set(icons), manifest
        for size, name in icons.items():
            assert _png_size(z.read(name)) == (int(size), int(size)), name
    assert "key" not in manifest
    missing = _referenced(manifest) - names
    assert not missing, f"the manifest names files the archive lacks: {missing}"


def test_store_archive_leaves_out_a_local_pairing_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's extension folder may hold config.json (port and a pairing code for an unpacked copy): the
    published item must not carry it."""
    copy = tmp_path / "extension"
    shutil.copytree(packaging.packaged_extension(), copy)
    (copy / "config.json").write_text(json.dumps({"port": 8765, "pair_code": "trawl-secret-code"}))
    monkeypatch.setattr(packaging, "PACKAGED", copy)
    with zipfile.ZipFile(packaging.build_zip(tmp_path / "store.zip")) as z:
        assert "config.json" not in z.namelist()
        assert all(b"trawl-secret-code" not in z.read(n) for n in z.namelist())


def test_icons_keep_the_store_margin() -> None:
    """The 128 icon's art sits inside a transparent 16-pixel margin (the store's icon guideline)."""
    import zlib

    data = packaging.icon_png(128)
    assert _png_size(data) == (128, 128)
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        if data[pos + 4:pos + 8] == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    rows = [raw[y * (1 + 128 * 4) + 1:(y + 1) * (1 + 128 * 4)] for y in range(128)]
    alpha = [[row[x * 4 + 3] for x in range(128)] for row in rows]
    assert all(a == 0 for y in (*range(16), *range(112, 128)) for a in alpha[y])
    assert all(alpha[y][x] == 0 for y in range(128) for x in (*range(16), *range(112, 128)))
    assert alpha[64][64] == 255  # the art itself is opaque


# -- usage: a CLI fetch is a call too --------------------------------------------------------------------------
def test_cli_fetch_leaves_its_usage_record_when_the_file_is_on(tmp_path: Path) -> None:
    question = "how do I connect the zebra-secret-question?"
    r = _trawl(tmp_path, "fetch", str(DEMO), question, "--k", "2", TRAWL_USAGE_LOG="1")
    assert r.returncode == 0, r.stderr
    log = tmp_path / "state" / "usage.jsonl"
    lines = log.read_text().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert rec["op"] == "fetch" and rec["source"] == "file" and rec["error"] is None and rec["host"] == ""
    assert 0 < rec["tokens_returned"] <= rec["tokens_page"]
    assert "zebra" not in lines[0] and str(DEMO) not in lines[0]
    stats = _trawl(tmp_path, "stats", "--json", TRAWL_USAGE_LOG="1")
    body = json.loads(stats.stdout)
    assert body["origin"] == "file" and body["calls"] == 1 and body["by_op"] == {"fetch": 1}
    # off by default: no file
    other = tmp_path / "off"
    other.mkdir()
    assert _trawl(other, "fetch", str(DEMO), question, "--k", "2").returncode == 0
    assert not (other / "state" / "usage.jsonl").exists()


# -- trawl stats with the file off: the running daemon's recent calls, or a plain word -----------------------------
def test_stats_with_the_file_off_and_no_daemon_says_so(tmp_path: Path) -> None:
    r = _trawl(tmp_path, "stats")
    assert r.returncode == 0, r.stderr
    assert "no daemon is running" in r.stdout and "TRAWL_USAGE_LOG=1" in r.stdout
    assert "this process served" not in r.stdout
    js = _trawl(tmp_path, "stats", "--json")
    body = json.loads(js.stdout)
    assert js.returncode == 0 and body["calls"] == 0 and "no daemon is running" in body["warnings"][0]
    assert _trawl(tmp_path, "stats", "--days", "0").returncode == 2  # bad arguments still refused


async def test_stats_with_the_file_off_asks_the_running_daemon(tmp_path: Path) -> None:
    usage.RING.clear()
    page = write_pages(tmp_path / "site", 1)[0]
    settings = daemon_settings(tmp_path)
    async with RunningDaemon(settings) as d:
        async with httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"},
                                     timeout=30.0) as c:
            for q in ("pricing per month", "rate limits"):
                assert (await c.post("/v1/fetch", json={"url": str(page), "query": q, "k": 2})).json()["ok"]
        code, out, err = await _run_async(tmp_path, ["stats", "--json"], port=d.port, state=settings.state_dir)
    assert code == 0, err
    body = json.loads(out)
    assert body["origin"] == "memory" and body["by_op"].get("fetch") == 2 and body["tokens_returned"] > 0
    assert any(f"the daemon on port {d.port}" in w for w in body["warnings"]), body["warnings"]


# -- --source: an unknown name is answered with every source, the browser's included -------------------------------
def test_unknown_source_names_the_extension_too(tmp_path: Path) -> None:
    r = _trawl(tmp_path, "fetch", str(DEMO), "pairing", "--source", "bogus")
    assert r.returncode == 1
    assert "unknown source 'bogus'" in r.stdout and "extension" in r.stdout and "playwright" in r.stdout


# -- ./dev with no supported Python: the command for each system ---------------------------------------------------
def test_dev_without_a_supported_python_says_what_to_install(tmp_path: Path) -> None:
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "dev").write_bytes((ROOT / "dev").read_bytes())
    (work / "pyproject.toml").write_text("")
    # Every interpreter on this machine is declared unsupported: what a machine with only 3.10 or none sees.
    r = subprocess.run(["bash", "-c", "source ./dev && supported() { return 1; } && setup"], cwd=work,
                       capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k not in ("TRAWL_PYTHON", "TRAWL_PYTHON2")})
    assert r.returncode == 2, r.stdout + r.stderr
    for system in ("Debian", "Ubuntu", "Fedora", "macOS"):
        assert system in r.stderr, system
    assert "apt-get install" in r.stderr and "dnf install" in r.stderr and "brew install" in r.stderr
    assert "3.11 or newer" in r.stderr and not (work / ".venv").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="the interpreters probed are Linux paths")
def test_dev_accepts_3_13_when_it_is_the_only_one(tmp_path: Path) -> None:
    """./dev takes any supported interpreter: with only a 3.13 (pyenv's, here) it picks that one."""
    roots = sorted(Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")).glob("versions/3.13*/bin/python3.13"))
    if not roots:
        pytest.skip("no CPython 3.13 under pyenv here")
    only = str(roots[-1])
    r = subprocess.run(["bash", "-c", f'source ./dev && supported() {{ [ "$1" = "{only}" ]; }} && find_python'],
                       cwd=ROOT, capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k not in ("TRAWL_PYTHON", "TRAWL_PYTHON2")})
    assert r.returncode == 0 and r.stdout.strip() == only, r.stdout + r.stderr


# -- MCP, as a client sees it: the instructions name the tab tools; scores are on the 0-1 scale -----------------
async def test_mcp_client_sees_the_tab_tools_and_scores_from_zero_to_one(tmp_path: Path) -> None:
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    page = tmp_path / "demo.html"
    page.write_bytes(DEMO.read_bytes())
    async with RunningDaemon(daemon_settings(tmp_path)) as d:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {d.token}"})
        async with http, Client(streamable_http_client(f"{d.url}/mcp", http_client=http)) as c:
            instructions = c.instructions or ""
            res = await c.call_tool("fetch_page", {"url": str(page), "query": "how do I pair the extension?",
                                                   "k": 8})
    for tool in ("fetch_page", "read_more", "list_tabs", "read_tab", "search_tabs"):
        assert tool in instructions, tool
    assert "0-1, higher is better" in instructions
    assert res.is_error is False
    body = res.structured_content
    assert isinstance(body, dict)
    scores = [ch["score"] for ch in body["chunks"]]
    assert len(scores) >= 2 and all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    assert "score -" not in res.content[0].text  # type: ignore[union-attr]
