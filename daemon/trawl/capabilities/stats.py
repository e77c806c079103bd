"""The stats capability: a summary of trawl's local usage records (``trawl stats``, ``POST /v1/stats``, the MCP
tool ``usage_stats``). Declared once here; the records and the summary are :mod:`trawl.usage`.

With the opt-in usage file on (``TRAWL_USAGE_LOG=1``) it summarises the file and its rotated copies; with it off, the
calls this process served since it started (the in-memory ring), and says so. Unreadable lines are skipped and
counted, never a failure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from typing import Literal, Self

from pydantic import BaseModel, Field, ValidationError

from .. import usage
from ..framing import one_line
from ..settings import Settings
from ..types import TrawlError
from .base import Capability, Input, Output, Services, validation_message
from .models import ErrorOut


class StatsIn(Input):
    days: float | None = Field(default=None, gt=0, le=3650, description="only calls from the last N days (default: "
                                                                         "all)")


class SourceOut(BaseModel):
    source: str
    calls: int
    p50_ms: float
    p95_ms: float


class HostOut(BaseModel):
    host: str
    calls: int
    errors: int


class StatsOut(Output):
    origin: Literal["file", "memory"] = Field(default="memory", description="the usage file, or this process's "
                                                                            "recent calls (the file is off)")
    calls: int = 0
    errors: int = 0
    first: str = Field(default="", description="the oldest call counted (UTC, ISO 8601)")
    last: str = ""
    by_op: dict[str, int] = Field(default_factory=dict)
    by_source: list[SourceOut] = Field(default_factory=list, description="latency percentiles by source")
    tokens_returned: int = Field(default=0, description="tokens returned by calls that read a page")
    tokens_page: int = Field(default=0, description="those pages' whole size in tokens")
    saving: float = Field(default=0.0, description="1 - tokens_returned / tokens_page")
    error_codes: dict[str, int] = Field(default_factory=dict)
    failing_hosts: list[HostOut] = Field(default_factory=list, description="hosts with the most failed calls")
    skipped_lines: int = Field(default=0, description="unreadable lines in the usage file, skipped")
    warnings: list[str] = Field(default_factory=list)
    error: ErrorOut | None = None

    @classmethod
    def failure(cls, target: str, err: TrawlError) -> Self:
        return cls(ok=False, error=ErrorOut.of(err))


def _iso(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def stats_of(settings: Settings, days: float | None = None, now: float | None = None) -> StatsOut:
    """The summary for ``settings``' usage file (or this process's ring when the file is off)."""
    since = None if days is None else (time.time() if now is None else now) - days * 86400.0
    warnings: list[str] = []
    if settings.usage_log:
        records, skipped = usage.read_log(settings, since)
        origin: Literal["file", "memory"] = "file"
        if skipped:
            warnings.append(f"{skipped} unreadable line(s) in the usage file were skipped")
    else:
        records = usage.RING.recent(float("inf") if since is None else (time.time() - since))
        skipped, origin = 0, "memory"
        warnings.append("the usage file is off (TRAWL_USAGE_LOG=1 turns it on): these are only the calls this "
                        "process served since it started")
    # Reading the figures is not using trawl: answered stats calls are left out (a refused one is an error to see).
    s = usage.summarise([r for r in records if r.op != "stats" or r.error is not None])
    return StatsOut(origin=origin, calls=s.calls, errors=s.errors, first=_iso(s.first_ts), last=_iso(s.last_ts),
                    by_op=s.by_op, by_source=[SourceOut(**vars(x)) for x in s.by_source],
                    tokens_returned=s.tokens_returned, tokens_page=s.tokens_page, saving=round(s.saving, 4),
                    error_codes=s.error_codes, failing_hosts=[HostOut(**vars(h)) for h in s.failing_hosts],
                    skipped_lines=skipped, warnings=warnings)


async def stats(svc: Services, req: StatsIn) -> StatsOut:
    return stats_of(svc.settings, req.days)


def render_stats(o: StatsOut) -> str:
    if o.error is not None:
        return f"error [{o.error.code}]: {one_line(o.error.message, 2000)}"
    lines = [f"{o.calls} calls ({o.errors} failed) from the {'usage file' if o.origin == 'file' else 'memory'}"
             + (f", {o.first} to {o.last}" if o.first else "")]
    if o.by_op:
        lines.append("by operation: " + ", ".join(f"{k} {v}" for k, v in o.by_op.items()))
    if o.by_source:
        lines.append("latency by source (p50 / p95 ms):")
        lines += [f"  {one_line(s.source, 40):<12} {s.calls:>6} calls  {s.p50_ms:>9.1f} / {s.p95_ms:.1f}"
                  for s in o.by_source]
    if o.tokens_page:
        lines.append(f"tokens: {o.tokens_returned} returned of {o.tokens_page} in the whole pages "
                     f"(saving {o.saving:.0%})")
    if o.error_codes:
        lines.append("errors: " + ", ".join(f"{one_line(k, 60)} {v}" for k, v in o.error_codes.items()))
    if o.failing_hosts:
        lines.append("hosts that fail most:")
        lines += [f"  {one_line(h.host, 100)}: {h.errors} of {h.calls} calls failed" for h in o.failing_hosts]
    lines += [f"note: {one_line(w, 500)}" for w in o.warnings]
    return "\n".join(lines)


STATS = Capability(
    name="stats", tool="usage_stats", title="trawl's local usage statistics", input=StatsIn, output=StatsOut,
    handler=stats, render=render_stats, open_world=False, bounded=False, agent_tool=False,
    description="""Summarise trawl's local usage records: calls, latency (p50/p95) by source, tokens returned vs whole
pages (the saving), error codes and the hosts that fail most. The records hold no page text and no questions; they
stay on this machine. The usage file is opt-in (TRAWL_USAGE_LOG=1); without it, the daemon's calls since it started.""",
)


def run_stats_command(args: argparse.Namespace) -> int:
    """``trawl stats [--days N] [--json]`` (its arguments come from StatsIn): reads the file in this process."""
    try:
        req = StatsIn.model_validate({"days": args.days} if args.days is not None else {})
    except ValidationError as exc:
        print(f"trawl: invalid arguments: {validation_message(exc)}", file=sys.stderr)
        return 2
    out = stats_of(Settings.from_env(), req.days)
    print(json.dumps(out.model_dump(mode="json"), indent=2) if args.json else render_stats(out))
    return 0
