"""RL algorithms as registered functions: one estimator per algorithm, declared with its config fields,
listed in one explicit mapping (the hand-computed numbers are in test_training_math.py)."""

from __future__ import annotations

import math
import typing

import pytest

from agentkit.messages import Message
from agentkit.training.algorithms import ADVANTAGE_ESTIMATORS, POLICY_LOSSES, TrackCredit, estimator_for
from agentkit.training.config import TrainConfig
from agentkit.training.losses import ppo_clip_loss, sdar_loss
from agentkit.training.registry import advantage_estimator, declared_name
from agentkit.trajectory import Trajectory


def test_every_algorithm_of_the_config_has_one_estimator() -> None:
    algos = typing.get_args(TrainConfig.model_fields["algo"].annotation)
    assert set(ADVANTAGE_ESTIMATORS) == set(algos) == {"grpo", "sdar", "skill1", "dual-track"}
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
