"""Replay the count check (`agentkit.sql.outer_count`) offline on the final queries of recorded SQL runs.

    python tests/benchmarks/replay_count_check.py --runs bench-out/sqlgen/runs/train-draft-collect.jsonl \\
        bench-out/sqlgen/runs/train-draft-collect2.jsonl --tasks bench-out/sqlgen/train.jsonl --kind train \\
        --out tests/benchmarks/results/count-replay-train.json

For every run with a confirmed query, asks whether the check would have fired on it (`count_gap` over the run's
database) and, where it fires, whether the rewritten query it shows matches the gold query. A check that fires on
a run answered right would cost answers; one that fires on wrong runs whose rewritten query is right is what the
check can win when the model takes its rewrite. Reads train and dev runs only: a test split's runs are for
reporting.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit.environments.sql import SQLEnvironment
from agentkit.records import SQL
from agentkit.sql.outer_count import count_gap
from agentkit.sql.rewards import EXECUTION_MATCH, execution_reward
from agentkit.trajectory import Trajectory, read_jsonl


def replay(runs: Sequence[Trajectory], env: SQLEnvironment) -> dict[str, Any]:
    """How often the check fires on right and on wrong runs, and how many of its rewrites match the gold."""
    tasks = {t.id: t for t in env.tasks()}
    checked = right_runs = 0
    fired: list[dict[str, Any]] = []
    for run in runs:
        task = tasks.get(run.task_id or "")
        record = run.records.get(SQL)
        if task is None or record is None or not record.final_sql:
            continue
        checked += 1
        right = run.rewards.get("execution") == 1.0
        right_runs += right
        db = env.database(task)
        gap = count_gap(db, record.final_sql)
        if gap is None:
            continue
        gold, _ = env.gold(task)
        fixed_right = execution_reward(gap.fixed, str(task.data["gold_sql"]), db, gold_result=gold) == EXECUTION_MATCH
        fired.append({"task": task.id, "right": right, "rewrite_right": fixed_right, "changed_rows": gap.changed})
    return {"runs": len(runs), "checked": checked, "right": right_runs,
            "fired": len(fired), "fired_on_right": sum(f["right"] for f in fired),
            "fired_on_wrong": sum(not f["right"] for f in fired),
            "rewrite_right_on_wrong": sum(f["rewrite_right"] and not f["right"] for f in fired),
            "details": fired}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="SQL runs (JSONL)")
    parser.add_argument("--tasks", type=Path, required=True, help="the split's task file")
    parser.add_argument("--kind", required=True, choices=["train", "dev"], help="the split's kind (test: refused)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    env = SQLEnvironment(tasks=args.tasks)
    try:
        report = {"kind": args.kind, "runs_files": [str(p) for p in args.runs],
                  **replay(read_jsonl(args.runs), env)}
    finally:
        env.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"{report['checked']} runs with a confirmed query ({report['right']} right): the check fires on "
          f"{report['fired_on_right']} right and {report['fired_on_wrong']} wrong; its rewrite is right on "
          f"{report['rewrite_right_on_wrong']} of those wrong")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
