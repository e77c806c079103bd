"""The first hour of a new user (issue 12): each rough edge they met, shown fixed with the real CLI, daemon and
engine. The browser's part (the extension, headless Chromium) is in tests/e2e/test_first_hour_browser.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest
from trawl import packaging
from trawl.pipeline import Engine
from trawl.scores import relevance
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings
from trawl.sources.base import FetchRequest
from trawl.types import ErrorCode, Page

from .test_daemon_helpers import daemon_settings, free_port
from .test_mcp import stop_daemon

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "daemon" / "trawl" / "data" / "demo.html"


def _env(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    return {**os.environ, "TRAWL_STATE_DIR": str(tmp_path / "state"), "TRAWL_CACHE_DIR": str(tmp_path / "cache"),
            "TRAWL_PORT": str(port), "TRAWL_DENSE": "none", **extra}


def _trawl(tmp_path: Path, *args: str, port: int | None = None, timeout: float = 120,
           **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trawl.cli", *args], capture_output=True, text=True,
                          env=_env(tmp_path, port or free_port(), **env), timeout=timeout, cwd=tmp_path)


# -- 1. --k 0 / --k -3: refused like the HTTP API, never an empty success -------------------------------------
@pytest.mark.parametrize("k", ["0", "-3"])
def test_cli_refuses_k_below_one(tmp_path: Path, k: str) -> None:
    r = _trawl(tmp_path, "fetch", str(DEMO), "how do I pair the extension?", "--k", k)
    assert r.returncode == 2, r.stdout
    assert "k:" in r.stderr and "greater than or equal to 1" in r.stderr
    assert "chunks" not in r.stdout


async def test_http_api_refuses_k_below_one_too(tmp_path: Path) -> None:
    async with RunningDaemon(daemon_settings(tmp_path)) as d, \
            httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}) as c:
        for k in (0, -3):
            r = await c.post("/v1/fetch", json={"url": str(tmp_path / "any.html"), "query": "pairing", "k": k})
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"


# -- 2. --source extension: goes to the daemon's browser link, with a clear answer when there is none ---------
def test_cli_source_extension_without_a_daemon_says_what_to_do(tmp_path: Path) -> None:
    r = _trawl(tmp_path, "fetch", "https://example.org/", "what is this domain for?", "--source", "extension")
    assert r.returncode == 1
    assert "unknown source" not in r.stdout
    assert "error [extension_unavailable]" in r.stdout and "trawl daemon" in r.stdout and "trawl pair" in r.stdout


async def test_cli_source_extension_asks_the_running_daemon(tmp_path: Path) -> None:
    """With a daemon running (its browser link installed, no browser attached yet) the request reaches it and the
    daemon's own answer comes back; the in-process engine has no extension source at all."""
    from trawl.browser import browser_link

    settings = daemon_settings(tmp_path)
    async with RunningDaemon(settings, extra_routes=[browser_link]) as d:
        code, out, err = await _run_async(tmp_path, ["fetch", "http://127.0.0.1:9/page", "anything", "--source",
                                                     "extension", "--json"], port=d.port, state=settings.state_dir)
    body = json.loads(out)
    assert code == 1 and body["ok"] is False, err
    assert body["error"]["code"] == "extension_unavailable", body["error"]
    assert "unknown source" not in body["error"]["message"] and "running daemon" not in body["error"]["message"]


async def _run_async(tmp_path: Path, args: list[str], *, port: int, state: Path) -> tuple[int, str, str]:
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "trawl.cli", *args, env={**_env(tmp_path, port), "TRAWL_STATE_DIR": str(state)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 100)
    return proc.returncode or 0, out.decode(), err.decode()


# -- 4. a wall the user's own browser shows is final: no headless relaunch ------------------------------------
LOGIN_HTML = """<!doctype html><html><head><title>Sign in - Members</title></head><body><h1>Sign in</h1>
<form method=post action=/session><label>Email <input type=email name=username></label>
<label>Password <input type=password name=password></label><button>Sign in</button></form></body></html>"""


class _Browser:
    """The user's browser as a source (the ExtensionSource's name and priority): it shows a sign-in page."""

    name = "extension"
    priority = 10

    def __init__(self) -> None:
        self.calls = 0

    def accepts(self, req: FetchRequest) -> str | None:
        return "the user's browser is attached"

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        self.calls += 1
        return Page(url=req.target, final_url=req.target, kind="html", source="extension", html=LOGIN_HTML,
                    title="Sign in - Members", status=200)


class _Headless(_Browser):
    name = "playwright"
    priority = 30

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        self.calls += 1
        raise AssertionError("headless Chromium must not be launched after the user's browser showed a login page")


async def test_login_page_from_the_extension_is_final(tmp_path: Path) -> None:
    browser, headless = _Browser(), _Headless()
    engine = Engine(daemon_settings(tmp_path), sources=[browser, headless])
    try:
        result = await engine.fetch("http://127.0.0.1:9/account", "what is my balance?")
    finally:
        await engine.aclose()
    assert result.error is not None and result.error.code == ErrorCode.LOGIN_REQUIRED
    assert browser.calls == 1 and headless.calls == 0
    hint = result.error.hint or ""
    assert "log in" in hint and "extension attached" not in hint  # it was attached: the hint says what is left


ARTICLE_HTML = """<!doctype html><html><head><title>Kites</title></head><body><main><h1>Kites</h1>
<p>A box kite flies steadily in strong wind because its cells give it lift and stability at once.</p>
<p>Lawrence Hargrave built the first box kites in Australia in the 1890s.</p></main></body></html>"""


class _RefusingBrowser(_Browser):
    """The user's browser could not read the page (here: its tab crashed); plain HTTP could."""

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        from trawl.types import TrawlError

        self.calls += 1
        raise TrawlError(ErrorCode.EXTENSION_UNAVAILABLE, "the browser tab crashed while loading")


class _Http(_Browser):
    name = "http"
    priority = 20

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        self.calls += 1
        return Page(url=req.target, final_url=req.target, kind="html", source="http", html=ARTICLE_HTML,
                    title="Kites", status=200)


async def test_a_page_read_another_way_after_the_browser_failed_says_so(tmp_path: Path) -> None:
    """Finding 5: what comes back over HTTP after the browser could not read it carries a warning naming why."""
    browser, http = _RefusingBrowser(), _Http()
    engine = Engine(daemon_settings(tmp_path), sources=[browser, http])
    try:
        result = await engine.fetch("http://127.0.0.1:9/kites", "who built the first box kites?")
    finally:
        await engine.aclose()
    assert result.ok and result.source == "http" and browser.calls == 1 and http.calls == 1
    notes = [w for w in result.warnings if "not through your browser" in w]
    assert notes and "extension_unavailable" in notes[0] and "crashed" in notes[0]


# -- 6. one score scale, 0-1, higher is better -------------------------------------------------------------------
def test_relevance_maps_every_raw_range_into_zero_one_keeping_order() -> None:
    fused = [-3.2, -1.0, -0.28, 0.0, 0.31, 0.77, 1.0]
    mapped = [relevance(x, "hybrid") for x in fused]
    assert all(0.0 <= m <= 1.0 for m in mapped) and mapped == sorted(mapped) and mapped[-1] == 1.0
    reranked = [0.4, 1.0, 1.5, 2.0]  # the rest below, the cross-encoder's head in [1, 2]
    mapped = [relevance(x, "hybrid+rerank") for x in reranked]
    assert all(0.0 <= m <= 1.0 for m in mapped) and mapped == sorted(mapped) and mapped[-1] == 1.0


def test_cli_json_scores_are_on_the_scale(tmp_path: Path) -> None:
    r = _trawl(tmp_path, "fetch", str(DEMO), "what does a negative score mean", "--json", "--k", "8")
    assert r.returncode == 0, r.stderr
    scores = [c["score"] for c in json.loads(r.stdout)["chunks"]]
    assert scores and all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    text = _trawl(tmp_path, "fetch", str(DEMO), "what does a negative score mean", "--k", "8").stdout
    assert "[-" not in text  # no negative number in the terminal view either


async def test_http_scores_are_on_the_scale(tmp_path: Path) -> None:
    page = tmp_path / "demo.html"
    page.write_bytes(DEMO.read_bytes())  # agents read local files under their roots only (here: tmp_path)
    async with RunningDaemon(daemon_settings(tmp_path)) as d, \
            httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}) as c:
        body = (await c.post("/v1/fetch", json={"url": str(page), "query": "pairing the browser", "k": 10})).json()
    scores = [ch["score"] for ch in body["chunks"]]
    assert scores and all(0.0 <= s <= 1.0 for s in scores)


# -- 8. trawl pair: explains the next step and the expiry; fails clearly without a daemon ------------------------
def test_pair_fails_clearly_when_no_daemon_can_start(tmp_path: Path) -> None:
    with socket.socket() as squatter:  # the port is taken by something that is not a trawl daemon
        squatter.bind(("127.0.0.1", 0))
        squatter.listen(1)
        port = squatter.getsockname()[1]
        r = _trawl(tmp_path, "pair", port=port, TRAWL_DAEMON_START_TIMEOUT_S="15")
    assert r.returncode == 1
    assert r.stdout == "" and "cannot pair" in r.stderr
    # and it names what holds the port and what to do, not only where the logs are
    assert f"port {port} on 127.0.0.1 is held by" in r.stderr and "TRAWL_PORT" in r.stderr, r.stderr


@pytest.mark.slow
def test_pair_starts_the_daemon_and_says_what_next(tmp_path: Path) -> None:
    port = free_port()
    try:
        r = _trawl(tmp_path, "pair", port=port)
        assert r.returncode == 0, r.stderr
        code = r.stdout.strip()
        assert code.startswith("trawl-") and len(code.splitlines()) == 1  # stdout: the code alone, for scripts
        assert "popup" in r.stderr and "10 minutes" in r.stderr and str(port) in r.stderr
        status = _trawl(tmp_path, "status", "--json", port=port)
        assert status.returncode == 0, status.stderr  # the daemon the code pairs with is running
    finally:
        stop_daemon(tmp_path / "state")


# -- the extension travels with the package ---------------------------------------------------------------------
def test_trawl_extension_copies_to_a_stable_folder_and_says_how_to_load_it(tmp_path: Path) -> None:
    r = _trawl(tmp_path, "extension", XDG_DATA_HOME=str(tmp_path / "data"))
    assert r.returncode == 0, r.stderr
    folder = Path(r.stdout.strip())
    assert folder == tmp_path / "data" / "trawl" / "extension"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["key"] and (folder / "background.js").is_file() and (folder / "popup" / "popup.html").is_file()
    assert "chrome://extensions" in r.stderr and "Developer mode" in r.stderr and "Load unpacked" in r.stderr
    # An upgrade writes the same folder again: a stale file is replaced, the path does not move.
    (folder / "background.js").write_text("// an older version")
    again = _trawl(tmp_path, "extension", XDG_DATA_HOME=str(tmp_path / "data"))
    assert Path(again.stdout.strip()) == folder
    assert (folder / "background.js").read_bytes() == (packaging.packaged_extension() / "background.js").read_bytes()


def test_trawl_extension_zip_is_store_ready(tmp_path: Path) -> None:
    r = _trawl(tmp_path, "extension", "--zip")
    assert r.returncode == 0, r.stderr
    archive = Path(r.stdout.strip())
    with zipfile.ZipFile(archive) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("manifest.json"))
    assert "key" not in manifest and manifest["manifest_version"] == 3
    assert {"background.js", "popup/popup.html", "options/options.html"} <= names
    assert "TRAWL_EXTENSION_IDS" in r.stderr and '"key"' in r.stderr


# -- 9. ./dev: apt installs only what it names, quietly; interpreters ------------------------------------------
def test_dev_apt_install_upgrades_nothing_else_and_keeps_dpkg_quiet(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = tmp_path / "apt-calls"
    for tool in ("apt-get", "sudo"):
        (fake / tool).write_text(
            "#!/bin/sh\n"
            + ('exec "$@"\n' if tool == "sudo" else
               f'echo "$*" >> {calls}\n'
               'echo "Selecting previously unselected package chromium-common."\n'
               'echo "debconf: delaying package configuration, since apt-utils is not installed" >&2\n'))
        (fake / tool).chmod(0o755)
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "dev").write_bytes((ROOT / "dev").read_bytes())
    r = subprocess.run(["bash", "-c", "source ./dev && apt_install chromium"], cwd=work, capture_output=True,
                       text=True, env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}, timeout=60)
    assert r.returncode == 0, r.stderr
    install = [line for line in calls.read_text().splitlines() if " install " in f" {line} "]
    assert install and "--no-upgrade" in install[0] and "-qq" in install[0] and install[0].endswith("chromium")
    assert "Selecting" not in r.stdout + r.stderr and "debconf" not in r.stdout + r.stderr
    assert "Selecting previously unselected" in (work / ".apt.log").read_text()


def test_dev_prefers_3_12_and_finds_a_second_interpreter() -> None:
    r = subprocess.run(["bash", "-c", 'source ./dev && p=$(find_python) && echo "$p" && minor_of "$p" && '
                        'q=$(find_second "$p") && minor_of "$q"'], cwd=ROOT, capture_output=True, text=True,
                       timeout=60, env={k: v for k, v in os.environ.items() if k not in ("TRAWL_PYTHON",
                                                                                         "TRAWL_PYTHON2")})
    if r.returncode != 0:
        pytest.skip(f"this machine has fewer than two supported Pythons: {r.stderr[-300:]}")
    first, second = r.stdout.split()[1], r.stdout.split()[2]
    have_312 = subprocess.run(["bash", "-c", "source ./dev && candidates"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60).stdout
    if "3.12" in have_312:
        assert first == "3.12"
    assert second != first and tuple(map(int, second.split("."))) >= (3, 11)
