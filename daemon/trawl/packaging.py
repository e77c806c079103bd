"""The browser extension as it travels with the Python package, for ``trawl extension``.

The wheel carries the extension as package data (``trawl/extension/``; in the repository that folder is a link to
the top-level ``extension/``). Chrome loads an unpacked extension from a folder and keeps reading it from there, so
the folder a user loads must not move when trawl is upgraded: :func:`install_extension` copies the packaged files to
one per-user place (``$XDG_DATA_HOME/trawl/extension``, ``~/Library/Application Support/trawl/extension`` on macOS)
and replaces its contents whole on each run (an upgrade updates the loaded copy in place; Chrome picks the new files
up on its next start or a click on the extension's reload arrow).

:func:`build_zip` makes the Chrome Web Store archive. The manifest in the repository pins ``key`` so an unpacked
copy gets the extension id the daemon expects; the store refuses a manifest with ``key`` (it signs the item with its
own key, which gives another id), so the archive's manifest goes without it and the store build's id is added with
``TRAWL_EXTENSION_IDS``.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from . import __version__
from .settings import user_data_dir

PACKAGED = Path(__file__).resolve().parent / "extension"
ZIP_NOTE = (
    "This archive is for the Chrome Web Store: its manifest has no \"key\" (the store refuses one and signs the "
    "item with its own key). The published extension therefore gets the id the store assigns, not the pinned id "
    "of an unpacked copy: add it to the daemon's allowed ids with TRAWL_EXTENSION_IDS=<store id>."
)


class ExtensionMissing(Exception):
    """The installed package has no extension files (a broken or partial install)."""


def packaged_extension() -> Path:
    """The extension folder inside the installed package."""
    if not (PACKAGED / "manifest.json").is_file():
        raise ExtensionMissing(f"this trawl installation has no browser extension at {PACKAGED}; reinstall trawl "
                               "(pip install --force-reinstall trawl) or load the repository's extension/ folder")
    return PACKAGED


def stable_folder() -> Path:
    """Where ``trawl extension`` keeps the copy the browser loads: the same path across upgrades."""
    return user_data_dir() / "trawl" / "extension"


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _same(a: Path, b: Path) -> bool:
    fa, fb = _files(a), _files(b)
    if [p.relative_to(a) for p in fa] != [p.relative_to(b) for p in fb]:
        return False
    return all(x.read_bytes() == y.read_bytes() for x, y in zip(fa, fb, strict=True))


def install_extension(dest: Path | None = None) -> Path:
    """Copy the packaged extension to ``dest`` (default :func:`stable_folder`); its path, unchanged when current.

    The new copy is written beside the old one and swapped in by renames, so the folder is never half-written."""
    src = packaged_extension()
    dest = dest or stable_folder()
    if dest.is_dir() and _same(src, dest):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    fresh = dest.with_name(dest.name + ".new")
    old = dest.with_name(dest.name + ".old")
    for leftover in (fresh, old):
        if leftover.exists():
            shutil.rmtree(leftover)
    shutil.copytree(src, fresh, ignore=shutil.ignore_patterns("__pycache__"))
    if dest.exists():
        dest.rename(old)
    fresh.rename(dest)
    if old.exists():
        shutil.rmtree(old)
    return dest


def load_steps(folder: Path) -> str:
    return (
        "Load it in Chrome (or Chromium, Edge, Brave) once:\n"
        "  1. open chrome://extensions\n"
        "  2. switch on \"Developer mode\" (top right)\n"
        f"  3. click \"Load unpacked\" and choose {folder}\n"
        "Then pair it with the daemon: run `trawl pair` and paste the code into the trawl popup.\n"
        "After upgrading trawl, run `trawl extension` again and click the reload arrow on trawl's card."
    )


def store_manifest(manifest: dict[str, object]) -> dict[str, object]:
    """The manifest as the Chrome Web Store takes it: without the pinned ``key``."""
    return {k: v for k, v in manifest.items() if k != "key"}


def build_zip(dest: Path | None = None) -> Path:
    """The store-ready archive of the packaged extension (manifest without ``key``); its path."""
    src = packaged_extension()
    manifest = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    dest = (dest or Path.cwd() / f"trawl-extension-{manifest.get('version', __version__)}.zip").resolve()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for f in _files(src):
            rel = f.relative_to(src).as_posix()
            if rel == "manifest.json":
                z.writestr(rel, json.dumps(store_manifest(manifest), indent=2) + "\n")
            elif rel != "README.md":  # the developer notes are not part of the item
                z.write(f, rel)
    tmp.replace(dest)
    return dest
