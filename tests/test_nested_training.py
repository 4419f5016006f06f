"""Nested trajectories that train: a two-agent SQL setup (an answering agent calling a schema explorer as a tool)
on the real Chinook SQLite file, logged as nested trajectories with token ids, credited by `credit_nested`, and
one real training step on a tiny random-weight Llama reading the log.

The models' choices are scripted; their token ids are the tiny model's own rendering of each scripted reply
(`Demonstrator`), so the log holds what the trainer reads from any real run."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from agentkit import Agent, Message, Trajectory, read_jsonl
from agentkit.environments import base as environments
from agentkit.models.tiny import tiny_llama, tiny_local_model
from agentkit.sql.toolkit import EXPLORE, SchemaToolkit
from agentkit.testing import call
from agentkit.training.config import LoraConfig, TrainConfig
from agentkit.training.credit import assign_credit, nested_batch
from agentkit.training.demonstrations import Demonstrator
from agentkit.training.sequences import build_sequences
from agentkit.training.trainer import Trainer

torch.set_num_threads(1)

CHINOOK = Path(environments.__file__).parent / "data" / "chinook.sqlite"
QUESTION = "How many albums are in the store?"


def albums_counted(trajectory: Trajectory) -> float:
    """1 when the confirmed query's result is Chinook's album count (347)."""
    return 1.0 if "347" in (trajectory.answer or "") else 0.0


def two_agent_run(renderer: object, log: Path, explorer_says: list, answer_sql: str) -> Trajectory:
    """One run of the answering agent, which asks the explorer first and then confirms `answer_sql`."""
    kit = SchemaToolkit(CHINOOK)
    explorer = Agent(Demonstrator(renderer, explorer_says), tools=[t for t in kit if t.phase == EXPLORE],  # type: ignore[arg-type]
                     name="explorer", instructions="You explore a database and say which tables and columns a "
                                                   "question needs.")
    answering = [t for t in kit if t.name in ("run_query", "confirm_answer")]
    answerer = Agent(Demonstrator(renderer, [call("explore", request="Which table holds the albums?"),  # type: ignore[arg-type]
                                             call("confirm_answer", sql=answer_sql)]),
                     tools=[explorer.as_tool("explore", "Ask the schema explorer which tables a question needs."),
                            *answering], name="answerer", log=log)
    return answerer.run(QUESTION, task_id="albums", reward_fn=albums_counted).trajectory


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of the same question, one right (reward 1) and one wrong (reward 0), in one log."""
    log = tmp_path_factory.mktemp("nested") / "runs.jsonl"
    renderer = tiny_local_model(seed=0)
    two_agent_run(renderer, log, [call("list_tables"), call("describe_table", table="Album"),
                                  Message.assistant("Album (AlbumId, Title, ArtistId) holds the albums.")],
                  "SELECT COUNT(*) FROM Album")
    two_agent_run(renderer, log, [call("list_tables"), Message.assistant("Track holds the albums.")],
                  "SELECT COUNT(*) FROM Track")
    return log


def test_the_runs_are_logged_as_nested_trajectories_with_their_own_tokens(logged: Path) -> None:
    runs = read_jsonl(logged)
    assert [t.reward for t in runs] == [1.0, 0.0] and [t.agent for t in runs] == ["answerer", "answerer"]
    for run in runs:
        [explorer] = run.children
        assert (explorer.agent, explorer.parent_id, explorer.relation) == ("explorer", run.id, "tool")
        assert explorer.parent_call_id == run.turns[0].output.tool_calls[0].id
        assert run.has_tokens and explorer.has_tokens
        assert all(len(t.logprobs) == len(t.completion_ids) for t in (*run.turns, *explorer.turns))
        assert [t.phase for t in explorer.turns][:-1] == ["explore_schema"] * (len(explorer.turns) - 1)
        assert [t.phase for t in run.turns] == ["act", "confirm_answer"]
        assert run.usage.calls == len(run.turns) + len(explorer.turns)
        assert run.messages[3].content == explorer.answer  # the explorer's answer is the answerer's observation
    assert [len(r.children[0].turns) for r in runs] == [3, 2]


def credited(runs: list[Trajectory], mode: str) -> dict[str, list[float]]:
    """The advantage each credited trajectory's tokens carry, by trajectory id, under `credit_nested=mode`."""
    config = TrainConfig(credit_nested=mode)  # type: ignore[arg-type]
    batch = nested_batch(runs, config)
    seqs = build_sequences(batch.trajectories, include=batch.credited)
    assign_credit(batch.trajectories, seqs, config, roots=None if mode == "outer" else batch.roots)
    out: dict[str, list[float]] = {}
    for seq in seqs:
        out.setdefault(batch.trajectories[seq.trajectory].id, []).extend(seq.tracks["main"].advantages)
    return {k: sorted(set(v)) for k, v in out.items()}


def test_credit_nested_says_whose_tokens_carry_the_outcome(logged: Path) -> None:
    runs = read_jsonl(logged)
    good, bad = runs
    a = 1 / math.sqrt(2)  # two runs, rewards 1 and 0: (r - 0.5) / std, std = 1/sqrt(2)
    expected = {good.id: [pytest.approx(a, abs=1e-5)], bad.id: [pytest.approx(-a, abs=1e-5)],
                good.children[0].id: [pytest.approx(a, abs=1e-5)], bad.children[0].id: [pytest.approx(-a, abs=1e-5)]}
    outer, inner, both = (credited(runs, mode) for mode in ("outer", "inner", "both"))
    assert outer == {k: v for k, v in expected.items() if k in (good.id, bad.id)}
    assert inner == {k: v for k, v in expected.items() if k not in (good.id, bad.id)}
    assert both == expected  # the children take their run's advantage and change nobody's


def test_inner_credit_trains_an_inner_agent_whose_caller_has_no_tokens(logged: Path) -> None:
    runs = read_jsonl(logged)
    for run in runs:  # as if the answering agent ran on a hosted model
        for turn in run.turns:
            turn.prompt_ids, turn.completion_ids, turn.logprobs = [], [], []
    config = TrainConfig(credit_nested="inner")
    batch = nested_batch(runs, config)
    assert {batch.trajectories[i].agent for i in batch.credited} == {"explorer"}
    assert [batch.trajectories[i].reward for i in sorted(batch.credited)] == [1.0, 0.0]  # the run's outcome
    assert build_sequences(batch.trajectories, include=batch.credited)


def generated_tokens(trajectories: list[Trajectory]) -> int:
    return sum(len(t.completion_ids) for traj in trajectories for t in traj.turns)


@pytest.mark.parametrize("mode", ["both", "inner"])
def test_one_training_step_reads_the_nested_log(logged: Path, tmp_path: Path, mode: str) -> None:
    runs = read_jsonl(logged)
    model, tokenizer = tiny_llama(seed=0)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    config = TrainConfig(credit_nested=mode, max_steps=1, groups_per_step=1, micro_batch_size=2, lr=1e-2,  # type: ignore[arg-type]
                         kl_coef=0.0, old_logprobs="recompute", save_every=0, progress=False,
                         lora=LoraConfig(enabled=False))
    trainer = Trainer(model, config, tokenizer=tokenizer, out_dir=tmp_path)
    summary = trainer.fit(logged)

    children = [r.children[0] for r in runs]
    tokens = generated_tokens(children) + (generated_tokens(runs) if mode == "both" else 0)
    last = summary["last"]
    assert trainer.step == 1 and summary["groups_used"] == 1 and last["skipped"] == 0
    assert last["n_tokens"] == tokens and last["n_trajectories"] == 2
    assert math.isfinite(last["loss"]) and last["reward_mean"] == pytest.approx(0.5)
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed  # the step moved the weights
