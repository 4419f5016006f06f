"""`make lint`'s type check: mypy --strict over pyproject's [tool.mypy] `files` (the whole package).

The outer packages live in their own folders (`training/` is `agentkit.training`, see
[tool.setuptools.package-dir]), which mypy cannot map from the source tree, so this builds a throw-away
tree of symbolic links laid out as the installed package (agentkit/ with training/, skills/, memory/
and cli/ inside), runs mypy there and reports the paths as they are in the repository.

    python scripts/typecheck.py            # what `make lint` runs
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTER = ("training", "skills", "memory", "cli")  # folder name = subpackage name under agentkit


def main() -> int:
    """Run mypy over the configured files; returns its exit status."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    files: list[str] = config["tool"]["mypy"]["files"]
    with tempfile.TemporaryDirectory(prefix="agentkit-typecheck-") as tmp:
        tree = Path(tmp) / "agentkit"
        tree.mkdir()
        for entry in (ROOT / "agentkit").iterdir():
            if entry.name != "__pycache__":
                os.symlink(entry, tree / entry.name)
        for name in OUTER:
            os.symlink(ROOT / name, tree / name)
        mapped = [f if f == "agentkit" or f.startswith("agentkit/") else f"agentkit/{f}" for f in files]
        done = subprocess.run(
            [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
             "--cache-dir", str(ROOT / ".mypy_cache"), *mapped],
            cwd=tmp, capture_output=True, text=True, check=False,
        )
    out = done.stdout + done.stderr
    for name in OUTER:  # the repository's paths, so an editor can open them
        out = out.replace(f"agentkit/{name}/", f"{name}/")
    print(out, end="")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
