"""The user's site policy binds every read (issue 9 item 4), enforced by the daemon, with no browser attached.

Attacks mounted against a real daemon over HTTP and MCP: a denied site through plain HTTP and headless
Chromium, a redirect hop into a denied site, a fallback to another source after a refusal, a page read before
the user denied it, a hand-edited and a broken policy file. The Python and JavaScript matchers are run on the
same cases so that the extension and the daemon cannot disagree about a URL.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from trawl.policy import SitePolicy, now_revision, policy_path, policy_store
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings
from trawl.sources.playwright import PlaywrightSource

from .test_private_hosts import Server, html, settings_for, v1_fetch

ROOT = Path(__file__).resolve().parents[2]
DENIED_TEXT = "Your inbox: the bank sent your one-time code 845 112."
OPEN_TEXT = "The ferry timetable lists departures at nine and eleven."
NODE = shutil.which("node")


@pytest.fixture
async def denied() -> AsyncIterator[Server]:
    s = await Server().start()
    s.pages["/inbox"] = html("Inbox", f"<p>{DENIED_TEXT}</p>")
    yield s
    await s.stop()


@pytest.fixture
async def site() -> AsyncIterator[Server]:
    s = await Server().start()
    s.pages["/open"] = html("Ferries", f"<p>{OPEN_TEXT}</p>")
    yield s
    await s.stop()


def deny(settings: Settings, *patterns: str, mode: str = "allow_all_except_denied",
         allow: tuple[str, ...] = ()) -> SitePolicy:
    policy = SitePolicy.from_json({"mode": mode, "allow": list(allow), "deny": list(patterns),
                                   "revision": now_revision()})
    return policy_store(settings).save(policy)


def assert_policy_refusal(body: dict[str, Any]) -> None:
    assert body.get("ok") is False and body["error"]["code"] == "blocked_by_policy", body
    assert "site policy" in body["error"]["message"], body["error"]
    assert "site-policy.json" in (body["error"]["hint"] or ""), body["error"]
    assert DENIED_TEXT not in json.dumps(body)


# ------------------------------------------------------------------------------- attack 4: no browser attached
async def test_denied_site_refused_through_every_source_without_a_browser(
    tmp_path: Path, chromium: str, denied: Server
) -> None:
    s = settings_for(tmp_path, chromium_path=chromium)
    async with RunningDaemon(s, warm=False) as d:
        assert (await v1_fetch(d, denied.url("/inbox"), source="http"))["ok"] is True  # readable before
        denied.hits.clear()
        deny(s, f"127.0.0.1:{denied.port}")
        for source in (None, "http", "playwright"):
            body = await v1_fetch(d, denied.url("/inbox"), max_age=0, **({"source": source} if source else {}))
            assert_policy_refusal(body)
            assert f"127.0.0.1:{denied.port}" in body["error"]["message"]  # names the rule
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {d.token}"})
        async with http, Client(streamable_http_client(d.url + "/mcp", http_client=http)) as c:
            res = await c.call_tool("fetch_page", {"url": denied.url("/inbox"), "query": "code"})
        assert res.is_error is True and res.structured_content is not None
        assert res.structured_content["error"]["code"] == "blocked_by_policy"
        assert DENIED_TEXT not in str(res.content)
    assert denied.hits == [], f"the denied site was contacted: {denied.hits}"


async def test_allow_list_mode_refuses_every_unlisted_site(tmp_path: Path, denied: Server, site: Server) -> None:
    s = settings_for(tmp_path)
    deny(s, mode="deny_all_except_allowed", allow=(f"127.0.0.1:{site.port}",))
    async with RunningDaemon(s, warm=False) as d:
        ok = await v1_fetch(d, site.url("/open"), query="")
        assert ok["ok"] is True and OPEN_TEXT in json.dumps(ok)
        body = await v1_fetch(d, denied.url("/inbox"))
        assert_policy_refusal(body)
        assert "not on your allow list" in body["error"]["message"]
    assert denied.hits == []


@pytest.mark.parametrize("spelling", ["{host}", "{host}.", "WWW.{host}", "{upper}"])
async def test_deny_pattern_covers_subdomains_and_spellings(tmp_path: Path, denied: Server, spelling: str) -> None:
    # "localhost" denied: its subdomains and other spellings of the same name are denied too.
    s = settings_for(tmp_path, allow_hosts=())
    deny(s, "localhost")
    host = spelling.format(host="localhost", upper="LocalHost")
    async with RunningDaemon(s, warm=False) as d:
        body = await v1_fetch(d, f"http://{host}:{denied.port}/inbox", source="http")
    assert_policy_refusal(body)
    assert "deny list (localhost)" in body["error"]["message"]
    assert denied.hits == []


# ---------------------------------------------------------------------------------------------- redirects
async def test_redirect_hop_into_a_denied_site_is_refused(tmp_path: Path, chromium: str, denied: Server,
                                                          site: Server) -> None:
    async def hop(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(denied.url("/inbox", "localhost"))

    site.pages["/doc.pdf"] = hop
    s = settings_for(tmp_path, chromium_path=chromium)
    deny(s, f"localhost:{denied.port}")
    async with RunningDaemon(s, warm=False) as d:
        for source in (None, "http"):
            body = await v1_fetch(d, site.url("/doc.pdf"), **({"source": source} if source else {}))
            assert_policy_refusal(body)
            assert "deny list" in body["error"]["message"]
        assert denied.hits == [], f"a redirect hop reached the denied site: {denied.hits}"
        # Headless Chromium follows redirects itself; what it landed on is refused, not read.
        body = await v1_fetch(d, site.url("/doc.pdf"), source="playwright")
        assert_policy_refusal(body)


async def test_a_policy_refusal_is_final_no_other_source_is_tried(tmp_path: Path, chromium: str, denied: Server,
                                                                  site: Server) -> None:
    async def hop(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(denied.url("/inbox", "localhost"))

    site.pages["/go"] = hop
    s = settings_for(tmp_path, chromium_path=chromium)
    deny(s, f"localhost:{denied.port}")
    async with RunningDaemon(s, warm=False) as d:
        body = await v1_fetch(d, site.url("/go"))  # plan: http, then headless Chromium
        assert_policy_refusal(body)
        assert "http: refused; no other source was tried" in body["error"]["message"]
        assert body.get("source") in (None, ""), body
        assert d.engine is not None
        headless = next(src for src in d.engine.router.sources if isinstance(src, PlaywrightSource))
        assert headless.launches == 0, "the headless browser was started after a policy refusal"
    assert denied.hits == []


# ------------------------------------------------------------------------ policy changes and the file itself
async def test_a_page_read_before_the_user_denied_it_is_not_served_from_memory(tmp_path: Path,
                                                                               denied: Server) -> None:
    s = settings_for(tmp_path)
    async with RunningDaemon(s, warm=False) as d:
        first = await v1_fetch(d, denied.url("/inbox"), query="")
        assert first["ok"] is True and DENIED_TEXT in json.dumps(first)
        deny(s, "127.0.0.1")
        again = await v1_fetch(d, denied.url("/inbox"), query="")  # would come from the prepared-page memory
        assert_policy_refusal(again)
        async with httpx.AsyncClient(base_url=d.url) as c:
            r = await c.post("/v1/read_more", json={"page": first["page_key"], "chunk_id": first["chunks"][0]["id"]},
                             headers={"Authorization": f"Bearer {d.token}"})
        more = r.json()
        assert more["ok"] is False and more["error"]["code"] == "blocked_by_policy"
        assert DENIED_TEXT not in json.dumps(more)


async def test_hand_edited_policy_file_applies_at_once(tmp_path: Path, denied: Server) -> None:
    s = settings_for(tmp_path)
    async with RunningDaemon(s, warm=False) as d:
        assert (await v1_fetch(d, denied.url("/inbox"), query=""))["ok"] is True
        path = policy_path(s)
        path.write_text(json.dumps({"deny": [f"127.0.0.1:{denied.port}"]}))  # no mode, no revision: defaults
        body = await v1_fetch(d, denied.url("/inbox"), max_age=0)
        assert_policy_refusal(body)


async def test_saved_policy_file_is_private(tmp_path: Path) -> None:
    s = settings_for(tmp_path)
    deny(s, "example.com")
    mode = stat.S_IMODE(os.stat(policy_path(s)).st_mode)
    assert mode == 0o600, oct(mode)
    data = json.loads(policy_path(s).read_text())
    assert data["deny"] == ["example.com"] and data["revision"] > 0


@pytest.mark.parametrize("content", ["{not json", json.dumps({"mode": "allow_everything"}),
                                     json.dumps({"deny": "bank.com"}), json.dumps([1, 2])])
async def test_broken_policy_file_refuses_every_site_and_the_daemon_keeps_serving(tmp_path: Path, site: Server,
                                                                                  content: str) -> None:
    s = settings_for(tmp_path)
    async with RunningDaemon(s, warm=False) as d:
        policy_path(s).write_text(content)
        body = await v1_fetch(d, site.url("/open"))
        assert body["ok"] is False and body["error"]["code"] == "blocked_by_policy"
        assert "cannot be read" in body["error"]["message"]
        async with httpx.AsyncClient(base_url=d.url) as c:
            assert (await c.get("/healthz")).status_code == 200
        policy_path(s).write_text(json.dumps({"deny": []}))
        assert (await v1_fetch(d, site.url("/open"), query=""))["ok"] is True
    assert site.hits.count("/open") == 1


# ---------------------------------------------------------------- the extension and the daemon agree on URLs
CASES: list[tuple[dict[str, Any], str]] = [
    ({"deny": ["bank.com"]}, "https://bank.com/x"),
    ({"deny": ["bank.com"]}, "https://www.bank.com/"),
    ({"deny": ["bank.com"]}, "https://notbank.com/"),
    ({"deny": ["bank.com"]}, "https://bank.com./"),
    ({"deny": ["bank.com"]}, "https://BANK.com:443/"),
    ({"deny": ["bank.com"]}, "https://bank.com.evil.net/"),
    ({"deny": ["*.bank.com"]}, "https://bank.com/"),
    ({"deny": ["*.bank.com"]}, "https://a.b.bank.com/"),
    ({"deny": ["127.0.0.1:8080"]}, "http://127.0.0.1:8080/"),
    ({"deny": ["127.0.0.1:8080"]}, "http://127.0.0.1:9/"),
    ({"deny": ["127.0.0.1"]}, "http://2130706433/"),
    ({"deny": ["127.0.0.1"]}, "http://0x7f.1/"),
    ({"deny": ["127.0.0.1:8080"]}, "http://2130706433:8080/"),
    ({"deny": ["example.com:443"]}, "https://example.com/"),
    ({"deny": ["example.com:8443"]}, "https://example.com:8443/a"),
    ({"deny": ["[::1]"]}, "http://[::1]:3000/"),
    ({"deny": ["https://Bank.com/login"]}, "https://bank.com/"),
    ({"deny": []}, "file:///etc/passwd"),
    ({"deny": []}, "chrome://settings"),
    ({"deny": []}, "javascript:alert(1)"),
    ({"mode": "deny_all_except_allowed", "allow": ["docs.rs"], "deny": []}, "https://docs.rs/a"),
    ({"mode": "deny_all_except_allowed", "allow": ["docs.rs"], "deny": []}, "https://example.com/"),
    ({"mode": "deny_all_except_allowed", "allow": ["docs.rs"], "deny": ["docs.rs"]}, "https://docs.rs/"),
    ({"mode": "deny_all_except_allowed", "allow": ["*.docs.rs"], "deny": []}, "https://docs.rs/"),
    ({"deny": ["mail.google.com"]}, "https://MAIL.GOOGLE.COM./u/0"),
    ({"deny": ["user@bank.com"]}, "https://bank.com/"),
    ({"deny": ["bank.com"]}, "https://user:pw@bank.com/"),
]


def test_python_and_javascript_decide_every_url_alike(tmp_path: Path) -> None:
    if NODE is None:
        pytest.skip("node is not installed: the e2e sync tests exercise the JavaScript side")
    (tmp_path / "policy.mjs").write_text((ROOT / "extension" / "policy.js").read_text())
    full = [({"mode": "allow_all_except_denied", "allow": [], **p}, url) for p, url in CASES]
    (tmp_path / "cases.json").write_text(json.dumps(full))
    (tmp_path / "run.mjs").write_text("""
import { decide } from "./policy.mjs";
import { readFileSync } from "node:fs";
const cases = JSON.parse(readFileSync("cases.json", "utf8"));
console.log(JSON.stringify(cases.map(([policy, url]) => decide(policy, url).allowed)));
""")
    out = subprocess.run([NODE, "run.mjs"], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    js = json.loads(out.stdout)
    py = [SitePolicy.from_json(p).decide(url).allowed for p, url in full]
    for (policy, url), a, b in zip(full, py, js, strict=True):
        assert a == b, f"{url} under {policy}: python says {a}, javascript says {b}"
    # and a few verdicts pinned, so both cannot drift the same wrong way
    verdict = dict(zip([u for _, u in full], py, strict=False))
    assert verdict["https://bank.com./"] is False and verdict["http://2130706433/"] is False
    assert verdict["https://bank.com.evil.net/"] is True and verdict["https://MAIL.GOOGLE.COM./u/0"] is False


def test_default_policy_matches_the_extensions_default() -> None:
    js = (ROOT / "extension" / "policy.js").read_text()
    block = js[js.index("deny: [", js.index("DEFAULT_POLICY")):]
    block = block[: block.index("]")]
    listed = [x.strip().strip('",') for x in block.splitlines()[1:] if x.strip()]
    assert tuple(listed) == SitePolicy().deny
    assert SitePolicy().revision == 0 and '"allow_all_except_denied"' in js


POLICY_MESSAGES: list[tuple[str, Any, bool]] = [
    ("extension", {"type": "policy", "mode": "allow_all_except_denied", "allow": [], "deny": ["a.com"],
                   "revision": 1764547200000}, True),
    ("daemon", {"type": "policy", "mode": "deny_all_except_allowed", "allow": ["docs.rs"], "deny": [],
                "revision": 0}, True),
    ("extension", {"type": "policy", "mode": "allow_everything", "allow": [], "deny": [], "revision": 1}, False),
    ("extension", {"type": "policy", "mode": "allow_all_except_denied", "allow": [], "deny": "a.com",
                   "revision": 1}, False),
    ("extension", {"type": "policy", "mode": "allow_all_except_denied", "allow": [], "deny": [], "revision": "1"},
     False),
    ("extension", {"type": "policy", "mode": "allow_all_except_denied", "allow": [], "deny": []}, False),
    ("extension", {"type": "policy", "mode": "allow_all_except_denied", "allow": [], "deny": [], "revision": 1,
                   "extra": True}, False),
]


def test_policy_message_is_validated_alike_on_both_sides(tmp_path: Path) -> None:
    from trawl.browser import protocol

    for sender, msg, valid in POLICY_MESSAGES:
        assert (protocol.check(msg, sender) is None) is valid, (msg, protocol.check(msg, sender))
    if NODE is None:
        pytest.skip("node is not installed")
    (tmp_path / "protocol.mjs").write_text((ROOT / "extension" / "protocol.js").read_text())
    (tmp_path / "protocol.json").write_text((ROOT / "extension" / "protocol.json").read_text())
    (tmp_path / "cases.json").write_text(json.dumps([[s, m] for s, m, _ in POLICY_MESSAGES]))
    (tmp_path / "run.mjs").write_text("""
import { validate } from "./protocol.mjs";
import { readFileSync } from "node:fs";
const proto = JSON.parse(readFileSync("protocol.json", "utf8"));
const cases = JSON.parse(readFileSync("cases.json", "utf8"));
console.log(JSON.stringify(cases.map(([sender, msg]) => validate(proto, msg, sender))));
""")
    out = subprocess.run([NODE, "run.mjs"], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for (_s, msg, valid), verdict in zip(POLICY_MESSAGES, json.loads(out.stdout), strict=True):
        assert (verdict is None) is valid, (msg, verdict)


async def test_status_shows_the_policy_in_force_and_a_broken_file(tmp_path: Path) -> None:
    s = settings_for(tmp_path, allow_private_hosts="0", allow_hosts=("localhost:3000",))
    async with RunningDaemon(s, warm=False) as d:
        deny(s, "bank.example", "mail.example")
        async with httpx.AsyncClient(base_url=d.url) as c:
            auth = {"Authorization": f"Bearer {d.token}"}
            info = (await c.get("/v1/status", headers=auth)).json()["site_policy"]
            assert info["deny"] == 2 and info["mode"] == "allow_all_except_denied" and info["error"] == ""
            assert info["private_hosts"] == "none" and info["allow_hosts"] == ["localhost:3000"]
            policy_path(s).write_text("{broken")
            info = (await c.get("/v1/status", headers=auth)).json()["site_policy"]
            assert "cannot be read" in info["error"]
