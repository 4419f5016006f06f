"""`agentkit learn` from the command line: the out folder a user gets, --resume, and clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from agentkit.cli.main import app
from agentkit.environments.sql import CLINIC_DB, CLINIC_TASKS

runner = CliRunner()


def wrong_on_four_clinic_questions(tmp_path: Path, replies: int) -> list[str]:
    """`agentkit learn` arguments for the first four clinic questions and a scripted model that always confirms a
    wrong query (`replies` times)."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(CLINIC_TASKS.read_text().splitlines()[:4]) + "\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool": "confirm_answer", "arguments": {"sql": "SELECT 0"}}] * replies))
    return ["learn", "--env", "sql", "--tasks", str(tasks), "--db", str(CLINIC_DB), "--model", f"script:{script}"]


def test_learn_command_writes_the_run_folder_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = [*wrong_on_four_clinic_questions(tmp_path, 12),
            "--method", "skills", "--budget", "2ep", "--out", str(out), "--seed", "4", "--max-steps", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "| skills | 0.0%" in result.output and "learn-skills" in result.output
    for name in ("summary.json", "report.html", "learning_curve.png", "state.json", "skills/library.json",
                 "trajectories/heldout-before.jsonl", "trajectories/train-skills.jsonl"):
        assert (out / name).exists(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seed"] == 4 and len(summary["heldout_tasks"]) == 1 and len(summary["train_tasks"]) == 3
    assert summary["learning_cost"]["episodes"] == 2
    again = runner.invoke(app, args)  # the folder already holds a run
    assert again.exit_code == 1 and "--resume" in again.output
    resumed = runner.invoke(app, [*args, "--resume"])  # a finished run: nothing left to do but the report
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((out / "summary.json").read_text())["learning_cost"] == summary["learning_cost"]


def test_learn_command_refuses_bad_options(tmp_path: Path) -> None:
    result = runner.invoke(app, ["learn", "--budget", "soon", "--out", str(tmp_path / "x")])
    assert result.exit_code != 0 and "cannot read budget" in result.output
    result = runner.invoke(app, ["learn", "--method", "skills", "--hints", "--out", str(tmp_path / "h")])
    assert result.exit_code == 1 and "hinted retries are made by the experience method" in result.output
    assert not (tmp_path / "h").exists()
    result = runner.invoke(app, ["learn", "--env", "tooluse", "--unseen-db", "clinic", "--out", str(tmp_path / "y")])
    assert result.exit_code != 0 and "--unseen-db needs --env sql" in result.output
    result = runner.invoke(app, ["learn", "--notes-analyst", "teacher", "--out", str(tmp_path / "z")])
    words = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())  # typer's box, read as one line
    assert result.exit_code != 0 and "'environment' or 'model'" in words


def test_learn_by_default_leaves_out_rl_for_a_model_it_cannot_train_and_says_so(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(CLINIC_TASKS.read_text().splitlines()[:4]) + "\n")
    script = tmp_path / "script.json"  # a model that always confirms a wrong query (and cannot be trained)
    script.write_text(json.dumps([{"tool": "confirm_answer", "arguments": {"sql": "SELECT 0"}}] * 80))
    out = tmp_path / "run"
    base = ["learn", "--env", "sql", "--tasks", str(tasks), "--db", str(CLINIC_DB), "--model", f"script:{script}",
            "--budget", "3ep", "--seed", "4", "--max-steps", "2"]
    result = runner.invoke(app, [*base, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "rl left out" in result.output
    assert json.loads((out / "summary.json").read_text())["methods"] == ["skills", "notes", "checks", "pacing",
                                                                         "experience"]
    # Asked for by name, rl on such a model is refused before anything runs (no evaluation spent first).
    refused = runner.invoke(app, [*base, "--method", "skills,rl", "--out", str(tmp_path / "rl")])
    assert refused.exit_code == 1 and "needs a local model" in refused.output
    assert not (tmp_path / "rl" / "trajectories").exists()


def test_learn_command_holds_back_validation_tasks_unless_told_not_to(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(CLINIC_TASKS.read_text().splitlines()[:20]) + "\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool": "confirm_answer", "arguments": {"sql": "SELECT 0"}}] * 200))
    base = ["learn", "--env", "sql", "--tasks", str(tasks), "--db", str(CLINIC_DB), "--model", f"script:{script}",
            "--method", "skills", "--budget", "2ep", "--max-steps", "1"]
    checked = runner.invoke(app, [*base, "--out", str(tmp_path / "a")])
    assert checked.exit_code == 0, checked.output
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert len(summary["heldout_tasks"]) == 6 and len(summary["validation_tasks"]) == 4
    assert [s["label"] for s in summary["validation"]] == ["validation-before", "validation-skills"]
    assert (tmp_path / "a" / "trajectories" / "validation-before.jsonl").exists()
    unchecked = runner.invoke(app, [*base, "--validation", "0", "--out", str(tmp_path / "b")])
    assert unchecked.exit_code == 0, unchecked.output
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["validation_tasks"] == [] and len(summary["train_tasks"]) == 14


def test_learn_hints_retries_each_failed_train_question_with_its_gold_querys_shape(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, [*wrong_on_four_clinic_questions(tmp_path, 40), "--method", "experience", "--hints",
                                 "--budget", "4ep", "--validation", "0", "--out", str(out), "--max-steps", "2"])
    assert result.exit_code == 0, result.output
    runs = [json.loads(line) for line in (out / "trajectories" / "train-experience.jsonl").read_text().splitlines()]
    retried = [r for r in runs if r["metadata"].get("hinted")]
    assert len(runs) == 4 and len(retried) == 2  # two steps: a failed run, then its hinted retry
    assert [r["task_id"] for r in retried] == [r["task_id"] for r in runs if not r["metadata"].get("hinted")]
    from agentkit.training.sql_drafts import HINT_LEAD

    assert all(HINT_LEAD in r["messages"][0]["content"] for r in retried)
    assert not any(HINT_LEAD in r["messages"][0]["content"] for r in runs if not r["metadata"].get("hinted"))
    assert json.loads((out / "state.json").read_text())["config"]["hinted_retries"] is True
