"""`agentkit learn` per database of the generated SQL task set: each database's agent learns from some of its
questions and is measured on the rest, before and after, over seeds.

    python tests/benchmarks/bench_learn_split.py --split dev --dbs 3 --budget 15m --seeds 0,1,2
    python tests/benchmarks/bench_learn_split.py --split test --dbs 3 --budget 15m --seeds 0,1,2   # report only
    python tests/benchmarks/bench_learn_split.py --split dev --db-ids home_care --train 6 --heldout 4 \\
        --budget 2ep --seeds 0 --out /tmp/smoke.json

Per seed and database (the split's first `--dbs`, in its order, or `--db-ids`): the database's task-file
questions are shuffled with the seed and the last `--heldout` of them held out; the learning side is the others,
then the database's spare questions (`agentkit.sql.taskgen.spare_questions`: checked questions over the same
data that no split scores), up to `--train`, a spare dropped when its question is a close paraphrase of a
held-out one (MiniLM cosine at least `--max-similarity`) or its gold SQL is a held-out one's
(`bench_from_runs.with_spares`). `agentkit.training.learning.learn` then runs on the learning side for `--budget`
with `--methods` (default: what `learn` runs for the model), keeping a method only when its validation share
does not drop, and measures the held-out questions before and after each method, greedy, with `--planner`'s
agent (react, `--max-steps` steps, the schema digest; or draft, `agentkit sql`'s, `--votes` drafts voting, the
CREATE TABLEs shown). The seed also picks `learn`'s validation share and the order of its train tasks. Worked
examples are shown at question cosine `--min-similarity` or more (default: `Experience`'s, 0.8).

With `--generator-seed N` the split's databases are rebuilt with generator seed N (`fresh_sql_questions.py`: the
same schemas, other rows, another draw of questions, none a question or gold query of the shipped build) into
`--data` (default bench-out/sqlgen-gN), and each database's fresh questions, task-file and spare together, are
shuffled, the last `--heldout` held out and the others filtered as spares are, up to `--train`: questions nobody
has run or read, to judge a rule written after reading dev failures.

Reports, per seed and database: before and after, the change in points, each method's own change (the
evaluation after it against the one before it) and whether it was kept, the held-out tasks that flipped with
the artefacts their run was shown, minutes and tokens per phase; per seed, the databases pooled with Wilson 95 %
intervals; over seeds, the mean change and its range. With `--measure-set-aside`, each method validation set
aside also runs on the held-out questions (`if_kept` in its row: the score, the change and the questions it
would have turned right and wrong), report only. Each (seed, database) runs in WORK/seedS/DB and resumes
there: a finished one is read back, an unfinished one continued. With `--rows FILE` each finished row is also
appended to FILE under a key of its seed, database, question ids and settings, and a row found there is not run
again: a small file that carries a long run across machines whose WORK is not kept. Writes `--out` (default
tests/benchmarks/results/learn-split-SPLIT[-LABEL].json, with the split's kind as "data_kind"): test figures are
for reporting only, and a test run's trajectories are not to be read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench_experience_threshold import flips
from bench_from_runs import MAX_SIMILARITY, Plan, _pct, by_database, spare_tasks, with_spares
from bench_sql_split import split_environment, wilson

RESULTS = Path(__file__).parent / "results"


def plan_seed(groups: dict[str, list[Any]], db_ids: Sequence[str], seed: int, train: int, heldout: int, *,
              spares: dict[str, list[Any]], max_similarity: float = MAX_SIMILARITY,
              similarity: Callable[[list[str], list[str]], Any] | None = None,
              pool: bool = False) -> dict[str, Plan]:
    """Each database's learning side (`afternoon`) and held-out questions for `seed`: its task-file questions
    shuffled by `random.Random(f"{seed}:{db}")`, the last `heldout` held out, the rest then spares up to
    `train`. `pool`: all of a database's questions are alike (a rebuild's fresh ones): shuffled the same way,
    the last `heldout` held out, and every other one filtered as a spare is (no paraphrase of a held-out
    question, no held-out gold query) up to `train`."""
    plans = {}
    for db in db_ids:
        frozen = list(groups[db])
        random.Random(f"{seed}:{db}").shuffle(frozen)
        rest = spares.get(db, [])
        if pool:
            cut = max(len(frozen) - heldout, 0)
            frozen, rest = frozen[cut:], frozen[:cut]
        plans[db] = with_spares(frozen, rest, train, heldout, max_similarity=max_similarity,
                                similarity=similarity)
    return plans


def fresh_environment(split: str, generator_seed: int, data: Path, schema: str) -> Any:
    """The environment over `split`'s fresh questions: its databases rebuilt into `data` with `generator_seed`
    (`fresh_sql_questions.fresh_questions`, which refuses the test split and the shipped seed), task-file and
    spare questions in one task file, `data/fresh.jsonl`."""
    from fresh_sql_questions import fresh_questions

    fresh_questions(split, generator_seed, data)
    return split_environment(data, split, schema, tasks=data / "fresh.jsonl")


def database_row(db: str, report: Any, plan: Plan) -> dict[str, Any]:
    """One (seed, database) learn report as the benchmark's row."""
    evaluations = [report.before, *report.evaluations]
    measured = {score.label.removeprefix("set-aside-"): score for score in report.set_aside}
    methods = []
    for method, earlier, later in zip(report.methods, evaluations, evaluations[1:], strict=False):
        details = report.details.get(method, {})
        row = {"method": method, "kept": "set_aside" not in details, "set_aside": details.get("set_aside"),
               "delta_points": round(100 * (later.success_rate - earlier.success_rate), 1), "after": later.successes}
        if method in measured:  # what the held-out score would have been had validation kept it (report only)
            kept = measured[method]
            row["if_kept"] = {"correct": kept.successes, "tasks": kept.tasks,
                              "delta_points": round(100 * (kept.success_rate - earlier.success_rate), 1),
                              **flips(earlier.per_task, kept.per_task)}
        methods.append(row)
    return {
        "db_id": db, "train": len(plan.afternoon), "heldout": len(plan.heldout),
        "spares": {k: plan.spares[k] for k in ("available", "used", "dropped_paraphrase", "dropped_same_sql",
                                               "heldout_nearest_afternoon")} if plan.spares else None,
        "validation": len(report.validation_tasks),
        "before": {"correct": report.before.successes, "tasks": report.before.tasks},
        "after": {"correct": report.after.successes, "tasks": report.after.tasks},
        "delta_points": round(100 * report.delta, 1), "methods": methods,
        "flips": [f.model_dump() for f in report.flips],
        "costs": [c.model_dump() for c in report.costs],
    }


def pooled(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The databases of one seed together: before and after with Wilson 95 % intervals, the change in points,
    flips each way and learning minutes and tokens."""
    def score(side: str) -> dict[str, Any]:
        k, n = sum(r[side]["correct"] for r in rows), sum(r[side]["tasks"] for r in rows)
        return {"correct": k, "tasks": n, "accuracy": round(k / n, 4) if n else 0.0, "wilson95": wilson(k, n)}

    before, after = score("before"), score("after")
    learning = [c for r in rows for c in r["costs"] if c["phase"].startswith("learn-")]
    return {"before": before, "after": after,
            "delta_points": round(100 * (after["accuracy"] - before["accuracy"]), 1),
            "became_right": sum(f["became"] == "right" for r in rows for f in r["flips"]),
            "became_wrong": sum(f["became"] == "wrong" for r in rows for f in r["flips"]),
            "learning_minutes": round(sum(c["minutes"] for c in learning), 1),
            "learning_tokens": sum(c["tokens"] for c in learning),
            "evaluation_minutes": round(sum(c["minutes"] for r in rows for c in r["costs"]
                                            if c["phase"].startswith("eval-")), 1)}


def over_seeds(seeds: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The mean change over seeds (points), its range, and each method's mean change over seeds and databases."""
    deltas = [s["overall"]["delta_points"] for s in seeds.values()]
    by_method: dict[str, list[float]] = {}
    for s in seeds.values():
        for row in s["databases"]:
            for m in row["methods"]:
                by_method.setdefault(m["method"], []).append(m["delta_points"])
    return {"seeds": len(deltas), "mean_delta_points": round(statistics.fmean(deltas), 1) if deltas else None,
            "min_delta_points": min(deltas, default=None), "max_delta_points": max(deltas, default=None),
            "method_mean_delta_points": {m: round(statistics.fmean(v), 1) for m, v in by_method.items()},
            "method_worst_database_points": {m: min(v) for m, v in by_method.items()}}


def markdown(report: dict[str, Any]) -> str:
    """Per seed and database, then pooled per seed, then the mean over seeds."""
    head = ("seed", "database", "train / held-out", "before", "after", "Δ points", "methods (Δ, kept)",
            "flips + / −", "learning min")
    rows = [head, tuple("---" for _ in head)]
    for seed, s in report["seeds"].items():
        for r in s["databases"]:
            methods = ", ".join(f"{m['method']} {m['delta_points']:+.1f}{'' if m['kept'] else ' (set aside'}"
                                + (f"; if kept {m['if_kept']['delta_points']:+.1f})" if "if_kept" in m
                                   else "" if m["kept"] else ")")
                                for m in r["methods"])
            minutes = sum(c["minutes"] for c in r["costs"] if c["phase"].startswith("learn-"))
            rows.append((seed, r["db_id"], f"{r['train']} / {r['heldout']}",
                         f"{r['before']['correct']}/{r['before']['tasks']}",
                         f"{r['after']['correct']}/{r['after']['tasks']}", f"{r['delta_points']:+.1f}", methods,
                         f"{sum(f['became'] == 'right' for f in r['flips'])} / "
                         f"{sum(f['became'] == 'wrong' for f in r['flips'])}", f"{minutes:.1f}"))
        o = s["overall"]
        rows.append((seed, "**all**", "", _pct(o["before"]), _pct(o["after"]), f"{o['delta_points']:+.1f}", "",
                     f"{o['became_right']} / {o['became_wrong']}", f"{o['learning_minutes']:.1f}"))
    m = report["overall"]
    lines = ["| " + " | ".join(r) + " |" for r in rows]
    lines.append(f"\nMean over {m['seeds']} seeds: {m['mean_delta_points']:+.1f} points "
                 f"(from {m['min_delta_points']:+.1f} to {m['max_delta_points']:+.1f}); per method: "
                 + ", ".join(f"{k} {v:+.1f}" for k, v in m["method_mean_delta_points"].items()))
    return "\n".join(lines)


def row_key(seed: int, db: str, plan: Plan, settings: Mapping[str, Any]) -> str:
    """The key a finished row is kept under in a `--rows` file: a hash of the seed, the database, its learning and
    held-out question ids in order, and the run's settings (as JSON)."""
    blob = json.dumps({"seed": seed, "db": db, "afternoon": [t.id for t in plan.afternoon],
                       "heldout": [t.id for t in plan.heldout], "settings": settings}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def kept_rows(path: Path | None) -> dict[str, dict[str, Any]]:
    """The rows of a `--rows` file by key; a line that is not a whole row (a write cut short) is skipped."""
    if path is None or not path.is_file():
        return {}
    found = {}
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("key"), str) and isinstance(entry.get("row"), dict):
            found[entry["key"]] = entry["row"]
    return found


def run(env: Any, db_ids: Sequence[str], seeds: Sequence[int], model: Any, work: Path, *, train: int,
        heldout: int, budget: str, methods: Sequence[str] | None, spares: dict[str, list[Any]],
        max_similarity: float = MAX_SIMILARITY, max_steps: int = 8, concurrency: int = 1, planner: str = "react",
        votes: int = 5, similarity: Callable[[list[str], list[str]], Any] | None = None,
        on_row: Callable[[int, dict[str, Any]], None] | None = None,
        options: Mapping[str, Any] | None = None, pool: bool = False, rows: Path | None = None) -> dict[str, Any]:
    """The benchmark: for every seed and database a `learn` run in WORK/seedS/DB (resumed when its state is
    there), then the rows, the pooled figures per seed and the figures over seeds. `options`: further keyword
    arguments of `learn` (e.g. `train_temperature`); `pool`: as `plan_seed`'s; `rows`: a file of finished rows,
    read first (a row kept there under the same `row_key` is not run again) and appended to after each run."""
    from agentkit.environments.sql import SQLEnvironment
    from agentkit.training.learning import learn

    groups = by_database(env.tasks())
    settings = {"model": model.name, "budget": budget,
                "methods": None if methods is None else list(methods), "max_steps": max_steps,
                "planner": planner, "votes": votes, "options": dict(options or {})}
    finished = kept_rows(rows)
    out: dict[str, dict[str, Any]] = {}
    for seed in seeds:
        plans = plan_seed(groups, db_ids, seed, train, heldout, spares=spares, max_similarity=max_similarity,
                          similarity=similarity, pool=pool)
        seed_rows: list[dict[str, Any]] = []
        for db, plan in plans.items():
            key = row_key(seed, db, plan, settings)
            if key in finished:
                seed_rows.append(finished[key])
                if on_row is not None:
                    on_row(seed, seed_rows[-1])
                continue
            folder = work / f"seed{seed}" / db
            common = {"schema": env.schema, "check_limit": env.check_limit, "check_case": env.check_case,
                      "check_count": env.check_count}
            learning = SQLEnvironment(tasks=plan.afternoon, name=f"sql-{db}", **common)
            held = SQLEnvironment(tasks=plan.heldout, name=f"sql-{db}", **common)
            try:
                report = learn(learning, model, budget=budget, methods=methods, out=folder, seed=seed,
                               heldout=held, resume=(folder / "state.json").exists(), max_steps=max_steps,
                               concurrency=concurrency, planner=planner, votes=votes, **(options or {}))
            finally:
                learning.close()
                held.close()
            seed_rows.append(database_row(db, report, plan))
            if rows is not None:
                rows.parent.mkdir(parents=True, exist_ok=True)
                with rows.open("a") as handle:
                    handle.write(json.dumps({"key": key, "seed": seed, "db_id": db, "row": seed_rows[-1]}) + "\n")
            if on_row is not None:
                on_row(seed, seed_rows[-1])
        out[str(seed)] = {"databases": seed_rows, "overall": pooled(seed_rows)}
    return {"seeds": out, "overall": over_seeds(out)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("train", "dev", "test"), default="dev")
    parser.add_argument("--dbs", type=int, default=3, help="the split's first N databases")
    parser.add_argument("--db-ids", nargs="+", default=None, help="these databases of the split instead")
    parser.add_argument("--train", type=int, default=40, help="questions to learn from per database")
    parser.add_argument("--heldout", type=int, default=20, help="held-out questions per database")
    parser.add_argument("--max-similarity", type=float, default=MAX_SIMILARITY,
                        help="drop a spare this close (MiniLM cosine) to a held-out question, or closer")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--budget", default="15m", help="learning budget per database and seed (15m, 40ep)")
    parser.add_argument("--methods", default=None, help="comma-separated (default: learn's own for the model)")
    parser.add_argument("--model", default="local:default")
    parser.add_argument("--planner", choices=("react", "draft"), default="react",
                        help="the acting agent: react, or draft (agentkit sql's: the query drafted first)")
    parser.add_argument("--votes", type=int, default=5, help="with --planner draft: drafts that vote by results")
    parser.add_argument("--schema", default=None,
                        help="shown up front: digest, tables, full, hidden (default: tables with draft, else digest)")
    parser.add_argument("--min-similarity", type=float, default=None,
                        help="question cosine below which a worked example is not shown (default: Experience's)")
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--data", type=Path, default=None,
                        help="where the split is built (default bench-out/sqlgen, or bench-out/sqlgen-gN)")
    parser.add_argument("--generator-seed", type=int, default=None,
                        help="rebuild the split's databases with this generator seed and use their fresh questions")
    parser.add_argument("--hints", action="store_true",
                        help="experience: retry each failed train question once with its gold query's shape as a hint")
    parser.add_argument("--measure-set-aside", action="store_true",
                        help="also run the held-out questions with each method validation set aside (report only)")
    parser.add_argument("--label", default="", help="suffix of the results file and work folder names")
    parser.add_argument("--rows", type=Path, default=None,
                        help="keep each finished row in this file too, and read finished rows back from it")
    parser.add_argument("--out", type=Path, default=None,
                        help="results file (default tests/benchmarks/results/learn-split-SPLIT[-LABEL].json)")
    args = parser.parse_args(argv)
    if args.train < 1 or args.heldout < 1:
        parser.error("--train and --heldout must be at least 1")
    seeds = [int(s) for s in args.seeds.split(",")]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from agentkit.memory.experience import MIN_SIMILARITY
    from agentkit.models import resolve_model
    from agentkit.sql.taskgen import build_tasks
    from agentkit.training.learning import loop

    schema = args.schema or ("tables" if args.planner == "draft" else "digest")
    if args.generator_seed is None:
        data = args.data or Path("bench-out/sqlgen")
        build_tasks(data, splits=(args.split,))
        env = split_environment(data, args.split, schema)
    else:
        data = args.data or Path(f"bench-out/sqlgen-g{args.generator_seed}")
        try:
            env = fresh_environment(args.split, args.generator_seed, data, schema)
        except ValueError as exc:
            parser.error(str(exc))
    groups = by_database(env.tasks())
    chosen = args.db_ids or list(groups)[:args.dbs]
    unknown = [d for d in chosen if d not in groups]
    if unknown:
        parser.error(f"{args.split} split: not databases of the task set: {', '.join(unknown)}")
    suffix = f"-{args.label}" if args.label else ""
    started = time.strftime("%Y-%m-%d %H:%M")
    model = resolve_model(args.model, parallel=args.concurrency)

    def show(seed: int, row: dict[str, Any]) -> None:
        print(f"seed {seed} {row['db_id']}: {row['before']['correct']}/{row['before']['tasks']} -> "
              f"{row['after']['correct']}/{row['after']['tasks']} ({row['delta_points']:+.1f})", flush=True)

    try:
        result = run(env, chosen, seeds, model, data / "learn-split" / f"{args.split}{suffix}",
                     train=args.train, heldout=args.heldout, budget=args.budget,
                     methods=args.methods.split(",") if args.methods else None,
                     spares={} if args.generator_seed is not None else spare_tasks(data, chosen),
                     max_similarity=args.max_similarity,
                     max_steps=args.max_steps, concurrency=args.concurrency, planner=args.planner,
                     votes=args.votes, on_row=show, pool=args.generator_seed is not None, rows=args.rows,
                     options={"measure_set_aside": args.measure_set_aside,
                              **({"hinted_retries": True} if args.hints else {}),
                              **({} if args.min_similarity is None else
                                 {"experience_options": {"min_similarity": args.min_similarity}})})
    finally:
        close = getattr(model, "close", None)
        if callable(close):
            close()
        env.close()
    report = {"benchmark": "learn-split", "split": args.split, "data_kind": args.split, "model": args.model,
              "generator_seed": args.generator_seed,
              "budget_per_database": args.budget, "methods": args.methods or "learn's default",
              "train_per_db": args.train, "heldout_per_db": args.heldout, "max_steps": args.max_steps,
              "planner": args.planner, "votes": args.votes if args.planner == "draft" else None, "schema": schema,
              "concurrency": args.concurrency, "temperature": 0.0, "started": started,
              "experience_min_similarity": MIN_SIMILARITY if args.min_similarity is None else args.min_similarity,
              "validation_min_gain": loop.MIN_GAIN, "measure_set_aside": args.measure_set_aside,
              "hinted_retries": args.hints, **result}
    out = args.out or RESULTS / f"learn-split-{args.split}{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(markdown(report))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
