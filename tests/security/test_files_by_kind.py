"""Issue 23 items 6 and 10, issue 27 item 4: agents read documents by kind, not whatever a deny list forgot.

Before: with a root covering the home directory an agent read ~/.codex/auth.json, ~/.config/github-copilot/
hosts.json, ~/.kaggle/kaggle.json, ~/.databrickscfg, ~/.terraformrc, a ~/.gitconfig with a credential URL and
~/.config/pip/pip.conf; with a project root, .git/config holding an x-access-token and a hard link in the project
to auth.json; with a file:/// root, another trawl instance's cache-key and daemon.json; and a relative file name
was resolved against the daemon's state directory ("will not hand secrets"). Each attack runs against a real
daemon over its real HTTP API (over the Unix socket, the stdio bridge's way, where the call names its roots).
The tokens are unique strings: a refusal that still leaked one would fail on ``TOKEN not in body``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from trawl.roots import Named
from trawl.server.runner import RunningDaemon

from tests.integration.test_daemon_helpers import daemon_settings, free_port
from tests.integration.test_mcp import TRAWL_MCP, stop_daemon
from tests.readers_fake import make_pdf
from tests.security.test_files import fetch, fetch_as_bridge, refused
from tests.security.test_mcp_roots import http_client, out_of, roots_callback

TOKEN = "ghp_Zq81xKd93kdLq0wTrawlCanary"

# Item 6's list, each a credential store no deny list named, with the canary token inside.
ATTACKS: dict[str, str] = {
    ".codex/auth.json": json.dumps({"OPENAI_API_KEY": None, "tokens": {"access_token": TOKEN}}),
    ".config/github-copilot/hosts.json": json.dumps({"github.com": {"user": "al", "oauth_token": TOKEN}}),
    ".kaggle/kaggle.json": json.dumps({"username": "al", "key": TOKEN}),
    ".databrickscfg": f"[DEFAULT]\nhost = https://dbc.cloud.databricks.com\ntoken = {TOKEN}\n",
    ".terraformrc": f'credentials "app.terraform.io" {{\n  token = "{TOKEN}"\n}}\n',
    ".gitconfig": f'[user]\n  name = Al\n[url "https://al:{TOKEN}@github.com/"]\n  insteadOf = https://github.com/\n',
    ".config/pip/pip.conf": f"[global]\nindex-url = https://al:{TOKEN}@pypi.corp.example/simple\n",
    "project/.git/config": ('[remote "origin"]\n'
                            f"  url = https://x-access-token:{TOKEN}@github.com/corp/app.git\n"),
}
# The same kinds of store, outside dot-directories: refused by kind, not by name.
BY_KIND: dict[str, str] = {
    "project/deploy/auth.json": json.dumps({"token": TOKEN}),
    "project/ci/settings.yaml": f"registry:\n  password: {TOKEN}\n",
    "project/config.toml": f'[registry]\ntoken = "{TOKEN}"\n',
    "project/exports/vault.csv": f"name,login,password\nbank,al,{TOKEN}\n",
    "project/notes/remote.ini": f"[remote]\nurl = https://al:{TOKEN}@git.example\n",
    "project/bin/deploy": f"#!/bin/sh\ncurl -H 'Authorization: {TOKEN}' https://api.example\n",
}
# Document names over content that is not a document.
DISGUISED: dict[str, str] = {
    "project/notes/keys.md": json.dumps({"api": {"key": TOKEN}}),
    "project/notes/login.txt": f"user = al\npassword = {TOKEN}\nhost = db.example\n",
    "project/README": f"[default]\naws_access_key_id = AKIA00000000\naws_secret_access_key = {TOKEN}\n",
    "project/docs/deploy.txt": (f"-----BEGIN OPENSSH PRIVATE KEY-----\n{TOKEN}\n"
                                "-----END OPENSSH PRIVATE KEY-----\n"),
    "project/notes/hosts.txt": f"github.com:\n    user: al\n    oauth_token: {TOKEN}\n",  # YAML
    "project/notes/vscode.md": f'// settings\n{{\n  "github.token": "{TOKEN}", // mine\n}}\n',  # JSONC
    "project/notes/cut.txt": '{"tokens": {"access_token": "' + TOKEN + '", "refresh": "' + "x" * 40,  # cut short
    "project/notes/db.md": f"[client]\nuser = al\npassword = {TOKEN}\n\n[mysqldump]\nquick\n",
}
# The same in UTF-16, which the file source decodes by its byte-order mark.
WIDE: dict[str, bytes] = {
    "project/notes/login16.txt": f"user = al\npassword = {TOKEN}\nhost = db.example\n".encode("utf-16"),
    "project/notes/key16.txt": f"-----BEGIN RSA PRIVATE KEY-----\n{TOKEN}\n-----END RSA PRIVATE KEY-----\n"
                               .encode("utf-16"),
}
# What a project's documents look like: each must still be read.
DOCUMENTS: dict[str, tuple[str, str]] = {
    "project/README.md": ("# Widget\n\nThe widget sorts seeds by season and by colour.\n", "sorts seeds"),
    "project/docs/guide.html": ("<html><head><title>Guide</title></head><body><main><h1>Guide</h1><p>The planner "
                                "waters the tomatoes every second morning.</p></main></body></html>", "tomatoes"),
    "project/src/widget.py": ('"""The widget."""\n\n\ndef sort_seeds(seeds: list[str]) -> list[str]:\n'
                              '    """Sort seeds by the season they are sown in."""\n    return sorted(seeds)\n',
                              "sort_seeds"),
    "project/LICENSE": ("Permission is hereby granted, free of charge, to any person obtaining a copy of this "
                        "software, to deal in the software without restriction.\n", "free of charge"),
    "project/docs/notes.txt": ("Meeting notes: the greenhouse opens in March; Alma brings the seed trays.\n",
                               "greenhouse"),
    "project/docs/setup.md": ("# Setup\n\nRun the installer.\n\nKey: value pairs in the options file are "
                              "read once.\n\n- first = the seed list\n", "installer"),
    "project/docs/release.md": ("---\ntitle: Release notes\ndate: 2026-03-01\n---\n\n# Release notes\n\n"
                                "The planner now sorts seeds by season, and the greenhouse page shows the "
                                "weekly watering rota.\n\nVersion: 2.1\n", "watering rota"),
    "project/docs/list.md": ('[1]: https://example.org/seeds "Seeds"\n\nSee the seed catalogue [1] for the '
                             "varieties we grow in the north beds.\n", "north beds"),
}


def _write(home: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    _write(h, {**ATTACKS, **BY_KIND, **DISGUISED, **{k: v for k, (v, _) in DOCUMENTS.items()}})
    for rel, data in WIDE.items():
        (h / rel).write_bytes(data)
    (h / "project" / "docs" / "paper.pdf").write_bytes(make_pdf("Drift", "The measured drift was 0.8 millimetres "
                                                                        "per year at the northern station."))
    monkeypatch.setenv("HOME", str(h))
    return h


@pytest.fixture
async def daemon(tmp_path: Path, home: Path) -> AsyncIterator[RunningDaemon]:
    # The user configured their whole home as a root.
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=(str(home),)), warm=False) as d:
        yield d


def no_leak(body: dict[str, Any]) -> None:
    assert body["ok"] is False and body["error"]["code"] == "path_not_allowed", body.get("error")
    assert TOKEN not in json.dumps(body), "the credential reached the agent"


@pytest.mark.parametrize("rel", list(ATTACKS))
async def test_item_6_credential_stores_under_a_home_root_are_refused(daemon: RunningDaemon, home: Path,
                                                                       rel: str) -> None:
    body = await fetch(daemon, str(home / rel))
    no_leak(body)
    assert "dot-" in body["error"]["message"] or "never reads it" in body["error"]["message"], body["error"]
    # the same files through a project root (the MCP client's roots over the bridge), and as file:// URLs
    no_leak(await fetch_as_bridge(daemon, (home / rel).as_uri(), roots=[(home / "project").as_uri(),
                                                                         home.as_uri()]))


@pytest.mark.parametrize("rel", list(BY_KIND))
async def test_configuration_and_data_files_are_refused_by_kind(daemon: RunningDaemon, home: Path, rel: str) -> None:
    body = await fetch(daemon, str(home / rel))
    no_leak(body)
    assert "not a document" in body["error"]["message"] or "no document extension" in body["error"]["message"]
    assert "TRAWL_FILE_ALLOW" in body["error"]["hint"]


@pytest.mark.parametrize("rel", [*DISGUISED, *WIDE])
async def test_a_documents_name_on_a_store_is_refused_by_content(daemon: RunningDaemon, home: Path, rel: str) -> None:
    no_leak(await fetch(daemon, str(home / rel)))  # read, the decoded text would carry TOKEN


@pytest.mark.parametrize("rel", [*DOCUMENTS, "project/docs/paper.pdf"])
async def test_a_projects_documents_are_read(daemon: RunningDaemon, home: Path, rel: str) -> None:
    body = await fetch(daemon, str(home / rel), query="what does it say")
    assert body["ok"] is True, body.get("error")
    expected = DOCUMENTS[rel][1] if rel in DOCUMENTS else "northern station"
    assert any(expected in c["text"] for c in body["chunks"]), body["chunks"]


async def test_a_hard_link_in_the_project_to_a_credential_file_is_refused(daemon: RunningDaemon, home: Path) -> None:
    (home / "project" / "docs" / "notes-copy.md").hardlink_to(home / ".codex" / "auth.json")
    body = await fetch(daemon, str(home / "project" / "docs" / "notes-copy.md"))
    no_leak(body)
    assert "hard link" in body["error"]["message"]
    # any second name is refused (its other names may be anywhere), even between two documents
    (home / "project" / "docs" / "again.md").hardlink_to(home / "project" / "README.md")
    twin = await fetch(daemon, str(home / "project" / "docs" / "again.md"))
    assert twin["ok"] is False and "hard link" in twin["error"]["message"], twin.get("error")


async def test_a_symlink_is_judged_by_its_target_and_by_its_own_name(daemon: RunningDaemon, home: Path) -> None:
    proj = home / "project"
    (proj / "docs" / "auth.md").symlink_to(home / ".codex" / "auth.json")  # a document's name, a dot-dir target
    no_leak(await fetch(daemon, str(proj / "docs" / "auth.md")))
    (proj / "docs" / "deploy.md").symlink_to(proj / "deploy" / "auth.json")  # a document's name, a JSON target
    no_leak(await fetch(daemon, str(proj / "docs" / "deploy.md")))
    (proj / ".hidden").mkdir()
    (proj / ".hidden" / "readme.md").symlink_to(proj / "README.md")  # a dot-directory's name, a document target
    hidden = await fetch(daemon, str(proj / ".hidden" / "readme.md"))
    assert hidden["ok"] is False and ".hidden" in hidden["error"]["message"], hidden.get("error")


async def test_what_the_user_names_in_file_allow_is_read_and_nothing_else(tmp_path: Path, home: Path) -> None:
    (home / "project" / "package.json").write_text(json.dumps({"name": "widget", "scripts": {"test": "vitest"}}))
    (home / "project" / ".github" / "workflows").mkdir(parents=True)
    (home / "project" / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs:\n  test:\n    steps: []\n")
    allow = ("package.json", "~/project/.github/**", "**/*.json")
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=(str(home),), file_allow=allow), warm=False) as d:
        named = await fetch(d, str(home / "project" / "package.json"), query="")
        assert named["ok"] is True and any("vitest" in c["text"] for c in named["chunks"]), named.get("error")
        ci = await fetch(d, str(home / "project" / ".github" / "workflows" / "ci.yml"), query="")
        assert ci["ok"] is True, ci.get("error")
        # "**/*.json" matches no dot-directory (a glob never matches a leading dot): auth.json stays refused
        no_leak(await fetch(d, str(home / ".codex" / "auth.json")))
        no_leak(await fetch(d, str(home / ".config" / "github-copilot" / "hosts.json")))
        # named kinds, but the never-read list still holds
        (home / "project" / "client_secret.json").write_text(json.dumps({"secret": TOKEN}))
        no_leak(await fetch(d, str(home / "project" / "client_secret.json")))


def _fake_instance(base: Path) -> tuple[Path, Path]:
    """Another trawl instance's state and cache directories, as a daemon leaves them."""
    state, cache = base / "state", base / "cache"
    state.mkdir(parents=True)
    (state / "token").write_text(TOKEN + "\n")
    (state / "daemon.json").write_text(json.dumps({"pid": 1, "port": 8765, "token_hint": TOKEN}))
    (state / "cache-key").write_text(TOKEN)
    (state / "README.md").write_text(f"# Notes\n\nThe token is {TOKEN}.\n")  # a document's kind, in a state dir
    (cache / "pages" / "3f").mkdir(parents=True)
    (cache / "pages" / "3f" / "3f9a0c.page").write_bytes(TOKEN.encode())
    (cache / "pages" / "3f" / "notes.md").write_text(f"# Cached\n\nThe page said {TOKEN}.\n")
    return state, cache


async def test_another_trawl_instances_state_and_cache_are_refused_even_under_a_slash_root(tmp_path: Path,
                                                                                           home: Path) -> None:
    # Item 10: with a file:/// root another instance's cache-key and daemon.json were readable.
    state, cache = _fake_instance(tmp_path / "srv" / "other-trawl")
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=(), file_allow=("*.json", "/**")),
                             warm=False) as d:
        for target in (state / "daemon.json", state / "cache-key", state / "token", state / "README.md",
                       cache / "pages" / "3f" / "3f9a0c.page", cache / "pages" / "3f" / "notes.md"):
            body = await fetch_as_bridge(d, target.as_uri(), roots=["file:///"])
            no_leak(body)
            assert "a trawl instance" in body["error"]["message"], (target, body["error"])
        # the same root still reads an ordinary document
        ok = await fetch_as_bridge(d, str(home / "project" / "README.md"), roots=["file:///"])
        assert ok["ok"] is True, ok.get("error")


# ------------------------------------------------------------------------- issue 27 item 4: relative names
async def test_a_relative_name_is_read_from_the_roots(tmp_path: Path, home: Path) -> None:
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=()), warm=False) as d:
        roots = [(home / "project").as_uri()]
        body = await fetch_as_bridge(d, "docs/notes.txt", roots=roots, query="greenhouse")
        assert body["ok"] is True, body.get("error")
        assert any("greenhouse" in c["text"] for c in body["chunks"])
        assert body["final_url"] == (home / "project" / "docs" / "notes.txt").as_uri()


@pytest.mark.parametrize("name", ["notes.md", "docs/notse.txt", "./README.mdd", "token"])
async def test_a_mistyped_relative_name_is_not_found_not_a_secret(tmp_path: Path, home: Path, name: str) -> None:
    # The daemon's working directory is its state dir (the bridge spawns it there): a relative name looked up
    # there was refused as "trawl's state"; under the client's roots it is plainly missing.
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=()), warm=False) as d:
        body = await fetch_as_bridge(d, name, roots=[(home / "project").as_uri()])
    assert body["ok"] is False and body["error"]["code"] == "not_found", body.get("error")
    assert "state" not in body["error"]["message"] and "secrets" not in (body["error"]["hint"] or "")
    assert str(home / "project") in body["error"]["message"] and body["error"]["hint"]


async def test_a_relative_name_climbing_out_of_the_roots_is_refused(tmp_path: Path, home: Path) -> None:
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=()), warm=False) as d:
        body = await fetch_as_bridge(d, "../../state/token", roots=[(home / "project").as_uri()])
        refused(body, "outside the allowed roots")
        missing = await fetch_as_bridge(d, "../nothing-here.md", roots=[(home / "project").as_uri()])
        refused(missing, "outside the allowed roots")  # existence outside the roots is not revealed


async def test_a_missing_absolute_path_under_a_root_is_not_found_with_a_hint(daemon: RunningDaemon,
                                                                             home: Path) -> None:
    body = await fetch(daemon, str(home / "project" / "docs" / "notse.md"))
    assert body["ok"] is False and body["error"]["code"] == "not_found", body.get("error")
    assert body["error"]["hint"]


@pytest.mark.parametrize(("entry", "rel", "covered"), [
    ("package.json", "package.json", True), ("package.json", "web/package.json", True),
    ("package.json", ".config/package.json", False), ("*.toml", "a/pyproject.toml", True),
    ("*.toml", ".cargo/config.toml", False), ("docs/*.json", "docs/a.json", True),
    ("docs/*.json", "docs/sub/a.json", False), ("docs/*.json", "docs/.a.json", False),
    (".github/**", ".github/workflows/ci.yml", True), (".github/**", ".github/.secret/x", False),
    ("**/*.json", ".codex/auth.json", False), ("~/project/.git/config", "project/.git/config", True),
    ("~/project/.git", "project/.git/config", True), ("~/project/.git", "project/.git/.token", False),
    ("[!.]*.yaml", "ci.yaml", True),
])
def test_file_allow_globs_never_match_a_leading_dot_unless_spelled_out(home: Path, entry: str, rel: str,
                                                                        covered: bool) -> None:
    root = home if entry.startswith("~") else home / "project"
    assert Named.of([entry]).covers(home / rel if entry.startswith("~") else root / rel, [root]) is covered


# ------------------------------------------------------- issue 27 item 4 through the MCP faces (real SDK clients)
async def test_relative_names_over_streamable_http_use_the_clients_roots(tmp_path: Path, home: Path) -> None:
    async with (RunningDaemon(daemon_settings(tmp_path, file_roots=()), warm=False) as d,
                http_client(d, list_roots_callback=roots_callback(home / "project")) as c):
        found = out_of(await c.call_tool("fetch_page", {"url": "docs/notes.txt", "query": "greenhouse"}))
        assert found.ok and any("greenhouse" in ch.text for ch in found.chunks), found.error
        missing = out_of(await c.call_tool("fetch_page", {"url": "notes.md"}))
        assert missing.error is not None and missing.error.code == "not_found", missing.error
        assert str(home / "project") in missing.error.message and missing.error.hint


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_a_mistyped_name_through_the_stdio_bridge_is_not_found(tmp_path: Path, home: Path) -> None:
    # The scenario of the report: trawl-mcp starts the daemon in its state directory; the client's working
    # directory and roots are the project. A relative name must be looked up there, never in the state dir.
    env = {k: v for k, v in os.environ.items() if k != "TRAWL_FILE_ROOTS"}
    env.update({"TRAWL_STATE_DIR": str(tmp_path / "state"), "TRAWL_CACHE_DIR": str(tmp_path / "cache"),
                "TRAWL_PORT": str(free_port()), "TRAWL_DENSE": "none", "HOME": str(home)})
    params = StdioServerParameters(command=TRAWL_MCP, args=[], env=env, cwd=str(home / "project" / "docs"))
    try:
        async with Client(params, list_roots_callback=roots_callback(home / "project")) as c:
            here = out_of(await c.call_tool("fetch_page", {"url": "notes.txt", "query": "greenhouse"}))  # cwd
            assert here.ok and any("greenhouse" in ch.text for ch in here.chunks), here.error
            root = out_of(await c.call_tool("fetch_page", {"url": "README.md", "query": "seeds"}))  # a root
            assert root.ok, root.error
            for name in ("notse.txt", "token", "daemon.json"):  # the last two exist in the daemon's state dir
                missing = out_of(await c.call_tool("fetch_page", {"url": name}))
                assert missing.error is not None and missing.error.code == "not_found", (name, missing.error)
                assert "state" not in missing.error.message, missing.error
    finally:
        stop_daemon(tmp_path / "state")
