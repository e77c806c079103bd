"""The extension link's protocol, loaded from the one schema both sides use.

``protocol.json`` lives in ``extension/`` (the Chrome extension loads it from
there); this package holds a symlink to it, so the daemon validates every frame
against exactly the file the extension ships. ``validate`` mirrors
``extension/protocol.js``; ``tests/unit/test_protocol_contract.py`` runs both on
the same cases and fails when they drift.

Field type grammar: ``int``, ``num``, ``str``, ``bool``, ``obj``, a record name,
``enum:NAME``; ``T[]`` is a list of T; a trailing ``?`` marks an optional field.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

from ..types import ErrorCode

SCHEMA_PATH = Path(__file__).with_name("protocol.json")
_REPO_SCHEMA = Path(__file__).resolve().parents[3] / "extension" / "protocol.json"

# How the extension's error codes become trawl's typed errors.
ERROR_CODES: dict[str, ErrorCode] = {
    "blocked_by_policy": ErrorCode.BLOCKED_BY_POLICY,
    "paused": ErrorCode.EXTENSION_UNAVAILABLE,
    "tab_not_found": ErrorCode.TAB_NOT_FOUND,
    "timeout": ErrorCode.TIMEOUT,
    "too_large": ErrorCode.TOO_LARGE,
    "unsupported_content": ErrorCode.UNSUPPORTED_CONTENT,
    "network_error": ErrorCode.NETWORK_ERROR,
    "http_error": ErrorCode.HTTP_ERROR,
    "capture_failed": ErrorCode.BROWSER_UNAVAILABLE,
    "invalid_request": ErrorCode.INVALID_REQUEST,
    "busy": ErrorCode.BUSY,
    "protocol_mismatch": ErrorCode.EXTENSION_UNAVAILABLE,
    "unpaired": ErrorCode.EXTENSION_UNAVAILABLE,
    "bad_secret": ErrorCode.EXTENSION_UNAVAILABLE,
    "bad_code": ErrorCode.EXTENSION_UNAVAILABLE,
    "already_attached": ErrorCode.EXTENSION_UNAVAILABLE,
}


class ProtocolError(ValueError):
    """A frame that does not follow the schema."""


@functools.cache
def schema() -> dict[str, Any]:
    """The parsed protocol.json (the package copy, else the repository's extension/)."""
    for path in (SCHEMA_PATH, _REPO_SCHEMA):
        if path.is_file():
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return data
    raise FileNotFoundError(f"protocol.json not found at {SCHEMA_PATH} or {_REPO_SCHEMA}")


def version() -> int:
    return int(schema()["version"])


def limits() -> dict[str, Any]:
    return dict(schema()["limits"])


def _check_type(spec: str, value: Any, proto: dict[str, Any], where: str) -> str | None:
    if spec.endswith("[]"):
        if not isinstance(value, list):
            return f"{where}: expected a list"
        for i, item in enumerate(value):
            err = _check_type(spec[:-2], item, proto, f"{where}[{i}]")
            if err:
                return err
        return None
    if spec.startswith("enum:"):
        values = proto["enums"].get(spec[5:], [])
        return None if value in values else f"{where}: {json.dumps(value)} is not one of {', '.join(values)}"
    if spec == "int":
        return None if isinstance(value, int) and not isinstance(value, bool) else f"{where}: expected an integer"
    if spec == "num":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        return None if ok else f"{where}: expected a number"
    if spec == "str":
        return None if isinstance(value, str) else f"{where}: expected a string"
    if spec == "bool":
        return None if isinstance(value, bool) else f"{where}: expected true or false"
    if spec == "obj":
        return None if isinstance(value, dict) else f"{where}: expected an object"
    record = proto["records"].get(spec)
    if record is None:
        return f"{where}: unknown type {spec}"
    return _check_fields(record, value, proto, where)


def _check_fields(fields: dict[str, str], obj: Any, proto: dict[str, Any], where: str) -> str | None:
    if not isinstance(obj, dict):
        return f"{where}: expected an object"
    for key in obj:
        if key != "type" and key not in fields:
            return f"{where}: unknown field {key}"
    for name, raw in fields.items():
        optional = raw.endswith("?")
        spec = raw[:-1] if optional else raw
        if obj.get(name) is None:
            if optional:
                continue
            return f"{where}: missing field {name}"
        err = _check_type(spec, obj[name], proto, f"{where}.{name}")
        if err:
            return err
    return None


def check(msg: Any, sender: str) -> str | None:
    """None when ``msg`` is a valid message sent by ``sender`` ("daemon" or "extension"), else the reason."""
    proto = schema()
    if not isinstance(msg, dict):
        return "a message must be a JSON object"
    spec = proto["messages"].get(msg.get("type"))
    if spec is None:
        return f"unknown message type {json.dumps(msg.get('type'))}"
    if spec["from"] not in ("any", sender):
        return f"{msg['type']} is not sent by the {sender}"
    return _check_fields(spec["fields"], msg, proto, str(msg["type"]))


def validate(msg: Any, sender: str) -> dict[str, Any]:
    """``msg`` if valid, else :class:`ProtocolError`."""
    err = check(msg, sender)
    if err:
        raise ProtocolError(err)
    assert isinstance(msg, dict)
    return msg


def error_code(code: str) -> ErrorCode:
    return ERROR_CODES.get(code, ErrorCode.INTERNAL)
