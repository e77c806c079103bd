"""The ``trawl`` command: fetch a page and answer a question from a terminal.

    trawl fetch <url|path> "<query>" [--k N] [--json] [--max-age S] [--source NAME]
    trawl daemon | status [--open] | stop | doctor
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import textwrap
from collections.abc import Sequence

from . import __version__
from .framing import BOUNDARY_FLAG, Frame, neutralise, one_line
from .pipeline import Engine
from .settings import Settings, SettingsError
from .types import FetchResult


def _status(msg: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\x1b[2K… {msg}")
        sys.stderr.flush()
    else:
        print(f"trawl: {msg}", file=sys.stderr)


def _clear_status() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\x1b[2K")
        sys.stderr.flush()


def render(result: FetchResult) -> str:
    """A readable terminal view of a result. Agents run CLIs too: what the page controls (title, URL, chunks,
    warnings quoting it) sits inside one block whose boundary lines carry a token fresh for this output."""
    if result.error is not None:
        lines = [f"error [{result.error.code}]: {one_line(result.error.message, 2000)}"]
        if result.error.hint:
            lines.append(f"hint: {one_line(result.error.hint, 2000)}")
        return "\n".join(lines)
    cov = result.coverage
    head = [
        f"source {result.source}  ·  extractor {result.extractor}  ·  mode {result.mode}",
        f"{cov.chunks_returned} of {cov.chunks_total} chunks, ~{cov.tokens_returned} of ~{cov.tokens_total} tokens"
        + (f"  ·  cached: {', '.join(result.cached)}" if result.cached else ""),
    ]
    frame = Frame([result.title, result.final_url, *result.warnings, *(c.text for c in result.chunks)])
    out = ["\n".join(head), frame.open(),
           f"{one_line(result.title) or '(no title)'}\n{one_line(result.final_url or result.url, 2000)}"]
    for c in result.chunks:
        text, forged = neutralise(c.text)
        flags = [*c.flags, BOUNDARY_FLAG] if forged and BOUNDARY_FLAG not in c.flags else list(c.flags)
        path = one_line(" › ".join(c.heading_path)) or "(top)"
        shown = f"  ⚠ {', '.join(flags)}" if flags else ""
        score = f"{c.score:.3f}" if result.mode != "whole-page" else f"#{c.index}"
        out.append(f"── [{score}] {path}  (id {c.id}){shown}\n{textwrap.indent(text, '   ')}")
    for w in result.warnings:
        out.append(f"warning: {one_line(w, 1000)}")
    out.append(frame.close())
    return "\n\n".join(out)


def _cmd_fetch(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    from .server.discovery import foreign_port_warning

    if held := foreign_port_warning(settings.port):  # fetch runs in-process; still say who holds the port
        print(f"trawl: warning: {held}", file=sys.stderr)
    engine = Engine(settings, on_status=_status)
    result = asyncio.run(engine.fetch(args.target, args.query or "", k=args.k, max_age_s=args.max_age,
                                      source=args.source))
    _clear_status()
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(render(result))
    return 0 if result.ok else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trawl", description="Read web pages for agents: the few chunks that answer.")
    p.add_argument("--version", action="version", version=f"trawl {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    f = sub.add_parser("fetch", help="answer a question from a URL or a local file")
    f.add_argument("target", help="http(s) URL, file:// URL or local path (HTML, PDF, Markdown, text, JSON, XML)")
    f.add_argument("query", nargs="?", default="", help="what you want to know; omit to get a small page whole")
    f.add_argument("--k", type=int, default=None, help="number of chunks (default: adaptive)")
    f.add_argument("--json", action="store_true", help="print the FetchResult as JSON")
    f.add_argument("--max-age", type=float, default=None, metavar="S", help="accept a cached page up to S seconds old")
    f.add_argument("--source", default=None, help="force a source (file, http, playwright, extension)")
    f.set_defaults(func=_cmd_fetch)

    from .server.commands import add_commands  # daemon, status, stop, doctor

    add_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except SettingsError as exc:  # a bad TRAWL_* variable: say which, no traceback
        print(f"trawl: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
