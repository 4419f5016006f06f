"""Losses over the N generated tokens of a batch (pure functions of flat tensors).

Every loss is a token-mean: Σ_t mask_t·ℓ_t / D, where D is the number of masked tokens in the WHOLE
batch (not the micro-batch), so gradient accumulation gives the same gradient as one big batch.

    PPO-clip:  ρ_t = exp(log π_θ − log π_old);  ℓ_t = −min(ρ_t·A_t, clip(ρ_t, 1−ε_low, 1+ε_high)·A_t)
    k3 KL:     k3_t = exp(log π_ref − log π_θ) − (log π_ref − log π_θ) − 1
    SDAR:      δ_t = log π_T − log π_θ (detached), g_t = sigmoid(β·δ_t) (detached),
               ℓ_t = g_t · (log π_T − log π_θ)  ⇒  ∂ℓ_t/∂θ = −g_t·∇ log π_θ(y_t)
"""

from __future__ import annotations

import torch

from agentkit.training.registry import policy_loss


def token_mean(values: torch.Tensor, mask: torch.Tensor, denom: float | torch.Tensor | None = None) -> torch.Tensor:
    """Σ mask·values / denom (denom defaults to Σ mask; an empty mask gives 0)."""
    mask = mask.to(values.dtype)
    d = mask.sum() if denom is None else torch.as_tensor(denom, dtype=values.dtype, device=values.device)
    return (values * mask).sum() / d.clamp_min(1.0)


@policy_loss("ppo-clip", fields=("clip_low", "clip_high"))
def ppo_clip_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    denom: float | torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-mean PPO-clip loss and the number of masked tokens whose ratio was clipped.

    ℓ_t = −min(ρ_t·A_t, clip(ρ_t, 1−ε_low, 1+ε_high)·A_t), ρ_t = exp(logp_t − old_logp_t).
    Returns (loss, clipped_count); a token counts as clipped when the clipped branch is the minimum
    and differs from the unclipped one.
    """
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * advantages
    clipped_ratio = ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    clipped = clipped_ratio * advantages
    per_token = -torch.minimum(unclipped, clipped)
    was_clipped = ((clipped < unclipped) & mask.bool()).float().sum().detach()
    return token_mean(per_token, mask, denom), was_clipped


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(π_θ‖π_ref): exp(r) − r − 1 with r = log π_ref − log π_θ (≥ 0)."""
    r = ref_logp - logp
    return torch.exp(r) - r - 1.0


def sdar_gate(teacher_logp: torch.Tensor, student_logp: torch.Tensor, beta: float = 5.0) -> torch.Tensor:
    """g_t = sigmoid(β·(log π_T − log π_θ)), detached."""
    return torch.sigmoid(beta * (teacher_logp - student_logp)).detach()


@policy_loss("sdar", fields=("sdar_beta", "sdar_coef", "sdar_prefix"))
def sdar_loss(
    student_logp: torch.Tensor,
    teacher_logp: torch.Tensor,
    mask: torch.Tensor,
    *,
    beta: float = 5.0,
    denom: float | torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """L_SDAR = token-mean of g_t·(log π_T(y_t) − log π_θ(y_t)); returns (loss, gate g_t).

    The teacher log-probs and the gate are constants, so the gradient on each token is −g_t·∇log π_θ:
    teacher-endorsed tokens (δ > 0, g → 1) are pushed up, rejected ones (δ < 0, g → 0) are left
    nearly alone instead of pushed down.
    """
    teacher = teacher_logp.detach()
    gate = sdar_gate(teacher, student_logp.detach(), beta)
    return token_mean(gate * (teacher - student_logp), mask, denom), gate

