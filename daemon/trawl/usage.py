"""Local usage records: one per capability call, kept in memory always and, opt-in, in a local JSONL file.

A :class:`CallRecord` holds what a call cost and how it went, never what it read: the operation, when, the source
and retrieval mode, the host (no path, no query string), the latency, the tokens returned and the whole page's
tokens, and the error code. No page text, no question, no URL path.

    record(settings, op, payload, body, ms)   called once per call by the capability dispatch (capabilities/base.py)
    recent(seconds) -> list[CallRecord]        the always-on in-memory ring (the status page draws from it)
    summarise(records) -> Summary              calls, p50/p95 latency by source, the token saving, errors, hosts
    read_log(settings) -> (records, skipped)   the opt-in file and its rotated copies; bad lines are counted

The file (``TRAWL_USAGE_LOG=1``; off by default) is ``<state_dir>/usage.jsonl``, mode 0600, rotated by size
(``usage_log_max_bytes``; ``usage_log_keep`` old files as ``usage.jsonl.1`` ...). Nothing is ever sent anywhere.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .settings import Settings

log = logging.getLogger("trawl.usage")

RING_SIZE = 4096  # recent calls kept in memory (about an hour of heavy use; a few hundred KB)
LOG_NAME = "usage.jsonl"


@dataclass(frozen=True)
class CallRecord:
    """One capability call. ``error`` is the error code of a failed call, None when it succeeded."""

    ts: float  # when the call ended (Unix seconds)
    op: str  # the capability: fetch, read_more, list_tabs, ...
    source: str  # file, http, playwright, extension, ... ("" when the call reached no page)
    host: str  # the page's host, lower case ("" for local files and calls without a page)
    mode: str  # the retrieval mode (e.g. hybrid, whole-page)
    ms: float  # the call's latency in milliseconds
    tokens_returned: int  # tokens the caller got
    tokens_page: int  # tokens of the whole page (what reading it raw would have cost)
    error: str | None  # the error code, or None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> CallRecord:
        """A record from one parsed line; ValueError when it is not one (wrong types, missing fields)."""
        if not isinstance(data, Mapping):
            raise ValueError("not an object")
        try:
            ts, ms = data["ts"], data["ms"]
            tr, tp = data["tokens_returned"], data["tokens_page"]
            err = data.get("error")
            strs = [data["op"], data.get("source", ""), data.get("host", ""), data.get("mode", "")]
        except KeyError as exc:
            raise ValueError(f"missing {exc}") from None
        nums_ok = all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in (ts, ms))
        ints_ok = all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (tr, tp))
        if not nums_ok or not ints_ok or not all(isinstance(s, str) for s in strs) or not (
                err is None or isinstance(err, str)):
            raise ValueError("a field has the wrong type")
        return cls(ts=float(ts), op=strs[0], source=strs[1], host=strs[2], mode=strs[3], ms=float(ms),
                   tokens_returned=tr, tokens_page=tp, error=err)


class Ring:
    """The recent calls, oldest first; bounded, thread-safe."""

    def __init__(self, size: int = RING_SIZE) -> None:
        self._items: deque[CallRecord] = deque(maxlen=size)
        self._lock = threading.Lock()

    def add(self, rec: CallRecord) -> None:
        with self._lock:
            self._items.append(rec)

    def recent(self, seconds: float, now: float | None = None) -> list[CallRecord]:
        since = (time.time() if now is None else now) - seconds
        with self._lock:
            return [r for r in self._items if r.ts >= since]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


RING = Ring()


def recent(seconds: float) -> list[CallRecord]:
    """The calls this process served in the last ``seconds``, oldest first (at most the last RING_SIZE)."""
    return RING.recent(seconds)


def host_of(url: Any) -> str:
    """The host of an http(s) URL, lower case; "" for anything else (a local path never leaves a trace)."""
    if not isinstance(url, str) or not url:
        return ""
    try:
        parts = urlsplit(url.strip())
        if parts.scheme.lower() not in ("http", "https"):
            return ""
        host = (parts.hostname or "")[:253]
    except ValueError:
        return ""
    # Only host-name characters (letters of any script, digits, '-', '.', ':' and brackets of an IPv6 address):
    # a URL the daemon refused can carry anything in its "host" (controls for a terminal, markup).
    return host if all(c.isalnum() or c in "-._:[]" for c in host) else ""


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def _str(v: Any, limit: int = 40) -> str:
    return v[:limit] if isinstance(v, str) else ""


def of_call(op: str, payload: Any, body: Mapping[str, Any], ms: float, now: float | None = None) -> CallRecord:
    """The record of one call, from its request and its JSON body; only sizes, timings, names and codes."""
    err = body.get("error")
    code = _str(err.get("code"), 60) if isinstance(err, Mapping) else None
    cov = body.get("coverage")
    cov = cov if isinstance(cov, Mapping) else {}
    url = body.get("final_url") or body.get("url")
    if not url and isinstance(payload, Mapping):
        url = payload.get("url")
    if code in ("exit_refused", "exit_held"):  # the host of a URL the exit guard stopped may carry what it stopped
        url = None
    return CallRecord(ts=time.time() if now is None else now, op=_str(op, 60), source=_str(body.get("source")),
                      host=host_of(url), mode=_str(body.get("mode")), ms=round(max(ms, 0.0), 3),
                      tokens_returned=_int(cov.get("tokens_returned")), tokens_page=_int(cov.get("tokens_total")),
                      error=code or (None if err is None else "unknown"))


# --- the opt-in file ----------------------------------------------------------------------------------------


def log_path(settings: Settings) -> Path:
    return Path(settings.state_dir) / LOG_NAME


_file_lock = threading.Lock()


def _rotate(path: Path, keep: int) -> None:
    """usage.jsonl -> usage.jsonl.1 -> ... -> usage.jsonl.<keep>; the oldest is dropped."""
    if keep <= 0:
        path.unlink(missing_ok=True)
        return
    for i in range(keep - 1, 0, -1):
        older = path.with_name(f"{path.name}.{i}")
        if older.exists():
            os.replace(older, path.with_name(f"{path.name}.{i + 1}"))
    os.replace(path, path.with_name(f"{path.name}.1"))


def _foreign(st: os.stat_result) -> str:
    """Why an opened usage file is not ours alone ("" when it is): another owner, other hard links, not a file."""
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"it belongs to uid {st.st_uid}"
    if st.st_nlink != 1:
        return f"it has {st.st_nlink} hard links (another name elsewhere reads the same file)"
    return ""


def _open_own(path: Path) -> int:
    """The usage file opened for appending (0600, never through a symlink), checked after opening: a file another
    user planted (a hard link made while the state dir was open, which root can open) is moved aside as
    ``usage.jsonl.bad-<n>`` and a fresh one is created (O_EXCL), so no record reaches it."""
    # O_NONBLOCK: a FIFO planted in its place fails to open instead of blocking the daemon.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    why = _foreign(os.fstat(fd))
    if not why:
        return fd
    os.close(fd)
    aside = next(path.with_name(f"{path.name}.bad-{n}") for n in itertools.count(1)
                 if not path.with_name(f"{path.name}.bad-{n}").exists())
    log.warning("usage log %s is not the daemon's own file (%s): moved aside to %s; records go to a new file",
                path, why, aside.name)
    os.replace(path, aside)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    why = _foreign(os.fstat(fd))
    if why:  # cannot happen for a file we just created; refuse rather than write
        os.close(fd)
        raise OSError(f"refusing to write the usage log {path}: {why}")
    return fd


def append(settings: Settings, rec: CallRecord) -> None:
    """Append one line to the usage file (created 0600, never through a symlink), rotating it when full."""
    path = log_path(settings)
    line = (json.dumps(rec.to_json(), separators=(",", ":"), ensure_ascii=True) + "\n").encode()
    with _file_lock:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            size = path.lstat().st_size
        except FileNotFoundError:
            size = 0
        if size and size + len(line) > settings.usage_log_max_bytes:
            _rotate(path, settings.usage_log_keep)
        fd = _open_own(path)
        try:
            if os.fstat(fd).st_mode & 0o077:  # a file someone loosened (or made before us): ours again
                os.fchmod(fd, 0o600)
            os.write(fd, line)
        finally:
            os.close(fd)


def record(settings: Settings, op: str, payload: Any, body: Mapping[str, Any], ms: float) -> CallRecord | None:
    """Record one call: always in the ring, and in the file when the user turned it on. Never raises."""
    try:
        rec = of_call(op, payload, body, ms)
    except Exception:
        log.exception("could not make a usage record")
        return None
    RING.add(rec)
    if settings.usage_log:
        try:
            append(settings, rec)
        except OSError as exc:  # a full disk or a read-only state dir must not fail the call
            log.warning("could not write the usage log: %s", exc)
    return rec


def log_files(settings: Settings) -> list[Path]:
    """The usage file and its rotated copies, oldest first."""
    path = log_path(settings)
    olds = [path.with_name(f"{path.name}.{i}") for i in range(max(settings.usage_log_keep, 0), 0, -1)]
    return [p for p in [*olds, path] if p.is_file()]


def read_log(settings: Settings, since: float | None = None) -> tuple[list[CallRecord], int]:
    """Every record in the usage files (from ``since`` on) and how many lines were unreadable and skipped."""
    records: list[CallRecord] = []
    skipped = 0
    for p in log_files(settings):
        try:
            with open(p, "rb") as f:
                for raw in f:
                    if not raw.strip():
                        continue
                    try:
                        rec = CallRecord.from_json(json.loads(raw))
                    except (ValueError, UnicodeDecodeError, RecursionError):
                        skipped += 1
                        continue
                    if since is None or rec.ts >= since:
                        records.append(rec)
        except OSError as exc:
            log.warning("could not read %s: %s", p, exc)
    return records, skipped


# --- the summary ----------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank; 0 for no values."""
    if not values:
        return 0.0
    s = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(s)))
    return s[min(rank, len(s)) - 1]


@dataclass
class SourceStats:
    source: str
    calls: int
    p50_ms: float
    p95_ms: float


@dataclass
class HostStats:
    host: str
    calls: int
    errors: int


@dataclass
class Summary:
    calls: int = 0
    errors: int = 0
    first_ts: float | None = None
    last_ts: float | None = None
    by_source: list[SourceStats] = field(default_factory=list)
    by_op: dict[str, int] = field(default_factory=dict)
    error_codes: dict[str, int] = field(default_factory=dict)
    tokens_returned: int = 0
    tokens_page: int = 0
    failing_hosts: list[HostStats] = field(default_factory=list)

    @property
    def saving(self) -> float:
        """The share of whole-page tokens not returned (0-1), over calls that read a page."""
        return 1.0 - self.tokens_returned / self.tokens_page if self.tokens_page else 0.0


def summarise(records: Iterable[CallRecord], top_hosts: int = 10) -> Summary:
    recs = list(records)
    out = Summary(calls=len(recs))
    if not recs:
        return out
    out.first_ts = min(r.ts for r in recs)
    out.last_ts = max(r.ts for r in recs)
    lat: dict[str, list[float]] = {}
    hosts: dict[str, list[int]] = {}
    for r in recs:
        out.by_op[r.op] = out.by_op.get(r.op, 0) + 1
        lat.setdefault(r.source or "(none)", []).append(r.ms)
        if r.error:
            out.errors += 1
            out.error_codes[r.error] = out.error_codes.get(r.error, 0) + 1
        elif r.tokens_page:  # the saving counts pages actually read
            out.tokens_returned += r.tokens_returned
            out.tokens_page += r.tokens_page
        if r.host:
            h = hosts.setdefault(r.host, [0, 0])
            h[0] += 1
            h[1] += bool(r.error)
    out.by_source = sorted((SourceStats(s, len(v), percentile(v, 50), percentile(v, 95)) for s, v in lat.items()),
                           key=lambda x: (-x.calls, x.source))
    failing = [HostStats(h, n, e) for h, (n, e) in hosts.items() if e]
    out.failing_hosts = sorted(failing, key=lambda x: (-x.errors, -x.errors / x.calls, x.host))[:top_hosts]
    out.error_codes = dict(sorted(out.error_codes.items(), key=lambda kv: (-kv[1], kv[0])))
    out.by_op = dict(sorted(out.by_op.items(), key=lambda kv: (-kv[1], kv[0])))
    return out
