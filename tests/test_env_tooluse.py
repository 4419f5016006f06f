"""The tool-use environment: JSON-schema tools, BFCL-style task files, AST-match scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentkit import Agent
from agentkit.environments.base import Environment, Episode, run_episode, succeeded
from agentkit.environments.tooluse import (
    SchemaTool,
    ToolUseEnvironment,
    ToolUseTaskError,
    call_matches,
    json_schema,
    match_calls,
    score_calls,
    value_equal,
)
from agentkit.evaluation import EvalConfig, evaluate, oracle_model
from agentkit.messages import Message, ToolCall
from agentkit.testing import ScriptedModel, call, calls

WEATHER = {"name": "weather.get", "description": "Weather for a city.",
           "parameters": {"type": "dict", "properties": {"city": {"type": "string"},
                                                          "days": {"type": "integer"},
                                                          "unit": {"type": "string"}},
                          "required": ["city"]}}


def test_value_equality_follows_bfcl() -> None:
    assert value_equal("New York", "new york")
    assert value_equal("San-Francisco, CA", "san francisco ca")
    assert value_equal(5, 5.0) and value_equal(5.0, 5)
    assert not value_equal("5", 5)
    assert not value_equal(True, 1) and value_equal(False, False)
    assert value_equal(["a", "b"], ["A", "b"]) and not value_equal(["a", "b"], ["b", "a"])
    assert value_equal({"k": "v", "n": 2}, {"k": ["V", "w"], "n": [2]})
    assert not value_equal({"k": "v", "x": 1}, {"k": ["v"]})  # unexpected key


def test_call_matching_names_required_and_optional_arguments() -> None:
    accepted = {"city": ["Paris"], "unit": ["celsius", ""]}
    assert call_matches("weather_get", {"city": "paris"}, "weather.get", accepted)
    assert call_matches("weather_get", {"city": "Paris", "unit": "Celsius"}, "weather.get", accepted)
    assert not call_matches("weather_get", {"unit": "celsius"}, "weather.get", accepted)  # required missing
    assert not call_matches("weather_get", {"city": "Paris", "unit": "kelvin"}, "weather.get", accepted)
    assert not call_matches("weather_get", {"city": "Paris", "extra": 1}, "weather.get", accepted)
    assert not call_matches("forecast", {"city": "Paris"}, "weather.get", accepted)


def test_parallel_calls_match_in_any_order_and_extra_calls_fail() -> None:
    expected = [{"get": {"city": ["Oslo"]}}, {"get": {"city": ["Rome"]}}]
    assert match_calls([("get", {"city": "Rome"}), ("get", {"city": "Oslo"})], expected) == 2
    assert score_calls([("get", {"city": "Rome"}), ("get", {"city": "Oslo"})], expected)["success"] == 1.0
    half = score_calls([("get", {"city": "Rome"})], expected)
    assert half == {"reward": 0.0, "success": 0.0, "matched": 0.5}
    extra = score_calls([("get", {"city": "Rome"}), ("get", {"city": "Oslo"}), ("get", {"city": "Oslo"})], expected)
    assert extra["success"] == 0.0 and extra["matched"] == 1.0
    # The same made call cannot satisfy two expected calls.
    assert match_calls([("get", {"city": "Oslo"})], [{"get": {"city": ["Oslo"]}}] * 2) == 1
    # Nothing expected (irrelevance): success only without calls.
    assert score_calls([], [])["success"] == 1.0 and score_calls([("get", {})], [])["success"] == 0.0


def test_schema_tools_validate_arguments_and_keep_the_schema() -> None:
    seen: list[tuple[str, dict]] = []
    t = SchemaTool(WEATHER, lambda name, args: seen.append((name, args)) or "ok")
    assert t.name == "weather_get"
    params = t.spec()["function"]["parameters"]
    assert params["type"] == "object" and params["properties"]["days"]["type"] == "integer"
    assert json_schema({"type": "float"}) == {"type": "number"} and json_schema({"type": "any"}) == {}
    agent = Agent(ScriptedModel([call("weather_get", days=2), call("weather_get", city="Oslo", days="two"),
                                 call("weather_get", city="Oslo", days=2), "done"]), [t])
    trajectory = agent.run("weather?").trajectory
    observations = [m for m in trajectory.messages if m.role == "tool"]
    assert observations[0].is_error and "city" in observations[0].content
    assert observations[1].is_error and "days" in observations[1].content
    assert not observations[2].is_error
    assert seen == [("weather_get", {"city": "Oslo", "days": 2})]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


def test_bfcl_files_with_separate_answers(tmp_path: Path) -> None:
    questions = _write(tmp_path / "simple.json", [
        {"id": "simple_0", "question": [[{"role": "user", "content": "Weather in Paris for 3 days?"}]],
         "function": [WEATHER]},
    ])
    answers = _write(tmp_path / "answers.json", [
        {"id": "simple_0", "ground_truth": [{"weather.get": {"city": ["Paris"], "days": [3], "unit": [""]}}]},
    ])
    env = ToolUseEnvironment.from_file(questions, answers=answers)
    assert isinstance(env, Environment)
    task = env.tasks()[0]
    assert task.prompt == "Weather in Paris for 3 days?"
    episode = env.reset(task)
    assert isinstance(episode, Episode)

    good = run_episode(lambda tools: Agent(ScriptedModel([call("weather_get", city="Paris", days=3), "done"]), tools),
                       env, task)
    assert succeeded(good) and good.reward == 1.0 and good.task_id == "simple_0"
    wrong = run_episode(lambda tools: Agent(ScriptedModel([call("weather_get", city="Paris", days=4), "done"]), tools),
                        env, task)
    assert not succeeded(wrong) and wrong.rewards["matched"] == 0.0
    silent = run_episode(lambda tools: Agent(ScriptedModel(["It is sunny."]), tools), env, task)
    assert silent.reward == 0.0


def test_exact_expected_calls_canned_responses_and_bad_files(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [
        {"id": "a", "question": "Weather in Oslo and Rome?", "function": [WEATHER],
         "expected": [{"name": "weather.get", "arguments": {"city": "Oslo"}},
                      {"name": "weather.get", "arguments": {"city": "Rome"}}],
         "responses": {"weather.get": "12 degrees"}},
    ])
    env = ToolUseEnvironment.from_file(path)
    task = env.tasks()[0]
    model = ScriptedModel([calls(("weather_get", {"city": "Rome"}), ("weather_get", {"city": "Oslo"})), "done"])
    t = run_episode(lambda tools: Agent(model, tools), env, task)
    assert succeeded(t)
    assert [m.content for m in t.messages if m.role == "tool"] == ["12 degrees", "12 degrees"]
    episode = env.reset(task)
    assert episode.step(ToolCall(name="weather_get", arguments={"city": "X"})).observation == "12 degrees"
    assert len(episode.calls) == 1

    with pytest.raises(ToolUseTaskError, match="ground_truth nor expected"):
        ToolUseEnvironment.from_file(_write(tmp_path / "b.json", [{"id": "x", "question": "q", "function": [WEATHER]}]))
    with pytest.raises(ToolUseTaskError, match="function"):
        ToolUseEnvironment.from_file(_write(tmp_path / "c.json", [{"id": "x", "question": "q", "expected": []}]))
    bad = tmp_path / "d.jsonl"
    bad.write_text('{"id": 1}\nnot json\n')
    with pytest.raises(ToolUseTaskError, match=r"d\.jsonl:2"):
        ToolUseEnvironment.from_file(bad)
    with pytest.raises(FileNotFoundError):
        ToolUseEnvironment.from_file(tmp_path / "missing.json")


@pytest.mark.parametrize("planner", ["react", "map-then-act"])
def test_oracle_policy_reaches_the_upper_bound_on_the_sample_set(planner: str, tmp_path: Path) -> None:
    env = ToolUseEnvironment.sample()
    tasks = env.tasks()
    assert len(tasks) >= 8
    model = oracle_model(tasks, env.oracle_script)
    run = evaluate(env, EvalConfig(planner, lambda tools: Agent(model, tools, planner=planner)), concurrency=2)
    assert [r.task_id for r in run.results] == [t.id for t in tasks]
    assert run.summary()["success_rate"] == 1.0, [(r.task_id, r.rewards, r.error) for r in run.results]


def test_a_wrong_policy_scores_zero_on_the_sample_set() -> None:
    env = ToolUseEnvironment.sample()

    def wrong(task) -> list[Message | str]:  # the right functions with every string argument altered
        script = env.oracle_script(task)
        first = script[0]
        if isinstance(first, Message):
            for c in first.tool_calls:
                c.arguments = {k: (v + "x" if isinstance(v, str) else v + 1 if isinstance(v, int | float)
                                   and not isinstance(v, bool) else v) for k, v in c.arguments.items()}
        return script

    run = evaluate(env, EvalConfig("wrong", lambda tools: Agent(oracle_model(env.tasks(), wrong), tools)))
    assert run.summary()["success_rate"] == 0.0
