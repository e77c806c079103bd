"""What the daemon reports about itself: one status model, rendered as JSON, HTML (no JavaScript) and text.

How a person opens the page: ``trawl status --open`` asks the daemon (with the
token) for a one-time code, then opens ``http://127.0.0.1:PORT/login?code=…``.
The daemon consumes the code, sets an HttpOnly, SameSite=Strict session cookie
scoped to the page's secret per-daemon path (``/s/<random>/``, see
``security.status_prefix``: browsers send cookies to every port of a host, so
``Path=/`` would hand the session to any other local server) and redirects
there. Codes live two minutes and work once. ``/`` still answers a bearer token.
"""

from __future__ import annotations

import html
import os
import time
from dataclasses import asdict
from typing import Any

from aiohttp import web

from .. import policy as site_policy
from .security import SESSION_COOKIE, status_prefix
from .state import STATE, AppState


def build_status(state: AppState) -> dict[str, Any]:
    engine = state.services.engine
    c = state.counters
    try:
        model = dict(engine.retriever.describe())
    except Exception as exc:  # the status page must render even when a stage is broken
        model = {"error": str(exc)}
    model["warm_ms"] = None if state.model_warm_ms is None else round(state.model_warm_ms, 1)
    if state.model_error:
        model["load_error"] = state.model_error
    try:
        cache: dict[str, Any] = dict(engine.page_cache.stats())
    except Exception as exc:
        cache = {"error": str(exc)}
    cache["hit_rate"] = round(c["page_hits"] / c["fetches"], 3) if c["fetches"] else None
    browser = state.browser()
    bridge = state.extras.get("mcp_bridge")
    mcp = {"requests": bridge.active, "streams": bridge.streams} if bridge is not None else None
    return {
        "service": "trawl",
        "version": state.version,
        "pid": os.getpid(),
        "url": f"http://127.0.0.1:{state.port}/",
        "started_at": state.started_at,
        "uptime_s": round(time.time() - state.started_at, 1),
        "model": model,
        "cache": cache,
        "requests": {**c, "in_flight": state.services.in_flight, "queue_limit": state.settings.queue_limit},
        "browser": {"attached": browser.attached, "summary": browser.summary, **browser.details},
        "mcp_http": mcp,
        "recent": [_record_dict(r) for r in state.recent],
        "log_file": state.log_file,
        "state_dir": str(state.settings.state_dir),
        "exits": _exits(state),
        "site_policy": site_policy.describe(state.settings),
    }


def _exits(state: AppState) -> dict[str, Any]:
    """The exit guard's events (exits.py): URLs that carried data from earlier reads, refused or let through."""
    guard = state.services.extras.get("exit_guard")
    describe = getattr(guard, "describe", None)
    return describe() if callable(describe) else {"events": []}


def _record_dict(r: Any) -> dict[str, Any]:
    d = asdict(r)
    d["cached"] = list(r.cached)
    d["timings_ms"] = {k: round(v, 1) for k, v in r.timings_ms}
    return d


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _fmt_uptime(s: float) -> str:
    s = int(s)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h {m:02d}m" if h else f"{m}m {sec:02d}s"


def _fmt_model(m: dict[str, Any]) -> str:
    if "error" in m:
        return f"unavailable ({m['error']})"
    name = m.get("model") or m.get("dense") or "none"
    parts = [str(name), f"mode {m.get('mode', '?')}"]
    if m.get("loaded"):
        parts.append("loaded" + (f" in {m['warm_ms']:.0f} ms" if m.get("warm_ms") is not None else ""))
    elif m.get("dense") not in (None, "none"):
        parts.append("not loaded yet")
    if m.get("rerank"):
        parts.append(f"rerank {m['rerank']}")
    if m.get("load_error"):
        parts.append(f"load error: {m['load_error']}")
    return " · ".join(parts)


def _fmt_bytes(n: Any) -> str:
    if not isinstance(n, int | float):
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return "?"


def _fmt_cache(c: dict[str, Any]) -> str:
    if "error" in c:
        return f"unavailable ({c['error']})"
    parts = []
    if "entries" in c:
        parts.append(f"{c['entries']} pages")
    if "bytes" in c:
        parts.append(_fmt_bytes(c["bytes"]))
    hr = c.get("hit_rate")
    parts.append("hit rate " + ("n/a (no fetches yet)" if hr is None else f"{hr * 100:.0f}%"))
    return ", ".join(parts)


def render_text(st: dict[str, Any]) -> str:
    lines = [
        f"trawl {st['version']} daemon · pid {st['pid']} · {st['url']} · up {_fmt_uptime(st['uptime_s'])}",
        f"model:    {_fmt_model(st['model'])}",
        f"cache:    {_fmt_cache(st['cache'])}",
        f"requests: {st['requests']['requests']} served, {_plural(st['requests']['errors'], 'error')}, "
        f"{st['requests']['in_flight']} in flight (limit {st['requests']['queue_limit']})",
        f"browser:  {st['browser']['summary']}",
        f"log:      {st['log_file'] or '(stderr only)'}",
    ]
    if st["recent"]:
        lines.append("recent:")
        for r in st["recent"][:10]:
            when = time.strftime("%H:%M:%S", time.localtime(r["at"]))
            cached = f" cached:{'+'.join(r['cached'])}" if r["cached"] else ""
            lines.append(f"  {when} {r['op']:<9} {r['outcome']:<14} {r['ms']:>8.1f} ms  {r['source'] or '-':<10}"
                         f" {r['target'][:80]}{cached}")
    else:
        lines.append("recent:   no requests yet")
    ex = st.get("exits") or {}
    lines.append(f"exits:    {ex.get('refused', 0)} refused, {ex.get('let_through', 0)} let through "
                 "(URLs carrying data from earlier reads)")
    for ev in (ex.get("events") or [])[:10]:
        when = time.strftime("%H:%M:%S", time.localtime(ev["at"]))
        lines.append(f"  {when} {ev['action'][:40]:<40} {ev['host']:<24} {ev['reason'][:120]}")
    return "\n".join(lines)


_CSS = """body{font:15px/1.45 system-ui,sans-serif;max-width:70em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;
vertical-align:top}th{background:#f4f4f4}dt{font-weight:600;float:left;width:9em}dd{margin:0 0 .4em 10em}
.bad{color:#a00}.num{white-space:nowrap}.ok{color:#070}code{background:#f4f4f4;padding:0 .2em}"""


def render_html(st: dict[str, Any]) -> str:
    e = html.escape
    rows = []
    for r in st["recent"]:
        when = time.strftime("%H:%M:%S", time.localtime(r["at"]))
        cls = "ok" if r["outcome"] == "ok" else "bad"
        timings = ", ".join(f"{k} {v:.0f}" for k, v in r["timings_ms"].items())
        rows.append(
            f"<tr><td>{when}</td><td>{e(r['op'])}</td><td>{e(r['target'])}</td><td>{e(r['source'] or '-')}</td>"
            f"<td class={cls}>{e(r['outcome'])}</td><td class=num>{r['ms']:.1f} ms</td><td>{e(timings)}</td>"
            f"<td>{e(', '.join(r['cached']) or '-')}</td></tr>"
        )
    table = (
        "<table><thead><tr><th>time</th><th>op</th><th>target</th><th>source</th><th>outcome</th><th>total</th>"
        "<th>stage timings (ms)</th><th>cached</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        if rows else "<p>No requests yet.</p>"
    )
    req = st["requests"]
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="10">
<title>trawl daemon status</title><style>{_CSS}</style></head>
<body><h1>trawl daemon</h1>
<dl>
<dt>Version</dt><dd>{e(st['version'])} (pid {st['pid']})</dd>
<dt>Uptime</dt><dd>{_fmt_uptime(st['uptime_s'])}</dd>
<dt>Model</dt><dd>{e(_fmt_model(st['model']))}</dd>
<dt>Cache</dt><dd>{e(_fmt_cache(st['cache']))}</dd>
<dt>Requests</dt><dd>{req['requests']} served, {_plural(req['errors'], 'error')}, {req['in_flight']} in flight
(limit {req['queue_limit']})</dd>
<dt>Browser</dt><dd>{e(st['browser']['summary'])}</dd>
<dt>Tabs read ahead</dt><dd>{_preread_html(st['browser'].get('preread'))}</dd>
<dt>Site policy</dt><dd>{e(site_policy.summary(st['site_policy']))}</dd>
<dt>Log file</dt><dd><code>{e(st['log_file'] or '(stderr only)')}</code></dd>
</dl>
<h2>Exits: URLs carrying data from earlier reads</h2>
{_exits_html(st.get("exits") or {})}
<h2>Recent requests</h2>
{table}
<p><small>This page refreshes every 10 seconds. It needs no JavaScript.</small></p>
</body></html>
"""


def _preread_html(pre: dict[str, Any] | None) -> str:
    """The open tabs held read ahead (browser/preread.py): title, host, chunks, embedded or not."""
    if not pre:
        return "no browser link"
    if not pre.get("enabled"):
        return "off (setting preread_tabs)"
    rows = [f"{html.escape(t['title'] or t['host'])} ({html.escape(t['host'])}): {t['chunks']} chunks, "
            + ("embedded" if t["fully_embedded"] else f"{t['embedded']} embedded") for t in pre.get("tabs", [])]
    return "none" if not rows else "<br>".join(rows)


def _exits_html(ex: dict[str, Any]) -> str:
    e = html.escape
    head = (f"<p>{int(ex.get('refused', 0))} refused, {int(ex.get('let_through', 0))} let through; agents' URLs are "
            "refused when they carry data from earlier reads to a site neither allowed nor open in your browser.</p>")
    rows = []
    for ev in ex.get("events") or []:
        when = time.strftime("%H:%M:%S", time.localtime(ev["at"]))
        cls = "bad" if ev["action"] == "refused" else "ok"
        rows.append(f"<tr><td>{when}</td><td class={cls}>{e(ev['action'])}</td><td>{e(ev['host'])}</td>"
                    f"<td>{e(ev['reason'])}</td><td>{e(ev['url'])}</td></tr>")
    if not rows:
        return head
    return (head + "<table><thead><tr><th>time</th><th>action</th><th>host</th><th>why</th><th>URL (masked)</th>"
            "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


async def status_page(request: web.Request) -> web.Response:
    if request.path not in ("/", status_prefix(request.app[STATE])):
        raise web.HTTPNotFound()
    st = build_status(request.app[STATE])
    return web.Response(text=render_html(st), content_type="text/html",
                        headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY",
                                 "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"})


async def status_json(request: web.Request) -> web.Response:
    return web.json_response(build_status(request.app[STATE]))


async def login_code(request: web.Request) -> web.Response:
    """POST /v1/login-code (token required): a one-time link to the status page."""
    state = request.app[STATE]
    code = state.login.new_code()
    return web.json_response({"url": f"http://127.0.0.1:{state.port}/login?code={code}",
                              "expires_in_s": state.login.code_ttl_s})


async def login(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    sid = state.login.redeem(request.query.get("code", ""))
    if sid is None:
        return web.Response(status=403, content_type="text/html",
                            text="<!doctype html><title>trawl</title><p>This link has expired or was already "
                                 "used. Run <code>trawl status --open</code> again.</p>")
    prefix = status_prefix(state)
    resp = web.Response(status=303, headers={"Location": prefix, "Cache-Control": "no-store"})
    resp.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="Strict", path=prefix,
                    max_age=int(state.login.session_ttl_s))
    return resp
