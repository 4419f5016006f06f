"""The import graph: every module imports, agentkit modules form no cycle, and imports flow one way.

The graph is read from the source with `ast` (module-level and function-level imports alike; imports
under `if TYPE_CHECKING:` are left out, since they never run). Rules (DESIGN.md):
`cli -> training, skills, memory -> agentkit core`; the core never imports the outer packages; nothing
imports `cli`.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"agentkit": "agentkit", "skills": "agentkit.skills", "memory": "agentkit.memory",
           "training": "agentkit.training", "cli": "agentkit.cli"}
OUTER = ("agentkit.skills", "agentkit.memory", "agentkit.training", "agentkit.cli")


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for file in sorted((ROOT / folder).rglob("*.py")):
            parts = [p for p in file.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
            found[".".join([package, *parts])] = file
    return found


MODULES = _modules()

# Function-level imports allowed to point back, each with its reason. Keep this list short.
LAZY_EDGES = {
    ("agentkit.tools", "agentkit.mcp_client"): "Toolkit.from_mcp is the documented door to the optional MCP "
    "extra; agentkit.mcp_client builds on Tool and Toolkit and is imported on the first call only",
}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported_names(module: str, file: Path) -> set[str]:
    """Dotted names imported by `module` at run time (absolute, relative ones resolved)."""
    names: set[str] = set()
    package = module.split(".") if file.name == "__init__.py" else module.split(".")[:-1]

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                names.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package[: len(package) - child.level + 1] + ([base] if base else []))
                for alias in child.names:  # `from pkg import submodule` depends on the submodule only
                    names.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
            visit(child)

    visit(ast.parse(file.read_text(encoding="utf-8")))
    return names


def import_graph() -> dict[str, set[str]]:
    """Each agentkit module and the agentkit modules it imports."""
    graph: dict[str, set[str]] = {}
    for module, file in MODULES.items():
        targets = set()
        for name in _imported_names(module, file):
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module and (module, name) not in LAZY_EDGES:
                targets.add(name)
        graph[module] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_the_checker_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_imports_flow_one_way() -> None:
    wrong = []
    for module, targets in import_graph().items():
        inner = not module.startswith(OUTER)
        for target in targets:
            if inner and target.startswith(OUTER):
                wrong.append(f"core {module} imports {target}")
            if target.startswith("agentkit.cli") and not module.startswith("agentkit.cli"):
                wrong.append(f"{module} imports the CLI ({target})")
    assert wrong == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports(module: str) -> None:
    importlib.import_module(module)
