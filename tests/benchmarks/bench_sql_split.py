"""Execution accuracy on a split of the generated SQL task set: the agent against the single-shot baseline.

    python tests/benchmarks/bench_sql_split.py --split dev --per-db 4               # both configurations
    python tests/benchmarks/bench_sql_split.py --split test --per-db 4 --configs agent

Configurations (greedy, one task at a time unless --concurrency):
- agent:        `--model` (default local:default) under react with the schema digest, `--max-steps` steps;
- draft:        the agent with the draft planner (`agentkit.sql.draft`): one completion first, the loop repairs;
- map-then-act: the agent with the map-then-act planner, mapping each question (it may probe the schema tools)
                before acting; no exploration stage, since a split's databases share one environment name and
                priors explored on one database would be shown for the others;
- single-shot:  `--baseline-model` (default the bare local:qwen2.5-coder-1.5b), the whole schema and the
                question in one prompt, one completion, its last SQL block executed.

Tasks: the first `--per-db` questions of every database of the split after its first `--skip` (the engine's
order interleaves templates, so each database contributes its mix); with `--with-spares`, each database's spare
questions (`agentkit.sql.taskgen.spare_questions`, scored by no split) follow its task-file questions, so
`--skip 30` runs spares only; with `--gold-has`, only those of the chosen positions whose gold holds the text. Writes
tests/benchmarks/results/sql-<split>-<label>.json: per configuration, accuracy with a Wilson 95 % interval,
accuracy per difficulty, the share of runs that ended with no query that ran, seconds and tokens per task, and
each task's outcome; the trajectories go to DATA/runs/SPLIT-CONFIG-LABEL.jsonl. The split's kind (train, dev or
test) is written into the file: test figures are for reporting only, and a test run's trajectories are not to be
read.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials."""
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (round(centre - half, 4), round(centre + half, 4))


def pick(tasks: list[Any], per_db: int, gold_has: str | None = None, *, skip: int = 0) -> list[Any]:
    """The first `per_db` tasks of each database after its first `skip`, in file order; with `gold_has`, only those
    of them whose gold SQL contains that text (case-blind)."""
    seen: dict[str, int] = defaultdict(int)
    out = []
    for t in tasks:
        db = str(t.data.get("db_id") or t.data.get("db"))
        seen[db] += 1
        if not skip < seen[db] <= skip + per_db:
            continue
        if gold_has is None or gold_has.lower() in str(t.data.get("gold_sql", "")).lower():
            out.append(t)
    return out


def split_environment(data: Path, split: str, schema: str, *, check_limit: bool = False,
                      check_case: bool = False, check_count: bool = False, tasks: Path | None = None) -> Any:
    """The SQL environment over a built split's task file (`build_tasks(data, splits=(split,))` first), or over
    `tasks`, a task file of that split's questions (the hinted questions of a rationalisation collection)."""
    from agentkit.environments.sql import SQLEnvironment

    return SQLEnvironment(tasks=tasks or data / f"{split}.jsonl", schema=schema, name=f"sql-{split}",
                          check_limit=check_limit, check_case=check_case, check_count=check_count)


def config_factory(config: str, env: Any, model: Any, *, max_steps: int, votes: int,
                   learned: Sequence[Any] = ()) -> Callable[[list[Any]], Any]:
    """How a configuration (agent, draft, map-then-act or single-shot) builds its agent for an episode of `env`, greedy;
    `learned`: extensions attached as `--memory DIR` attaches them (`agentkit.cli.memory_options`)."""
    from agentkit.cli.eval_cmd import agent_factory
    from agentkit.models import GenerationSettings

    planner = {"agent": "react", "draft": "draft", "map-then-act": "map-then-act", "single-shot": "single-shot"}[config]
    return agent_factory(planner, env, model, max_steps=max_steps, settings=GenerationSettings(temperature=0.0),
                         explore_steps=0, map_steps=1, persist_priors=False, votes=votes, learned=learned)


def summarise(run: Any, tasks: list[Any]) -> dict[str, Any]:
    """Accuracy (with its interval), by difficulty, no-answer share, seconds and tokens per task."""
    difficulty = {t.id: str(t.data.get("difficulty", "")) for t in tasks}
    results = run.results
    n = len(results)
    ok = sum(r.success for r in results)
    by: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        by[difficulty.get(r.task_id, "")].append(r.success)
    no_answer = sum(r.rewards.get("execution", 0.0) == 0.0 and not r.success for r in results)
    return {
        "config": run.config, "tasks": n, "correct": ok, "accuracy": round(ok / n, 4) if n else 0.0,
        "wilson95": wilson(ok, n),
        "by_difficulty": {d: {"tasks": len(v), "accuracy": round(sum(v) / len(v), 4)} for d, v in sorted(by.items())},
        "no_answer": no_answer, "no_answer_rate": round(no_answer / n, 4) if n else 0.0,
        "seconds_per_task": round(sum(r.wall_s for r in results) / n, 2) if n else 0.0,
        "tokens_per_task": round(sum(r.tokens for r in results) / n, 1) if n else 0.0,
        "errors": sum(r.error is not None for r in results),
        "outcomes": {r.task_id: r.success for r in results},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("train", "dev", "test"), default="dev")
    parser.add_argument("--per-db", type=int, default=4, help="questions per database")
    parser.add_argument("--skip", type=int, default=0, help="leave out each database's first SKIP questions "
                        "(a collection that continues one made with --per-db SKIP)")
    parser.add_argument("--configs", nargs="+", default=["agent", "single-shot"],
                        choices=("agent", "draft", "map-then-act", "single-shot"))
    parser.add_argument("--model", default="local:default")
    parser.add_argument("--baseline-model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--schema", default="digest", help="what the agent and draft configurations are shown up "
                        "front: digest (default), tables, full or hidden (single-shot always gets full)")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--check-limit", action="store_true",
                        help="the toolkit's optional static LIMIT check (SchemaToolkit(check_limit=True))")
    parser.add_argument("--gold-has", default=None,
                        help="only questions whose gold SQL contains this text (e.g. 'LOWER('), per database up to "
                             "--per-db: a slice of the split for a change that can only act on such questions")
    parser.add_argument("--check-case", action="store_true",
                        help="the toolkit's optional letter-case check (SchemaToolkit(check_case=True))")
    parser.add_argument("--check-count", action="store_true",
                        help="the toolkit's optional check of COUNT(*) after a LEFT JOIN "
                             "(SchemaToolkit(check_count=True))")
    parser.add_argument("--votes", type=int, default=1, help="draft: drafts that vote by their results")
    parser.add_argument("--data", type=Path, default=Path("bench-out/sqlgen"), help="where the split is built")
    parser.add_argument("--with-spares", action="store_true", help="each database's spare questions follow its "
                        "task-file questions (positions 31 on), e.g. --skip 30 --with-spares: questions no split "
                        "scores")
    parser.add_argument("--tasks", type=Path, default=None, help="a task file of the split's questions to run instead "
                        "of the split's own (e.g. `scripts/sql_drafts_data.py --missed`'s hinted questions)")
    parser.add_argument("--label", default="", help="suffix of the results file name")
    parser.add_argument("--out", type=Path, default=None, help="results file (default results/sql-SPLIT-LABEL.json)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from agentkit.evaluation import EvalConfig, evaluate
    from agentkit.models import resolve_model
    from agentkit.sql.taskgen import build_tasks

    build_tasks(args.data, splits=(args.split,))
    report: dict[str, Any] = {"split": args.split, "data_kind": args.split, "per_db": args.per_db, "skip": args.skip,
                              "votes": args.votes,
                              "max_steps": args.max_steps, "concurrency": args.concurrency,
                              "check_limit": args.check_limit, "check_case": args.check_case,
                              "check_count": args.check_count,
                              "gold_has": args.gold_has, "tasks_file": str(args.tasks) if args.tasks else None,
                              "hinted": None, "with_spares": args.with_spares,
                              "machine_cores": os.cpu_count(),
                              "started": time.strftime("%Y-%m-%d %H:%M"), "runs": []}
    for config in args.configs:
        schema, model_name = ("full", args.baseline_model) if config == "single-shot" else (args.schema, args.model)
        env = split_environment(args.data, args.split, schema, check_limit=args.check_limit,
                                check_case=args.check_case, check_count=args.check_count, tasks=args.tasks)
        candidates = list(env.tasks())
        if args.with_spares:
            from bench_from_runs import spare_tasks

            spares = spare_tasks(args.data, list(dict.fromkeys(str(t.data.get("db_id")) for t in candidates)))
            candidates += [t for db in spares.values() for t in db]
        tasks = pick(candidates, args.per_db, args.gold_has, skip=args.skip)
        if args.tasks:
            report["hinted"] = any(t.data.get("evidence") for t in tasks)
        model = resolve_model(model_name, parallel=args.concurrency)
        build = config_factory(config, env, model, max_steps=args.max_steps, votes=args.votes)
        t0 = time.perf_counter()

        def tick(result: Any, name: str = config) -> None:
            print(f"  [{name}] {'ok ' if result.success else '-- '} {result.task_id} {result.wall_s:.1f}s", flush=True)

        log = args.data / "runs" / f"{args.split}-{config}{'-' + args.label if args.label else ''}.jsonl"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.unlink(missing_ok=True)
        run = evaluate(env, EvalConfig(config, build), tasks=tasks, concurrency=args.concurrency, on_result=tick,
                       log=log)
        summary = summarise(run, tasks)
        summary.update(model=model_name, schema=schema, wall_s=round(time.perf_counter() - t0, 1))
        report["runs"].append(summary)
        print(json.dumps({k: v for k, v in summary.items() if k != "outcomes"}), flush=True)
        close = getattr(model, "close", None)
        if callable(close):
            close()
    out = args.out or RESULTS / f"sql-{args.split}{'-' + args.label if args.label else ''}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
