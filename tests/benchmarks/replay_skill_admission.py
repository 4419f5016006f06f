"""Replay skill admission on finished learn runs under today's rules (`admission_refusal` with the run).

    python tests/benchmarks/replay_skill_admission.py bench-out/sqlgen/learn-split/dev-floor/seed0/*

For each run folder, every distillation its skills phase recorded (trajectories/train-skills.jsonl, the run's
`skills` record): whether the run admitted it then, and whether today's admission rules, given the run it
was distilled from, would. Prints one line per distillation that changed and a count per folder; `--out`
writes the rows as JSON. Only train and dev runs: a test run's trajectories are not to be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit.records import SKILLS
from agentkit.skills.cycle import SkillSettings
from agentkit.skills.distill import admission_refusal, parse_distilled
from agentkit.trajectory import read_jsonl


def replay(folder: Path, success_at: float = SkillSettings.success_at) -> dict[str, Any]:
    """The distillations of the learn run in `folder`: admitted then, admitted today, and today's reason
    (`success_at`: the reward a run needed to be admitted)."""
    rows = []
    runs = folder / "trajectories" / "train-skills.jsonl"
    for run in read_jsonl([runs]) if runs.exists() else []:
        record, turns = run.records.get(SKILLS), run.turns_in("distill")
        if record is None or not turns:
            continue
        parsed = parse_distilled(turns[-1].output.content)  # the reply the cycle admitted or refused
        reason = admission_refusal(parsed, run.reward, success_at, run)
        rows.append({"task_id": run.task_id, "name": parsed.skill.name if parsed.skill else None,
                     "admitted": bool(record.admitted), "admitted_today": reason is None, "reason_today": reason})
    return {"folder": str(folder), "distillations": len(rows),
            "admitted": sum(r["admitted"] for r in rows), "admitted_today": sum(r["admitted_today"] for r in rows),
            "rows": rows}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path, help="learn run folders (train or dev runs only)")
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    report = []
    for folder in args.folders:
        if not (folder / "state.json").exists():
            parser.error(f"{folder} is not a learn run folder (no state.json)")
        result = replay(folder)
        report.append(result)
        for row in result["rows"]:
            if row["admitted"] != row["admitted_today"]:
                print(f"{folder.name} {row['task_id']} {row['name']}: "
                      f"{'admitted' if row['admitted'] else 'refused'} then, "
                      f"{'admitted' if row['admitted_today'] else 'refused'} today"
                      + (f" ({row['reason_today']})" if row["reason_today"] else ""))
        print(f"{folder}: {result['distillations']} distillations, {result['admitted']} admitted then, "
              f"{result['admitted_today']} today")
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
