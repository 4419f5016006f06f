"""Worked examples across databases: the agent's own verified runs on train databases, shown by SQL skeleton to
questions on databases it never ran on (`agentkit.memory.experience.Experience(across=True)`).

    python tests/benchmarks/bench_across.py --learn-per-db 3 --split dev --per-db 3 --label s36
    python tests/benchmarks/bench_across.py --learn-dbs 2 --learn-per-db 1 --dbs 2 --per-db 1 --out /tmp/smoke.json

1. learning, on the train split of the generated SQL task set: the first `--learn-per-db` questions of each
   train database (of the first `--learn-dbs`, default all), one run each of the draft configuration (built as
   `bench_sql_split.py` builds it: `--votes` drafts, the CREATE TABLEs up front, greedy), scored against the
   gold query; every run whose result matched the gold's is admitted as a worked example (`Experience.admit`,
   verified by "gold") under its database's key, and the examples are written to DATA/across/LABEL/experience.json;
2. the evaluation, on `--split` (dev by default; test only to report, never to choose): the first `--per-db`
   questions of each of its databases (of the first `--dbs`), without examples ("before") and with the
   experience attached, `across=True` ("after"), the same configuration. No evaluated database has examples of
   its own, so everything shown comes from train databases, chosen by skeleton similarity to the query the
   model writes without examples (the pre-prediction), then question similarity.

The train and the evaluated databases are disjoint (the task engine splits by database); their questions come
from the same question templates over other schemas, so a shown example can be the same kind of question as
the evaluated one: the report gives, per evaluated question, the highest MiniLM cosine to any learned question.

Reports: the examples learned (runs, admitted, per database), before and after with Wilson 95 % intervals, the
change in points, the tasks that flipped each way with what their "after" run was shown (example ids, the train
question, skeleton and question similarity), how the "after" runs used the examples (confirmed query "copied",
"adapted" or "own", from their EXPERIENCE records), and minutes per phase. Writes `--out` (default
tests/benchmarks/results/sql-across-SPLIT[-LABEL].json, with the split's kind as "data_kind"); the runs go to
DATA/across/LABEL/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_from_runs import flips_with_shown
from bench_sql_split import config_factory, pick, split_environment, summarise

RESULTS = Path(__file__).parent / "results"
CONFIG = "draft"


def first_databases(tasks: Sequence[Any], dbs: int | None) -> list[Any]:
    """The tasks of the first `dbs` databases in the split's order (all with None)."""
    order = list(dict.fromkeys(str(t.data["db_id"]) for t in tasks))
    kept = set(order if dbs is None else order[:dbs])
    return [t for t in tasks if str(t.data["db_id"]) in kept]


def learn_examples(runs: Any, tasks: Sequence[Any]) -> tuple[Any, dict[str, Any]]:
    """An `Experience(across=True)` of the runs whose result matched the gold's, each under its database's key;
    and what was admitted."""
    from agentkit.memory.experience import Experience, database_key_of

    experience = Experience(across=True)
    keys: dict[str, str] = {}
    admitted: dict[str, list[str]] = {}
    for task in tasks:
        trajectory = runs.trajectories.get(task.id)
        if trajectory is None:
            continue
        db = str(task.data["db"])
        key = keys.setdefault(db, database_key_of(db))
        if experience.admit(trajectory, database=key) is not None:
            admitted.setdefault(str(task.data["db_id"]), []).append(task.id)
    return experience, {"runs": len(tasks), "admitted": sum(map(len, admitted.values())), "per_database": admitted}


def use_of(trajectories: Any) -> dict[str, int]:
    """How many runs confirmed a query that copied a shown example, adapted one's skeleton or is their own."""
    from agentkit.records import EXPERIENCE

    uses: Counter[str] = Counter()
    for trajectory in trajectories.values():
        record = trajectory.records.get(EXPERIENCE)
        uses[record.use if record is not None and record.shown and record.use else "nothing shown or no query"] += 1
    return dict(uses)


def nearest_learned(evaluated: Sequence[Any], learned: Sequence[str]) -> dict[str, float]:
    """Each evaluated question's highest MiniLM cosine to a learned question."""
    from agentkit.memory.embeddings import Embedder

    if not learned or not evaluated:
        return {}
    sims = Embedder.default().similarity([str(t.data["question"]) for t in evaluated], list(learned))
    return {t.id: round(float(row.max()), 4) for t, row in zip(evaluated, sims, strict=True)}


def run_benchmark(train_env: Any, train_tasks: Sequence[Any], eval_env: Any, tasks: Sequence[Any], model: Any,
                  work: Path, *, votes: int = 5, max_steps: int = 8, concurrency: int = 2) -> dict[str, Any]:
    """Learning on `train_tasks` of `train_env`, then `tasks` of `eval_env` before and after (see the module);
    `work` is emptied first and receives the runs and experience.json. Returns the report (without the split)."""
    from agentkit.evaluation import EvalConfig, evaluate
    from agentkit.training.learning.report import Score

    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    minutes: dict[str, float] = {}

    def run(env: Any, tasks: Sequence[Any], name: str, learned: Sequence[Any] = ()) -> Any:
        build = config_factory(CONFIG, env, model, max_steps=max_steps, votes=votes, learned=learned)

        def tick(result: Any) -> None:
            print(f"  [{name}] {'ok ' if result.success else '-- '} {result.task_id} {result.wall_s:.1f}s", flush=True)

        t0 = time.perf_counter()
        result = evaluate(env, EvalConfig(name, build), tasks=list(tasks), concurrency=concurrency,
                          on_result=tick, log=work / f"{name}.jsonl")
        minutes[name] = round((time.perf_counter() - t0) / 60, 3)
        return result

    learning = run(train_env, train_tasks, "learn")
    experience, admitted = learn_examples(learning, train_tasks)
    experience.save(work / "experience.json")
    before = run(eval_env, tasks, "before")
    after = run(eval_env, tasks, "after", learned=[experience])
    scores = [Score.of(label, r, minutes=minutes[label], tokens=sum(x.tokens for x in r.results))
              for label, r in (("before", before), ("after", after))]
    flips = flips_with_shown(*scores, after.trajectories, {e.id: e for e in experience.examples})
    b, a = (s.successes for s in scores)
    nearest = nearest_learned(tasks, [e.question for e in experience.examples])
    return {
        "learned_on": "train", "config": CONFIG, "votes": votes, "max_steps": max_steps, "concurrency": concurrency,
        "machine_cores": os.cpu_count(), "started": time.strftime("%Y-%m-%d %H:%M"),
        "learning": {**admitted, "matched_gold": sum(r.success for r in learning.results),
                     "seconds_per_task": summarise(learning, list(train_tasks))["seconds_per_task"],
                     "experience": str(work / "experience.json")},
        "before": summarise(before, list(tasks)), "after": summarise(after, list(tasks)),
        "delta_points": round(100 * (a - b) / len(tasks), 1) if tasks else 0.0,
        "became_right": sum(f["became"] == "right" for f in flips),
        "became_wrong": sum(f["became"] == "wrong" for f in flips), "flips": flips, "use": use_of(after.trajectories),
        "nearest_learned_question": {"max": max(nearest.values(), default=0.0),
                                     "median": statistics.median(nearest.values()) if nearest else 0.0,
                                     "per_task": nearest},
        "minutes": minutes,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("dev", "test"), default="dev", help="where the examples are evaluated")
    parser.add_argument("--per-db", type=int, default=3, help="evaluated questions per database")
    parser.add_argument("--dbs", type=int, default=None, help="only the first N evaluated databases")
    parser.add_argument("--learn-per-db", type=int, default=3, help="train questions run per train database")
    parser.add_argument("--learn-dbs", type=int, default=None, help="only the first N train databases")
    parser.add_argument("--model", default="local:default")
    parser.add_argument("--votes", type=int, default=5)
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--data", type=Path, default=Path("bench-out/sqlgen"), help="where the splits are built")
    parser.add_argument("--label", default="")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from agentkit.models import resolve_model
    from agentkit.sql.taskgen import build_tasks

    build_tasks(args.data, splits=("train", args.split))
    train_env = split_environment(args.data, "train", "tables")
    eval_env = split_environment(args.data, args.split, "tables")
    train_tasks = pick(first_databases(list(train_env.tasks()), args.learn_dbs), args.learn_per_db)
    tasks = pick(first_databases(list(eval_env.tasks()), args.dbs), args.per_db)
    model = resolve_model(args.model, parallel=args.concurrency)
    try:
        body = run_benchmark(train_env, train_tasks, eval_env, tasks, model,
                             args.data / "across" / (args.label or "default"), votes=args.votes,
                             max_steps=args.max_steps, concurrency=args.concurrency)
    finally:
        close = getattr(model, "close", None)
        if callable(close):
            close()
    report = {"split": args.split, "data_kind": args.split, "model": args.model, **body}
    out = args.out or RESULTS / f"sql-across-{args.split}{'-' + args.label if args.label else ''}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: report[k] for k in ("delta_points", "became_right", "became_wrong", "use", "minutes")}))
    print(f"before {report['before']['correct']}/{len(tasks)}, after {report['after']['correct']}/{len(tasks)}; "
          f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
