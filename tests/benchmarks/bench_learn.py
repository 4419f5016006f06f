"""The learning loop's table: held-out success before and after each method, on the unseen database, and the cost.

    python tests/benchmarks/bench_learn.py --model local:default --budget 45m --out bench-out/learn
    python tests/benchmarks/bench_learn.py --model local:smollm2-135m --budget 3m --rows skills --limit 20

One `agentkit.training.learning.learn` run per row, on the shipped Chinook tasks (a seeded 30% held out)
with the shipped clinic database as the unseen one; rows: skills only, notes only, pacing only, rl only
(Dual-Track GRPO, and plain GRPO as rl-grpo), skills then pacing, memory (skills, notes, pacing) and all
four. Each row starts from the untouched model (rl changes a local model in place, so the model is loaded
afresh per row). Prints the Markdown table and writes OUT/table.md and each run's folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROWS = {"skills": ("skills",), "notes": ("notes",), "checks": ("checks",), "repairs": ("repairs",),
        "pacing": ("pacing",), "rl": ("rl",), "rl-grpo": ("rl",), "rl-sft": ("rl",),
        "skills-pacing": ("skills", "pacing"), "memory": ("skills", "notes", "pacing"),
        "default": ("skills", "notes", "checks", "pacing"), "checks-pacing": ("checks", "pacing"),
        "all": ("skills", "notes", "pacing", "rl")}
"""rl: Dual-Track GRPO (the default on SQL); rl-grpo: plain GRPO with the same settings; rl-sft: online
rejection-sampling fine-tuning (the same rollouts; only the solved ones are imitated, at lr 1e-4); memory: skills,
notes and pacing (no weight change: the row for models the rl method cannot train, such as a llama.cpp engine);
default: learn's default on a llama.cpp model (memory with the SQL shape checks before pacing); checks, repairs:
each alone."""


def seed_before(source: Path, out: Path, methods: tuple[str, ...], budget: list[float | int | None],
                env: Any, validation: float) -> None:
    """Start `out` as a resumable run holding `source`'s before-evaluations (scores, costs, trajectories);
    `learn` then checks on resume that the split, model and seed are the same and runs the rest. The
    source's train split is divided into learning and validation tasks as `learn` would divide it."""
    import shutil

    from agentkit.training.learning.loop import new_state
    from agentkit.training.learning.splits import validation_split

    state = json.loads((source / "state.json").read_text())
    config = state["config"]
    train = [t for t in env.tasks() if t.id in set(config["train"]) | set(config.get("validation", []))]
    learning, check = validation_split(train, validation, config["seed"])
    fresh = new_state({**config, "methods": list(methods), "budget": budget, "train": [t.id for t in learning],
                       "validation": [t.id for t in check]})
    for label in ("before", "unseen-before"):
        if label in state["scores"]:
            fresh["scores"][label] = state["scores"][label]
            fresh["costs"][f"eval-{label}"] = state["costs"][f"eval-{label}"]
    (out / "trajectories").mkdir(parents=True)
    for name in ("heldout-before.jsonl", "unseen-before.jsonl"):
        if (source / "trajectories" / name).exists():
            shutil.copy(source / "trajectories" / name, out / "trajectories" / name)
    (out / "state.json").write_text(json.dumps(fresh, indent=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="e.g. local:default, local:smollm2-135m, openai:gpt-4o-mini")
    parser.add_argument("--budget", default="45m", help="learning budget per row (e.g. 15m, 45m, 200ep)")
    parser.add_argument("--rows", default="skills,notes,pacing,rl,rl-grpo,all", help=f"which rows: {', '.join(ROWS)}")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds (≥ 3 for the combined row if time allows)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N Chinook tasks (before the split)")
    parser.add_argument("--difficulty", default=None, help="only Chinook tasks of this difficulty (e.g. easy)")
    parser.add_argument("--unseen-limit", type=int, default=None, help="only the first N clinic tasks")
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--notes-threshold", type=float, default=0.4)
    parser.add_argument("--notes-analyst", choices=("environment", "model"), default="environment",
                        help="who writes the notes (environment: sql compares each failed query with the gold one)")
    parser.add_argument("--validation", type=float, default=0.25,
                        help="share of the train split kept to check each method on (0: no check)")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="evaluation tasks at once (a local model gets as many llama.cpp slots)")
    parser.add_argument("--out", type=Path, default=Path("bench-out/learn"))
    parser.add_argument("--before-from", type=Path, default=None,
                        help="a finished run folder of the same model, seed and split: its before-evaluations "
                             "(held-out and unseen) are copied instead of run again (greedy, so the same outcome)")
    args = parser.parse_args(argv)

    from agentkit.environments.sql import CHINOOK_TASKS, CLINIC_DB, CLINIC_TASKS, SQLEnvironment
    from agentkit.models import resolve_model
    from agentkit.training.config import TrainConfig
    from agentkit.training.learning import TABLE_HEADER, Budget, learn
    from agentkit.training.learning.methods import default_rl_config

    def records(path: Path, limit: int | None, difficulty: str | None = None) -> list[dict]:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        rows = [r for r in rows if difficulty is None or r.get("difficulty") == difficulty]
        return rows[:limit] if limit else rows

    from agentkit.environments.sql import CHINOOK_DB

    env = SQLEnvironment(db=CHINOOK_DB, tasks=records(CHINOOK_TASKS, args.limit, args.difficulty), name="sql-chinook")
    unseen = SQLEnvironment(db=CLINIC_DB, tasks=records(CLINIC_TASKS, args.unseen_limit), name="sql-clinic")
    lines = [f"model {args.model}, budget {args.budget} per row, {len(env.tasks())} Chinook tasks "
             f"(30% held out), {len(unseen.tasks())} clinic tasks unseen; {time.strftime('%Y-%m-%d %H:%M UTC')}",
             "", TABLE_HEADER]
    print("\n".join(lines), flush=True)
    for row in args.rows.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            out = args.out / f"{row}-seed{seed}"
            model = resolve_model(args.model, parallel=args.concurrency)  # fresh per row: rl trains it in place
            if args.before_from is not None and not (out / "state.json").exists():
                budget = Budget.parse(args.budget)
                seed_before(args.before_from, out, ROWS[row], [budget.minutes, budget.episodes], env,
                            args.validation)
            rl_config = None
            if row in ("rl-grpo", "rl-sft"):
                settings = default_rl_config(env, seed, args.max_steps, args.max_tokens).model_dump(
                    exclude_unset=True)
                settings.update({"algo": "grpo"} if row == "rl-grpo" else {"algo": "sft", "lr": 1e-4})
                rl_config = TrainConfig.model_validate(settings)
            report = learn(env, model, budget=args.budget, methods=ROWS[row], out=out, seed=seed, unseen=unseen,
                           resume=(out / "state.json").exists(), max_steps=args.max_steps,
                           max_tokens=args.max_tokens, notes_threshold=args.notes_threshold, rl_config=rl_config,
                           notes_analyst=args.notes_analyst, validation=args.validation,
                           concurrency=args.concurrency)
            line = report.table_row().replace(f"| {'+'.join(ROWS[row])} |", f"| {row} (seed {seed}) |", 1)
            lines.append(line)
            print(line, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
