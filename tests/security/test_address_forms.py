"""Issue 23 item 7: one canonical address form for every policy decision, in the daemon and in the extension.

Before: with ``127.0.0.3`` denied, ``http://[::ffff:127.0.0.3]:PORT/``, ``[::ffff:7f00:3]`` and
``[0:0:0:0:0:ffff:127.0.0.3]`` were read through the HTTP source and the extension. One table
(tests/fixtures/address_forms.json) holds the forms and the verdicts; the daemon's functions
(trawl.policy.canonical_host over trawl.netguard.canonical_ip, SitePolicy.decide, netguard.classify) and the
extension's (policy.js canonicalHost, decide) must each give the table's answer. Then the attack itself, through
the real daemon's HTTP source against a real local server.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from trawl.netguard import NetGuard, classify
from trawl.policy import SitePolicy, canonical_host, now_revision, pattern_problem, policy_store
from trawl.server.runner import RunningDaemon

from .test_private_hosts import Server, html, settings_for, v1_fetch

ROOT = Path(__file__).resolve().parents[2]
TABLE = json.loads((ROOT / "tests" / "fixtures" / "address_forms.json").read_text())
NODE = shutil.which("node")
SECRET = "The lighthouse ledger lists the keeper's pay as nine shillings."

CANONICAL: list[tuple[str, str]] = [tuple(row) for row in TABLE["canonical"]]  # type: ignore[misc]
DECISIONS: list[tuple[dict[str, Any], str, bool]] = [
    ({"mode": "allow_all_except_denied", "allow": [], **p}, url, allowed) for p, url, allowed in TABLE["decisions"]]
PROBLEMS: list[tuple[str, bool]] = [tuple(row) for row in TABLE["problems"]]  # type: ignore[misc]


@pytest.mark.parametrize(("written", "canonical"), CANONICAL)
def test_the_daemon_writes_every_form_one_way(written: str, canonical: str) -> None:
    assert canonical_host(written) == canonical


@pytest.mark.parametrize(("entry", "matches_nothing"), PROBLEMS)
def test_the_daemon_names_an_entry_that_can_match_nothing(entry: str, matches_nothing: bool) -> None:
    assert bool(pattern_problem(entry)) is matches_nothing, pattern_problem(entry)


@pytest.mark.parametrize(("policy", "url", "allowed"), DECISIONS)
def test_the_daemons_site_policy_decides_by_the_canonical_form(policy: dict[str, Any], url: str,
                                                               allowed: bool) -> None:
    assert SitePolicy.from_json(policy).decide(url).allowed is allowed


@pytest.mark.parametrize(("written", "category"), [tuple(r) for r in TABLE["private"]])
def test_the_private_network_rule_judges_the_embedded_ipv4(written: str, category: str) -> None:
    assert classify(written) == category


@pytest.mark.parametrize("written", [w for w, c in CANONICAL if c == "127.0.0.3"])
def test_allow_hosts_names_one_address_in_every_form(written: str) -> None:
    # TRAWL_ALLOW_HOSTS=127.0.0.3:8080 with private hosts refused: every form of that address passes, no other
    guard = NetGuard(settings_for(Path("/nonexistent"), allow_private_hosts="0", allow_hosts=("127.0.0.3:8080",)))
    assert guard.verdict(written, 8080, written.strip("[]")) is None
    assert guard.verdict(written, 8081, written.strip("[]")) == "loopback"
    spelled = NetGuard(settings_for(Path("/nonexistent"), allow_private_hosts="0", allow_hosts=(f"{written}",)))
    assert spelled.verdict("127.0.0.3", 80, "127.0.0.3") is None
    assert spelled.verdict("127.0.0.4", 80, "127.0.0.4") == "loopback"


def test_the_extension_gives_the_tables_answers(tmp_path: Path) -> None:
    if NODE is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed: ./dev test installs it (the JavaScript half of the table)")
        pytest.skip("node is not installed")
    (tmp_path / "policy.mjs").write_text((ROOT / "extension" / "policy.js").read_text())
    (tmp_path / "table.json").write_text(json.dumps({"canonical": CANONICAL, "decisions": DECISIONS,
                                                     "problems": PROBLEMS}))
    (tmp_path / "run.mjs").write_text("""
import { canonicalHost, decide, patternProblem } from "./policy.mjs";
import { readFileSync } from "node:fs";
const t = JSON.parse(readFileSync("table.json", "utf8"));
console.log(JSON.stringify({
  canonical: t.canonical.map(([written]) => canonicalHost(written)),
  decisions: t.decisions.map(([policy, url]) => decide(policy, url).allowed),
  problems: t.problems.map(([entry]) => patternProblem(entry) !== ""),
}));
""")
    out = subprocess.run([NODE, "run.mjs"], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    js = json.loads(out.stdout)
    wrong = [(w, want, got) for (w, want), got in zip(CANONICAL, js["canonical"], strict=True) if want != got]
    wrong += [(url, allowed, got) for (_, url, allowed), got in zip(DECISIONS, js["decisions"], strict=True)
              if allowed != got]
    wrong += [(entry, want, got) for (entry, want), got in zip(PROBLEMS, js["problems"], strict=True) if want != got]
    assert not wrong, f"policy.js disagrees with the table: {wrong}"


# ------------------------------------------------------------------------ the attack, through the daemon
def _dual_stack() -> bool:
    """Can this machine reach an IPv4 listener through an IPv4-mapped IPv6 address (a dual-stack kernel)?"""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            srv = socket.create_server(("127.0.0.1", 0))
            with srv:
                s.connect(("::ffff:127.0.0.1", srv.getsockname()[1]))
        return True
    except OSError:
        return False


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    s = await Server().start()
    s.pages["/ledger"] = html("Ledger", f"<p>{SECRET}</p>")
    yield s
    await s.stop()


MAPPED = ["[::ffff:127.0.0.3]", "[::ffff:7f00:3]", "[0:0:0:0:0:ffff:127.0.0.3]", "[0:0:0:0:0:ffff:7f00:3]",
          "[::127.0.0.3]", "[64:ff9b::7f00:3]", "[2002:7f00:3::1]", "127.0.0.3", "2130706435", "0x7f.0.0.3"]


async def test_a_denied_address_is_refused_in_every_spelling_through_the_http_source(tmp_path: Path,
                                                                                     server: Server) -> None:
    s = settings_for(tmp_path, allow_private_hosts="1")  # the private-network rule lets loopback through
    async with RunningDaemon(s, warm=False) as d:
        policy_store(s).save(SitePolicy.from_json({"deny": ["127.0.0.3"], "revision": now_revision()}))
        for host in MAPPED:
            body = await v1_fetch(d, f"http://{host}:{server.port}/ledger", source="http")
            assert body["ok"] is False and body["error"]["code"] == "blocked_by_policy", (host, body.get("error"))
            assert "deny list" in body["error"]["message"] and SECRET not in json.dumps(body)
        assert server.hits == [], f"the denied address was contacted: {server.hits}"
        # the same server at an address that is not denied, in the same spellings: read (the forms connect)
        ok = await v1_fetch(d, f"http://127.0.0.4:{server.port}/ledger", source="http")
        assert ok["ok"] is True, ok.get("error")
        if _dual_stack():
            mapped = await v1_fetch(d, f"http://[::ffff:127.0.0.4]:{server.port}/ledger", source="http")
            assert mapped["ok"] is True, mapped.get("error")
            assert any(SECRET in c["text"] for c in mapped["chunks"])
