"""Replay `learn`'s validation verdicts on finished learn runs under today's rule (`validation_verdict`).

    python tests/benchmarks/replay_validation.py bench-out/sqlgen/learn-split/dev-floor/seed0/* \\
        --kind dev --out tests/benchmarks/results/validation-replay-dev-floor.json

For each run folder (its state.json, and the trajectories of its validation evaluations) and each method that
reached validation: the verdict the run recorded, and the verdict today's `validation_verdict` gives on the same
scores and trajectories; for a method judged on the runs it acted on, those validation tasks (`Learner.acted`)
and what it won and lost there. Each method is judged against the agent the run actually validated it beside
(the methods it kept). A rule change is read here before any run is made with it. Only train and dev runs: a
test run's trajectories are not to be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit.training.learning.loop import validation_tally, validation_verdict
from agentkit.training.learning.methods import learner_class
from agentkit.training.learning.report import Score


def replay(folder: Path) -> list[dict[str, Any]]:
    """Each validated method of the learn run in `folder`: recorded and replayed verdicts, acted, won, lost."""
    state = json.loads((folder / "state.json").read_text())
    scores, methods = state["scores"], state["config"]["methods"]
    rows, base = [], "validation-before"
    for method in methods:
        label = f"validation-{method}"
        if label not in scores or base not in scores:
            continue
        trial, without = Score.model_validate(scores[label]), Score.model_validate(scores[base])
        runs = folder / "trajectories" / f"{label}.jsonl"
        today = validation_verdict(method, trial, without, runs)
        row = {"method": method, "with": trial.successes, "without": without.successes, "tasks": trial.tasks,
               "recorded": state["set_aside"].get(method), "today": today}
        if learner_class(method).record is not None:  # judged on the tasks it acted on; the others in all
            acted, won, lost = validation_tally(method, trial, without, runs)
            row |= {"acted": acted, "won": won, "lost": lost}
        rows.append(row)
        if state["set_aside"].get(method) is None:  # the next trial ran with this method: its base
            base = label
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="learn run folders (each with state.json)")
    parser.add_argument("--kind", choices=("train", "dev"), required=True, help="the data kind of the runs")
    parser.add_argument("--out", type=Path, default=None, help="write the replay here as JSON")
    args = parser.parse_args(argv)
    report = {"benchmark": "validation-replay", "data_kind": args.kind,
              "runs": {str(f): replay(f) for f in args.folders if (f / "state.json").exists()}}
    for folder, rows in report["runs"].items():
        for r in rows:
            recorded, today = ("kept" if v is None else "set aside" for v in (r["recorded"], r["today"]))
            acted = f"acted on {len(r['acted'])} (won {len(r['won'])}, lost {len(r['lost'])}); " if "acted" in r else ""
            print(f"{folder} {r['method']}: {r['with']}/{r['tasks']} with, {r['without']} without; {acted}"
                  f"recorded {recorded}, today {today}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
