"""Training–inference mismatch: TIS / MIS weights by hand, the mismatch metrics, and a perturbed rollout
log-prob whose pull on the update the correction bounds (tiny random Llama)."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from test_training_trainer import cfg, sampled

from agentkit.models.tiny import tiny_llama
from agentkit.training.correction import mismatch_metrics, rollout_correction
from agentkit.training.trainer import Trainer

torch.set_num_threads(1)

# Two sequences: tokens 0, 1 of sequence 0 and token 2 of sequence 1.
TRAIN = torch.log(torch.tensor([0.5, 0.5, 0.2]))
ROLLOUT = torch.log(torch.tensor([0.25, 0.5, 0.2 / 0.9]))  # ratios π_train/π_rollout = 2, 1, 0.9
SEQ = torch.tensor([0, 0, 1])


def test_tis_mis_weights_by_hand() -> None:
    w, stats = rollout_correction(TRAIN, ROLLOUT, SEQ, mode="tis", tis_cap=1.5)
    assert w.tolist() == pytest.approx([1.5, 1.0, 0.9])  # min(ratio, C)
    assert stats["tis_clipped_frac"] == pytest.approx(1 / 3)
    # Sequence 0: geometric mean √(2·1) = 1.414 > 1.25, masked; sequence 1: 0.9 inside [0.8, 1.25], kept.
    w, stats = rollout_correction(TRAIN, ROLLOUT, SEQ, mode="mis", mis_low=0.8, mis_high=1.25)
    assert w.tolist() == [0.0, 0.0, 1.0] and stats["mis_masked_frac"] == 0.5
    w, _ = rollout_correction(TRAIN, ROLLOUT, SEQ, mode="tis+mis", tis_cap=1.5, mis_low=0.8, mis_high=1.25)
    assert w.tolist() == pytest.approx([0.0, 0.0, 0.9])
    w, _ = rollout_correction(TRAIN, ROLLOUT, SEQ, mode="none")
    assert w.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="unknown rollout correction"):
        rollout_correction(TRAIN, ROLLOUT, SEQ, mode="big")  # type: ignore[arg-type]


def test_mismatch_metrics_by_hand() -> None:
    m = mismatch_metrics(TRAIN, ROLLOUT)
    k3 = [0.5 + math.log(2) - 1, 0.0, 1 / 0.9 + math.log(0.9) - 1]  # exp(-r) + r - 1
    assert m["mismatch_kl"] == pytest.approx(sum(k3) / 3)
    assert m["mismatch_ratio_max"] == pytest.approx(2.0)
    assert mismatch_metrics(TRAIN, TRAIN) == {"mismatch_kl": 0.0, "mismatch_ratio_max": 1.0}
    noise = torch.tensor([3e-8, -2e-8, 5e-8])  # fp32 serving vs an fp32 trainer: rounding-level differences
    assert mismatch_metrics(TRAIN + noise, TRAIN)["mismatch_kl"] >= 0.0  # k3 never reads below zero


def _grad_norm(data, tmp_path, **kw) -> tuple[float, dict]:
    model, tok = tiny_llama(seed=0)
    trainer = Trainer(model, cfg(max_steps=1, groups_per_step=3, micro_batch_size=12, max_grad_norm=1e9, **kw),
                      tokenizer=tok, out_dir=tmp_path)
    record = trainer.train_on(data)
    return record["grad_norm"], record


def test_perturbed_rollout_logprob_is_bounded_by_the_correction(tmp_path) -> None:
    model, tok = tiny_llama(seed=0)
    data = [t for t in sampled(model, tok) if t.task_id != "flat"]
    clean, clean_record = _grad_norm(data, tmp_path)
    assert clean_record["mismatch_kl"] == pytest.approx(0.0, abs=1e-4)  # the sampler is the trainer
    # One token of a run with a negative advantage: the engine logged it 8 nats less likely than the trainer
    # finds it. Uncorrected, PPO's ratio π_θ/π_rollout = e^8 multiplies that token's gradient (min() keeps
    # the unclipped branch for A < 0).
    groups = {t.task_id: [u.reward for u in data if u.task_id == t.task_id] for t in data}
    task_id = next(k for k, rewards in groups.items() if len(set(rewards)) > 1)
    worst = next(t for t in data if t.task_id == task_id and t.reward == min(groups[task_id]))
    perturbed = copy.deepcopy(data)
    victim = perturbed[data.index(worst)]
    victim.turns[0].logprobs[0] -= 8.0
    raw, raw_record = _grad_norm(perturbed, tmp_path)
    assert raw_record["mismatch_ratio_max"] == pytest.approx(math.exp(8.0), rel=1e-3)
    assert raw > 20 * clean
    corrected, record = _grad_norm(perturbed, tmp_path, rollout_correction="tis", tis_cap=2.0)
    assert record["mismatch_ratio_max"] == pytest.approx(math.exp(8.0), rel=1e-3)  # still measured, and logged
    assert record["tis_clipped_frac"] > 0
    assert corrected < 2.5 * clean  # the token's weight is capped at C = 2
    masked, record = _grad_norm(perturbed, tmp_path, rollout_correction="mis")
    assert record["mis_masked_frac"] > 0 and masked < 2.5 * clean
