"""Issue 23 review, files by kind: a shell script is source code, so ``deploy.sh`` of ``export TOKEN=...`` lines
passed the kind rule, and so did ``.env`` content under a name that is not a dot-file (``env.sh``, ``setup.fish``,
``vars.ps1``, ``settings.py``). A file that is mostly assignments with a secret-looking value is refused now,
judged by structure and by the value (length, letters and digits, entropy), never by the variable's name. Real
daemon over its HTTP API; the tokens are unique strings, so a refusal that leaked one fails on ``not in body``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from trawl.roots import secret_assignments
from trawl.server.runner import RunningDaemon

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.test_files import fetch

TOKEN = "Vq3nR8xLw2Kd7Tp9Jm4CanaryZ"  # random-looking, no known prefix: only its shape gives it away
HEX = "9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c"  # a hex key (Mailgun-, Heroku-style)

ATTACKS: dict[str, str] = {
    # The review's case: a deploy script whose exports carry the credentials.
    "project/deploy.sh": ("#!/usr/bin/env bash\nset -euo pipefail\n# deploy to staging\n"
                          f"export AWS_ACCESS_KEY_ID=AKIAQ3EGRFDTRAWL0001\nexport S={TOKEN}\n"
                          "export AWS_REGION=eu-west-1\n./bin/release --stage staging\n"),
    # .envrc-style: assignments without export, names that say nothing.
    "project/scripts/vars.bash": f'A1="{TOKEN}"\nA2=staging\nA3=42\n',
    # .env content under a name that is not a dot-file, in the other shells' syntax.
    "project/env.sh": f"APP_ENV=production\nKEY_ONE={HEX}\nPORT=8080\n",
    "project/setup.fish": f"set -gx EDITOR vim\nset -gx X {TOKEN}\n",
    "project/vars.ps1": f'$env:REGION = "eu"\n$env:Q = "{TOKEN}"\n',
    "project/tools/env.cmd": f"@echo off\nset APP=web\nset K={TOKEN}\n",
    "project/app/settings.py": f'DEBUG = False\nZ = "{TOKEN}"\nHOSTS = "web.example"\n',
    # A credential in a connection URL: the password is short, the structure gives it away.
    "project/db.sh": "export DATABASE_URL=postgres://app:Zx81pq@db.internal:5432/app\nexport POOL=5\n",
}
# What a project's scripts look like: mostly assignments, or with one secret-looking value, but not both.
ORDINARY: dict[str, tuple[str, str]] = {
    "project/scripts/profile.sh": ('export PATH="$HOME/bin:$PATH"\nexport EDITOR=vim\nexport LANG=en_GB.UTF-8\n',
                                   "EDITOR"),
    "project/scripts/build.sh": ("#!/bin/sh\nset -eu\nVERSION=1.2.3\nOUT=dist/app-$VERSION.tar.gz\nmkdir -p dist\n"
                                 'tar czf "$OUT" src\n', "mkdir"),
    "project/scripts/fetch.sh": (f"#!/bin/sh\ncurl -fsSLo tool.tgz https://example.org/tool.tgz\nSUM={HEX}\n"
                                 'echo "$SUM  tool.tgz" | sha256sum -c -\ntar xzf tool.tgz\n./tool/install\n',
                                 "sha256sum"),
    "project/src/names.py": ('"""Names the planner shows."""\n\nTITLE = "Seed planner"\nMAIN = '
                             '"org.example.SeedPlannerApplication"\n', "Seed planner"),
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for rel, text in {**ATTACKS, **{k: v for k, (v, _) in ORDINARY.items()}}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path / "project"


@pytest.fixture
async def daemon(tmp_path: Path, project: Path) -> AsyncIterator[RunningDaemon]:
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=(str(project),)), warm=False) as d:
        yield d


def no_leak(body: dict[str, Any]) -> None:
    assert body["ok"] is False and body["error"]["code"] == "path_not_allowed", body.get("chunks")
    assert "assignments" in body["error"]["message"], body["error"]
    assert "TRAWL_FILE_ALLOW" in body["error"]["hint"]
    dumped = json.dumps(body)
    assert TOKEN not in dumped and HEX not in dumped and "Zx81pq" not in dumped, "the secret reached the agent"


@pytest.mark.parametrize("rel", list(ATTACKS))
async def test_assignments_of_secret_looking_values_are_refused(daemon: RunningDaemon, tmp_path: Path,
                                                                rel: str) -> None:
    no_leak(await fetch(daemon, str(tmp_path / rel)))


@pytest.mark.parametrize("rel", list(ORDINARY))
async def test_ordinary_scripts_and_constants_are_read(daemon: RunningDaemon, tmp_path: Path, rel: str) -> None:
    body = await fetch(daemon, str(tmp_path / rel), query="what does it do")
    assert body["ok"] is True, body.get("error")
    assert ORDINARY[rel][1] in json.dumps(body["chunks"]), body["chunks"]


async def test_the_user_names_a_script_and_it_is_read(tmp_path: Path, project: Path) -> None:
    settings = daemon_settings(tmp_path, file_roots=(str(project),), file_allow=(str(project / "deploy.sh"),))
    async with RunningDaemon(settings, warm=False) as d:
        assert (await fetch(d, str(project / "deploy.sh"), query="deploy"))["ok"] is True
        no_leak(await fetch(d, str(project / "env.sh")))


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "X", "colour", "_"])
def test_the_variables_name_decides_nothing(name: str) -> None:
    assert secret_assignments(f"export {name}={TOKEN}\nexport MODE=fast\n") == 1
    assert secret_assignments(f"export {name}=seed-planner-production\nexport MODE=fast\n") == 0


async def test_a_document_named_file_of_deeply_nested_json_is_refused_not_a_crash(tmp_path: Path) -> None:
    # json.loads in the content check raised RecursionError on it (not a ValueError): an internal error, not a
    # typed refusal. It is JSON data like any other now.
    (tmp_path / "deep.md").write_text("[" * 5000 + f'"{TOKEN}"' + "]" * 5000)
    async with RunningDaemon(daemon_settings(tmp_path), warm=False) as d:
        body = await fetch(d, str(tmp_path / "deep.md"))
    assert body["ok"] is False and body["error"]["code"] == "path_not_allowed", body.get("error")
    assert "JSON" in body["error"]["message"] and TOKEN not in json.dumps(body)
