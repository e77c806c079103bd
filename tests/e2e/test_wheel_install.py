"""trawl as a pip user gets it: the wheel built from this tree (`pip wheel . --no-deps`), installed into a fresh
virtual environment on a second Python version (the system's python3: 3.11 on Debian 12), answers the demo question
from there, and the extension that wheel carries — copied out by that installation's `trawl extension` — loads
into real Chromium and links to a daemon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from trawl.browser.pairing import new_pair_code

from .conftest import BROWSER_FLAGS, e2e_settings, start_daemon

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
SECOND_PYTHON = os.environ.get("TRAWL_TEST_SECOND_PYTHON", "/usr/bin/python3")


def _second_python() -> str:
    """A supported interpreter of another minor version than the one running the tests."""
    try:
        out = subprocess.run([SECOND_PYTHON, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        out = ""
    mine = "{}.{}".format(*sys.version_info[:2])
    if not out or out == mine or tuple(map(int, out.split("."))) < (3, 11):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SECOND_PYTHON} is not a second supported Python ({out or 'missing'}; this is {mine})")
        pytest.skip(f"{SECOND_PYTHON} is not a second supported Python ({out or 'missing'}; this is {mine})")
    return SECOND_PYTHON


def _run(args: list[str], *, cwd: Path, timeout: float, env: dict[str, str] | None = None) -> str:
    r = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, f"{args[:3]} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fresh venv (second Python) with the built wheel installed; its bin directory."""
    py = _second_python()
    work = tmp_path_factory.mktemp("wheel")
    dist = work / "dist"
    _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w",
          str(dist)], cwd=work, timeout=600)
    wheels = list(dist.glob("trawl-*.whl"))
    assert len(wheels) == 1
    venv = work / "venv"
    _run([py, "-m", "venv", str(venv)], cwd=work, timeout=120)
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheels[0])], cwd=work,
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        if os.environ.get("CI") != "true" and "Could not find a version" in r.stderr + r.stdout:
            pytest.skip("the package index is unreachable: cannot install the wheel's dependencies")
        raise AssertionError(f"pip install of the wheel failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return venv / "bin"


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRAWL_", "VIRTUAL_ENV", "PYTHON"))}
    return {**env, "TRAWL_STATE_DIR": str(tmp / "state"), "TRAWL_CACHE_DIR": str(tmp / "cache"),
            "XDG_DATA_HOME": str(tmp / "data"), "PATH": "/usr/bin:/bin"}


def test_the_installed_wheel_answers_the_demo_question(installed: Path, tmp_path: Path) -> None:
    py = str(installed / "python")
    env = _env(tmp_path)
    where = _run([py, "-c", "import sys, trawl, pathlib; print(sys.version_info[:2]); "
                            "print(pathlib.Path(trawl.__file__).resolve())"], cwd=tmp_path, timeout=120, env=env)
    assert str(ROOT) not in where  # the installed copy, not this checkout
    demo = Path(where.splitlines()[1]).parent / "data" / "demo.html"
    out = _run([str(installed / "trawl"), "fetch", str(demo), "How do I connect trawl to Claude Code?"],
               cwd=tmp_path, timeout=300, env=env)
    assert "claude mcp add" in out and "Claude Code" in out
    doctor = subprocess.run([str(installed / "trawl"), "doctor"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300, env=env)
    assert "extractor" in doctor.stdout and "F1" in doctor.stdout


async def test_the_wheels_extension_loads_in_chromium(installed: Path, tmp_path: Path, chromium: str) -> None:
    from playwright.async_api import async_playwright

    env = _env(tmp_path)
    out = _run([str(installed / "trawl"), "extension"], cwd=tmp_path, timeout=120, env=env)
    folder = Path(out.strip())
    assert folder == tmp_path / "data" / "trawl" / "extension"
    site = _run([str(installed / "python"), "-c", "import trawl, pathlib; "
                 "print(pathlib.Path(trawl.__file__).resolve().parent / 'extension')"],
                cwd=tmp_path, timeout=60, env=env).strip()
    packaged = Path(site)
    assert str(ROOT) not in str(packaged) and (packaged / "manifest.json").is_file()
    assert (folder / "background.js").read_bytes() == (packaged / "background.js").read_bytes()

    settings = e2e_settings(tmp_path / "daemon")
    daemon, hub = await start_daemon(settings)
    try:
        # The unpacked copy's config.json (the extension's own hook) points it at this daemon with a code.
        (folder / "config.json").write_text(json.dumps({"port": daemon.port,
                                                        "pair_code": new_pair_code(settings.state_dir)}))
        pw = await async_playwright().start()
        try:
            context = await pw.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=chromium, headless=True,
                args=[*BROWSER_FLAGS, f"--disable-extensions-except={folder}", f"--load-extension={folder}"],
                timeout=30_000)
            try:
                assert await hub.wait_attached(20), f"the wheel's extension did not attach: {hub.describe()}"
            finally:
                await context.close()
        finally:
            await pw.stop()
    finally:
        await daemon.stop()
