"""Advantages: GRPO's group normalisation and the per-method rewards built on it (pure functions).

GRPO:        A_i = (r_i − mean(r_G)) / (std(r_G) + ε)   (Dr.GRPO: r_i − mean(r_G))
Skill1:      utilization from r; rerank from NDCG(predicted order, order by U);
             distillation from r − Û, Û = max U over the retrieved skills (0 if none);
             each normalised within its group.
Dual-Track:  A_sch from the schema reward, A_ans from the answer reward, each
             group-normalised then clipped to ±c (c = 10).


std is the sample standard deviation (Bessel-corrected), as torch.std and the mainstream trainers
compute it. A missing reward (NaN) takes no part in its group's statistics and gets advantage 0.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import torch

from agentkit.ranking import ndcg
from agentkit.trajectory import Trajectory


def group_id(trajectory: Trajectory) -> Hashable:
    """The GRPO group of a trajectory: its task id (or, without one, its task text)."""
    return trajectory.task_id if trajectory.task_id is not None else trajectory.task


def group_advantages(
    rewards: Sequence[float] | torch.Tensor,
    groups: Sequence[Hashable],
    *,
    scale_by_std: bool = True,
    eps: float = 1e-6,
) -> torch.Tensor:
    """A_i = (r_i − mean_g) / (std_g + ε) within each group g (or r_i − mean_g without std).

    NaN rewards are ignored by the statistics and get 0; a group with one valid member gets 0.
    """
    r = torch.as_tensor(rewards, dtype=torch.float64)
    if r.numel() != len(groups):
        raise ValueError(f"{r.numel()} rewards for {len(groups)} group ids")
    out = torch.zeros_like(r)
    for g in dict.fromkeys(groups):
        idx = torch.tensor([i for i, x in enumerate(groups) if x == g], dtype=torch.long)
        vals = r[idx]
        valid = ~torch.isnan(vals)
        if int(valid.sum()) < 2:
            continue
        mean = vals[valid].mean()
        adv = vals - mean
        if scale_by_std:
            adv = adv / (vals[valid].std() + eps)
        out[idx] = torch.where(valid, adv, torch.zeros_like(adv))
    return out.float()


def zero_variance_groups(rewards: Sequence[float], groups: Sequence[Hashable], tol: float = 1e-12) -> set[Hashable]:
    """Groups whose valid rewards are all equal (or that have fewer than two): they carry no signal."""
    out: set[Hashable] = set()
    for g in dict.fromkeys(groups):
        vals = [r for r, x in zip(rewards, groups, strict=True) if x == g and not math.isnan(r)]
        if len(vals) < 2 or max(vals) - min(vals) <= tol:
            out.add(g)
    return out


def skill1_rewards(reward: float, skills: Mapping[str, Any] | None) -> dict[str, float]:
    """The three Skill1 rewards of one trajectory from its `SKILLS` record (as a dict).

    Shape: {"retrieved": [{"id", "utility"}], "ranking": [ids], "used": id|None, "u_hat": float,
    "distilled": {...}|None, "admitted": bool}. rerank is NaN when nothing was ranked; distill is
    NaN when nothing was distilled (so those trajectories stay out of the group statistics).
    """
    skills = skills or {}
    retrieved = skills.get("retrieved") or []
    utilities = {item["id"]: float(item.get("utility", 0.0)) for item in retrieved}
    ranking = skills.get("ranking") or []
    rerank = ndcg(ranking, utilities) if ranking else math.nan
    u_hat = skills.get("u_hat")
    if u_hat is None:
        u_hat = max(utilities.values(), default=0.0)
    distill = float(reward) - float(u_hat) if skills.get("distilled") is not None else math.nan
    return {"util": float(reward), "rerank": rerank, "distill": distill}


def clipped(adv: torch.Tensor, bound: float) -> torch.Tensor:
    """clip(A, −bound, +bound)."""
    return adv.clamp(-bound, bound)
