"""trawl as a pip user gets it: the wheel built from this tree (`pip wheel . --no-deps`, from a clean copy of the
tree's files, so no stale build/ output slips in), installed into a fresh virtual environment on a second Python
version (the system's python3: 3.11 on Debian 12), answers the demo question from there, and the extension that
wheel carries — copied out by that installation's `trawl extension` — loads into real Chromium and links to a daemon.
The same wheel is installed on CPython 3.13 too when this machine has one (pyenv's, or python3.13 on PATH) and
answers the demo question offline there (skipped where there is none: it is not required of a machine)."""

from __future__ import annotations

import json
import os
import shutil
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


def _clean_copy(dest: Path) -> Path:
    """The tree's own files (tracked, or new and not ignored) copied to ``dest``: what a fresh clone builds from.
    Building in the checkout itself reuses its build/ folder, whose stale modules (deleted from the source since)
    setuptools would put in the wheel."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                capture_output=True, timeout=60, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ROOT  # not a git checkout (an unpacked sdist): build it as it is
    for rel in filter(None, listed.decode().split("\0")):
        src, out = ROOT / rel, dest / rel
        if not src.is_symlink() and not src.is_file():
            continue  # deleted in the working tree
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            out.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, out)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a clean copy of this tree."""
    work = tmp_path_factory.mktemp("build")
    tree = _clean_copy(work / "tree")
    dist = work / "dist"
    log = _run([sys.executable, "-m", "pip", "wheel", str(tree), "--no-deps", "-v", "-w", str(dist)], cwd=work,
               timeout=600)
    (dist / "build.log").write_text(log)
    wheels = list(dist.glob("trawl_reader-*.whl"))  # the distribution is trawl-reader ("trawl" is another's)
    assert len(wheels) == 1
    return wheels[0]


def test_the_wheel_builds_without_setuptools_warnings(wheel: Path) -> None:
    """Issue 27: the extension's folders are declared package data, not "Package would be ignored" three times."""
    log = (wheel.parent / "build.log").read_text()
    assert "Package would be ignored" not in log and "SetuptoolsDeprecationWarning" not in log, log[-3000:]


def _install(py: str, wheel: Path, work: Path) -> Path:
    """A fresh venv on ``py`` with ``wheel`` installed; its bin directory."""
    work.mkdir(parents=True, exist_ok=True)
    venv = work / "venv"
    _run([py, "-m", "venv", str(venv)], cwd=work, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    # As the README says: a venv's bundled pip (23.0 on 3.11, 23.2 on 3.12) warns "lxml does not provide the extra
    # 'html_clean'" for jusText's requirement (pip 23.3 reads lxml's "html-clean" as the same name).
    up = subprocess.run([*pip, "install", "-q", "--upgrade", "pip>=23.3"], cwd=work, capture_output=True, text=True,
                        timeout=300)
    r = subprocess.run([*pip, "install", "-q", str(wheel)], cwd=work, capture_output=True, text=True, timeout=900)
    if up.returncode != 0 or r.returncode != 0:
        if os.environ.get("CI") != "true" and "Could not find a version" in up.stderr + r.stderr + r.stdout:
            pytest.skip("the package index is unreachable: cannot install the wheel's dependencies")
        raise AssertionError(f"pip install of the wheel failed:\n{up.stderr[-2000:]}\n{r.stdout[-3000:]}\n"
                             f"{r.stderr[-3000:]}")
    assert "does not provide the extra" not in r.stderr, r.stderr
    return venv / "bin"


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fresh venv (second Python) with the built wheel installed; its bin directory."""
    return _install(_second_python(), wheel, tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_the_trees_modules_and_extension(wheel: Path) -> None:
    """Every Python module in the wheel is one of the tree's (none left over from an earlier build), and the
    extension's files are all there."""
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    modules = {n for n in names if n.endswith(".py")}
    stale = {n for n in modules if not (ROOT / "daemon" / n).is_file() and not (ROOT / n).is_file()}
    assert not stale, f"modules in the wheel that the tree does not have: {sorted(stale)}"
    ext = ROOT / "extension"
    want = {f"trawl/extension/{p.relative_to(ext).as_posix()}" for p in ext.rglob("*") if p.is_file()}
    assert want and want <= set(names), sorted(want - set(names))


def _python_313() -> str | None:
    """A CPython 3.13 that runs on this machine: python3.13 on PATH, or pyenv's (kept off PATH; its shim on PATH
    answers only when 3.13 is the selected version, so each candidate is asked)."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [shutil.which("python3.13"), *(str(p) for p in sorted(root.glob("versions/3.13*/bin/python3.13"),
                                                                     reverse=True))]
    for c in filter(None, candidates):
        try:
            r = subprocess.run([c, "-c", "import sys; print(sys.implementation.name, *sys.version_info[:2])"],
                               capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0 and r.stdout.split() == ["cpython", "3", "13"]:
            return c
    return None


def test_the_wheel_installs_on_3_13_and_answers_offline(wheel: Path, tmp_path: Path) -> None:
    """CPython 3.13 (Debian 13's and Homebrew's default): no rs-trafilatura wheel there, so the cascade runs
    without it, answers the demo question with no network at all, and says which extractor path it took."""
    py = _python_313()
    if py is None or "{}.{}".format(*sys.version_info[:2]) == "3.13":
        pytest.skip("no CPython 3.13 here (other than the one running the tests)")
    bin_dir = _install(py, wheel, tmp_path / "w313")
    env = {**_env(tmp_path), "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "NO_PROXY": ""}  # offline: anything that tried the network would fail
    version = _run([str(bin_dir / "python"), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                   cwd=tmp_path, timeout=60, env=env).strip()
    assert version == "3.13"
    demo = _run([str(bin_dir / "python"), "-c", "import trawl, pathlib; "
                 "print(pathlib.Path(trawl.__file__).resolve().parent / 'data' / 'demo.html')"],
                cwd=tmp_path, timeout=60, env=env).strip()
    assert str(ROOT) not in demo
    out = _run([str(bin_dir / "trawl"), "fetch", demo, "How do I connect trawl to Claude Code?"], cwd=tmp_path,
               timeout=300, env=env)
    assert "claude mcp add" in out and "Claude Code" in out
    assert "rs-trafilatura is not installed" in out  # the path it took is said, not hidden
    doctor = subprocess.run([str(bin_dir / "trawl"), "doctor"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300, env=env)
    assert "trafilatura first (F1" in doctor.stdout and "3.13" in doctor.stdout, doctor.stdout


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
    named = _run([py, "-c", "import trawl; from importlib.metadata import version; "
                            "print(version('trawl-reader') == trawl.__version__)"], cwd=tmp_path, timeout=120, env=env)
    assert named.strip() == "True", named  # installed under its own name, trawl-reader ("trawl" is another's)
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
