"""The import graph: every module imports, agentkit modules form no cycle, and imports flow one way.

The graph is read from the source with `ast`: every `import` and `from ... import` statement, at module
level, inside functions, and under `if TYPE_CHECKING:` alike (a cycle of type-only imports is still two
modules that cannot be read one without the other). Rules (DESIGN.md):
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

def _imported_names(module: str, file: Path) -> set[str]:
    """Dotted names imported anywhere in `module`, type-only imports included (relative ones resolved)."""
    names: set[str] = set()
    package = module.split(".") if file.name == "__init__.py" else module.split(".")[:-1]

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
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
            if name and name != module:
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


def test_the_graph_holds_type_only_and_function_level_imports() -> None:
    graph = import_graph()
    assert "agentkit.tracing" in graph["agentkit.agent"]  # only under `if TYPE_CHECKING:` and in a function
    assert "agentkit.loop.planning" in graph["agentkit.loop.planners"]  # only in a function


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert found == [], "import cycles among agentkit modules:\n" + "\n".join(" <-> ".join(c) for c in found)


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
