"""mkdocs hook: lay the package out as it is installed, so the API reference can read its source.

`agentkit.skills`, `.memory`, `.training` and `.cli` live beside `agentkit/` in the repository and are
mapped into the package by pyproject's `[tool.setuptools.package-dir]`. mkdocstrings reads source files
statically, so before a build this hook copies the source into `build/docs-src/agentkit/`: `agentkit/`
with each mapped sub-package inside it, read from pyproject (so the two cannot drift). Copies, not links:
griffe follows a link back to the real folder and would not find the sub-packages there. `mkdocs.yml`
points the Python handler at `build/docs-src`.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "docs-src"


def package_tree(root: Path = ROOT, out: Path = TREE) -> Path:
    """Copy the package's Python source into `out/agentkit`, laid out as installed, and return it."""
    mapping: dict[str, str] = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"]
    package = out / "agentkit"
    if out.exists():
        shutil.rmtree(out)
    source_only = shutil.ignore_patterns("__pycache__", "*.pyc", "*.sqlite", "*.safetensors", "*.gguf", "data")
    shutil.copytree(root / mapping.get("agentkit", "agentkit"), package, ignore=source_only)
    for name, folder in mapping.items():
        if name.startswith("agentkit."):
            shutil.copytree(root / folder, package / name.split(".", 1)[1], ignore=source_only)
    return package


@event_priority(100)
def on_config(config: Any) -> Any:
    """mkdocs event: build the tree before the plugins read any source.

    Runs first: mkdocstrings drops a search path that does not exist yet when its own `on_config` runs,
    and would then read the package from wherever it is installed."""
    package_tree()
    return config
