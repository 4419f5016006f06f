"""Text games through TextWorldExpress (optional: skipped without the package or a Java runtime)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("textworld_express")
if shutil.which("java") is None:
    pytest.skip("TextWorldExpress needs a Java runtime (default-jre-headless)", allow_module_level=True)

from agentkit import Agent
from agentkit.environments.base import run_episode, succeeded
from agentkit.environments.textgame import ALREADY_OVER, TextGameEnvironment
from agentkit.evaluation import EvalConfig, evaluate, oracle_model
from agentkit.loop.planning import MapThenActPlanner
from agentkit.messages import ToolCall
from agentkit.testing import ScriptedModel, call


def test_coin_game_steps_scores_and_read_only_tools() -> None:
    env = TextGameEnvironment("coin", seeds=[0], step_limit=10)
    task = env.tasks()[0]
    episode = env.reset(task)
    try:
        assert "coin" in episode.observation.lower()
        tools = {t.name: t for t in episode.tools}
        assert {n for n, t in tools.items() if t.read_only} == {"look", "inventory", "valid_actions"}
        assert not tools["act"].read_only
        looked = episode.step(ToolCall(name="look"))
        assert "kitchen" in looked.observation and episode.moves == 0  # observing is not a move
        assert "take coin" in episode.step(ToolCall(name="valid_actions")).observation
        result = episode.step(ToolCall(name="act", arguments={"command": "take coin"}))
        assert result.done and result.reward == 1.0 and "you won" in result.observation
        assert episode.step(ToolCall(name="act", arguments={"command": "look around"})).observation == ALREADY_OVER
        assert episode.score(None) == {"reward": 1.0, "success": 1.0, "progress": 1.0}  # type: ignore[arg-type]
    finally:
        episode.close()


def test_map_then_act_explores_read_only_then_plays(tmp_path: Path) -> None:
    env = TextGameEnvironment("coin", seeds=[1], step_limit=10)
    task = env.tasks()[0]
    model = ScriptedModel([
        call("valid_actions"),
        call("act", command="take coin"),  # refused during exploration: the game must not advance
        "- valid_actions lists what can be done\n- act(command) changes the world",
        '{"entities": ["coin"], "subgoals": [{"goal": "take the coin", "tool": "act"}]}',
        call("act", command="take coin"),
        "I took the coin.",
    ])
    planner = MapThenActPlanner(env, cache=tmp_path, explore_steps=3)
    t = run_episode(lambda tools: Agent(model, tools, planner=planner), env, task)
    assert [turn.phase for turn in t.turns] == ["explore"] * 3 + ["map", "act", "act"]
    probes = t.extras["explore"]["calls"]
    assert probes[0]["tool"] == "valid_actions" and "take coin" in probes[0]["observation"]
    assert probes[1]["refused"] and "Refused" in probes[1]["observation"]
    assert t.extras["explore"]["identity"] == env.identity()
    assert succeeded(t) and t.rewards["progress"] == 1.0


def test_oracle_wins_cookingworld() -> None:
    env = TextGameEnvironment("cookingworld", seeds=[0], step_limit=40)
    run = evaluate(env, EvalConfig("oracle", lambda tools: Agent(oracle_model(env.tasks(), env.oracle_script),
                                                                  tools, max_steps=40)))
    assert run.summary()["success_rate"] == 1.0, run.results
    assert run.results[0].steps >= 5


def test_unknown_game_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown game"):
        TextGameEnvironment("zork")
