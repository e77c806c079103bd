"""Each operation is declared once (trawl.capabilities), and the faces are generated from that declaration: the MCP
tools' input and output schemas ARE the models' schemas, the CLI's arguments are the input model's fields, and no
other module re-declares an operation's fields (as trawl_mcp's tool signatures used to)."""

from __future__ import annotations

import argparse
import ast
import functools
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from trawl.capabilities import CAPABILITIES, FETCH, PageOut, catalog
from trawl.capabilities.base import Capability
from trawl.capabilities.mcp import build_server
from trawl.cli import add_capability_arguments
from trawl.types import ErrorCode, FetchResult, TrawlError

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*(ROOT / "daemon" / "trawl").rglob("*.py"), *(ROOT / "trawl_mcp").rglob("*.py")]


class _NoBackend:
    async def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("listing tools calls nothing")


async def _tools() -> dict[str, Any]:
    async with Client(build_server(catalog(), _NoBackend())) as c:
        return {t.name: t for t in (await c.list_tools()).tools}


@functools.cache
def _declared_field_sets() -> tuple[tuple[str, frozenset[str]], ...]:
    """Every class body's annotated fields and every function's parameters, across trawl and trawl_mcp (read once
    per process: the sources do not change during a run)."""
    found: list[tuple[str, frozenset[str]]] = []
    for path in SOURCES:
        rel = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ClassDef):
                names = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                         and isinstance(s.target, ast.Name) and "ClassVar" not in ast.unparse(s.annotation)}
                found.append((f"class {node.name} at {where}", frozenset(names)))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                params = {a.arg for a in [*node.args.args, *node.args.kwonlyargs]} - {"self", "cls", "ctx", "roots"}
                found.append((f"def {node.name} at {where}", frozenset(params)))
    return tuple(found)


@pytest.mark.parametrize("cap", [c for c in CAPABILITIES if c.input.model_fields], ids=lambda c: c.name)
def test_an_operations_fields_are_declared_in_one_place(cap: Capability) -> None:
    every = set(cap.input.model_fields)
    agents = set(cap.agent_fields())
    places = [where for where, names in _declared_field_sets() if names in (every, agents)]
    assert len(places) == 1 and places[0].startswith(f"class {cap.input.__name__} "), places


def test_the_page_output_is_declared_in_one_place() -> None:
    places = [where for where, names in _declared_field_sets() if {"chunks", "coverage", "page"} <= names]
    assert len(places) == 1 and places[0].startswith("class PageOut "), places


async def test_mcp_tool_schemas_are_the_models_schemas() -> None:
    tools = await _tools()
    assert sorted(tools) == sorted(c.tool for c in CAPABILITIES if c.agent_tool)
    for cap in (c for c in CAPABILITIES if c.agent_tool):
        tool = tools[cap.tool]
        model = cap.input.model_json_schema()
        props = model.get("properties", {})
        assert tool.input_schema.get("properties", {}) == {n: props[n] for n in cap.agent_fields()}, cap.name
        assert sorted(tool.input_schema.get("required", [])) == sorted(
            n for n in model.get("required", []) if n in cap.agent_fields()), cap.name
        out = cap.output.model_json_schema(mode="serialization")
        assert tool.output_schema is not None and tool.output_schema["properties"] == out["properties"], cap.name
        assert tool.description == cap.description and tool.title == cap.title
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is cap.read_only and tool.annotations.open_world_hint is cap.open_world
        assert tool.annotations.idempotent_hint is cap.idempotent


async def test_agents_cannot_set_transport_fields() -> None:
    """``roots`` is the MCP client's (asked with roots/list) and ``source`` a person's: neither is a tool argument."""
    schema = (await _tools())["fetch_page"].input_schema
    assert set(schema["properties"]) == {"url", "query", "k", "max_age_s"}


def test_the_cli_arguments_are_the_input_models_fields() -> None:
    parser = argparse.ArgumentParser()
    add_capability_arguments(parser, FETCH)
    dests = {a.dest for a in parser._actions if a.dest != "help"}
    assert dests == set(FETCH.input.model_fields) - FETCH.input.transport_only
    args = parser.parse_args(["https://example.org/", "what?", "--k", "3", "--max-age", "5"])
    assert (args.url, args.query, args.k, args.max_age_s) == ("https://example.org/", "what?", 3, 5.0)


def test_page_output_is_the_fetch_results_json_plus_the_read_more_handle() -> None:
    result = FetchResult.failure("https://example.org/", TrawlError(ErrorCode.NOT_FOUND, "gone", "check the URL"))
    body = PageOut.of(result).model_dump(mode="json")
    assert set(body) == set(result.to_dict()) | {"page"}  # the output model and the library value cannot drift
    assert body["error"] == result.to_dict()["error"] == {"code": "not_found", "message": "gone",
                                                          "hint": "check the URL"}


def test_every_failure_is_the_capabilitys_own_output() -> None:
    err = TrawlError(ErrorCode.BUSY, "busy", "later")
    for cap in CAPABILITIES:
        out = cap.output.failure("t", err)
        dumped = out.model_dump(mode="json")
        assert dumped["ok"] is False and dumped["error"] == err.info().to_dict(), cap.name
        assert cap.output.model_validate(dumped) == out  # a failure parses back as the same output
        assert "error [busy]" in cap.render(out)
