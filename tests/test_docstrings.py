"""Every public function, method, property and class in the packages has a docstring.

Read from the source with `ast`: names without a leading underscore, at module level or in a public
class (nested functions are not API). `@overload` stubs and property setters are left out. Run this
file to list what is missing: `python tests/test_docstrings.py`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("agentkit", "skills", "memory", "training", "cli")

# Left to document, each with its reason. Keep this list short; it may only shrink.
KNOWN: dict[str, str] = {}  # "path Name": why it has no docstring yet


def _skipped(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for d in node.decorator_list:
        name = d.attr if isinstance(d, ast.Attribute) else d.id if isinstance(d, ast.Name) else ""
        if name in ("overload", "setter", "deleter"):
            return True
    return False


def undocumented(root: Path = ROOT) -> Iterator[str]:
    """`FILE QUALNAME` of each public callable or class without a docstring."""

    def visit(body: list[ast.stmt], file: str, prefix: str) -> Iterator[str]:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if not node.name.startswith("_") and not _skipped(node) and ast.get_docstring(node) is None:
                    yield f"{file} {prefix}{node.name}"
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                if ast.get_docstring(node) is None:
                    yield f"{file} {prefix}{node.name}"
                yield from visit(node.body, file, f"{prefix}{node.name}.")

    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            yield from visit(ast.parse(path.read_text(encoding="utf-8")).body, str(path.relative_to(root)), "")


def test_every_public_callable_has_a_docstring() -> None:
    missing = sorted(set(undocumented()) - set(KNOWN))
    assert not missing, "public callables without a docstring:\n" + "\n".join(missing)


def test_the_known_list_only_names_what_is_still_missing() -> None:
    found = set(undocumented())
    assert not [k for k in KNOWN if k not in found], "documented now: remove them from KNOWN"


def test_the_scanner_finds_a_missing_docstring(tmp_path: Path) -> None:
    (tmp_path / "agentkit").mkdir()
    (tmp_path / "agentkit" / "m.py").write_text(
        'class A:\n    """Doc."""\n\n    def f(self):\n        pass\n\n    def _g(self):\n        pass\n\n'
        'def h():\n    def inner():\n        pass\n\n\ndef k():\n    """Doc."""\n'
    )
    assert list(undocumented(tmp_path)) == ["agentkit/m.py A.f", "agentkit/m.py h"]


if __name__ == "__main__":
    print("\n".join(undocumented()) or "none missing")
