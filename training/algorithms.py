"""RL algorithms as registered functions (the verl way): the trainer only wires them.

An **advantage estimator** turns a batch of scored trajectories into *tracks*: each track is one
PPO-clip term with a weight, a reward per trajectory (group-normalised into the advantage; NaN = not
applicable) and a mask saying which generated tokens carry it (optionally clipped). A **policy loss**
is the per-token loss those advantages feed. Each is one function, declared with `@advantage_estimator`
or `@policy_loss` together with the `TrainConfig` fields it reads; the decorators only annotate, and
the registries `ADVANTAGE_ESTIMATORS` and `POLICY_LOSSES` below list the functions in one place.

An algorithm that needs one more no-grad pass of the policy (SDAR's teacher, which sees a privileged
text before the sequence) declares it with its estimator: `@advantage_estimator(..., teacher=TeacherPass(...))`.

Adding an algorithm: write its estimator here (and a loss in `losses.py` if it needs a new one),
list it in `ADVANTAGE_ESTIMATORS`, and add its name to `TrainConfig.algo`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

import torch

from agentkit.records import SKILLS
from agentkit.training.advantages import group_id, skill1_rewards
from agentkit.training.config import TrainConfig
from agentkit.training.losses import ppo_clip_loss, sdar_loss
from agentkit.training.registry import TeacherPass, advantage_estimator, declared_name, declared_teacher
from agentkit.trajectory import GIVEN, Trajectory

MaskFn = Callable[[int, Sequence[int], Sequence[str]], list[float]]
"""(trajectory index, the turn index of each generated token, their phase labels) → the token mask."""


@dataclass(frozen=True)
class TrackCredit:
    """One PPO-clip term of the loss: Σ_k weight_k · PPOclip(A_k; M_k)."""

    weight: float
    rewards: list[float]
    """One per trajectory; group-normalised into the advantage (NaN: no part in its group's statistics)."""
    mask: MaskFn
    clip: float | None = None
    """Clip the advantage to ±clip (Dual-Track)."""
    baseline: bool = True
    """Subtract the group's mean reward (and divide by its std); False: the reward is the advantage (SFT)."""


class AdvantageEstimator(Protocol):
    """The tracks of a batch: `{track name: TrackCredit}`."""

    def __call__(self, trajectories: Sequence[Trajectory], config: TrainConfig) -> dict[str, TrackCredit]: ...


def _reward(t: Trajectory) -> float:
    return float(t.reward) if t.reward is not None else math.nan


def _every_token(index: int, turns: Sequence[int], phases: Sequence[str]) -> list[float]:
    return [1.0] * len(turns)


# -- advantage estimators ----------------------------------------------------------------------------


@advantage_estimator("grpo", fields=("scale_adv_by_std", "adv_eps"))
def grpo(trajectories: Sequence[Trajectory], config: TrainConfig) -> dict[str, TrackCredit]:
    """GRPO: one track, A = group-normalised r on every generated token."""
    return {"main": TrackCredit(1.0, [_reward(t) for t in trajectories], _every_token)}


def privileged_context(trajectories: Sequence[Trajectory], index: int) -> str | None:
    """SDAR's privileged text for trajectory `index`: the skill it used (`SKILLS` record's `used_text`),
    else the answer of another member of its group that reached the group's best reward (when the
    group is not all equal), else None (no teacher signal for it)."""
    traj = trajectories[index]
    skills = traj.records.get(SKILLS)
    if skills is not None and skills.used_text:
        return str(skills.used_text)
    g = group_id(traj)
    members = [(i, t) for i, t in enumerate(trajectories)
               if group_id(t) == g and t.reward is not None and t.parent_id is None]  # top-level runs' answers
    if len(members) < 2:
        return None
    best = max(t.reward for _, t in members)  # type: ignore[type-var]
    worst = min(t.reward for _, t in members)  # type: ignore[type-var]
    if best == worst:
        return None
    for i, t in members:
        if i != index and t.reward == best:
            text = t.answer or (t.turns[-1].completion_text if t.turns else "")
            if text:
                return f"A successful answer to this task:\n{text}"
    return None


def _sdar_context(trajectories: Sequence[Trajectory], index: int, config: TrainConfig) -> str | None:
    text = privileged_context(trajectories, index)
    return None if text is None else config.sdar_prefix.format(skill=text)


def _sdar_term(logp: torch.Tensor, teacher_logp: torch.Tensor, mask: torch.Tensor, denom: float,
               config: TrainConfig) -> tuple[torch.Tensor, dict[str, float]]:
    l_sdar, gate = sdar_loss(logp, teacher_logp, mask, beta=config.sdar_beta, denom=denom)
    sums = {"sdar_loss": float(l_sdar.detach()), "gate_sum": float((gate * mask).sum()),
            "gate_pos": float(((gate > 0.5).float() * mask).sum()),
            "delta_sum": float(((teacher_logp - logp.detach()) * mask).sum())}
    return config.sdar_coef * l_sdar, sums


def _sdar_summary(sums: Mapping[str, float], n_tokens: float) -> dict[str, Any]:
    n = max(1.0, n_tokens)
    out: dict[str, Any] = {"sdar_loss": sums["sdar_loss"]} if "sdar_loss" in sums else {}
    out.update(gate_mean=sums["gate_sum"] / n, gate_pos_frac=sums["gate_pos"] / n, delta_mean=sums["delta_sum"] / n,
               sdar_tokens=int(n_tokens))
    return out


SDAR_TEACHER = TeacherPass(context=_sdar_context, loss=_sdar_term, summary=_sdar_summary,
                           metric_keys=("sdar_loss", "gate_sum", "gate_pos", "delta_sum"))
"""SDAR's teacher: the policy with `sdar_prefix` (the skill used, or a best answer of the group) before the
sequence; the gated distillation loss `sdar_loss` (weight `sdar_coef`) on every token that has one."""


@advantage_estimator("sdar", fields=("scale_adv_by_std", "adv_eps", "sdar_beta", "sdar_coef", "sdar_prefix"),
                     teacher=SDAR_TEACHER)
def sdar(trajectories: Sequence[Trajectory], config: TrainConfig) -> dict[str, TrackCredit]:
    """SDAR: GRPO's track, plus its teacher pass and distillation term (`SDAR_TEACHER`)."""
    return grpo(trajectories, config)


@advantage_estimator("skill1", fields=("scale_adv_by_std", "adv_eps", "skill1_rerank_coef", "skill1_distill_coef",
                                       "skill1_rerank_phases", "skill1_distill_phases"))
def skill1(trajectories: Sequence[Trajectory], config: TrainConfig) -> dict[str, TrackCredit]:
    """Skill1 credit: util (1) from r on utilization tokens (every phase but rerank/distill); rerank (λ1)
    from NDCG on rerank tokens; distill (λ2) from r − Û on distill tokens."""
    per = [skill1_rewards(_reward(t), _skills(t)) for t in trajectories]
    rerank, distill = set(config.skill1_rerank_phases), set(config.skill1_distill_phases)

    def phase_mask(keep: Callable[[str], bool]) -> MaskFn:
        return lambda index, turns, phases: [float(keep(p)) for p in phases]

    return {
        "util": TrackCredit(1.0, [p["util"] for p in per], phase_mask(lambda p: p not in rerank and p not in distill)),
        "rerank": TrackCredit(config.skill1_rerank_coef, [p["rerank"] for p in per], phase_mask(lambda p: p in rerank)),
        "distill": TrackCredit(config.skill1_distill_coef, [p["distill"] for p in per],
                               phase_mask(lambda p: p in distill)),
    }


@advantage_estimator("dual-track", fields=("scale_adv_by_std", "adv_eps", "dual_schema_coef", "dual_answer_coef",
                                           "dual_adv_clip", "dual_schema_key", "dual_answer_keys",
                                           "dual_propose_phase"))
def dual_track(trajectories: Sequence[Trajectory], config: TrainConfig) -> dict[str, TrackCredit]:
    """Dual-Track GRPO: schema (w_sch) from the schema reward on tokens up to
    the end of the last propose turn of the main chain; answer (w_ans) from the answer rewards on all tokens;
    both advantages clipped to ±dual_adv_clip."""
    schema, answer = [], []
    for t in trajectories:
        missing = [k for k in (config.dual_schema_key, *config.dual_answer_keys) if k not in t.rewards]
        if missing:
            raise ValueError(
                f"dual-track needs reward components {missing} in trajectory {t.id} (has {sorted(t.rewards)}); "
                "set dual_schema_key / dual_answer_keys to the names your environment writes"
            )
        schema.append(float(t.rewards[config.dual_schema_key]))
        answer.append(sum(float(t.rewards[k]) for k in config.dual_answer_keys))
    propose_end = [_propose_turn(t, config.dual_propose_phase) for t in trajectories]

    def up_to_proposal(index: int, turns: Sequence[int], phases: Sequence[str]) -> list[float]:
        end = propose_end[index]
        return [float(end is not None and i <= end) for i in turns]

    return {
        "schema": TrackCredit(config.dual_schema_coef, schema, up_to_proposal, clip=config.dual_adv_clip),
        "answer": TrackCredit(config.dual_answer_coef, answer, _every_token, clip=config.dual_adv_clip),
    }


def _skills(t: Trajectory) -> dict[str, Any] | None:
    """The `SKILLS` record as the fields it was written with (a field a log lacks stays absent)."""
    record = t.records.get(SKILLS)
    return None if record is None else record.model_dump(exclude_unset=True)


def _propose_turn(t: Trajectory, phase: str) -> int | None:
    idx = [turn.index for turn in t.turns if turn.phase == phase and turn.context == "main"]
    return max(idx) if idx else None


# -- the registries: every algorithm, listed in one place ------------------------------------------------

@advantage_estimator("sft", fields=("sft_min_reward",))
def sft(trajectories: Sequence[Trajectory], config: TrainConfig) -> dict[str, TrackCredit]:
    """SFT: advantage 1 on every generated token of a trajectory with reward ≥ sft_min_reward, no baseline
    (with π_old = the current policy, the token-mean negative log-likelihood); the rest are left out, and so
    are the tokens of turns labelled `GIVEN` (history, not replies to learn)."""
    kept = [1.0 if t.reward is not None and t.reward >= config.sft_min_reward else math.nan for t in trajectories]

    def imitated(index: int, turns: Sequence[int], phases: Sequence[str]) -> list[float]:
        return [0.0 if math.isnan(kept[index]) or phase == GIVEN else 1.0 for phase in phases]

    return {"main": TrackCredit(1.0, kept, imitated, baseline=False)}


ADVANTAGE_ESTIMATORS: Mapping[str, AdvantageEstimator] = MappingProxyType(
    {declared_name(fn): fn for fn in (grpo, sdar, skill1, dual_track, sft)}
)
"""`TrainConfig.algo` → its advantage estimator."""

POLICY_LOSSES: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {declared_name(fn): fn for fn in (ppo_clip_loss, sdar_loss)}
)
"""The per-token losses: "ppo-clip" (every track), "sdar" (SDAR's gated distillation term)."""


def estimator_for(config: TrainConfig) -> AdvantageEstimator:
    """The advantage estimator of `config.algo`."""
    try:
        return ADVANTAGE_ESTIMATORS[config.algo]
    except KeyError:
        raise ValueError(f"unknown algorithm {config.algo!r}; known: {', '.join(ADVANTAGE_ESTIMATORS)}") from None


def teacher_for(config: TrainConfig) -> TeacherPass | None:
    """The teacher pass `config.algo` declares (None for an algorithm without one)."""
    return declared_teacher(estimator_for(config))
