"""Pacing: per-phase limits learned from successful runs, and the loop declining a reply past a limit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agentkit import Agent, tool
from agentkit.environments.base import run_episode, succeeded
from agentkit.environments.sql import SQLEnvironment
from agentkit.memory.pacing import Pacing, phase_counts
from agentkit.testing import ScriptedModel, call, calls
from agentkit.trajectory import Trajectory

if TYPE_CHECKING:
    from conftest import ClinicCLI

TABLES = {"a": "a(x, y)", "b": "b(z)"}
looked: list[str] = []


@tool(phase="explore")
def look(table: str) -> str:
    """Describe a table."""
    looked.append(table)
    return TABLES.get(table, "no such table")


@tool(final=True, phase="finish")
def answer(text: str) -> str:
    """Give the final answer."""
    return text


def scored_run(n_looks: int, solved: bool, *, extensions: tuple[Pacing, ...] = ()) -> Trajectory:
    """A run that looks `n_looks` times and answers, scored by whether it `solved` the task."""
    script = [call("look", table=f"t{i}") for i in range(n_looks)] + [call("answer", text="42")]
    agent = Agent(ScriptedModel(script), tools=[look, answer], extensions=extensions)
    result = agent.run("q", reward_fn=lambda t: 1.0 if solved else 0.0)
    return result.trajectory


def test_fit_keeps_the_most_calls_of_a_successful_run_when_a_failure_went_past_it() -> None:
    runs = [scored_run(1, True), scored_run(2, True), scored_run(2, True), scored_run(5, False), scored_run(1, False)]
    assert phase_counts(runs[3], exempt=("act", "finish")) == {"explore": 5}
    pacing = Pacing.fit(runs, exempt=("act", "finish"))
    assert pacing.limits == {"explore": 2}
    assert pacing.evidence["explore"] == {"most_in_a_success": 2, "failures_past_it": 1,
                                          "successes_by_count": {1: 1, 2: 2}}
    # Too few successes, or no failure past the most a success made: no limit.
    assert Pacing.fit(runs[1:4], exempt=("act", "finish")).limits == {}
    assert Pacing.fit([*runs[:3], scored_run(2, False)], exempt=("act", "finish")).limits == {}
    # The finishing phase is exempt only when named; it is never declined anyway (see below).
    assert "finish" not in Pacing.fit(runs, exempt=("act", "finish")).limits


def test_a_reply_past_its_phase_limit_is_not_run_and_the_next_reply_must_finish() -> None:
    looked.clear()
    pacing = Pacing({"explore": 2})
    model = ScriptedModel([call("look", table="a"), call("look", table="b"), call("look", table="c"),
                           call("answer", text="a has x")])
    result = Agent(model, tools=[look, answer], extensions=[pacing]).run("what is in a?")
    assert looked == ["a", "b"]  # the third look did not run
    observations = [m for m in result.trajectory.messages if m.role == "tool"]
    declined = observations[2]
    assert declined.is_error and declined.content.startswith("Not run:")
    assert "at most 2 explore calls" in declined.content and "has made 2" in declined.content
    assert [s.tool_choice if s else None for s in model.settings] == [None, None, None, "answer"]
    assert result.stop_reason == "final" and result.answer == "a has x"
    assert result.trajectory.extras["pacing"] == {"limits": {"explore": 2}, "declined": [2]}


def test_a_reply_that_finishes_is_never_declined_and_unlimited_phases_run_freely() -> None:
    pacing = Pacing({"explore": 1, "other": 1})
    # The second reply is past the explore limit (its first call is a look) but it also finishes the run.
    model = ScriptedModel([call("look", table="a"),
                           calls(("look", {"table": "b"}), ("answer", {"text": "done"}))])
    result = Agent(model, tools=[look, answer], extensions=[pacing]).run("q")
    assert result.answer == "done" and "pacing" not in result.trajectory.extras


def test_limits_survive_a_save_and_bad_limits_are_refused(tmp_path: Path) -> None:
    runs = [scored_run(1, True), scored_run(2, True), scored_run(2, True), scored_run(4, False)]
    path = Pacing.fit(runs, exempt=("act", "finish")).save(tmp_path / "pacing.json")
    loaded = Pacing.load(path)
    assert loaded.limits == {"explore": 2} and loaded.evidence["successes"] == 3
    (tmp_path / "bad.json").write_text('{"limits": {"explore": 2}}')  # no kind: not one of ours
    with pytest.raises(ValueError, match="not a pacing file"):
        Pacing.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="at least 1"):
        Pacing({"explore": 0})
    assert json.loads(path.read_text())["kind"] == "agentkit.pacing"


def test_pacing_ends_a_describe_loop_on_the_real_chinook_database_with_a_confirmed_query() -> None:
    env = SQLEnvironment.chinook()
    try:
        task = next(t for t in env.tasks() if t.id == "chinook-004")  # How many playlists are there?
        script = [call("describe_table", table=t) for t in ("Playlist", "Track", "Album")]
        script.append(call("confirm_answer", sql="SELECT COUNT(*) FROM Playlist"))
        model = ScriptedModel(script)

        def build(tools: list) -> Agent:
            return Agent(model, tools, instructions=env.instructions, extensions=[Pacing({"explore_schema": 2})])

        trajectory = run_episode(build, env, task)
    finally:
        env.close()
    assert succeeded(trajectory) and trajectory.stop_reason == "final"
    assert [t.phase for t in trajectory.turns] == ["explore_schema"] * 3 + ["confirm_answer"]
    assert trajectory.extras["pacing"]["declined"] == [2]
    assert model.settings[3].tool_choice == "confirm_answer"  # the declined reply made the next one finish
    assert len(model.requests) == 4


def test_the_cli_learns_pacing_and_chat_and_eval_take_the_file(tmp_path: Path, clinic_cli: ClinicCLI) -> None:
    from agentkit.cli.chat_cmd import memory_and_skills
    from agentkit.cli.main import app

    # a model that always confirms a wrong query: nothing to learn from
    result = clinic_cli.learn("pacing", [{"tool": "confirm_answer", "arguments": {"sql": "SELECT 0"}}] * 12, tasks=4,
                              budget="5ep")
    runner, out = clinic_cli.runner, clinic_cli.out
    assert result.exit_code == 0, result.output
    learned = Pacing.load(out / "pacing.json")
    assert learned.limits == {} and learned.evidence == {"successes": 0, "failures": 3}
    assert f"--pacing {out / 'pacing.json'}" in result.output.replace("\n", "")
    extensions, *_ = memory_and_skills(skills=None, notes=None, session=None, model="x", pacing=out / "pacing.json")
    assert [type(e) for e in extensions] == [Pacing]
    evaluated = runner.invoke(app, ["eval", "--env", "sql", "--model", "oracle", "--limit", "1", "--pacing",
                                    str(out / "pacing.json"), "--out", str(tmp_path / "eval")])
    assert evaluated.exit_code == 0, evaluated.output
    (tmp_path / "bad.json").write_text("{}")
    refused = runner.invoke(app, ["eval", "--env", "sql", "--model", "oracle", "--limit", "1", "--pacing",
                                  str(tmp_path / "bad.json")])
    # typer draws the error in a box wrapped to the terminal's width: read it as one line of words
    words = " ".join(re.sub(r"[│╭╮╰╯─]", " ", refused.output).split())
    assert refused.exit_code == 2 and "not a pacing file" in words, refused.output
