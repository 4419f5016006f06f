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

Rationalisation (`agentkit.training.sql_drafts.skeleton_hint`): `--missed FILE` also writes the tasks the runs
never answered (no completion returned the gold result) as a task file whose records carry their gold query's
skeleton as the hint ("evidence"); the draft agent runs on it (`bench_sql_split.py --tasks FILE`), and this script
reads those runs with `--tasks FILE`, removing each kept draft's hint from its prompt (`without_hint`, the prompt
tokenised again with `--tokenizer`'s tokenizer) before the benchmark check:

    python scripts/sql_drafts_data.py --runs A.jsonl B.jsonl --out runs/x.jsonl --missed bench-out/sqlgen/missed.jsonl
    python tests/benchmarks/bench_sql_split.py --split train --tasks bench-out/sqlgen/missed.jsonl --per-db 99 \
        --configs draft --votes 5 --schema tables --concurrency 2 --label hinted
    python scripts/sql_drafts_data.py --runs bench-out/sqlgen/runs/train-draft-hinted.jsonl \
        --tasks bench-out/sqlgen/missed.jsonl --out runs/sql-drafts3.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from agentkit.environments.sql import SQLEnvironment, load_tasks
from agentkit.sql.draft import DRAFT_PHASE, REPAIR_PHASE
from agentkit.sql.extract import query_key
from agentkit.sql.recipe import question_of
from agentkit.sql.taskgen import build_tasks
from agentkit.training.sql_drafts import skeleton_hint, verified_drafts, without_hint
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


def write_missed(out: Path, env: SQLEnvironment, missed: set[str | None]) -> int:
    """Write the tasks of `env` whose ids are in `missed` as a task file at `out`, each record with its gold
    query's skeleton as its hint ("evidence") and its database as an absolute path; return how many."""
    records = []
    for task in env.tasks():
        if task.id in missed:
            gold = str(task.data["gold_sql"])
            records.append({"id": task.id, "db_id": task.data.get("db_id"),
                            "db": str(Path(str(task.data["db"])).resolve()), "question": str(task.data["question"]),
                            "sql": gold, "difficulty": task.data.get("difficulty"), "evidence": skeleton_hint(gold)})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    return len(records)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="JSONL logs of draft runs")
    parser.add_argument("--data", type=Path, default=Path("bench-out/sqlgen"), help="where the splits are built")
    parser.add_argument("--split", default="train", choices=("train",), help="the split the runs are of")
    parser.add_argument("--per-task", type=int, default=2, help="distinct right queries kept per task")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="drop a question this close to a "
                        "dev or test question, or closer")
    parser.add_argument("--out", type=Path, required=True, help="JSONL of the kept trajectories (replaced)")
    parser.add_argument("--tasks", type=Path, default=None, help="the task file the runs were made on (default: "
                        "the split's); its tasks' hints are removed from the kept drafts")
    parser.add_argument("--tokenizer", default="qwen2.5-coder-1.5b",
                        help="embedded model whose tokenizer tokenises a prompt whose hint was removed")
    parser.add_argument("--missed", type=Path, default=None, help="also write the tasks no completion answered, "
                        "each with its gold query's skeleton as the hint, as a task file (replaced)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    build_tasks(args.data, splits=(args.split, "dev", "test"))
    env = SQLEnvironment(tasks=args.tasks or args.data / f"{args.split}.jsonl", name=f"sql-{args.split}")
    runs = read_jsonl(args.runs)
    hints = {t.id: str(t.data["evidence"]) for t in env.tasks() if t.data.get("evidence")}
    # a repair's recorded prompt text is not whole, so the hint could not be removed from it: drafts only
    phases = (DRAFT_PHASE,) if hints else (DRAFT_PHASE, REPAIR_PHASE)
    kept = verified_drafts(runs, env, per_task=args.per_task, phases=phases)
    if any(t.task_id in hints for t in kept):
        from agentkit.models.embedded import load_embedded_tokenizer

        tokenizer = load_embedded_tokenizer(args.tokenizer)

        def tokenize(text: str) -> list[int]:
            return list(tokenizer(text, add_special_tokens=False)["input_ids"])

        kept = [without_hint(t, hints[t.task_id or ""], tokenize) if t.task_id in hints else t for t in kept]
    missed = None if args.missed is None else write_missed(args.missed, env,
                                                            {r.task_id for r in runs} - {t.task_id for t in kept})
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
              "per_database": per_db, "hints_removed": sum("hint_removed" in t.metadata for t in final),
              "missed_written": missed,
              "leakage": check}
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"{len(runs)} runs ({report['runs_right']} right as a whole): {len(kept)} right completions, "
          f"{len(final)} kept after the benchmark check ({len(check['dropped'])} dropped; nearest benchmark "
          f"question: max {check['nearest_max']}, p99 {check['nearest_p99']}) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
