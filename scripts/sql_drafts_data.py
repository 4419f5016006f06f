"""SFT data for SQL from the draft agent's own runs on the train split (rejection sampling), checked against the
benchmarks' questions.

    python tests/benchmarks/bench_sql_split.py --split train --per-db 10 --configs draft --votes 5 \\
        --schema tables --concurrency 2 --label collect   # runs: bench-out/sqlgen/runs/train-draft-collect.jsonl
    python scripts/sql_drafts_data.py --runs bench-out/sqlgen/runs/train-draft-collect.jsonl \\
        --out runs/sql-drafts.jsonl                          # then: agentkit train --data ... --algo sft

Keeps every draft or repair whose own query returned the gold result (`agentkit.training.sql_drafts`, at most
`--per-task` distinct queries a task), then drops each kept item whose question is at MiniLM cosine
`--threshold` (0.85, the tool LoRA's leakage bound) or more to any question of the dev or test split, or whose
gold SQL is one of theirs (whitespace and case normalised): the train split's databases are not theirs, but its
questions come from the same templates. Writes the kept trajectories as JSONL and, beside them (`.json`), a
report: runs read, completions kept and dropped, per database, the nearest benchmark question of each kept
question (max, 99th percentile) and every dropped pair.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from agentkit.environments.sql import SQLEnvironment, load_tasks
from agentkit.memory.experience import question_of
from agentkit.sql.extract import query_key
from agentkit.sql.taskgen import build_tasks
from agentkit.training.sql_drafts import verified_drafts
from agentkit.trajectory import Trajectory, append_jsonl, read_jsonl

THRESHOLD = 0.85


def drop_benchmark_twins(kept: list[Trajectory], env: SQLEnvironment, benchmark: list[dict[str, Any]],
                         threshold: float = THRESHOLD) -> tuple[list[Trajectory], dict[str, Any]]:
    """`kept` without the items whose question is at cosine `threshold` or more to a `benchmark` question (records
    with "question" and "sql") or whose task's gold SQL is one of theirs; and the check's report."""
    import numpy as np

    from agentkit.memory.embeddings import Embedder

    gold = {t.id: str(t.data["gold_sql"]) for t in env.tasks()}
    questions = [question_of(t.task) for t in kept]
    bench_q = [str(r["question"]) for r in benchmark]
    bench_sql = {query_key(str(r["sql"])): str(r["question"]) for r in benchmark}
    sims = Embedder.default().similarity(questions, bench_q) if questions and bench_q else np.zeros((0, 0))
    out, dropped, nearest = [], [], []
    for i, t in enumerate(kept):
        j = int(np.argmax(sims[i])) if bench_q else -1
        near = float(sims[i][j]) if bench_q else 0.0
        nearest.append(near)
        twin = bench_sql.get(query_key(gold.get(t.task_id or "", "")))
        if near >= threshold or twin is not None:
            dropped.append({"task": t.task_id, "question": questions[i], "benchmark": twin or bench_q[j],
                            "similarity": round(near, 4), "why": "same gold SQL" if twin else "paraphrase"})
        else:
            out.append(t)
    values = np.array(nearest) if nearest else np.zeros(1)
    return out, {"threshold": threshold, "benchmark_questions": len(bench_q), "dropped": dropped,
                 "nearest_max": round(float(values.max()), 4),
                 "nearest_p99": round(float(np.percentile(values, 99)), 4),
                 "method": "cosine of the packaged all-MiniLM-L6-v2 embeddings (L2-normalised) between each kept "
                           "question and every dev and test question; gold SQL compared with whitespace and case "
                           "normalised"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="JSONL logs of draft runs")
    parser.add_argument("--data", type=Path, default=Path("bench-out/sqlgen"), help="where the splits are built")
    parser.add_argument("--split", default="train", choices=("train",), help="the split the runs are of")
    parser.add_argument("--per-task", type=int, default=2, help="distinct right queries kept per task")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="drop a question this close to a "
                        "dev or test question, or closer")
    parser.add_argument("--out", type=Path, required=True, help="JSONL of the kept trajectories (replaced)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    build_tasks(args.data, splits=(args.split, "dev", "test"))
    env = SQLEnvironment(tasks=args.data / f"{args.split}.jsonl", name=f"sql-{args.split}")
    runs = read_jsonl(args.runs)
    kept = verified_drafts(runs, env, per_task=args.per_task)
    benchmark = [{"question": t.data["question"], "sql": t.data["gold_sql"]}
                 for split in ("dev", "test") for t in load_tasks(args.data / f"{split}.jsonl")]
    final, check = drop_benchmark_twins(kept, env, benchmark, args.threshold)
    env.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("")
    for t in final:
        append_jsonl(args.out, t)
    per_db: dict[str, int] = {}
    for t in final:
        db = (t.task_id or "").rsplit("-", 1)[0]
        per_db[db] = per_db.get(db, 0) + 1
    report = {"runs": len(runs), "tasks_run": len({r.task_id for r in runs}),
              "runs_right": sum(1 for r in runs if (r.reward or 0) >= 1.0), "kept_before_check": len(kept),
              "kept": len(final), "tasks_kept": len({t.task_id for t in final}), "per_task": args.per_task,
              "per_database": per_db, "leakage": check}
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"{len(runs)} runs ({report['runs_right']} right as a whole): {len(kept)} right completions, "
          f"{len(final)} kept after the benchmark check ({len(check['dropped'])} dropped; nearest benchmark "
          f"question: max {check['nearest_max']}, p99 {check['nearest_p99']}) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
