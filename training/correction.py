"""Training–inference mismatch: rollout log-probs (vLLM, bf16 or an FP8 KV cache) are not the trainer's.

With r_t = log π_train(y_t) − log π_rollout(y_t) for each generated token y_t (π_train: the trainer's
weights before the update, the PPO ratio's π_old; π_rollout: what the engine logged when it sampled):

    mismatch KL (k3):   mean_t [exp(−r_t) + r_t − 1]             ≥ 0, an estimate of KL(π_rollout‖π_train)
    max ratio:          max_t exp(r_t)
    TIS (token):        w_t = min(exp(r_t), C)                   truncated importance sampling weight
    MIS (sequence):     ρ_i = exp(mean_{t∈i} r_t)  (geometric mean over sequence i's tokens);
                        w_t = 0 for every token of i when ρ_i ∉ [m_low, m_high]   (masked importance sampling)

"tis+mis" multiplies both. The weights are detached and scale each token's policy-gradient term (for
w ≥ 0, w·min(ρA, clip(ρ)A) = min(ρ·wA, clip(ρ)·wA), so they can scale the advantages), which bounds how
much a token sampled far off the trainer's distribution moves the update (TRL's and verl's TIS / MIS).
"""

from __future__ import annotations

from typing import Literal

import torch

Correction = Literal["none", "tis", "mis", "tis+mis"]

__all__ = ["Correction", "mismatch_metrics", "rollout_correction"]


def mismatch_metrics(train_logp: torch.Tensor, rollout_logp: torch.Tensor, mask: torch.Tensor | None = None
                     ) -> dict[str, float]:
    """Mean k3 KL(π_rollout‖π_train) and max ratio π_train/π_rollout over the masked tokens."""
    r = (train_logp - rollout_logp).detach().float()
    keep = torch.ones_like(r, dtype=torch.bool) if mask is None else mask.bool()
    if not bool(keep.any()):
        return {"mismatch_kl": 0.0, "mismatch_ratio_max": 1.0}
    r = r[keep]
    k3 = (torch.exp(-r) + r - 1.0).clamp_min(0.0)  # >= 0 exactly; float rounding dips to -1e-9 when r ~ 0
    return {"mismatch_kl": float(k3.mean()), "mismatch_ratio_max": float(torch.exp(r).max())}


def rollout_correction(
    train_logp: torch.Tensor,
    rollout_logp: torch.Tensor,
    seq_of_token: torch.Tensor,
    *,
    mode: Correction = "tis",
    tis_cap: float = 2.0,
    mis_low: float = 0.5,
    mis_high: float = 2.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Per-token weights w_t (detached, see the module docstring) and what they did.

    `seq_of_token[t]` is the sequence token t belongs to. Returns (weights, {"tis_clipped_frac",
    "mis_masked_frac"}); mode "none" gives all-ones weights."""
    if mode not in ("none", "tis", "mis", "tis+mis"):
        raise ValueError(f"unknown rollout correction {mode!r}: none, tis, mis or tis+mis")
    if tis_cap <= 0 or not 0 <= mis_low <= 1 <= mis_high:
        raise ValueError("need tis_cap > 0 and mis_low <= 1 <= mis_high")
    r = (train_logp - rollout_logp).detach().float()
    weights = torch.ones_like(r)
    stats = {"tis_clipped_frac": 0.0, "mis_masked_frac": 0.0}
    if r.numel() == 0 or mode == "none":
        return weights, stats
    if "tis" in mode:
        ratio = torch.exp(r)
        weights = ratio.clamp(max=tis_cap)
        stats["tis_clipped_frac"] = float((ratio > tis_cap).float().mean())
    if "mis" in mode:
        seqs, index = torch.unique(seq_of_token, return_inverse=True)
        sums = torch.zeros(len(seqs), dtype=r.dtype, device=r.device).index_add_(0, index, r)
        counts = torch.zeros(len(seqs), dtype=r.dtype, device=r.device).index_add_(0, index, torch.ones_like(r))
        seq_ratio = torch.exp(sums / counts)
        masked = (seq_ratio < mis_low) | (seq_ratio > mis_high)
        weights = weights * (~masked[index]).to(weights.dtype)
        stats["mis_masked_frac"] = float(masked.float().mean())
    return weights.detach(), stats
