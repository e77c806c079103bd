"""Issue 9.5 (files): agent calls read local files only under allowed roots, and never a secret.

Before: ``POST /v1/fetch`` (and the MCP fetch_page tool) returned /etc/passwd, a private key under ~/.ssh and the
daemon's own token file. Each attack below runs against a real daemon over its real HTTP API; the MCP faces
are in test_mcp_roots.py. The CLI, typed by the user, still reads any file it names.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from trawl.channel.discovery import AsyncUnixTransport, socket_path
from trawl.roots import file_access
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings
from trawl.sources.file import FileSource, _opener
from trawl.types import TrawlError

from tests.integration.test_daemon_helpers import daemon_settings

KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
       "-----END OPENSSH PRIVATE KEY-----\n")
NOTE = "# Project notes\n\nThe build uses the blue pipeline and finishes in twelve minutes on a quiet day.\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake HOME with the secrets an attacker wants; the daemon runs in this process, so it sees this HOME."""
    h = tmp_path / "home"
    (h / ".ssh").mkdir(parents=True)
    (h / ".ssh" / "id_rsa").write_text(KEY)
    (h / ".aws").mkdir()
    (h / ".aws" / "credentials").write_text("[default]\naws_secret_access_key = abc\n")
    (h / ".config" / "gcloud").mkdir(parents=True)
    (h / ".config" / "gcloud" / "credentials.db").write_text("gcloud secret\n")
    (h / ".config" / "chromium" / "Default").mkdir(parents=True)
    (h / ".config" / "chromium" / "Default" / "Cookies.txt").write_text("session=1\n")
    (h / ".docker").mkdir()
    (h / ".docker" / "config.json").write_text('{"auths": {"x": {"auth": "c2VjcmV0"}}}\n')
    (h / ".api_token").write_text("tok_123\n")
    (h / "project").mkdir()
    (h / "project" / "notes.md").write_text(NOTE)
    (h / "project" / ".env").write_text("DB_PASSWORD=hunter2\n")
    monkeypatch.setenv("HOME", str(h))
    return h


@pytest.fixture
async def daemon(tmp_path: Path, home: Path) -> AsyncIterator[RunningDaemon]:
    # The user configured their whole home as a root: the secrets inside it must still be refused.
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=(str(home),)), warm=False) as d:
        yield d


async def fetch(d: RunningDaemon, url: str, **extra: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}, timeout=30) as c:
        r = await c.post("/v1/fetch", json={"url": url, **extra})
    body: dict[str, Any] = r.json()
    return body


async def fetch_as_bridge(d: RunningDaemon, url: str, **extra: Any) -> dict[str, Any]:
    """POST /v1/fetch the way the stdio bridge does: over the daemon's Unix socket, the only way roots are taken."""
    transport = AsyncUnixTransport(str(socket_path(d.settings.state_dir)))
    async with httpx.AsyncClient(base_url=d.url, transport=transport, timeout=30,
                                 headers={"Authorization": f"Bearer {d.token}"}) as c:
        r = await c.post("/v1/fetch", json={"url": url, **extra})
    body: dict[str, Any] = r.json()
    return body


def refused(body: dict[str, Any], rule: str) -> None:
    assert body["ok"] is False, body
    assert body["error"]["code"] == "path_not_allowed", body["error"]
    assert rule in body["error"]["message"], body["error"]["message"]
    assert not body.get("chunks")


async def test_a_file_under_a_root_is_read(daemon: RunningDaemon, home: Path) -> None:
    body = await fetch(daemon, str(home / "project" / "notes.md"))
    assert body["ok"] is True, body
    assert any("blue pipeline" in c["text"] for c in body["chunks"])


async def test_etc_passwd_is_refused(daemon: RunningDaemon) -> None:
    for target in ("/etc/passwd", "file:///etc/passwd", "file:///%65tc/passwd", "file://localhost/etc/passwd"):
        refused(await fetch(daemon, target), "outside the allowed roots")


async def test_ssh_private_key_is_refused_even_under_a_root(daemon: RunningDaemon, home: Path) -> None:
    refused(await fetch(daemon, str(home / ".ssh" / "id_rsa")), ".ssh")
    refused(await fetch(daemon, "~/.ssh/id_rsa"), ".ssh")
    refused(await fetch(daemon, (home / ".ssh" / "id_rsa").as_uri()), ".ssh")


@pytest.mark.parametrize("rel", [".aws/credentials", ".config/gcloud/credentials.db",
                                 ".config/chromium/Default/Cookies.txt", ".docker/config.json", ".api_token",
                                 "project/.env"])
async def test_credential_files_are_refused(daemon: RunningDaemon, home: Path, rel: str) -> None:
    body = await fetch(daemon, str(home / rel))
    assert body["error"]["code"] == "path_not_allowed", body
    assert "never reads it for agents" in body["error"]["message"]


async def test_the_daemons_own_token_file_is_refused(tmp_path: Path, home: Path) -> None:
    # Even when the state directory lies under a root the user configured.
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=(str(tmp_path),)), warm=False) as d:
        token_file = tmp_path / "state" / "token"
        assert token_file.read_text().strip() == d.token
        body = await fetch(d, str(token_file))
        refused(body, "trawl's state")
        assert d.token not in str(body)
        refused(await fetch(d, str(tmp_path / "cache")), "trawl's cache")


async def test_symlink_and_dotdot_escapes_are_refused(daemon: RunningDaemon, home: Path, tmp_path: Path) -> None:
    proj = home / "project"
    (proj / "key-link.txt").symlink_to(home / ".ssh" / "id_rsa")
    (proj / "etc-link").symlink_to("/etc")
    outside = tmp_path / "outside.txt"
    outside.write_text("outside the roots\n")
    (proj / "out-link.txt").symlink_to(outside)
    refused(await fetch(daemon, str(proj / "key-link.txt")), ".ssh")
    refused(await fetch(daemon, str(proj / "etc-link" / "passwd")), "outside the allowed roots")
    refused(await fetch(daemon, str(proj / "out-link.txt")), "outside the allowed roots")
    refused(await fetch(daemon, str(proj / ".." / ".." / "outside.txt")), "outside the allowed roots")


async def test_forcing_the_file_source_on_a_url_does_not_escape(daemon: RunningDaemon) -> None:
    # The file source turns a non-file target into a path relative to the daemon's directory: still checked.
    body = await fetch(daemon, "http://x/../../../../../../etc/passwd", source="file")
    refused(body, "outside the allowed roots")


async def test_a_page_the_user_read_is_not_served_to_an_agent_from_memory(daemon: RunningDaemon,
                                                                           tmp_path: Path) -> None:
    secret = tmp_path / "outside.md"
    secret.write_text("# Private\n\nThe combination of the safe is written on the back of the blue notebook.\n")
    assert daemon.engine is not None
    mine = await daemon.engine.fetch(str(secret))  # the user's own call (as the CLI does): no roots apply
    assert mine.ok
    refused(await fetch(daemon, str(secret)), "outside the allowed roots")


async def test_no_roots_means_no_files(tmp_path: Path, home: Path) -> None:
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=()), warm=False) as d:
        body = await fetch(d, str(home / "project" / "notes.md"))
        refused(body, "client roots: none; TRAWL_FILE_ROOTS: none")
        assert "TRAWL_FILE_ROOTS" in body["error"]["hint"]
        # roots passed with the call by the MCP stdio bridge (over the daemon's Unix socket) open that directory
        ok = await fetch_as_bridge(d, str(home / "project" / "notes.md"), roots=[(home / "project").as_uri()])
        assert ok["ok"] is True, ok
        # the same roots over TCP (any agent driving the HTTP API) are ignored: they name no directory of the user's
        tcp = await fetch(d, str(home / "project" / "notes.md"), roots=[(home / "project").as_uri()])
        refused(tcp, "client roots: none")
        assert any("ignored roots" in w for w in tcp.get("warnings", [])), tcp


def test_a_symlink_swapped_in_after_the_check_is_not_followed(tmp_path: Path, home: Path) -> None:
    root = home / "project"
    access = file_access(Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache"),
                         [root.as_uri()])
    target = root / "notes.md"
    checked = access.check(target)  # passes: a plain file under the root
    target.unlink()
    target.symlink_to(home / ".ssh" / "id_rsa")  # the swap an attacker would race in
    opener = _opener(access)
    assert opener is not None
    with pytest.raises(OSError):  # O_NOFOLLOW: the final symlink is not followed
        opener(str(checked), os.O_RDONLY)
    with pytest.raises(TrawlError) as info:
        FileSource().read(str(target), Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache"), access)
    assert info.value.code == "path_not_allowed"


def test_the_cli_reads_any_file_the_user_names(tmp_path: Path, home: Path) -> None:
    env = {**os.environ, "HOME": str(home), "TRAWL_STATE_DIR": str(tmp_path / "state"),
           "TRAWL_CACHE_DIR": str(tmp_path / "cache"), "TRAWL_DENSE": "none"}
    outside = tmp_path / "outside.md"
    outside.write_text("# Mine\n\nThe user may read the quarterly plan from any directory they like.\n")
    out = subprocess.run([sys.executable, "-m", "trawl.cli", "fetch", str(outside)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "quarterly plan" in out.stdout


@pytest.mark.parametrize(("target", "rule"), [
    ("/proc/self/environ", "/proc"), ("/proc/1/cmdline", "/proc"), ("/sys/class/net", "/sys"),
    ("/etc/shadow", "/etc/shadow"), ("/dev/zero", "/dev"), ("/etc/ssh/ssh_host_ed25519_key", "/etc/ssh"),
])
async def test_a_root_of_slash_still_never_reads_system_secrets(tmp_path: Path, home: Path, target: str,
                                                                 rule: str) -> None:
    # A client that advertises the whole disk as its root (file:///) gets ordinary files, never these.
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=()), warm=False) as d:
        body = await fetch_as_bridge(d, target, roots=["file:///"])
        refused(body, rule)
        ok = await fetch_as_bridge(d, str(home / "project" / "notes.md"), roots=["file:///"])
        assert ok["ok"] is True, ok
