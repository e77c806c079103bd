"""Shared helpers for the daemon / API / security / MCP tests (no tests here).

* :func:`daemon_settings` — settings in tmp dirs, port 0 (a free port), BM25-only by default for speed;
* :class:`SlowSource` — a real Source (the router's seam) for targets ``slow:<seconds>``: it waits, then
  returns a small page; used to hold requests in flight;
* :func:`write_pages` — a few local HTML pages served by the file source;
* :func:`free_port` — a port nobody listens on.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

from trawl.settings import Settings
from trawl.sources.base import FetchRequest
from trawl.sources.router import default_sources
from trawl.types import Page


def daemon_settings(tmp_path: Path, **kw: Any) -> Settings:
    base: dict[str, Any] = {
        "state_dir": tmp_path / "state",
        "cache_dir": tmp_path / "cache",
        "port": 0,
        "dense": "none",
        "shutdown_grace_s": 5.0,
        "file_roots": (str(tmp_path),),  # agents read local files only under roots (roots.py)
    }
    base.update(kw)
    return Settings(**base)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SlowSource:
    """Targets ``slow:<seconds>``: sleep that long, then return a tiny HTML page. ``slow:hold`` waits until the
    test sets :attr:`release` (so a test can act while a request is certainly still running, without timing)."""

    name = "slow"
    priority = 5

    def __init__(self) -> None:
        self.started = 0
        self.finished = 0
        self.release = asyncio.Event()

    def accepts(self, req: FetchRequest) -> str | None:
        return "test source" if req.target.startswith("slow:") else None

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        self.started += 1
        arg = req.target.split(":", 1)[1]
        if arg == "hold":
            await self.release.wait()
        else:
            await asyncio.sleep(float(arg or 0))
        self.finished += 1
        html = ("<html><head><title>Slow page</title></head><body><h1>Slow page</h1>"
                "<p>The slow page finally answered with its content about tortoises and patience.</p>"
                "</body></html>")
        return Page(url=req.target, final_url=req.target, kind="html", source="slow", html=html, title="Slow page")


def sources_with_slow(settings: Settings) -> tuple[list[Any], SlowSource]:
    slow = SlowSource()
    return [*default_sources(settings), slow], slow


PAGE = """<!doctype html><html lang="en"><head><title>{title}</title></head><body><main><article>
<h1>{title}</h1>
<h2>Installation</h2>
<p>To install the {title} tool, download the archive from the project site, unpack it into a directory of
your choice and run the setup script from a terminal. The setup script checks the Python version, creates a
virtual environment for the {title} project and installs every dependency it needs into it.</p>
<p>After the setup finishes, open a new terminal so the updated search path takes effect, and run the
version command to confirm that the {title} tool is installed and can find its configuration file.</p>
<h2>Pricing</h2>
<p>The {title} service costs 12 euros per month for individuals and 40 euros per month for teams of up to
ten people. Annual plans get two months free, and students pay nothing while they are enrolled.</p>
<p>Invoices are sent by email at the start of each billing period; the {title} billing page shows every
past invoice, and the plan can be changed or cancelled there at any time without a fee.</p>
<h2>Rate limits</h2>
<p>The {title} API allows 600 requests per minute per key. Bursts above the limit receive HTTP 429 with a
Retry-After header telling the client how many seconds to wait before it sends the next request.</p>
<p>Large batch jobs should spread their requests evenly over the minute; the {title} dashboard graphs how
close each key comes to its rate limit so that teams can ask for a higher quota in good time.</p>
<h2>Support</h2>
<p>Write to the {title} support desk by email or through the help form; answers arrive within one working
day, and faster for teams, whose tickets are handled by a dedicated group of engineers.</p>
</article></main></body></html>
"""


def write_pages(root: Path, n: int = 3) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        p = root / f"page{i}.html"
        p.write_text(PAGE.format(title=f"Widget{i}"), encoding="utf-8")
        paths.append(p)
    return paths
