"""The ``trawl`` command: fetch a page and answer a question from a terminal.

    trawl fetch <url|path> "<query>" [--k N] [--json] [--max-age-s S] [--source NAME] [--in-process]
    trawl daemon | status [--open] | stop | doctor | pair | extension [--zip]

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
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from . import __version__
from .capabilities import FETCH, Capability, FetchIn, PageOut
from .capabilities.base import validation_message
from .framing import BOUNDARY_FLAG, Frame, neutralise, one_line
from .settings import Settings, SettingsError
from .types import ErrorCode, TrawlError

if TYPE_CHECKING:
    from aiohttp import web


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


def render(result: PageOut) -> str:
    """A readable terminal view of a result (scores: relevance 0-1, higher is better). Agents run CLIs too: what
    the page controls (title, URL, chunks, warnings quoting it) sits inside one block whose boundary lines
    carry a token fresh for this output."""
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
    if result.match == "weak":  # trawl's own judgement, outside the page's block
        head.append("match: weak: no passage matches the question well; the page may not answer it")
    head.extend(f"note: {one_line(n, 1000)}" for n in result.notes)  # trawl's own diagnostics: no page text
    quoted = [w for w in result.warnings if w not in result.notes]  # may quote the page: inside the block
    frame = Frame([result.title, result.final_url, *quoted, *(c.text for c in result.chunks),
                   *(h for c in result.chunks for h in c.heading_path)])
    out = ["\n".join(head), frame.open(),
           f"{one_line(result.title) or '(no title)'}\n{one_line(result.final_url or result.url, 2000)}"]
    for c in result.chunks:
        text, forged = neutralise(c.text)
        flags = [*c.flags, BOUNDARY_FLAG] if forged and BOUNDARY_FLAG not in c.flags else list(c.flags)
        path = one_line(" › ".join(c.heading_path)) or "(top)"
        shown = f"  ⚠ {', '.join(flags)}" if flags else ""
        score = f"{c.score:.3f}" if result.mode != "whole-page" else f"#{c.index}"
        out.append(f"── [{score}] {path}  (id {c.id}){shown}\n{textwrap.indent(text, '   ')}")
    for w in quoted:
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
        if info.annotation is bool:  # a switch: absent is None (the model's default applies)
            parser.add_argument(*flags, dest=name, action="store_true", default=None, help=info.description)
            continue
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
    if held := foreign_port_warning(settings.port):  # nothing is sent there; still say who holds the port
        print(f"trawl: warning: {held}", file=sys.stderr)
    out, where = asyncio.run(_fetch(settings, req, in_process=bool(args.in_process)))
    _clear_status()
    print(f"trawl: {where}", file=sys.stderr)
    if args.json:
        print(json.dumps(out.model_dump(mode="json"), ensure_ascii=False, indent=2))
    else:
        print(render(out))
    return 0 if out.ok and out.error is None else 1


def _is_local(req: FetchIn) -> bool:
    from .sources.urls import classify

    return req.source == "file" or classify(req.url.strip()).kind in ("path", "file")


async def _fetch(settings: Settings, req: FetchIn, *, in_process: bool) -> tuple[PageOut, str]:
    """The running daemon answers when there is one (its warm model, cache and browser link); local files, and
    every request when none runs (or with --in-process), are answered here. Returns the result and which did."""
    from trawl_mcp.client import ensure_located

    if req.source != "extension" and (in_process or _is_local(req)):
        # a person at a terminal reads their own files here: the daemon's agent roots are not theirs
        why = "--in-process" if in_process else "local files are read by the CLI itself"
        return await _fetch_here(settings, req), f"answered in this process ({why})"
    found, reason = await asyncio.to_thread(ensure_located, settings, autostart=False)
    if found is not None and found.daemon is not None:
        d = found.daemon
        who = f"pid {d.pid}, " if d.pid > 0 else ""
        via = "its Unix socket" if d.socket_path else "TCP"
        return await _fetch_via_daemon(settings, req, found.daemon.url), \
            f"answered by the running daemon ({who}port {d.port}, through {via}; state dir {settings.state_dir})"
    if req.source == "extension":
        err = TrawlError(ErrorCode.EXTENSION_UNAVAILABLE,
                         f"--source extension reads through the running daemon's browser link, and {reason}",
                         "Start it with `trawl daemon` (or let trawl-mcp start it), pair the extension with "
                         "`trawl pair`, then ask again.")
        return PageOut.failure(req.url, err), "no daemon answered"
    return await _fetch_here(settings, req), (f"answered in this process ({reason}; `trawl daemon` keeps the model "
                                              "warm and the browser linked for the next call)")


async def _fetch_here(settings: Settings, req: FetchIn) -> PageOut:
    """In this process. A person at a terminal: no agent roots apply (the capability's handler is the agents' way
    in). The engine is closed before the loop ends, so no browser pipe outlives it ("Event loop is closed").
    The call leaves its usage record like a daemon call (in the opt-in usage file when TRAWL_USAGE_LOG=1)."""
    from . import usage
    from .pipeline import Engine

    # one shot: the process ends with the answer, so nothing would embed the rest of the page ahead (nor say so)
    engine = Engine(settings.with_(embed_ahead=False), on_status=_status)
    t0 = time.perf_counter()
    try:
        result = await engine.fetch(req.url, req.query, k=req.k, max_age_s=req.max_age_s, source=req.source)
    finally:
        await engine.aclose()
    out = PageOut.of(result)
    if out.error is not None and out.error.code == ErrorCode.INVALID_REQUEST and req.source \
            and out.error.message.startswith("unknown source") and out.error.message.endswith(")"):
        # this process has no browser link of its own; the running daemon has
        out.error.message = out.error.message[:-1] + ", extension (through the running daemon))"
    usage.record(settings, "fetch", {"url": req.url}, out.model_dump(mode="json"),
                 (time.perf_counter() - t0) * 1000.0)
    return out


async def _fetch_via_daemon(settings: Settings, req: FetchIn, url: str) -> PageOut:
    """The daemon's /v1/fetch (never started here: a daemon started now has no warm model or browser attached)."""
    from trawl_mcp.client import DaemonBackend

    _status(f"asking the daemon at {url} to read {req.url}")
    backend = DaemonBackend(settings, autostart=False)
    try:
        body = await backend.call("fetch", req.model_dump(exclude_none=True))
    finally:
        await backend.aclose()
    return PageOut.model_validate(body)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trawl", description="Read web pages for agents: the few chunks that answer.")
    p.add_argument("--version", action="version", version=f"trawl {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    f = sub.add_parser("fetch", help="answer a question from a URL or a local file")
    add_capability_arguments(f, FETCH)
    f.add_argument("--json", action="store_true", help="print the result as JSON (the /v1/fetch body)")
    f.add_argument("--in-process", action="store_true",
                   help="answer in this process even when a daemon runs (by default the running daemon answers "
                        "web pages: its model is warm and its browser linked)")
    f.set_defaults(func=_cmd_fetch)

    from .capabilities.stats import STATS, run_stats_command

    st = sub.add_parser("stats", help="summarise local usage: calls, latency, tokens saved, errors (TRAWL_USAGE_LOG=1)")
    add_capability_arguments(st, STATS)
    st.add_argument("--json", action="store_true", help="print the summary as JSON (the /v1/stats body)")
    st.set_defaults(func=_stats, stats_here=run_stats_command)
    from .capabilities.profile import PROFILE_PAGE, run_profile_command

    pp = sub.add_parser("profile_page", help="show or reset a host's page profile (TRAWL_PAGE_PROFILES=1)")
    add_capability_arguments(pp, PROFILE_PAGE)
    pp.add_argument("--json", action="store_true", help="print it as JSON (the /v1/profile_page body)")
    pp.set_defaults(func=run_profile_command)

    from .server.commands import add_commands  # daemon, status, stop, doctor

    add_commands(sub, app_hooks=[_browser_link])
    pr = sub.add_parser("pair", help="print a one-time code that pairs the browser extension with this daemon "
                                     "(starts the daemon if none runs)")
    pr.set_defaults(func=_pair)
    ex = sub.add_parser("extension", help="copy the browser extension to a stable folder and say how to load it")
    ex.add_argument("--zip", action="store_true",
                    help="instead build the Chrome Web Store archive (the manifest's pinned key removed)")
    ex.add_argument("--dest", default=None, help="with --zip: the archive's path (default ./trawl-extension-<v>.zip)")
    ex.set_defaults(func=_extension)
    return p


def _browser_link(app: web.Application) -> None:
    """The browser link, plugged into ``trawl daemon``'s app (imported then, not when the parser is built)."""
    from .browser import browser_link

    browser_link(app)


def _pair(args: argparse.Namespace) -> int:
    """A code is only useful with a daemon to pair with: make sure one runs (starting it like trawl-mcp does)."""
    from trawl_mcp.client import ensure_located

    from .browser.pairing import CODE_TTL_S, new_pair_code

    settings = Settings.from_env()
    found, reason = ensure_located(settings, autostart=True)
    if found is None or found.daemon is None:
        from .channel.discovery import port_holder

        holder = port_holder(settings.port)  # a program that does not speak HTTP is no daemon, yet holds the port
        held = f"\n{holder.message()}" if holder is not None and not holder.says_trawl \
            and holder.describe() not in reason else ""
        print(f"trawl: cannot pair: no trawl daemon could be started ({reason}).{held}\n"
              "Run `trawl daemon` in a terminal to see why, or `trawl doctor`.", file=sys.stderr)
        return 1
    code = new_pair_code(settings.state_dir)
    print(code)
    print(f"\nNext: click the trawl icon in Chrome's toolbar (a new extension sits under the puzzle-piece menu until "
          "you pin it) to open the trawl popup, paste this code there and press Pair.\n"
          f"The code works once, within {int(CODE_TTL_S // 60)} minutes; pairing again detaches any earlier "
          f"browser.\nThe daemon listens on port {settings.port}"
          + ("" if settings.port == 8765 else " (set the same port in the extension's options)")
          + ". No extension yet? `trawl extension` shows where it is and how to load it.", file=sys.stderr)
    return 0


def _stats(args: argparse.Namespace) -> int:
    """``trawl stats``: the usage file when it is on (read here); otherwise the running daemon's recent calls (its
    in-memory records; this short-lived process has served none), or a plain word that there is nothing yet."""
    settings = Settings.from_env()
    if settings.usage_log:
        return int(args.stats_here(args))  # the file is read in this process
    from trawl_mcp.client import DaemonBackend, ensure_located

    from .capabilities.stats import StatsIn, StatsOut, render_stats

    try:
        req = StatsIn.model_validate({"days": args.days} if args.days is not None else {})
    except ValidationError as exc:
        print(f"trawl: invalid arguments: {validation_message(exc)}", file=sys.stderr)
        return 2
    found, _ = ensure_located(settings, autostart=False)
    if found is None or found.daemon is None:
        out = StatsOut(origin="memory", warnings=[
            "the usage file is off (TRAWL_USAGE_LOG=1 turns it on: one line per call, for the daemon, trawl-mcp "
            f"and the CLI, in {settings.state_dir / 'usage.jsonl'}) and no daemon is running, so there are no "
            "records to summarise; a running daemon remembers its recent calls"])
        print(json.dumps(out.model_dump(mode="json"), indent=2) if args.json else render_stats(out))
        return 0

    async def ask() -> dict[str, object]:
        backend = DaemonBackend(settings, autostart=False)
        try:
            return await backend.call("stats", req.model_dump(exclude_none=True))
        finally:
            await backend.aclose()

    out = StatsOut.model_validate(asyncio.run(ask()))
    out.warnings = [w.replace("this process served", f"the daemon on port {found.daemon.port} served")
                    for w in out.warnings]
    print(json.dumps(out.model_dump(mode="json"), indent=2) if args.json else render_stats(out))
    return 0 if out.error is None else 1


def _extension(args: argparse.Namespace) -> int:
    from . import packaging

    try:
        if args.zip:
            path = packaging.build_zip(Path(args.dest) if args.dest else None)
            print(path)
            print(f"\n{packaging.ZIP_NOTE}", file=sys.stderr)
        else:
            folder = packaging.install_extension()
            print(folder)
            print(f"\n{packaging.load_steps(folder)}", file=sys.stderr)
    except packaging.ExtensionMissing as exc:
        print(f"trawl: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # argparse would show the top-level usage; show the subcommand's own, where the flag was given
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        also = ("; the question is fetch's second argument: trawl fetch URL \"your question\""
                if args.command == "fetch" and {"-q", "--query", "--question"} & set(extra) else "")
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}{also}")
    try:
        return int(args.func(args))
    except SettingsError as exc:  # a bad TRAWL_* variable: say which, no traceback
        print(f"trawl: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
