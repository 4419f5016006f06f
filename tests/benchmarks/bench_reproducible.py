"""Is a greedy evaluation reproducible? The same command twice, compared task by task and token by token.

    python tests/benchmarks/bench_reproducible.py --split dev --per-db 2 --configs draft single-shot \
        --votes 5 --schema tables --concurrency 2
    python tests/benchmarks/bench_reproducible.py --split dev --configs draft single-shot --compare repro-a repro-b

Runs `bench_sql_split.py` twice with the given options (labels `repro-a` and `repro-b`; `--compare A B` only
compares two runs already made with those labels) and writes tests/benchmarks/results/reproducible-SPLIT.json:
per configuration, the tasks whose outcome differs between the runs, and how many runs generated the very same
tokens and the very same log-probs (bit for bit), with each run's seconds per task (how loaded the machine was).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
RESULTS = HERE / "results"


def compare(log_a: Path, log_b: Path) -> dict[str, Any]:
    """Task by task: same generated tokens, same log-probs, same final answer."""
    from agentkit.trajectory import read_jsonl

    a = {t.task_id: t for t in read_jsonl(log_a)}
    b = {t.task_id: t for t in read_jsonl(log_b)}
    shared = sorted(set(a) & set(b), key=str)

    def tokens(t: Any) -> list[int]:
        return [i for turn in t.turns for i in turn.completion_ids]

    def logprobs(t: Any) -> list[float]:
        return [x for turn in t.turns for x in turn.logprobs]

    return {"tasks": len(shared),
            "same_tokens": sum(tokens(a[k]) == tokens(b[k]) for k in shared),
            "same_logprobs": sum(logprobs(a[k]) == logprobs(b[k]) for k in shared),
            "same_answer": sum(a[k].answer == b[k].answer for k in shared)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("train", "dev", "test"), default="dev")
    parser.add_argument("--configs", nargs="+", default=["draft", "single-shot"])
    parser.add_argument("--compare", nargs=2, metavar=("LABEL_A", "LABEL_B"), default=None,
                        help="compare two runs already made with these labels instead of making them")
    parser.add_argument("--data", type=Path, default=Path("bench-out/sqlgen"))
    args, passed = parser.parse_known_args()
    labels = args.compare or ["repro-a", "repro-b"]
    results = {label: RESULTS / f"sql-{args.split}-{label}.json" for label in labels}
    if args.compare is None:
        for label in labels:
            command = [sys.executable, str(HERE / "bench_sql_split.py"), "--split", args.split, "--configs",
                       *args.configs, "--data", str(args.data), "--label", label, "--out", str(results[label]),
                       *passed]
            subprocess.run(command, check=True)
    runs = {label: json.loads(results[label].read_text()) for label in labels}
    report: dict[str, Any] = {"split": args.split, "data_kind": args.split, "labels": labels,
                              "options": {k: runs[labels[0]][k] for k in ("per_db", "votes", "concurrency")},
                              "configs": []}
    for config in args.configs:
        a, b = (next(r for r in runs[label]["runs"] if r["config"] == config) for label in labels)
        logs = [args.data / "runs" / f"{args.split}-{config}-{label}.jsonl" for label in labels]
        row = {"config": config, "correct": [a["correct"], b["correct"]],
               "outcomes_differ": sorted(k for k in a["outcomes"] if a["outcomes"][k] != b["outcomes"].get(k)),
               "seconds_per_task": [a["seconds_per_task"], b["seconds_per_task"]], **compare(*logs)}
        report["configs"].append(row)
        print(json.dumps(row), flush=True)
    out = RESULTS / f"reproducible-{args.split}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
