"""The ``trawl`` command: fetch a page and answer a question from a terminal.

    trawl fetch <url|path> "<query>" [--k N] [--json] [--max-age-s S] [--source NAME]
    trawl daemon | status [--open] | stop | doctor | pair

``fetch``'s arguments are generated from the fetch capability's input model (``trawl.capabilities``): the same
fields, bounds and help as ``POST /v1/fetch`` and the MCP tool. This module is also the program's entry point: it
composes the daemon's subcommands (``trawl.server.commands``, with the browser link plugged into ``trawl daemon``)
and the browser's ``pair``; nothing imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import textwrap
from collections.abc import Sequence

from pydantic import ValidationError

from . import __version__
from .capabilities import FETCH, Capability, FetchIn, PageOut
from .capabilities.base import validation_message
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


def _scalar(annotation: object) -> type:
    """The command-line type of a field: ``int | None`` -> int."""
    for t in (int, float):
        if annotation is t or t in getattr(annotation, "__args__", ()):
            return t
    return str


def add_capability_arguments(parser: argparse.ArgumentParser, cap: Capability) -> None:
    """One argument per field of ``cap``'s input model (positional ones first), with its description as help."""
    model = cap.input
    for name in model.positional:
        info = model.model_fields[name]
        parser.add_argument(name, nargs=None if info.is_required() else "?", default=info.default,
                            type=_scalar(info.annotation), help=info.description)
    for name, info in model.model_fields.items():
        if name in model.positional or name in model.transport_only:
            continue
        aliases = getattr(info.validation_alias, "choices", None) or [name]
        flags = list(dict.fromkeys(f"--{str(a).replace('_', '-')}" for a in [name, *aliases]))
        parser.add_argument(*flags, dest=name, default=None, type=_scalar(info.annotation), help=info.description)


def _cmd_fetch(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    from .channel.discovery import foreign_port_warning

    fields = {n: getattr(args, n) for n in FetchIn.model_fields if n not in FetchIn.transport_only}
    try:
        req = FetchIn.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        print(f"trawl: invalid arguments: {validation_message(exc)}", file=sys.stderr)
        return 2
    if held := foreign_port_warning(settings.port):  # fetch runs in-process; still say who holds the port
        print(f"trawl: warning: {held}", file=sys.stderr)
    engine = Engine(settings, on_status=_status)
    # A person at a terminal: no agent roots apply (the capability's handler is the agents' way in).
    result = asyncio.run(engine.fetch(req.url, req.query, k=req.k, max_age_s=req.max_age_s, source=req.source))
    _clear_status()
    if args.json:
        print(json.dumps(PageOut.of(result).model_dump(mode="json"), ensure_ascii=False, indent=2))
    else:
        print(render(result))
    return 0 if result.ok else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trawl", description="Read web pages for agents: the few chunks that answer.")
    p.add_argument("--version", action="version", version=f"trawl {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    f = sub.add_parser("fetch", help="answer a question from a URL or a local file")
    add_capability_arguments(f, FETCH)
    f.add_argument("--json", action="store_true", help="print the result as JSON (the /v1/fetch body)")
    f.set_defaults(func=_cmd_fetch)

    from .browser import browser_link
    from .server.commands import add_commands  # daemon, status, stop, doctor

    add_commands(sub, app_hooks=[browser_link])
    pr = sub.add_parser("pair", help="print a one-time code that pairs the browser extension with this daemon")
    pr.set_defaults(func=_pair)
    return p


def _pair(args: argparse.Namespace) -> int:
    from .browser.pairing import main as pair_main

    return pair_main()


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
