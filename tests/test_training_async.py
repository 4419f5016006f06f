"""Asynchronous online training (`max_staleness` > 0): the rollouts of step k+1 are played while step k
updates, every rollout records the policy version that played it, and none staler than the bound is used."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import torch
from test_training_online import LengthEnv

from agentkit.models.tiny import tiny_local_model
from agentkit.records import POLICY
from agentkit.training.checkpoint import trainable_state
from agentkit.training.config import LoraConfig, TrainConfig
from agentkit.training.logprobs import sequence_logprobs
from agentkit.training.online import next_tasks, policy_version, split_stale
from agentkit.training.rollout import LocalRollout, SnapshotRollout
from agentkit.training.sequences import build_sequences, collate
from agentkit.training.trainer import Trainer
from agentkit.trajectory import Trajectory, read_jsonl

torch.set_num_threads(1)


def config(**kw) -> TrainConfig:
    base = dict(lr=5e-2, max_steps=3, tasks_per_step=2, group_size=3, max_new_tokens=6, max_turns=1,
                micro_batch_size=6, save_every=0, progress=False, kl_coef=0.0, lora=LoraConfig(r=4, alpha=8),
                drop_zero_variance_groups=False)
    base.update(kw)
    return TrainConfig(**base)


class GatedEnv(LengthEnv):
    """Episodes of a later step wait (in `reset`) until an update has started: they can only finish if
    rollouts overlap updates."""

    def __init__(self) -> None:
        self.update_started = threading.Event()
        self.overlapped: list[bool] = []
        self.resets = 0

    def reset(self, task):  # type: ignore[no-untyped-def]
        self.resets += 1
        if self.resets > 6:  # the first step's 6 episodes come before any update
            self.overlapped.append(self.update_started.wait(timeout=30))
        return super().reset(task)


@pytest.mark.slow
def test_async_rollouts_overlap_the_update_and_record_their_policy_version(tmp_path: Path) -> None:
    trainer = Trainer(tiny_local_model(seed=0), config(max_staleness=1), out_dir=tmp_path)
    env = GatedEnv()
    weights: dict[int, dict[str, torch.Tensor]] = {}
    train_on = trainer.train_on

    def recording(trajectories):  # type: ignore[no-untyped-def]
        weights[trainer.step] = trainable_state(trainer.policy)  # version = steps taken so far
        env.update_started.set()
        return train_on(trajectories)

    trainer.train_on = recording  # type: ignore[method-assign]
    summary = trainer.fit(env)
    assert summary["steps"] == 3 and summary["trajectories_stale"] == 0
    assert isinstance(trainer.rollout, SnapshotRollout)
    assert env.overlapped and all(env.overlapped)  # step k+1's episodes started while step k updated
    rollouts = read_jsonl(tmp_path / "rollouts.jsonl")
    assert len(rollouts) == 18 and all(t.has_tokens for t in rollouts)
    used_at = [t.metadata["train_step"] for t in rollouts]
    versions = [policy_version(t) for t in rollouts]
    assert used_at == [0] * 6 + [1] * 6 + [2] * 6
    assert versions == [0] * 6 + [0] * 6 + [1] * 6  # one step stale after the first
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["policy_version"], r["staleness"]) for r in records] == [(0, 0), (0, 1), (1, 1)]
    # The record tells the truth: each rollout's logged log-probs are those of the weights of its version.
    for version in (0, 1):
        played = [t for t in rollouts if policy_version(t) == version]
        with torch.no_grad():
            for name, param in trainer.policy.named_parameters():
                if name in weights[version]:
                    param.copy_(weights[version][name])
            batch = collate(build_sequences(played), pad_id=trainer.pad_id)
            logprobs, _ = sequence_logprobs(trainer.policy, batch)
        assert torch.allclose(logprobs, batch.old_logprobs, atol=1e-4), version
    # ...and not those of the weights the update started from, one step later (they moved).
    assert records[1]["ratio_max"] > 1.0 + 1e-3 or records[1].get("ratio_min", 1.0) < 1.0 - 1e-3


def test_synchronous_runs_record_version_equal_to_the_training_step(tmp_path: Path) -> None:
    trainer = Trainer(tiny_local_model(seed=0), config(max_steps=2), out_dir=tmp_path)
    trainer.fit(LengthEnv())
    assert isinstance(trainer.rollout, LocalRollout)  # max_staleness 0: the shared module, as before
    rollouts = read_jsonl(tmp_path / "rollouts.jsonl")
    assert [policy_version(t) for t in rollouts] == [t.metadata["train_step"] for t in rollouts] == [0] * 6 + [1] * 6
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["staleness"] for r in records] == [0, 0]


def test_rollouts_staler_than_the_bound_are_never_trained_on() -> None:
    from agentkit.records import PolicyRecord

    runs = []
    for version in (5, 4, 3, None):
        run = Trajectory(task=f"v{version}")
        if version is not None:
            run.records.set(POLICY, PolicyRecord(version=version))
        runs.append(run)
    fresh, stale = split_stale(runs, step=5, max_staleness=1, default_version=3)
    assert [t.task for t in fresh] == ["v5", "v4"] and [t.task for t in stale] == ["v3", "vNone"]
    fresh, stale = split_stale(runs, step=5, max_staleness=0, default_version=5)
    assert [t.task for t in fresh] == ["v5", "vNone"] and len(stale) == 2


def test_async_refuses_an_engine_that_samples_from_the_module_being_updated(tmp_path: Path) -> None:
    local = tiny_local_model(seed=0)
    trainer = Trainer(local, config(max_staleness=1), out_dir=tmp_path)
    trainer.rollout = LocalRollout(local)
    with pytest.raises(ValueError, match="SnapshotRollout"):
        trainer.fit(LengthEnv())
    with pytest.raises(ValueError, match="max_staleness"):
        config(max_staleness=-1)


def test_snapshot_rollout_shares_frozen_weights_and_changes_only_at_sync() -> None:
    trainer = Trainer(tiny_local_model(seed=0), config(), out_dir="unused")
    engine = SnapshotRollout(trainer.module, trainer.tokenizer)
    snap = engine.model().model  # type: ignore[attr-defined]
    frozen = {n: p for n, p in trainer.module.named_parameters() if not p.requires_grad}
    mine = dict(snap.named_parameters())
    assert frozen and all(mine[n] is p for n, p in frozen.items())  # shared, not copied
    name = next(n for n, p in trainer.module.named_parameters() if p.requires_grad)
    with torch.no_grad():
        dict(trainer.module.named_parameters())[name].add_(1.0)
    assert not torch.equal(mine[name], dict(trainer.module.named_parameters())[name])
    engine.sync(trainer.policy, 1)
    assert torch.equal(mine[name], dict(trainer.module.named_parameters())[name])


def test_task_order_continues_across_epochs() -> None:
    take, after = next_tasks(3, {"epoch": 0, "cursor": 2}, 2, seed=0)
    assert len(take) == 1 and after == {"epoch": 0, "cursor": 3}
    take, after = next_tasks(3, after, 2, seed=0)
    assert len(take) == 2 and after == {"epoch": 1, "cursor": 2}
