"""Page profiles on a real daemon: pages of one local site (aiohttp on loopback) fetched over HTTP teach and reuse
the host's profile; ``POST /v1/profile_page`` shows and resets it; the CLI does the same in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
from trawl.server.runner import RunningDaemon

from tests.security.local import mcp_client, serve_html
from tests.unit.test_profiles import TOPICS, article, shell

from .test_daemon_helpers import daemon_settings


def site(path: str) -> str:
    topic = path.strip("/") or TOPICS[0]
    return shell(article(topic), f"The {topic}")


async def test_fetches_learn_and_reuse_and_profile_page_shows_and_resets(tmp_path: Path) -> None:
    async with serve_html(site) as base, RunningDaemon(daemon_settings(tmp_path, page_profiles=True)) as d:
        c = httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}, timeout=60.0)
        async with c:
            first = (await c.post("/v1/fetch", json={"url": f"{base}/harbour", "query": "materials"})).json()
            second = (await c.post("/v1/fetch", json={"url": f"{base}/museum", "query": "materials"})).json()
            shown = (await c.post("/v1/profile_page", json={"host": base + "/anything"})).json()
            elsewhere = (await c.post("/v1/profile_page", json={"host": "127.0.0.1"})).json()  # https, port 443
            reset = (await c.post("/v1/profile_page", json={"host": base, "reset": True})).json()
            after = (await c.post("/v1/profile_page", json={"host": base})).json()
            bad = await c.post("/v1/profile_page", json={"host": "not a host!"})
        async with mcp_client(d) as m:
            tools = {t.name for t in (await m.list_tools()).tools}
    assert first["ok"] and not first["extractor"].startswith("profile")
    assert second["ok"] and second["extractor"].startswith("profile+")
    assert any("museum" in ch["text"] for ch in second["chunks"])
    assert shown["ok"] and shown["enabled"] and shown["host"] == base  # the site: scheme, host and port
    assert elsewhere["ok"] and elsewhere["profile"] is None  # another site of the same host name
    assert shown["profile"]["css"] == "div#post-body" and shown["profile"]["hits"] == 1
    assert reset["reset"] is True and after["profile"] is None
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_request"
    assert "profile_page" not in tools


def test_cli_profile_page(tmp_path: Path) -> None:
    from trawl.profiles import Profile, Profiles, Selector
    from trawl.settings import Settings

    env = {**os.environ, "TRAWL_CACHE_DIR": str(tmp_path / "cache"), "TRAWL_STATE_DIR": str(tmp_path / "state")}
    s = Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state")
    site = "https://docs.example.org:443"
    Profiles(s).put(Profile(host=site, selector=Selector("main"), learnt_at=1.0, learnt_f1=0.93))
    cmd = [sys.executable, "-m", "trawl.cli", "profile_page"]
    shown = subprocess.run([*cmd, "https://docs.example.org/x", "--json"], env=env, capture_output=True, text=True,
                           timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["profile"]["css"] == "main"
    gone = subprocess.run([*cmd, "docs.example.org", "--reset"], env=env, capture_output=True, text=True, timeout=120)
    assert gone.returncode == 0 and "profile forgotten" in gone.stdout
    assert Profiles(s).get("docs.example.org") is None
    bad = subprocess.run([*cmd, "::"], env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "host" in bad.stderr
