"""Find the system Chromium at run time.

trawl never uses Playwright's own browser download: it drives the Chromium
(or Chrome) already installed on the machine. Order of the search:

1. ``settings.chromium_path`` (``TRAWL_CHROMIUM_PATH``) when set — a path or a
   command name on ``PATH``; when it is set but unusable the search stops there
   and says so, rather than silently picking another browser;
2. the real Debian binary ``/usr/lib/chromium/chromium`` (preferred over the
   ``/usr/bin/chromium`` wrapper, which adds its own extension flags);
3. ``chromium``, ``chromium-browser``, ``google-chrome``, ``google-chrome-stable``
   on ``PATH`` and a few well-known install locations.

Used by the Playwright source, ``trawl doctor`` and the end-to-end tests.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .settings import Settings
from .types import ErrorCode, TrawlError

log = logging.getLogger("trawl.chromium")

INSTALL_HINT = (
    "Install Chromium (Debian/Ubuntu: `sudo apt-get install -y chromium`) or point TRAWL_CHROMIUM_PATH "
    "at a Chromium/Chrome binary."
)

_KNOWN_PATHS = (
    "/usr/lib/chromium/chromium",
    "/usr/lib/chromium-browser/chromium-browser",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/snap/bin/chromium",
    "/usr/bin/google-chrome",
    "/usr/bin/google-chrome-stable",
    "/opt/google/chrome/chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
)
_COMMAND_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

# Flags every trawl launch uses (headless, as root, no display, small /dev/shm).
LAUNCH_ARGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # WebRTC sends no UDP itself (a STUN/TURN packet to any address a page names went past the route handler and
    # the daemon's proxy); only proxied TCP is left. Chromium 156's name for the switch (the older
    # --force-webrtc-ip-handling-policy is ignored): test_headless_proxy mounts the attack.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)

# Flags of a launch whose contexts all go through the daemon's proxy (sources/proxy.py). The browser's own fetchers
# (its default network context: account checks, variations, safe browsing) have no proxy, so Chromium's resolver is
# pinned: every name fails without a lookup, but the proxy's address (127.0.0.1, a literal) is left alone. Chromium
# never resolves a page's names anyway (the proxy does).
PROXIED_LAUNCH_ARGS: tuple[str, ...] = (
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
)


@dataclass(frozen=True, slots=True)
class ChromiumInfo:
    path: str
    how: str  # "setting", "known path", "PATH"
    version: str = ""


def _usable(path: str) -> bool:
    p = Path(path)
    return p.is_file() and os.access(p, os.X_OK)


def candidates(settings: Settings | None = None) -> list[tuple[str, str]]:
    """Every place searched, in order, as (path-or-command, how)."""
    out: list[tuple[str, str]] = []
    configured = (settings.chromium_path if settings is not None else "").strip()
    if configured:
        out.append((configured, "setting"))
        return out
    out.extend((p, "known path") for p in _KNOWN_PATHS)
    out.extend((c, "PATH") for c in _COMMAND_NAMES)
    return out


def _locate(settings: Settings | None) -> tuple[str, str] | None:
    for where, how in candidates(settings):
        path = shutil.which(where) if (how == "PATH" or os.sep not in where) else where
        if path and _usable(path):
            return path, how
    return None


def find_chromium(settings: Settings | None = None) -> str | None:
    """The path of a usable Chromium binary, or None."""
    found = _locate(settings)
    return found[0] if found else None


def require_chromium(settings: Settings | None = None) -> str:
    """Like :func:`find_chromium` but raises BROWSER_UNAVAILABLE with an install hint."""
    path = find_chromium(settings)
    if path is not None:
        return path
    configured = (settings.chromium_path if settings is not None else "").strip()
    if configured:
        raise TrawlError(
            ErrorCode.BROWSER_UNAVAILABLE,
            f"the configured Chromium {configured!r} is missing or not executable",
            INSTALL_HINT,
        )
    raise TrawlError(ErrorCode.BROWSER_UNAVAILABLE, "no Chromium or Chrome found on this machine", INSTALL_HINT)


def chromium_version(path: str, timeout_s: float = 10.0) -> str:
    """``Chromium 150.0...`` as the binary reports it, or "" when it cannot say."""
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.debug("chromium --version failed: %s", exc)
        return ""
    return out.stdout.strip()


def describe(settings: Settings | None = None) -> ChromiumInfo | None:
    """What ``trawl doctor`` shows: the binary found, how, and its version."""
    found = _locate(settings)
    if found is None:
        return None
    return ChromiumInfo(path=found[0], how=found[1], version=chromium_version(found[0]))
