"""One optimiser step's loss and metrics, as functions of a micro-batch's per-token tensors.

The trainer runs the forward passes and the optimiser; what it computes from them is here:
`micro_batch_loss` (Σ_k w_k·PPOclip(A_k; M_k) − entropy bonus + KL + the algorithm's teacher term, every
one a token-mean over the WHOLE batch), `StepSums` (the metric sums over micro-batches), `sync_sums`
(the same metric keys on every process, summed) and `step_record` (the step's metrics record).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from agentkit.training import distributed as dist
from agentkit.training.config import TrainConfig
from agentkit.training.correction import mismatch_metrics
from agentkit.training.credit import Track
from agentkit.training.losses import kl_k3, ppo_clip_loss, token_mean
from agentkit.training.registry import TeacherPass
from agentkit.training.sequences import PackedBatch


@dataclass(frozen=True)
class Denominators:
    """Token counts of the whole batch (all processes) that every token-mean divides by."""

    tracks: dict[str, float]
    """Per credit track: Σ of its mask."""
    all: float
    """Every generated token (entropy, KL)."""
    teacher: float = 0.0
    """Tokens with a teacher signal (the algorithm's `TeacherPass`)."""

    @classmethod
    def of(cls, batches: Sequence[PackedBatch], tracks: Sequence[Track], teacher_tokens: float | None,
           device: torch.device) -> Denominators:
        """Count this process's tokens in `batches` and sum the counts over all processes."""
        local = [sum(float(b.tracks[tr.name].mask.sum()) for b in batches) for tr in tracks]
        local.append(float(sum(b.n_tokens for b in batches)))
        if teacher_tokens is not None:
            local.append(teacher_tokens)
        total = dist.sum_floats(local, device)
        n = len(tracks)
        return cls(tracks={tr.name: total[i] for i, tr in enumerate(tracks)}, all=total[n],
                   teacher=total[n + 1] if teacher_tokens is not None else 0.0)


@dataclass(frozen=True)
class StepInputs:
    """What every micro-batch's loss reads besides its own forward pass (one list entry per micro-batch)."""

    tracks: list[Track]
    denom: Denominators
    old_lp: list[torch.Tensor] | None = None
    """π_old per token (None: the current log-probs, detached — ratio 1)."""
    ref_lp: list[torch.Tensor] | None = None
    """π_ref per token for the KL term (None: no KL)."""
    teacher: TeacherPass | None = None
    teacher_lp: list[torch.Tensor] | None = None
    """The teacher pass's log-probs (with `teacher`)."""
    weights: list[torch.Tensor] | None = None
    """Rollout-correction weights on the advantages (TIS / MIS; None: off)."""


@dataclass
class StepSums:
    """Metric sums over one step's micro-batches (and the rollout-mismatch statistics)."""

    sums: dict[str, float] = field(default_factory=dict)
    mismatch_k3: float = 0.0
    mismatch_n: float = 0.0
    mismatch_ratio_max: float = 0.0

    def add(self, key: str, value: float) -> None:
        """Add `value` to the sum under `key`."""
        self.sums[key] = self.sums.get(key, 0.0) + value


def micro_batch_loss(logp: torch.Tensor, ent: torch.Tensor, batch: PackedBatch, k: int, inputs: StepInputs,
                     config: TrainConfig, sums: StepSums) -> torch.Tensor:
    """The loss of micro-batch `k` (its `logp` and entropies `ent` from the forward pass); adds its metrics."""
    old = inputs.old_lp[k] if inputs.old_lp is not None else logp.detach()
    ones = torch.ones_like(logp)
    loss = logp.new_zeros(())
    if config.algo != "sft":  # SFT's tokens may not have been sampled (demonstrations log 0)
        step_mismatch = mismatch_metrics(logp, batch.old_logprobs)  # vs the logged rollout log-probs
        sums.mismatch_k3 += step_mismatch["mismatch_kl"] * batch.n_tokens
        sums.mismatch_n += batch.n_tokens
        sums.mismatch_ratio_max = max(sums.mismatch_ratio_max, step_mismatch["mismatch_ratio_max"])
    for tr in inputs.tracks:
        values = batch.tracks[tr.name]
        adv = values.advantages * (inputs.weights[k] if inputs.weights is not None else 1.0)
        pg, n_clipped = ppo_clip_loss(logp, old, adv, values.mask, clip_low=config.clip_low,
                                      clip_high=config.clip_high, denom=inputs.denom.tracks[tr.name])
        loss = loss + tr.weight * pg
        sums.add(f"pg_loss_{tr.name}", float(pg.detach()))
        sums.add(f"clipped_{tr.name}", float(n_clipped))
    entropy = token_mean(ent, ones, inputs.denom.all)
    sums.add("entropy", float(entropy.detach()))
    sums.add("nll", float(token_mean(-logp.detach(), ones, inputs.denom.all)))
    if config.entropy_coef:
        loss = loss - config.entropy_coef * entropy
    if inputs.ref_lp is not None:
        kl = token_mean(kl_k3(logp, inputs.ref_lp[k]), ones, inputs.denom.all)
        loss = loss + config.kl_coef * kl
        sums.add("kl", float(kl.detach()))
    if inputs.teacher is not None and inputs.teacher_lp is not None:
        if batch.teacher_mask is None:
            raise ValueError("a teacher pass needs the batch's teacher mask (collate the sequences after it is set)")
        term, extra = inputs.teacher.loss(logp, inputs.teacher_lp[k], batch.teacher_mask, inputs.denom.teacher,
                                          config)
        loss = loss + term
        for key, value in extra.items():
            sums.add(key, value)
    sums.add("ratio_max", 0.0)
    sums.sums["ratio_max"] = max(sums.sums["ratio_max"], float(torch.exp(logp.detach() - old).max()))
    sums.add("loss", float(loss.detach()))
    return loss


def sync_sums(sums: StepSums, inputs: StepInputs, device: torch.device) -> None:
    """Sum the metric sums over processes (in place). Every process reports the same keys: sharded, one
    with an empty shard has zeros. `ratio_max` stays this process's own."""
    keys = sorted(k for k in sums.sums if k != "ratio_max")
    if dist.active():
        teacher_keys = inputs.teacher.metric_keys if inputs.teacher is not None and inputs.teacher_lp else ()
        keys = sorted({f"{p}_{tr.name}" for tr in inputs.tracks for p in ("pg_loss", "clipped")}
                      | {"loss", "entropy", "nll"} | ({"kl"} if inputs.ref_lp is not None else set())
                      | set(teacher_keys))
    sums.sums.update(zip(keys, dist.sum_floats([sums.sums.get(k, 0.0) for k in keys], device), strict=True))


def step_record(sums: StepSums, inputs: StepInputs) -> dict[str, Any]:
    """The step's metrics from its (synced) sums: losses, entropy, NLL (the generated tokens' mean negative
    log-prob), KL, ratio, mismatch, clip fraction and the teacher pass's own fields."""
    record: dict[str, Any] = {}
    for key in ("loss", "entropy", "nll", "kl", "ratio_max"):
        if key in sums.sums:
            record[key] = sums.sums[key]
    if sums.mismatch_n:
        record.update(mismatch_kl=sums.mismatch_k3 / sums.mismatch_n, mismatch_ratio_max=sums.mismatch_ratio_max)
    for tr in inputs.tracks:
        record[f"pg_loss_{tr.name}"] = sums.sums.get(f"pg_loss_{tr.name}", 0.0)
    total_mask = sum(inputs.denom.tracks[tr.name] for tr in inputs.tracks)
    record["clip_frac"] = sum(sums.sums.get(f"clipped_{tr.name}", 0.0) for tr in inputs.tracks) / max(1.0, total_mask)
    if inputs.teacher is not None and inputs.teacher_lp is not None:
        record.update(inputs.teacher.summary(sums.sums, inputs.denom.teacher))
    return record
