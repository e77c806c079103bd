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
``TRAWL_EXTENSION_IDS``. The store also asks for the manifest's ``icons`` (a 128x128 icon for the listing and the
install dialog, 48 for chrome://extensions, 16 for the favicon): when the manifest names none, the archive carries
three drawn here (:func:`icon_png`) and its manifest names them.
"""

from __future__ import annotations

import json
import shutil
import struct
import zipfile
import zlib
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
                               "(pip install --force-reinstall trawl-reader) or load the repository's extension/ "
                               "folder")
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


ICON_SIZES = (16, 48, 128)


def icon_png(size: int) -> bytes:
    """trawl's icon as a ``size`` x ``size`` RGBA PNG: three bars of falling length (the few passages that answer)
    on a rounded teal square, inside the transparent margin the store's icon guidelines ask for (1/8 a side)."""
    pad = max(1, size // 8) if size >= 48 else 0
    side = size - 2 * pad
    radius = side / 5.0
    teal, white = (0x1F, 0x6F, 0x8B, 0xFF), (0xFF, 0xFF, 0xFF, 0xFF)
    bars = [(0.28, 0.72), (0.46, 0.58), (0.64, 0.44)]  # (centre height, length) as fractions of the square
    thick = max(1.0, side * 0.1)
    rows = []
    for y in range(size):
        row = bytearray(b"\x00")  # filter type 0 for this scanline
        for x in range(size):
            px, py = x + 0.5 - pad, y + 0.5 - pad
            inside = 0 <= px <= side and 0 <= py <= side
            if inside:  # cut the corners round
                cx = min(max(px, radius), side - radius)
                cy = min(max(py, radius), side - radius)
                inside = (px - cx) ** 2 + (py - cy) ** 2 <= radius ** 2
            colour = (0, 0, 0, 0)
            if inside:
                colour = teal
                for h, length in bars:
                    x0 = side * 0.18
                    if abs(py - side * h) <= thick / 2 and x0 <= px <= x0 + side * length:
                        colour = white
            row += bytes(colour)
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA, no interlace
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
            + chunk(b"IEND", b""))


def store_manifest(manifest: dict[str, object]) -> dict[str, object]:
    """The manifest as the Chrome Web Store takes it: without the pinned ``key``; with ``icons`` (drawn by
    :func:`icon_png`, see :func:`build_zip`) when it names none."""
    out = {k: v for k, v in manifest.items() if k != "key"}
    if not out.get("icons"):
        out["icons"] = {str(n): f"icons/icon{n}.png" for n in ICON_SIZES}
    return out


def build_zip(dest: Path | None = None) -> Path:
    """The store-ready archive of the packaged extension (manifest without ``key``, with icons); its path."""
    src = packaged_extension()
    manifest = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    drawn = {} if manifest.get("icons") else {f"icons/icon{n}.png": icon_png(n) for n in ICON_SIZES}
    dest = (dest or Path.cwd() / f"trawl-extension-{manifest.get('version', __version__)}.zip").resolve()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for f in _files(src):
            rel = f.relative_to(src).as_posix()
            if rel == "manifest.json":
                z.writestr(rel, json.dumps(store_manifest(manifest), indent=2) + "\n")
            elif rel != "README.md" and rel != "config.json":  # developer notes, a local pairing hook
                z.write(f, rel)
        for rel, data in drawn.items():
            z.writestr(rel, data)
    tmp.replace(dest)
    return dest
