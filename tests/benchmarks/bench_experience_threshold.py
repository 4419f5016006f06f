"""Which worked examples to show: a learn split's held-out questions again, with its learned experience shown under
several question-similarity floors (`Experience(min_similarity=...)`), and without it, in one harness.

    python tests/benchmarks/bench_experience_threshold.py --work bench-out/sqlgen/learn-split/dev --seed 0 \\
        --db-ids volunteer_events rail_delays --floors 0,0.8 --out tests/benchmarks/results/experience-floor-dev.json
    python tests/benchmarks/bench_experience_threshold.py --work bench-out/sqlgen/learn-split/dev-floor-adm \\
        --db-ids insurance_claims --floors 0.8 --gated 0.8 --out /tmp/gate.json

For each database, reads the (seed, database) folder a `bench_learn_split.py` run wrote: its held-out question ids
(state.json) and the worked examples its experience phase learned (experience.json). Then runs those held-out
questions with the draft agent (`--votes` drafts, greedy, `--model`) with no examples ("none") and with the examples
under each floor ("floor-F": an example whose question's MiniLM cosine to the new question is below F is not shown),
and with `--gated` floors the same with `skeleton_gate` ("gate-F": the pre-prediction is written whenever an example
passes F, and only examples of its SQL skeleton are shown). Reports per database and in all: right answers per
configuration, and per configuration the questions that turned right and wrong against "none". Every configuration
runs in this one session, so they compare like with like (the learn run's own figures came from another session).
The split's kind goes into the file as "data_kind"; a test split's trajectories are not to be read.

With `--eligible-only`, only the held-out questions for which some learned example passes the lowest floor run: on
the others no configuration shows an example or writes a pre-prediction, so each runs as "none" does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench_from_runs import Options, evaluation
from bench_sql_split import split_environment, summarise

RESULTS = Path(__file__).parent / "results"


def flips(base: dict[str, bool], other: dict[str, bool]) -> dict[str, list[str]]:
    """The task ids `other` turned right and wrong against `base`."""
    return {"right": sorted(t for t, ok in other.items() if ok and not base.get(t)),
            "wrong": sorted(t for t, ok in other.items() if not ok and base.get(t))}


def eligible_tasks(experience: Any, tasks: list[Any]) -> list[Any]:
    """The tasks for which one of `experience`'s examples passes its `min_similarity`."""
    keys = {e.database for e in experience.examples}
    return [t for t in tasks if any(experience.eligible(key, t.prompt) for key in keys)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="a bench_learn_split.py work folder (the split's)")
    parser.add_argument("--split", choices=("train", "dev", "test"), default="dev")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db-ids", nargs="+", required=True)
    parser.add_argument("--floors", default="0,0.8", help="comma-separated question-similarity floors")
    parser.add_argument("--gated", default="", help="comma-separated floors to run with skeleton_gate too")
    parser.add_argument("--eligible-only", action="store_true",
                        help="run only the questions some example passes the lowest floor for")
    parser.add_argument("--model", default="local:default")
    parser.add_argument("--votes", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--data", type=Path, default=Path("bench-out/sqlgen"), help="where the split is built")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from agentkit.environments.sql import SQLEnvironment
    from agentkit.memory.experience import Experience
    from agentkit.models import resolve_model

    floors = [float(f) for f in args.floors.split(",")]
    gated = [float(f) for f in args.gated.split(",") if f]
    configs_run: list[tuple[str, float | None, bool]] = [
        ("none", None, False), *((f"floor-{f:g}", f, False) for f in floors),
        *((f"gate-{f:g}", f, True) for f in gated)]
    split = split_environment(args.data, args.split, "tables")
    by_id = {t.id: t for t in split.tasks()}
    model = resolve_model(args.model, parallel=args.concurrency)
    options = Options(votes=args.votes, concurrency=args.concurrency)
    rows: list[dict[str, Any]] = []
    try:
        for db in args.db_ids:
            folder = args.work / f"seed{args.seed}" / db
            state = json.loads((folder / "state.json").read_text())
            tasks = [by_id[t] for t in state["config"]["heldout"]]
            if args.eligible_only:
                tasks = eligible_tasks(Experience.load(folder / "experience.json",
                                                       min_similarity=min(floors + gated)), tasks)
            env = SQLEnvironment(tasks=tasks, schema="tables", name=f"sql-{db}")
            logs = folder / "floors"
            logs.mkdir(exist_ok=True)
            configs: dict[str, dict[str, Any]] = {}
            try:
                for label, floor, gate in configs_run:
                    learned = [] if floor is None else [Experience.load(folder / "experience.json",
                                                                        min_similarity=floor, skeleton_gate=gate)]
                    t0 = time.perf_counter()
                    run = evaluation(env, tasks, model, label, logs / f"{label}.jsonl", options, learned=learned)
                    summary = summarise(run, tasks)
                    summary["minutes"] = round((time.perf_counter() - t0) / 60, 2)
                    configs[label] = summary
                    print(f"{db} {label}: {summary['correct']}/{summary['tasks']}", flush=True)
            finally:
                env.close()
            base = configs["none"]["outcomes"]
            rows.append({"db_id": db, "configs": {k: {"correct": v["correct"], "tasks": v["tasks"],
                                                      "seconds_per_task": v["seconds_per_task"],
                                                      "flips_vs_none": flips(base, v["outcomes"]),
                                                      "outcomes": v["outcomes"]} for k, v in configs.items()}})
    finally:
        close = getattr(model, "close", None)
        if callable(close):
            close()
        split.close()
    labels = list(rows[0]["configs"]) if rows else []
    report = {"benchmark": "experience-floor", "split": args.split, "data_kind": args.split, "model": args.model,
              "seed": args.seed, "votes": args.votes, "work": str(args.work), "floors": floors, "gated_floors": gated,
              "eligible_only": args.eligible_only,
              "started": time.strftime("%Y-%m-%d %H:%M"), "databases": rows,
              "total": {k: sum(r["configs"][k]["correct"] for r in rows) for k in labels},
              "tasks": sum(r["configs"]["none"]["tasks"] for r in rows) if rows else 0}
    out = args.out or RESULTS / f"experience-floor-{args.split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["total"]), f"of {report['tasks']}; written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
