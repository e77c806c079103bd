"""The layers hold: the faces (CLI, daemon server, browser link, MCP bridge) import the core and never each other,
the core imports no face, and no module imports itself back through others. Read from the source with ``ast``
(every import, including the ones inside functions), so a new edge fails here whatever runs first."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"trawl": ROOT / "daemon" / "trawl", "trawl_mcp": ROOT / "trawl_mcp"}
FACES = {"trawl.cli": "cli", "trawl.server": "server", "trawl.browser": "browser", "trawl_mcp": "mcp"}
# The programs' entry points compose the faces (``trawl``: the CLI's fetch plus the daemon's and the browser's
# subcommands; ``python -m trawl.server``: the daemon plus the browser link; ``python -m trawl`` runs the CLI's).
# Nothing but another entry point imports them.
ENTRY_POINTS = {"trawl.cli", "trawl.__main__", "trawl.server.__main__"}


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for pkg, base in PACKAGES.items():
        for path in base.rglob("*.py"):
            parts = [pkg, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` (annotations only: never run)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def _resolve(name: str, node: ast.ImportFrom, is_pkg: bool) -> str:
    if not node.level:
        return node.module or ""
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def dangling() -> list[str]:
    """Imports of trawl / trawl_mcp modules that do not exist (a moved module's old name, say)."""
    mods = modules()
    bad = []
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                mod = _resolve(name, node, path.name == "__init__.py")
                if mod.split(".")[0] in PACKAGES and mod not in mods:
                    bad.append(f"{name}: from {mod} import ...")
            elif isinstance(node, ast.Import):
                bad += [f"{name}: import {a.name}" for a in node.names
                        if a.name.split(".")[0] in PACKAGES and a.name not in mods]
    return bad


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(name, node, is_pkg)
            targets = [mod, *(f"{mod}.{a.name}" for a in node.names)]
        for t in targets:
            while t and t not in known:  # the longest known module the name falls in
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def face_of(module: str) -> str:
    for prefix, face in FACES.items():
        if module == prefix or module.startswith(prefix + "."):
            return face
    return "core"


def test_the_graph_is_read_from_real_source() -> None:
    g = graph()
    assert "trawl.capabilities.mcp" in g and "trawl_mcp.client" in g
    assert "trawl.capabilities" in g["trawl.server.app"]  # the daemon's routes and tools come from the registry
    assert "trawl.capabilities" in g["trawl_mcp.__main__"]  # and so do the bridge's tools


def test_every_internal_import_names_a_real_module() -> None:
    assert not dangling()


def test_no_face_imports_another_face_and_the_core_imports_none() -> None:
    bad = []
    for mod, deps in graph().items():
        if mod in ENTRY_POINTS:
            continue
        for dep in deps:
            src, dst = face_of(mod), face_of(dep)
            if dst != "core" and dst != src:
                bad.append(f"{mod} ({src}) -> {dep} ({dst})")
    assert not bad, "\n".join(sorted(bad))


def test_entry_points_are_leaves() -> None:
    importers = [f"{m} -> {d}" for m, deps in graph().items() if m not in ENTRY_POINTS for d in deps
                 if d in ENTRY_POINTS]
    assert not importers


def test_no_import_circle() -> None:
    g = graph()
    # An ``__init__`` that re-exports its own submodules is not a circle: drop package -> own-child edges.
    edges = {m: {d for d in deps if not d.startswith(m + ".")} for m, deps in g.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(edges.get(m, ())):
            if state.get(d) == 1:
                cycles.append([*stack[stack.index(d):], d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)
