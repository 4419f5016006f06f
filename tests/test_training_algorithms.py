"""RL algorithms as registered functions: one estimator per algorithm, declared with its config fields,
listed in one explicit mapping (the hand-computed numbers are in test_training_math.py)."""

from __future__ import annotations

import math
import typing

import pytest
import torch

from agentkit.messages import Message
from agentkit.models.protocol import TokenRecord
from agentkit.training.algorithms import (
    ADVANTAGE_ESTIMATORS,
    POLICY_LOSSES,
    SDAR_TEACHER,
    TrackCredit,
    estimator_for,
    teacher_for,
)
from agentkit.training.config import TrainConfig
from agentkit.training.credit import assign_credit
from agentkit.training.losses import ppo_clip_loss, sdar_loss
from agentkit.training.objective import Denominators, StepInputs, StepSums, micro_batch_loss, step_record
from agentkit.training.registry import TeacherPass, advantage_estimator, declared_name, declared_teacher
from agentkit.training.sequences import build_sequences, collate
from agentkit.trajectory import Trajectory


def test_every_algorithm_of_the_config_has_one_estimator() -> None:
    algos = typing.get_args(TrainConfig.model_fields["algo"].annotation)
    assert set(ADVANTAGE_ESTIMATORS) == set(algos) == {"grpo", "sdar", "skill1", "dual-track", "sft"}
    for name, fn in ADVANTAGE_ESTIMATORS.items():
        assert declared_name(fn) == name
        assert set(fn.config_fields) <= set(TrainConfig.model_fields)
    assert {"ppo-clip": ppo_clip_loss, "sdar": sdar_loss} == POLICY_LOSSES
    assert ppo_clip_loss.config_fields == ("clip_low", "clip_high")


def test_declaring_registers_nothing_and_checks_the_fields() -> None:
    def mine(trajectories: list[Trajectory], config: TrainConfig) -> dict[str, TrackCredit]:
        return {}

    assert advantage_estimator("mine", fields=("lr",))(mine) is mine
    assert "mine" not in ADVANTAGE_ESTIMATORS
    with pytest.raises(ValueError, match="not TrainConfig fields"):
        advantage_estimator("typo", fields=("learning_rate",))
    with pytest.raises(TypeError):
        declared_name(lambda: None)


def _traj(task_id: str, reward: float, rewards: dict[str, float] | None = None, phases: tuple[str, ...] = ("act",)):
    t = Trajectory(task="t", task_id=task_id, reward=reward, rewards=rewards or {})
    for p in phases:
        t.add_turn(Message.assistant("x"), phase=p)
    return t


def test_estimators_give_their_tracks_and_masks() -> None:
    batch = [_traj("a", 1.0, {"schema": 1.0, "answer": 0.0}, ("propose_schema", "act")),
             _traj("a", 0.0, {"schema": 0.0, "answer": 1.0}, ("act", "rerank"))]
    grpo = estimator_for(TrainConfig(algo="grpo"))(batch, TrainConfig(algo="grpo"))
    assert list(grpo) == ["main"] and grpo["main"].rewards == [1.0, 0.0] and grpo["main"].mask(0, [0, 1], []) == [1, 1]
    skill1 = ADVANTAGE_ESTIMATORS["skill1"](batch, TrainConfig(algo="skill1"))
    assert [(k, v.weight) for k, v in skill1.items()] == [("util", 1.0), ("rerank", 0.3), ("distill", 0.3)]
    assert skill1["rerank"].mask(1, [0, 1], ["act", "rerank"]) == [0.0, 1.0]
    assert math.isnan(skill1["distill"].rewards[0])  # nothing distilled
    dual = ADVANTAGE_ESTIMATORS["dual-track"](batch, TrainConfig(algo="dual-track"))
    assert dual["schema"].clip == dual["answer"].clip == 10.0
    assert dual["schema"].mask(0, [0, 1], []) == [1.0, 0.0] and dual["schema"].mask(1, [0, 1], []) == [0.0, 0.0]


def test_only_sdar_declares_a_teacher_pass_and_a_new_algorithm_can() -> None:
    assert teacher_for(TrainConfig(algo="sdar")) is SDAR_TEACHER
    assert [a for a in ADVANTAGE_ESTIMATORS if teacher_for(TrainConfig(algo=a)) is not None] == ["sdar"]
    hook = TeacherPass(context=lambda ts, i, cfg: "hint", loss=SDAR_TEACHER.loss, summary=SDAR_TEACHER.summary,
                       metric_keys=SDAR_TEACHER.metric_keys)

    @advantage_estimator("hinted", teacher=hook)
    def hinted(trajectories: list[Trajectory], config: TrainConfig) -> dict[str, TrackCredit]:
        return {}

    assert declared_teacher(hinted) is hook
    assert declared_teacher(ADVANTAGE_ESTIMATORS["grpo"]) is None


def _tokens(reward: float) -> Trajectory:
    t = Trajectory(task="t", task_id="g", reward=reward)
    t.add_turn(Message.assistant("x"), phase="act",
               tokens=TokenRecord(prompt_ids=[5, 6], completion_ids=[7, 8], logprobs=[-1.0, -2.0]))
    return t


def test_tracks_and_teacher_mask_are_typed_fields_of_the_packed_batch() -> None:
    trajs = [_tokens(1.0), _tokens(0.0)]
    seqs = build_sequences(trajs)
    tracks, _ = assign_credit(trajs, seqs, TrainConfig(algo="grpo"))
    seqs[0].teacher_mask = [1.0, 1.0]  # the second sequence has none: zeros in the batch
    batch = collate(seqs)
    assert list(batch.tracks) == ["main"] and batch.tracks["main"].mask.tolist() == [1.0] * 4
    a = batch.tracks["main"].advantages.tolist()
    assert a[0] == a[1] > 0 > a[2] == a[3]
    assert batch.teacher_mask is not None and batch.teacher_mask.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert collate(seqs[1:]).teacher_mask is None
    seqs[1].teacher_mask = [1.0]
    with pytest.raises(ValueError, match="teacher mask has 1 entries for 2 generated tokens"):
        collate(seqs)
    # the step's loss reads them: PPO-clip at ratio 1 is −mean(A) = 0 here, SDAR's term adds its metrics
    seqs[1].teacher_mask = [0.0, 0.0]
    batch = collate(seqs)
    logp = batch.old_logprobs.clone().requires_grad_(True)
    inputs = StepInputs(tracks=tracks, denom=Denominators(tracks={"main": 4.0}, all=4.0, teacher=2.0),
                        teacher=SDAR_TEACHER, teacher_lp=[batch.old_logprobs + 1.0])
    sums = StepSums()
    loss = micro_batch_loss(logp, torch.zeros(4), batch, 0, inputs, TrainConfig(algo="sdar"), sums)
    gate = torch.sigmoid(torch.tensor(5.0)).item()  # δ = 1 on the two teacher tokens
    assert sums.sums["pg_loss_main"] == pytest.approx(0.0, abs=1e-6)
    assert sums.sums["sdar_loss"] == pytest.approx(gate) and sums.sums["gate_sum"] == pytest.approx(2 * gate)
    assert float(loss.detach()) == pytest.approx(0.01 * gate, rel=1e-5)  # sdar_coef 0.01 by default
    record = step_record(sums, inputs)
    assert record["gate_mean"] == pytest.approx(gate) and record["sdar_tokens"] == 2 and record["clip_frac"] == 0.0


def test_the_train_command_offers_every_algorithm() -> None:
    from agentkit.cli.train_cmd import ALGOS

    assert set(ALGOS) == set(typing.get_args(TrainConfig.model_fields["algo"].annotation))
