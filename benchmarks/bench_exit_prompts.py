"""How many questions the exit rule (trawl.exitflow) puts to the user in an ordinary browsing session.

    .venv/bin/python benchmarks/bench_exit_prompts.py [--docs 20] [--hosts 5]

A real daemon (in this process, real sockets) and local sites: an intranet wiki on ``wiki.acme.corp`` and a file
share on ``files.acme.corp`` (one site, two hosts; intranet names, so private content; the bench resolves
``*.acme.corp`` to 127.0.0.1 itself), a search site and ``--hosts`` documentation sites on other loopback
addresses that stand for public sites (``TRAWL_EXIT_PUBLIC_HOSTS``). The agent session:

1. reads the intranet page (the private read), which links the public guide of the library it uses;
1b. composes two URLs back into the intranet: another wiki page (the same host) and the file share (another host
    of the same site);
1c. follows the wiki page's link to the public guide;
2. searches the search site (a URL it composes: ``/search?q=<its words>``);
3. reads the ``--docs`` result links the results page shows, spread over the doc hosts;
4. follows the "next page" link five of those pages show;
5. composes two URLs of its own on doc hosts it has read (``/reference/<topic>``).

Each call goes through the same path an MCP face takes: ``exit_check`` first (a held URL is one question to the
user), the user says yes, then the fetch with the grant (yes vouches for that site for the rest of the session).
Printed: questions per step under the rule as shipped, with the search site on the user's allow list, and the
baseline from the same run: the content-matching guard of issue 9.5 asked nobody and refused only URLs in which
it recognised earlier text (tests/security/test_exit_flow.py: it recognises 2 of 26 spellings of a secret).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from aiohttp import web
from trawl.capabilities import execute
from trawl.exitflow import agent_session
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings

TOPICS = ["retry budgets", "connection pools", "rate limits", "idempotency keys", "pagination", "webhooks",
          "timeouts", "batch requests", "streaming", "error codes", "authentication", "caching", "compression",
          "versioning", "quotas", "logging", "tracing", "regions", "backups", "migrations", "sandboxes", "scopes"]


def _html(title: str, body: str) -> str:
    return (f"<!doctype html><html lang=en><head><title>{title}</title></head><body><main><article><h1>{title}</h1>"
            f"{body}</article></main></body></html>")


async def _site(host: str, handler: Any) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, 0).start()
    return runner, f"http://{host}:{runner.addresses[0][1]}"


async def run(n_docs: int, n_hosts: int, allow_search: bool) -> tuple[Counter[str], Counter[str]]:
    runners: list[web.AppRunner] = []
    doc_bases: list[str] = []

    async def doc(request: web.Request) -> web.Response:
        topic = request.path.rsplit("/", 1)[-1].replace("-", " ")
        nxt = f"{request.scheme}://{request.host}/guide/{topic.replace(' ', '-')}-part-2"
        body = "".join(f"<p>The {topic} section explains how the client handles {topic} in production, with "
                       f"defaults, limits and examples for each language binding (paragraph {i}).</p>"
                       for i in range(6))
        return web.Response(text=_html(f"Guide: {topic}", body + f"<p>Next page: {nxt}</p>"),
                            content_type="text/html")

    async def search(request: web.Request) -> web.Response:
        q = request.query.get("q", "")
        items = "".join(f"<li>{TOPICS[i % len(TOPICS)]}: {doc_bases[i % len(doc_bases)]}/guide/"
                        f"{TOPICS[i % len(TOPICS)].replace(' ', '-')}</li>" for i in range(n_docs))
        return web.Response(text=_html(f"Results for {q}", f"<p>Results for {q}:</p><ul>{items}</ul>"),
                            content_type="text/html")

    async def intranet(request: web.Request) -> web.Response:
        body = ("<p>Staging credentials rotate monthly; the current deploy key is Hx7Rk2Wp9Lm4Qs8Vt3Ny6. The client "
                "library we use retries failed calls and needs its connection pools tuned.</p>") * 3
        body += f"<p>The library's own guide: {doc_bases[0]}/guide/connection-pools</p>"
        return web.Response(text=_html(f"Team wiki: {request.path.rsplit('/', 1)[-1]}", body),
                            content_type="text/html")

    for n in range(n_hosts):
        r, base = await _site(f"127.0.0.{31 + n}", doc)
        runners.append(r)
        doc_bases.append(base)
    r, search_base = await _site("127.0.0.30", search)
    runners.append(r)
    r, intranet_base = await _site("127.0.0.1", intranet)
    runners.append(r)
    intranet_port = intranet_base.rsplit(":", 1)[1]
    wiki, share = f"http://wiki.acme.corp:{intranet_port}", f"http://files.acme.corp:{intranet_port}"
    public = tuple(f"127.0.0.{n}" for n in range(30, 31 + n_hosts))

    asked: Counter[str] = Counter()
    old_refused: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(state_dir=Path(tmp) / "state", cache_dir=Path(tmp) / "cache", port=0, dense="none",
                            allow_private_hosts=True, exit_public_hosts=public,
                            exit_allow_hosts=("127.0.0.30",) if allow_search else ())
        async with RunningDaemon(settings, warm=False, mcp=False) as d:
            svc, ops = d.state.services, d.state.ops
            guard = svc.extras["exit_guard"]

            async def visit(step: str, url: str, query: str) -> dict[str, Any]:
                if guard.findings(url) and not all(guard.allowed_host(h) for h in [url.split("/")[2].split(":")[0]]):
                    old_refused[step] += 1  # the content guard would have refused it
                check = await execute(svc, ops, "exit_check", {"fetch_url": url})
                grant = bool(check.get("held"))
                if grant:
                    asked[step] += 1  # one question to the user; they say yes
                body = await execute(svc, ops, "fetch", {"url": url, "query": query, "exit_grant": grant})
                if not body.get("ok"):
                    raise SystemExit(f"{step}: {url} failed: {body.get('error')}")
                return body

            with agent_session("bench"):
                first = await visit("1 private read", f"{wiki}/wiki/deploys", "deploy key")
                await visit("1b composed on the private site", f"{wiki}/wiki/runbook", "rollback")
                await visit("1b composed on the private site", f"{share}/share/deploy-notes", "rollback")
                guide = [w.rstrip(".,;") for c in first["chunks"] for w in c["text"].split()
                         if w.startswith(doc_bases[0])]
                assert guide, first["chunks"]
                await visit("1c link on the private page", guide[0], "pool size")
                results = await visit("2 search", f"{search_base}/search?q=client+retry+connection+pools", "")
                text = " ".join(c["text"] for c in results["chunks"])
                links = [w.rstrip(".,;") for w in text.split() if w.startswith("http://127.0.0.3")][:n_docs]
                assert len(links) == n_docs, (len(links), text[:300])
                pages = [await visit("3 result links", u, "what are the defaults?") for u in links]
                nexts = []
                for body in pages[:5]:
                    words = " ".join(c["text"] for c in body["chunks"]).split()
                    nexts += [w.rstrip(".,;") for w in words if w.startswith("http://") and "part-2" in w][:1]
                for u in nexts:
                    await visit("4 in-page links", u, "examples")
                for base in doc_bases[:2]:
                    await visit("5 composed on read hosts", f"{base}/reference/timeouts", "timeouts")
    for r in runners:
        await r.cleanup()
    return asked, old_refused


def _resolve_intranet() -> None:
    """``*.acme.corp`` is 127.0.0.1 for this process (the intranet's names, without touching the system resolver)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kw: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        return real("127.0.0.1" if name.rstrip(".").endswith(".acme.corp") else host, port, *args, **kw)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20)
    ap.add_argument("--hosts", type=int, default=5)
    args = ap.parse_args()
    _resolve_intranet()
    steps = ["1 private read", "1b composed on the private site", "1c link on the private page", "2 search",
             "3 result links", "4 in-page links", "5 composed on read hosts"]
    shipped, old = asyncio.run(run(args.docs, args.hosts, allow_search=False))
    allowed, _ = asyncio.run(run(args.docs, args.hosts, allow_search=True))
    print(f"ordinary session: 1 private read, 2 composed URLs back into the private site (same host, another host "
          f"of it), its link to a public guide, 1 search, {args.docs} result links over {args.hosts} doc hosts, "
          "5 in-page links, 2 composed URLs")
    print(f"{'step':32} {'asked (rule)':>13} {'asked (search allowed)':>23} {'baseline refused':>17}")
    for s in steps:
        print(f"{s:32} {shipped[s]:>13} {allowed[s]:>23} {old[s]:>17}")
    print(f"{'total questions':32} {sum(shipped.values()):>13} {sum(allowed.values()):>23} "
          f"{sum(old.values()):>17}")
    print("baseline: the content-matching guard asked nobody; it refused only what it recognised (2 of 26 "
          "spellings of a secret in tests/security/test_exit_flow.py), and sent the rest.")


if __name__ == "__main__":
    main()
