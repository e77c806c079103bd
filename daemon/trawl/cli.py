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
from .pipeline import Engine
from .settings import Settings
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
    """A readable terminal view of a result."""
    if result.error is not None:
        lines = [f"error [{result.error.code}]: {result.error.message}"]
        if result.error.hint:
            lines.append(f"hint: {result.error.hint}")
        return "\n".join(lines)
    cov = result.coverage
    head = [
        f"{result.title or result.final_url}",
        f"{result.final_url}  ·  source {result.source}  ·  extractor {result.extractor}  ·  mode {result.mode}",
        f"{cov.chunks_returned} of {cov.chunks_total} chunks, ~{cov.tokens_returned} of ~{cov.tokens_total} tokens"
        + (f"  ·  cached: {', '.join(result.cached)}" if result.cached else ""),
    ]
    out = ["\n".join(head)]
    for c in result.chunks:
        path = " › ".join(c.heading_path) or "(top)"
        flags = f"  ⚠ {', '.join(c.flags)}" if c.flags else ""
        score = f"{c.score:.3f}" if result.mode != "whole-page" else f"#{c.index}"
        out.append(f"── [{score}] {path}  (id {c.id}){flags}\n{textwrap.indent(c.text, '   ')}")
    for w in result.warnings:
        out.append(f"warning: {w}")
    return "\n\n".join(out)


def _cmd_fetch(args: argparse.Namespace) -> int:
    engine = Engine(Settings.from_env(), on_status=_status)
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
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
