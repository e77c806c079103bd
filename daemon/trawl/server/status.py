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
from .. import usage
from ..extractor_path import current as extractor_path
from ..ownpages import OWN_PAGE_META
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
        "extractor": _extractor(),
        "last_hour": last_hour(usage.recent(HOUR_S)),
    }


HOUR_S = 3600.0
BUCKET_S = 300.0  # the chart's bars: five minutes each, twelve in the hour


def _extractor() -> dict[str, Any]:
    try:
        return extractor_path().to_dict()
    except Exception as exc:  # the status page must render even when a stage is broken
        return {"error": str(exc)}


def last_hour(records: list[usage.CallRecord], now: float | None = None) -> dict[str, Any]:
    """The last hour of calls (usage.recent, no page text): totals, latency, the token saving, reads per site,
    errors by code, and twelve five-minute buckets for the chart."""
    now = time.time() if now is None else now
    recs = [r for r in records if now - HOUR_S < r.ts <= now]
    summary = usage.summarise(recs)
    n = int(HOUR_S // BUCKET_S)
    buckets: list[dict[str, Any]] = [{"calls": 0, "errors": 0, "ms": []} for _ in range(n)]
    sites: dict[str, list[int]] = {}
    for r in recs:
        i = min(n - 1, max(0, n - 1 - int((now - r.ts) // BUCKET_S)))
        buckets[i]["calls"] += 1
        buckets[i]["errors"] += bool(r.error)
        buckets[i]["ms"].append(r.ms)
        if r.host:
            site = sites.setdefault(r.host, [0, 0])
            site[0] += 1
            site[1] += bool(r.error)
    lat = [r.ms for r in recs]
    return {
        "calls": summary.calls,
        "errors": summary.errors,
        "p50_ms": round(usage.percentile(lat, 50), 1),
        "p95_ms": round(usage.percentile(lat, 95), 1),
        "tokens_returned": summary.tokens_returned,
        "tokens_page": summary.tokens_page,
        "saving": round(summary.saving, 4),
        "error_codes": summary.error_codes,
        "sites": [{"host": h, "reads": c, "errors": e}
                  for h, (c, e) in sorted(sites.items(), key=lambda kv: (-kv[1][0], kv[0]))[:15]],
        "buckets": [{"calls": b["calls"], "errors": b["errors"],
                     "p50_ms": round(usage.percentile(b["ms"], 50), 1)} for b in buckets],
        "bucket_s": BUCKET_S,
    }


def _exits(state: AppState) -> dict[str, Any]:
    """The exit guard's events (exits.py, exitflow.py): URLs held, refused or let through with earlier data."""
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
        f"extract:  {_fmt_extractor(st.get('extractor') or {})}",
        f"hour:     {_fmt_hour(st.get('last_hour') or {})}",
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
    lines.append(f"exits:    {ex.get('held', 0)} held, {ex.get('refused', 0)} refused, {ex.get('let_through', 0)} "
                 "let through (agent sessions that read private content, fetching elsewhere)")
    for ev in (ex.get("events") or [])[:10]:
        when = time.strftime("%H:%M:%S", time.localtime(ev["at"]))
        lines.append(f"  {when} {ev['action'][:40]:<40} {ev['host']:<24} {ev['reason'][:120]}")
    return "\n".join(lines)


def _fmt_extractor(x: dict[str, Any]) -> str:
    if "error" in x or "name" not in x:
        return f"unknown ({x.get('error', 'not reported')})"
    head = f"{x['name']} first, F1 {x['f1']:.3f} on {x['measured_on']}"
    if x["best"]:
        return head
    return f"{head} (rs-trafilatura: {x['f1_best']:.3f}; {x['why']})"


def _fmt_hour(h: dict[str, Any]) -> str:
    if not h.get("calls"):
        return "no calls in the last hour"
    saved = (f", {h['tokens_returned']:,} of {h['tokens_page']:,} page tokens returned "
             f"(saved {saved_text(h['saving'])})" if h.get("tokens_page") else "")
    return (f"{_plural(h['calls'], 'call')}, {_plural(h['errors'], 'error')}, latency p50 {h['p50_ms']:.0f} ms "
            f"p95 {h['p95_ms']:.0f} ms{saved}")


_CSS = """body{font:15px/1.45 system-ui,sans-serif;max-width:70em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;
vertical-align:top}th{background:#f4f4f4}dt{font-weight:600;float:left;clear:left;width:10em}dd{margin:0 0 .4em 11em}
.bad{color:#a00}.num{white-space:nowrap}.ok{color:#070}code{background:#f4f4f4;padding:0 .2em}
.glance{display:grid;grid-template-columns:repeat(auto-fit,minmax(20em,1fr));gap:1em;margin:1em 0}
.card{border:1px solid #ddd;border-radius:6px;padding:.6em .9em;min-width:0;overflow-wrap:anywhere}
.card h3{margin:0 0 .4em;font-size:1em}.card table{table-layout:fixed}.card code{word-break:break-all}
.big{font-size:1.4em;font-weight:600}.meter{background:#eee;height:.8em;border-radius:.4em;overflow:hidden}
.meter span{display:block;height:100%;background:#2a7}.chart{width:100%;height:auto;max-width:36em}"""


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
        "<table id=recent><thead><tr><th>time</th><th>op</th><th>target</th><th>source</th><th>outcome</th>"
        "<th>total</th>"
        "<th>stage timings (ms)</th><th>cached</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        if rows else "<p>No requests yet.</p>"
    )
    req = st["requests"]
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">{OWN_PAGE_META}<meta http-equiv="refresh" content="10">
<title>trawl daemon status</title><style>{_CSS}</style></head>
<body><h1>trawl daemon</h1>
{_glance_html(st)}
<dl>
<dt>Version</dt><dd>{e(st['version'])} (pid {st['pid']})</dd>
<dt>Uptime</dt><dd>{_fmt_uptime(st['uptime_s'])}</dd>
<dt>Model</dt><dd>{e(_fmt_model(st['model']))}</dd>
<dt>Cache</dt><dd>{e(_fmt_cache(st['cache']))}</dd>
<dt>Requests</dt><dd>{req['requests']} served, {_plural(req['errors'], 'error')}, {req['in_flight']} in flight
(limit {req['queue_limit']})</dd>
<dt>Browser</dt><dd>{e(st['browser']['summary'])}</dd>
<dt>Tabs read ahead</dt><dd>{_preread_html(st['browser'].get('preread'))}</dd>
<dt>Site policy</dt><dd>{e(site_policy.summary(st['site_policy']))}{_merged_html(st['browser'])}</dd>
<dt>Log file</dt><dd><code>{e(st['log_file'] or '(stderr only)')}</code></dd>
</dl>
<h2>Exits: URLs carrying data from earlier reads</h2>
{_exits_html(st.get("exits") or {})}
<h2>Recent requests</h2>
{table}
<p><small>This page refreshes every 10 seconds. It needs no JavaScript.</small></p>
</body></html>
"""


def _merged_html(browser: dict[str, Any]) -> str:
    """The browser's copy and the file were edited apart and merged (browser/policy_sync.py): say what changed."""
    sync = browser.get("policy_sync") or {}
    note = sync.get("last_merge", "")
    if not note:
        return ""
    return (f"<br><strong>Merged:</strong> the browser's copy and the file were both edited; trawl kept both, deny "
            f"wins ({html.escape(note)}). The file's previous version is in "
            f"<code>{html.escape(str(sync.get('backup', '')))}</code>.")


def _glance_html(st: dict[str, Any]) -> str:
    """At a glance: the browser link, the last hour (chart, latency), the token saving, reads per site, errors."""
    e = html.escape
    h = st.get("last_hour") or {}
    b = st["browser"]
    link_cls = "ok" if b.get("attached") else "bad"
    link = (f"<div class='card'><h3>Browser link</h3><p class='big {link_cls}'>"
            f"{'attached' if b.get('attached') else 'not attached'}</p>"
            + (f"<p>{e(b.get('summary', ''))}</p>" if b.get("attached") else
               "<p>To let agents read your open tabs: run <code>trawl extension</code> to load the extension, then "
               "<code>trawl pair</code>.</p>") + "</div>")
    calls = int(h.get("calls", 0))
    hour = (f"<div class='card'><h3>Last hour</h3><p><span class='big'>{calls}</span> "
            f"{'call' if calls == 1 else 'calls'}, {_plural(int(h.get('errors', 0)), 'error')}"
            + (f"; latency p50 {h['p50_ms']:.0f} ms, p95 {h['p95_ms']:.0f} ms" if calls else "")
            + f"</p>{chart_svg(h.get('buckets') or [], float(h.get('bucket_s', BUCKET_S)))}"
            "<p><small>bars: calls per 5 minutes (red: errors) · line: their median latency</small></p></div>")
    if h.get("tokens_page"):
        saved = max(0.0, min(1.0, 1.0 - h["tokens_returned"] / h["tokens_page"]))  # the bar shows what it says
        tokens = (f"<div class='card'><h3>Tokens</h3><p><span class='big'>{saved_text(saved)}</span> saved: "
                  f"{h['tokens_returned']:,} tokens returned instead of {h['tokens_page']:,} for the whole pages"
                  f"</p><div class='meter' title='saved: the share of the whole pages not returned'>"
                  f"<span style='width:{saved * 100:.1f}%'></span></div></div>")
    else:
        tokens = "<div class='card'><h3>Tokens</h3><p>No page read in the last hour.</p></div>"
    site_rows = "".join(f"<tr><td>{e(x['host'])}</td><td class=num>{x['reads']}</td>"
                        f"<td class='num {'bad' if x['errors'] else ''}'>{x['errors']}</td></tr>"
                        for x in h.get("sites") or [])
    sites = ("<div class='card'><h3>Reads per site</h3>" + (
        f"<table><thead><tr><th>site</th><th>reads</th><th>errors</th></tr></thead><tbody>{site_rows}</tbody>"
        "</table>" if site_rows else "<p>No site read in the last hour (local files have no site).</p>") + "</div>")
    err_rows = "".join(f"<tr><td><code>{e(code)}</code></td><td class=num>{n}</td></tr>"
                       for code, n in (h.get("error_codes") or {}).items())
    errors = ("<div class='card'><h3>Errors by code</h3>" + (
        f"<table><tbody>{err_rows}</tbody></table>" if err_rows else "<p class=ok>None in the last hour.</p>")
        + "</div>")
    x = st.get("extractor") or {}
    extract = f"<div class='card'><h3>Extraction</h3><p>{e(_fmt_extractor(x))}</p></div>"
    return f"<div class='glance'>{link}{hour}{tokens}{sites}{errors}{extract}</div>"


def saved_text(saved: float) -> str:
    """The share saved, never rounded up to a "100%" that did not happen (nor down to "0%")."""
    if 0.995 <= saved < 1.0:
        return f"{min(saved, 0.999):.1%}"
    if 0.0 < saved < 0.005:
        return "<1%"
    return f"{saved:.0%}"


def chart_svg(buckets: list[dict[str, Any]], bucket_s: float = BUCKET_S) -> str:
    """Calls per five minutes over the last hour (bars; errors in red on top) and each bucket's median latency
    (dots on a line, right axis), as inline SVG: drawn by the server, no JavaScript."""
    w, h, left, right, top, bottom = 360, 140, 30, 44, 10, 22
    pw, ph = w - left - right, h - top - bottom
    n = max(1, len(buckets))
    most = max([int(b.get("calls", 0)) for b in buckets] + [1])
    slow = max([float(b.get("p50_ms", 0.0)) for b in buckets] + [1.0])
    bw = pw / n
    parts = [f"<svg class='chart' role='img' viewBox='0 0 {w} {h}' xmlns='http://www.w3.org/2000/svg'>",
             f"<title>calls per {bucket_s / 60:.0f} minutes over the last hour, with median latency</title>",
             f"<line x1='{left}' y1='{top + ph}' x2='{left + pw}' y2='{top + ph}' stroke='#999'/>"]
    points = []
    for i, b in enumerate(buckets):
        calls, errs = int(b.get("calls", 0)), int(b.get("errors", 0))
        x = left + i * bw + 1
        ok_h = ph * (calls - errs) / most
        err_h = ph * errs / most
        if calls:
            parts.append(f"<rect x='{x:.1f}' y='{top + ph - ok_h:.1f}' width='{bw - 2:.1f}' height='{ok_h:.1f}' "
                         "fill='#6a9fd8'/>")
        if errs:
            parts.append(f"<rect x='{x:.1f}' y='{top + ph - ok_h - err_h:.1f}' width='{bw - 2:.1f}' "
                         f"height='{err_h:.1f}' fill='#d66'/>")
        if calls:
            points.append((left + (i + 0.5) * bw, top + ph - ph * float(b.get("p50_ms", 0.0)) / slow))
    if points:
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        parts.append(f"<polyline points='{path}' fill='none' stroke='#333' stroke-width='1.5'/>")
        parts.extend(f"<circle cx='{px:.1f}' cy='{py:.1f}' r='2.5' fill='#333'/>" for px, py in points)
    parts += [
        f"<text x='{left - 4}' y='{top + 9}' font-size='10' text-anchor='end'>{most}</text>",
        f"<text x='{left - 4}' y='{top + ph}' font-size='10' text-anchor='end'>0</text>",
        f"<text x='{left + pw + 4}' y='{top + 9}' font-size='10'>{slow:.0f} ms</text>",
        f"<text x='{left}' y='{h - 6}' font-size='10'>60 min ago</text>",
        f"<text x='{left + pw}' y='{h - 6}' font-size='10' text-anchor='end'>now</text>",
        "</svg>",
    ]
    return "".join(parts)


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
    head = (f"<p>{int(ex.get('held', 0))} held, {int(ex.get('refused', 0))} refused, {int(ex.get('let_through', 0))} "
            "let through; once an agent session has read private content (your tabs, local files, local services), "
            "its URLs to a site you have not allowed are held until you say yes.</p>")
    rows = []
    for ev in ex.get("events") or []:
        when = time.strftime("%H:%M:%S", time.localtime(ev["at"]))
        cls = "bad" if ev["action"] in ("refused", "held") else "ok"
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
                            text=f"<!doctype html>{OWN_PAGE_META}<title>trawl</title><p>This link has expired or was "
                                 "already used. Run <code>trawl status --open</code> again.</p>")
    prefix = status_prefix(state)
    resp = web.Response(status=303, headers={"Location": prefix, "Cache-Control": "no-store"})
    resp.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="Strict", path=prefix,
                    max_age=int(state.login.session_ttl_s))
    return resp
