"""algo="sft": imitation of good trajectories (and of demonstrations) through the same trainer as RL."""

from __future__ import annotations

import math

import pytest
import torch

from agentkit.messages import Message
from agentkit.models.tiny import tiny_llama
from agentkit.training.config import LoraConfig, TrainConfig
from agentkit.training.credit import assign_credit, informative_groups
from agentkit.training.logprobs import sequence_logprobs
from agentkit.training.rollout import sample_completions
from agentkit.training.sequences import build_sequences, collate
from agentkit.training.trainer import Trainer
from agentkit.trajectory import Trajectory

torch.set_num_threads(1)


def runs(rewards: list[float], seed: int = 0) -> tuple[list[Trajectory], object, object]:
    """One sampled completion per task (groups of one, as demonstrations are), with the given rewards."""
    model, tok = tiny_llama(seed=0)
    prompts = [tok(f"Task {i}: write a short word.")["input_ids"] for i in range(len(rewards))]
    records = sample_completions(model, prompts, n=1, max_new_tokens=6, temperature=1.0,
                                 generator=torch.Generator().manual_seed(seed))
    out = []
    for i, (rec, reward) in enumerate(zip(records, rewards, strict=True)):
        t = Trajectory(task=f"task {i}", task_id=f"t{i}", reward=reward)
        t.add_turn(Message.assistant(tok.decode(rec.completion_ids)), phase="act", tokens=rec)
        out.append(t)
    return out, model, tok


def sft(**kw: object) -> TrainConfig:
    base: dict[str, object] = dict(algo="sft", lr=2e-2, max_steps=4, groups_per_step=4, micro_batch_size=2,
                                   save_every=0, progress=False, kl_coef=0.0, lora=LoraConfig(r=4, alpha=8))
    base.update(kw)
    return TrainConfig(**base)  # type: ignore[arg-type]


def test_sft_takes_the_current_policy_as_pi_old() -> None:
    assert sft().old_logprobs == "current"
    with pytest.raises(ValueError, match="old_logprobs = 'current'"):
        sft(old_logprobs="logged")


def test_sft_imitates_the_runs_that_reached_the_threshold_and_leaves_the_rest_out() -> None:
    trajectories, _, _ = runs([1.0, 0.0, 1.0, 0.5])
    config = sft(sft_min_reward=0.75)
    keep, dead = informative_groups(trajectories, config)
    assert keep == {"t0", "t2"} and dead == {"t1", "t3"}  # groups of one still count: no baseline
    seqs = build_sequences(trajectories, max_len=64)
    assign_credit(trajectories, seqs, config)
    for seq in seqs:
        kept = seq.trajectory in (0, 2)
        assert seq.tracks["main"].advantages == [1.0 if kept else 0.0] * seq.n_generated
        assert seq.tracks["main"].mask == [1.0 if kept else 0.0] * seq.n_generated


def test_sft_raises_the_likelihood_of_what_it_imitates(tmp_path) -> None:
    trajectories, model, tok = runs([1.0, 1.0, 1.0, 1.0])
    batch = collate(build_sequences(trajectories, max_len=64), pad_id=0)

    def nll() -> float:
        with torch.no_grad():
            return -float(sequence_logprobs(model, batch)[0].mean())

    before = nll()
    config = sft(epochs=8, max_steps=8, lr=3e-3, lora=LoraConfig(enabled=False))
    trainer = Trainer(model, config, tokenizer=tok, out_dir=tmp_path)
    summary = trainer.fit(trajectories)
    assert trainer.step == 8
    assert summary["groups_used"] == 4 and summary["last"]["nll"] > 0
    assert not math.isnan(summary["last"]["loss"])
    assert nll() < before - 1.0  # 10.8 -> 8.6 here


def test_sft_with_nothing_good_enough_says_so(tmp_path) -> None:
    trajectories, model, tok = runs([0.0, 0.2])
    with pytest.raises(ValueError, match="nothing to train on"):
        Trainer(model, sft(), tokenizer=tok, out_dir=tmp_path).fit(trajectories)
