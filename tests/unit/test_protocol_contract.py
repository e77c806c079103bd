"""The extension and the daemon speak one protocol: these tests fail when the two sides drift.

- both sides load the same protocol.json;
- the JavaScript validator (extension/protocol.js, run with node) and the Python one agree on every case;
- every message the extension sends, every request it handles and every error code it raises is in the schema,
  and every error code maps to one of trawl's typed errors;
- the manifest pins the id the daemon checks, and asks for no more permissions than the link needs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from trawl.browser import PINNED_EXTENSION_ID
from trawl.browser import protocol as proto
from trawl.browser.identity import extension_id_from_key
from trawl.extract.shadow import flatten_shadow_roots
from trawl.types import ErrorCode

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "extension"
JS_FILES = sorted(EXT.glob("*.js"))
NODE = shutil.which("node")


def test_both_sides_load_the_same_schema_file() -> None:
    assert proto.SCHEMA_PATH.read_bytes() == (EXT / "protocol.json").read_bytes()
    assert proto.schema() == json.loads((EXT / "protocol.json").read_text())
    assert 'fetch(chrome.runtime.getURL("protocol.json"))' in (EXT / "protocol.js").read_text()


def test_manifest_pins_the_id_and_asks_for_little() -> None:
    manifest = json.loads((EXT / "manifest.json").read_text())
    assert manifest["manifest_version"] == 3
    assert extension_id_from_key(manifest["key"]) == PINNED_EXTENSION_ID
    assert int(manifest["minimum_chrome_version"]) >= 116
    # webRequest: observe-only (no blocking), to see the redirect hops of captures and PDF fetches;
    # declarativeNetRequestWithHostAccess: session rules that keep a loaded capture tab on its site (no warning)
    assert set(manifest["permissions"]) == {"scripting", "alarms", "storage", "webRequest",
                                            "declarativeNetRequestWithHostAccess"}
    assert set(manifest["host_permissions"]) == {"http://*/*", "https://*/*"}
    assert manifest["background"] == {"service_worker": "background.js", "type": "module"}
    for rel in ("background.js", "popup/popup.html", "options/options.html"):
        assert (EXT / rel).is_file()


CASES: list[tuple[str, dict[str, Any] | Any, bool]] = [
    ("extension", {"type": "hello", "protocol": 1, "extension_version": "0.1", "browser": "x", "mode": "none",
                   "nonce": "n"}, True),
    ("extension", {"type": "hello", "protocol": 1, "extension_version": "0.1", "browser": "x", "mode": "secret",
                   "nonce": "n", "key_id": "k"}, True),
    ("extension", {"type": "hello", "protocol": 1, "extension_version": "0.1", "browser": "x", "mode": "secret",
                   "nonce": "n", "secret": "s"}, False),  # no secret on the wire
    ("extension", {"type": "hello", "protocol": 1, "extension_version": "0.1", "browser": "x", "mode": "x",
                   "nonce": "n"}, False),
    ("extension", {"type": "hello", "protocol": 1, "extension_version": "0.1", "browser": "x", "mode": "pair"}, False),
    ("extension", {"type": "hello", "protocol": "1", "extension_version": "0.1", "browser": "x", "mode": "none",
                   "nonce": "n"}, False),
    ("extension", {"type": "hello", "protocol": 1.5, "extension_version": "0.1", "browser": "x", "mode": "none",
                   "nonce": "n"}, False),
    ("extension", {"type": "hello", "protocol": True, "extension_version": "0.1", "browser": "x", "mode": "none",
                   "nonce": "n"}, False),
    ("extension", {"type": "hello", "protocol": 1, "browser": "x", "mode": "none", "nonce": "n"}, False),
    ("extension", {"type": "hello", "protocol": 1, "extension_version": "0.1", "browser": "x", "mode": "none",
                   "nonce": "n", "more": 1}, False),
    ("daemon", {"type": "hello", "protocol": 1, "extension_version": "0.1", "browser": "x", "mode": "none",
                "nonce": "n"}, False),
    ("daemon", {"type": "challenge", "protocol": 1, "daemon_version": "0.1.0", "nonce": "n", "proof": "p"}, True),
    ("extension", {"type": "challenge", "protocol": 1, "daemon_version": "0.1.0", "nonce": "n", "proof": "p"}, False),
    ("extension", {"type": "auth", "proof": "p"}, True),
    ("daemon", {"type": "auth", "proof": "p"}, False),
    ("extension", {"type": "paired", "proof": "p"}, True),
    ("daemon", {"type": "welcome", "protocol": 1, "daemon_version": "0.1.0"}, True),
    ("daemon", {"type": "welcome", "protocol": 1, "daemon_version": "0.1.0", "secret": "s"}, False),
    ("daemon", {"type": "refused", "code": "unpaired", "message": "m"}, True),
    ("daemon", {"type": "refused", "code": "nope", "message": "m"}, False),
    ("daemon", {"type": "ping", "id": 3}, True),
    ("extension", {"type": "pong", "id": 3}, True),
    ("daemon", {"type": "capture", "id": 1, "url": "https://a/", "settle_quiet_ms": 200, "settle_max_ms": 5000,
                "timeout_ms": 20000, "max_bytes": 10}, True),
    ("daemon", {"type": "capture", "id": 1, "tab": "active", "settle_quiet_ms": 200, "settle_max_ms": 5000,
                "timeout_ms": 20000, "max_bytes": 10}, True),
    ("daemon", {"type": "capture", "id": 1, "url": None, "settle_quiet_ms": 200, "settle_max_ms": 5000,
                "timeout_ms": 20000, "max_bytes": 10}, True),
    ("daemon", {"type": "capture", "id": 1, "settle_quiet_ms": 200, "timeout_ms": 1, "max_bytes": 10}, False),
    ("extension", {"type": "capture", "id": 1, "settle_quiet_ms": 200, "settle_max_ms": 5000,
                   "timeout_ms": 20000, "max_bytes": 10}, False),
    ("extension", {"type": "tabs", "id": 2, "hidden": 0, "tabs": [
        {"id": 1, "window_id": 2, "url": "https://a/", "title": "A", "active": True, "status": "complete"}]}, True),
    ("extension", {"type": "tabs", "id": 2, "hidden": 0, "tabs": [
        {"id": 1, "window_id": 2, "url": "https://a/", "title": "A", "active": "yes", "status": "complete"}]}, False),
    ("extension", {"type": "tabs", "id": 2, "hidden": 0, "tabs": {}}, False),
    ("extension", {"type": "page", "id": 1, "tab_id": 4, "url": "u", "final_url": "u", "title": "t",
                   "kind": "html", "content_type": "text/html", "html": "<p>x</p>", "via": "open_tab",
                   "warnings": [], "timings": {"total": 3}}, True),
    ("extension", {"type": "page", "id": 1, "tab_id": 4, "url": "u", "final_url": "u", "title": "t",
                   "kind": "docx", "content_type": "x", "via": "open_tab", "warnings": [], "timings": {}}, False),
    ("extension", {"type": "page", "id": 1, "tab_id": 4, "url": "u", "final_url": "u", "title": "t",
                   "kind": "pdf", "content_type": "application/pdf", "data_b64": "JVBERg==", "via": "fetch",
                   "warnings": [1], "timings": {}}, False),
    ("extension", {"type": "error", "id": 1, "code": "blocked_by_policy", "message": "no"}, True),
    ("extension", {"type": "state", "paused": False, "policy_mode": "allow_all_except_denied", "allow_count": 0,
                   "deny_count": 8}, True),
    ("extension", {"type": "state", "paused": 0, "policy_mode": "allow_all_except_denied", "allow_count": 0,
                   "deny_count": 8}, False),
    ("extension", {"type": "nonsense"}, False),
    ("extension", [1, 2], False),
    ("extension", "hello", False),
]


@pytest.mark.parametrize(("sender", "msg", "valid"), CASES)
def test_python_validator(sender: str, msg: Any, valid: bool) -> None:
    assert (proto.check(msg, sender) is None) is valid, proto.check(msg, sender)


def _run_node(tmp_path: Path, script: str) -> Any:
    if NODE is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed: ./dev test installs it (the JavaScript half of the contract)")
        pytest.skip("node is not installed")
    for js in ("protocol.js", "policy.js"):
        (tmp_path / js.replace(".js", ".mjs")).write_text((EXT / js).read_text())
    runner = tmp_path / "run.mjs"
    runner.write_text(script)
    out = subprocess.run([NODE, str(runner)], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_javascript_validator_agrees_with_python(tmp_path: Path) -> None:
    (tmp_path / "cases.json").write_text(json.dumps([[s, m] for s, m, _ in CASES]))
    (tmp_path / "protocol.json").write_text((EXT / "protocol.json").read_text())
    verdicts = _run_node(tmp_path, """
import { validate } from "./protocol.mjs";
import { readFileSync } from "node:fs";
const proto = JSON.parse(readFileSync("protocol.json", "utf8"));
const cases = JSON.parse(readFileSync("cases.json", "utf8"));
console.log(JSON.stringify(cases.map(([sender, msg]) => validate(proto, msg, sender))));
""")
    for (sender, msg, valid), js in zip(CASES, verdicts, strict=True):
        assert (js is None) is valid, (sender, msg, js)
        assert (proto.check(msg, sender) is None) is (js is None)


def _js_source() -> str:
    return "\n".join(p.read_text() for p in JS_FILES)


def test_every_message_the_extension_sends_is_in_the_schema() -> None:
    messages = proto.schema()["messages"]
    sent = set(re.findall(r'\btype: "(\w+)"', _js_source()))
    assert sent, "no messages found: the contract test's pattern no longer matches the code"
    for kind in sent:
        assert kind in messages, f"the extension sends {kind!r}, which protocol.json does not define"
        assert messages[kind]["from"] in ("extension", "any"), f"{kind!r} is not the extension's to send"
    handled = set(re.findall(r'msg\.type === "(\w+)"', _js_source()))
    for kind, spec in messages.items():
        if spec["from"] in ("daemon", "any") and spec.get("request"):
            assert kind in handled, f"the extension does not handle the daemon's {kind!r} request"
            assert spec["reply"] in sent, f"the extension never sends {spec['reply']!r}, the reply to {kind!r}"


def test_every_error_code_is_in_the_schema_and_typed() -> None:
    codes = proto.schema()["enums"]["error_code"]
    raised = set(re.findall(r'CaptureError\("(\w+)"', _js_source()))
    assert raised
    assert raised <= set(codes), raised - set(codes)
    assert set(proto.ERROR_CODES) == set(codes)
    assert all(isinstance(v, ErrorCode) for v in proto.ERROR_CODES.values())
    assert proto.error_code("blocked_by_policy") == ErrorCode.BLOCKED_BY_POLICY
    assert proto.error_code("tab_not_found") == ErrorCode.TAB_NOT_FOUND


def deny_only(deny: list[str]) -> dict[str, Any]:
    return {"mode": "allow_all_except_denied", "allow": [], "deny": deny}


def test_site_policy_decisions(tmp_path: Path) -> None:
    cases = [
        # (policy, url, allowed)
        (deny_only(["bank.com"]), "https://bank.com/x", False),
        (deny_only(["bank.com"]), "https://www.bank.com/", False),
        (deny_only(["bank.com"]), "https://notbank.com/", True),
        (deny_only(["*.bank.com"]), "https://bank.com/", True),
        (deny_only(["*.bank.com"]), "https://a.bank.com/", False),
        (deny_only(["127.0.0.1:8080"]), "http://127.0.0.1:8080/", False),
        (deny_only(["127.0.0.1:8080"]), "http://127.0.0.1:9/", True),
        (deny_only([]), "file:///etc/passwd", False),
        (deny_only([]), "chrome://settings", False),
        ({"mode": "deny_all_except_allowed", "allow": ["docs.rs"], "deny": []}, "https://docs.rs/a", True),
        ({"mode": "deny_all_except_allowed", "allow": ["docs.rs"], "deny": []}, "https://example.com/", False),
        ({"mode": "deny_all_except_allowed", "allow": ["docs.rs"], "deny": ["docs.rs"]}, "https://docs.rs/", False),
        (deny_only(["https://Bank.com/login"]), "https://bank.com/", False),
    ]
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    out = _run_node(tmp_path, """
import { decide, DEFAULT_POLICY } from "./policy.mjs";
import { readFileSync } from "node:fs";
const cases = JSON.parse(readFileSync("cases.json", "utf8"));
console.log(JSON.stringify({
  verdicts: cases.map(([policy, url]) => decide(policy, url).allowed),
  defaults: [decide(DEFAULT_POLICY, "https://accounts.google.com/x").allowed,
             decide(DEFAULT_POLICY, "https://en.wikipedia.org/").allowed, DEFAULT_POLICY.mode],
}));
""")
    assert out["verdicts"] == [c[2] for c in cases]
    assert out["defaults"] == [False, True, "allow_all_except_denied"]


def test_shadow_root_templates_are_flattened_for_extraction() -> None:
    html = ('<x-a><template shadowrootmode="closed"><p>inside</p><template><b>inert</b></template>'
            "<y-b><template shadowrootmode=open>deeper</template></y-b></template>light</x-a>"
            '<script>var s = "<template shadowrootmode=open>";</script>')
    out = flatten_shadow_roots(html)
    assert out == ('<x-a><div data-trawl-shadow="closed"><p>inside</p><template><b>inert</b></template>'
                   '<y-b><div data-trawl-shadow="open">deeper</div></y-b></div>light</x-a>'
                   '<script>var s = "<template shadowrootmode=open>";</script>')
    assert flatten_shadow_roots("<p>plain</p>") == "<p>plain</p>"
