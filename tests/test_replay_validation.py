"""tests/benchmarks/replay_validation.py on a learn run folder written as `learn` writes it: the recorded verdicts
beside today's rule's, and the validation tasks a method acted on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentkit.records import EXPERIENCE, ExperienceRecord, ShownExample
from agentkit.trajectory import Trajectory, append_jsonl

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
from replay_validation import main, replay


def score(label: str, solved: dict[str, bool]) -> dict[str, object]:
    wins = sum(solved.values())
    return {"label": label, "environment": "sql", "tasks": len(solved), "successes": wins,
            "success_rate": wins / len(solved), "ci_low": 0.0, "ci_high": 1.0, "per_task": solved}


def test_a_run_that_set_experience_aside_on_a_tie_is_kept_under_todays_rule(tmp_path: Path) -> None:
    run = tmp_path / "seed0" / "shop"
    (run / "trajectories").mkdir(parents=True)
    before = {"a": False, "b": True, "c": True, "d": False}
    with_experience = {"a": True, "b": False, "c": True, "d": False}  # won "a" where shown, lost "b" where not
    with_notes = {"a": False, "b": True, "c": False, "d": False}
    state = {"config": {"methods": ["experience", "notes"]},
             "scores": {"validation-before": score("validation-before", before),
                        "validation-experience": score("validation-experience", with_experience),
                        "validation-notes": score("validation-notes", with_notes)},
             "set_aside": {"experience": "experience set aside: 2 of 4 with it, 2 without",
                           "notes": "notes set aside: 1 of 4 with it, 2 without"}}
    (run / "state.json").write_text(json.dumps(state))
    for task_id in "abcd":
        trajectory = Trajectory(task_id=task_id)
        shown = [ShownExample(id="ex-1", question="Count the shops.", question_similarity=0.9)] \
            if task_id in "ad" else []
        trajectory.records.set(EXPERIENCE, ExperienceRecord(database="db", shown=shown))
        append_jsonl(run / "trajectories" / "validation-experience.jsonl", trajectory)
        append_jsonl(run / "trajectories" / "validation-notes.jsonl", Trajectory(task_id=task_id))

    experience, notes = replay(run)
    assert experience["recorded"] is not None and experience["today"] is None
    assert (experience["acted"], experience["won"], experience["lost"]) == (["a", "d"], ["a"], [])
    # notes change every run: judged in all, against the agent without experience (which the run set aside)
    assert notes["without"] == 2 and notes["with"] == 1 and notes["today"] is not None and "acted" not in notes
    out = tmp_path / "replay.json"
    assert main([str(run), str(tmp_path / "missing"), "--kind", "dev", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["data_kind"] == "dev" and list(written["runs"]) == [str(run)]
