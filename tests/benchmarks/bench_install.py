"""The core install: `pip install agentkit` (no extras) into a fresh venv — its size on disk, what it
pulled in, and the time of `import agentkit` there.

Run it on the working tree and on an older commit to compare (pip's cache makes the second run quick):

    python tests/benchmarks/bench_install.py --out bench-out/install-after.json
    python tests/benchmarks/bench_install.py --ref 60af77e --out bench-out/install-before.json

Versions come from .ci/constraints.txt, as in `make setup`. The size is that of the venv's
site-packages minus the empty venv's (pip and setuptools).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "chromadb", "sentence-transformers", "transformers", "numpy", "litellm", "openai", "mcp")


def tree_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def export_source(ref: str | None, target: Path) -> None:
    """The project at `ref` (a git commit) or as in the working tree (tracked and untracked, not ignored)."""
    target.mkdir(parents=True)
    if ref:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
        return
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"], check=True,
                           capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target / name)


LARGEST = """
import importlib.metadata as md, json, os
sizes = {}
for d in md.distributions():
    total = 0
    for f in d.files or []:
        path = d.locate_file(f)
        if os.path.isfile(path):
            total += os.path.getsize(path)
    sizes[d.metadata["Name"]] = total
print(json.dumps(sorted(sizes.items(), key=lambda kv: -kv[1])[:10]))
"""


def import_time(python: Path, statement: str, repeats: int) -> float:
    """Median wall time of `statement` in a fresh interpreter, in seconds."""
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, "OPENAI_API_KEY": "sk-bench"}
    times = [float(subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True,
                                  env=env).stdout) for _ in range(repeats)]
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default=None, help="git commit to measure (default: the working tree)")
    parser.add_argument("--repeats", type=int, default=7, help="fresh interpreters per import timing")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="agentkit-install-") as tmp:
        work = Path(tmp)
        export_source(args.ref, work / "src")
        subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
        python = work / "venv" / "bin" / "python"
        site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   check=True, capture_output=True, text=True).stdout.strip())
        empty = tree_size(site)
        start = time.perf_counter()
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-c", str(ROOT / ".ci" / "constraints.txt"),
                        str(work / "src")], check=True)
        install_s = time.perf_counter() - start
        listed = json.loads(subprocess.run([str(python), "-m", "pip", "list", "--format", "json"], check=True,
                                           capture_output=True, text=True).stdout)
        names = {d["name"].lower() for d in listed}
        result = {
            "ref": args.ref or "working tree",
            "site_packages_mb": round((tree_size(site) - empty) / 2**20, 1),
            "distributions": len(names),
            "install_s": round(install_s, 1),
            "heavy_installed": {h: h in names for h in HEAVY},
            "largest_mb": {name: round(size / 2**20, 1) for name, size in json.loads(subprocess.run(
                [str(python), "-c", LARGEST], check=True, capture_output=True, text=True).stdout)},
            "import_agentkit_s": round(import_time(python, "import agentkit", args.repeats), 3),
            "import_and_build_hosted_agent_s": round(import_time(
                python, "from agentkit import Agent; Agent('openai:gpt-4o-mini')", args.repeats), 3),
        }
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
