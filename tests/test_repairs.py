"""Repairs: failed calls paired with calls that worked, shown when a call fails the same way again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agentkit import Agent, tool
from agentkit.environments.base import run_episode
from agentkit.environments.sql import SQLEnvironment
from agentkit.memory.repairs import Repair, Repairs, error_kind, repairs_of
from agentkit.messages import ToolCall
from agentkit.testing import ScriptedModel, call
from agentkit.trajectory import Trajectory
from training.learning.methods import reference_calls

if TYPE_CHECKING:
    from conftest import ClinicCLI

BAD_RANKING = "SELECT Country FROM Customer ORDER BY COUNT(*) DESC LIMIT 1"  # no GROUP BY: SQLite refuses it


def test_the_kind_of_an_error_leaves_out_its_names_and_quoted_parts() -> None:
    assert error_kind("Tool run_query raised QueryError: SQL error: no such column: T2.Name") == \
        error_kind("Tool confirm_answer raised QueryError: SQL error: no such column: Total") == \
        "QueryError: SQL error: no such column: …"
    assert error_kind("Tool q raised QueryError: SQL error: misuse of aggregate: COUNT()") == \
        "QueryError: SQL error: misuse of aggregate: …"
    assert error_kind('Tool q raised QueryError: SQL error: near "FROM": syntax error') == \
        "QueryError: SQL error: near …: syntax error"
    assert error_kind("") == ""


def chinook_run(script: list, task_id: str, extensions: tuple = ()) -> tuple[Trajectory, SQLEnvironment]:
    env = SQLEnvironment.chinook()
    task = next(t for t in env.tasks() if t.id == task_id)
    model = ScriptedModel(script)
    trajectory = run_episode(lambda tools: Agent(model, tools, instructions=env.instructions,
                                                 extensions=extensions), env, task)
    return trajectory, env


def test_a_refused_query_on_the_real_database_is_paired_with_the_gold_query_of_its_task() -> None:
    # chinook-031: "Which country has the most customers?"; the same bad query three times (the third is
    # refused as a repeat, not counted as another failure), then a wrong answer.
    script = [call("run_query", sql=BAD_RANKING)] * 3 + [call("confirm_answer", sql="SELECT 'USA'")]
    trajectory, env = chinook_run(script, "chinook-031")
    try:
        repairs = Repairs.fit([trajectory], reference_calls(env, env.tasks()))
    finally:
        env.close()
    assert len(repairs) == 1
    (repair,) = repairs.items
    assert repair.kind == "QueryError: SQL error: misuse of aggregate: …" and repair.source == "reference"
    assert repair.task_id == "chinook-031" and repair.tool == "run_query" and repair.failed == {"sql": BAD_RANKING}
    assert repair.fixed_tool == "run_query" and "GROUP BY Country" in repair.fixed["sql"]


def test_without_a_reference_a_run_that_succeeded_gives_its_own_later_call() -> None:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        if key != "b":
            raise KeyError(key)
        return "2"

    runs = []
    for solved in (True, False):
        model = ScriptedModel([call("lookup", key="a"), call("lookup", key="b"), "2"])
        runs.append(Agent(model, [lookup]).run("what is b?", reward_fn=lambda t, s=solved: float(s)).trajectory)
    (repair,) = Repairs.fit(runs).items  # the failed run pairs nothing: its later call is not known to be right
    assert (repair.failed, repair.fixed, repair.source) == ({"key": "a"}, {"key": "b"}, "run")
    assert repairs_of(runs[1]) == []


def repair(kind_error: str, task: str, failed: str, fixed: str, task_id: str = "t1") -> Repair:
    return Repair(error_kind(kind_error), task, task_id, "run_query", {"sql": failed}, kind_error, "confirm_answer",
                  {"sql": fixed}, "reference")


AGG = "Tool run_query raised QueryError: SQL error: misuse of aggregate: COUNT()"
COL = "Tool run_query raised QueryError: SQL error: no such column: Total"


def test_a_failed_call_gets_the_nearest_repair_of_its_kind_and_a_call_that_works_gets_nothing() -> None:
    repairs = Repairs([
        repair(COL, "Question: Which customer spent the most?", "SELECT Total FROM Customer", "SELECT 1"),
        repair(AGG, "Question: Which album has the most tracks?", "SELECT Title FROM Album ORDER BY COUNT(*)",
               "SELECT Title FROM Album JOIN Track USING (AlbumId) GROUP BY AlbumId ORDER BY COUNT(*) DESC LIMIT 1"),
        repair(AGG, "Question: How many rows?", "SELECT COUNT(*) WHERE COUNT(*) > 1", "SELECT COUNT(*) FROM t"),
    ])
    script = [call("run_query", sql=BAD_RANKING), call("run_query", sql="SELECT COUNT(*) FROM Customer"),
              call("confirm_answer", sql="SELECT 'USA'")]
    trajectory, env = chinook_run(script, "chinook-031", extensions=(repairs,))
    env.close()
    failed, worked = [m for m in trajectory.messages if m.role == "tool"][:2]
    assert failed.is_error and failed.content.startswith("Tool run_query raised QueryError")
    # the repair of the same kind whose task and query read most alike: the album one, not the row count
    assert "Task: Question: Which album has the most tracks?" in failed.content
    assert "Worked: confirm_answer: SELECT Title FROM Album JOIN Track" in failed.content
    assert "no such column" not in failed.content and "How many rows" not in failed.content
    assert not worked.is_error and "earlier task" not in worked.content
    assert trajectory.extras["repairs"] == {"shown": [{"kind": error_kind(AGG), "task_id": "t1"}]}


def test_a_repair_learned_on_the_same_task_is_never_shown_to_it() -> None:
    task = "Question: Which country has the most customers?"
    repairs = Repairs([repair(AGG, task, BAD_RANKING, "SELECT gold")])
    assert repairs.nearest(task, ToolCall(name="run_query", arguments={"sql": BAD_RANKING}), AGG) is None
    assert repairs.nearest("Question: other", ToolCall(name="run_query", arguments={"sql": "x"}), AGG) is not None
    assert repairs.nearest("Question: other", ToolCall(name="run_query", arguments={"sql": "x"}), COL) is None


def test_repairs_survive_a_save_and_a_malformed_repair_is_a_clear_error(tmp_path: Path) -> None:
    path = Repairs([repair(AGG, "q", "a", "b")]).save(tmp_path / "repairs.json")
    assert Repairs.load(path).items == [repair(AGG, "q", "a", "b")]
    assert json.loads(path.read_text())["kind"] == "agentkit.repairs"
    (tmp_path / "odd.json").write_text('{"kind": "agentkit.repairs", "repairs": [{"kind": "x"}]}')
    with pytest.raises(ValueError, match="malformed repair"):
        Repairs.load(tmp_path / "odd.json")


def test_references_come_only_from_the_tasks_given() -> None:
    env = SQLEnvironment.clinic()
    try:
        train, held = env.tasks()[:3], env.tasks()[3]
        lookup = reference_calls(env, train)
        assert lookup is not None
        assert [c.arguments["sql"] for c in lookup(train[0].id) if c.name == "confirm_answer"] == \
            [train[0].data["gold_sql"]]
        assert lookup(held.id) == []
    finally:
        env.close()


def test_the_cli_learns_repairs_and_eval_takes_the_file(clinic_cli: ClinicCLI) -> None:
    # a model whose queries the database refuses, then a wrong answer
    bad = {"tool": "run_query", "arguments": {"sql": "SELECT Nope FROM Patient"}}
    result = clinic_cli.learn("repairs", [bad, {"tool": "confirm_answer", "arguments": {"sql": "SELECT 0"}}] * 12,
                              tasks=4, budget="5ep")
    tasks, out = clinic_cli.tasks, clinic_cli.out
    assert result.exit_code == 0, result.output
    learned = Repairs.load(out / "repairs.json")
    summary = json.loads((out / "summary.json").read_text())
    train = set(summary["train_tasks"])
    assert learned.items and {r.task_id for r in learned.items} <= train
    assert {r.kind for r in learned.items} == {"QueryError: SQL error: no such column: …"}
    gold = {json.loads(line)["id"]: json.loads(line)["sql"] for line in tasks.read_text().splitlines()}
    assert all(r.fixed["sql"] == gold[r.task_id] for r in learned.items)
    assert f"--repairs {out / 'repairs.json'}" in result.output.replace("\n", "")
    runs = clinic_cli.evaluate("--repairs", str(out / "repairs.json"))
    shown = [r for r in runs if r["extras"].get("repairs")]
    assert shown and all("An earlier task hit the same error" in m["content"] for r in shown
                         for m in r["messages"] if m["role"] == "tool" and m.get("is_error"))
