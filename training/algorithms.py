"""RL algorithms as registered functions (the verl way): the trainer only wires them.

An **advantage estimator** turns a batch of scored trajectories into *tracks*: each track is one
PPO-clip term with a weight, a reward per trajectory (group-normalised into the advantage; NaN = not
applicable) and a mask saying which generated tokens carry it (optionally clipped). A **policy loss**
is the per-token loss those advantages feed. Each is one function, declared with `@advantage_estimator`
or `@policy_loss` together with the `TrainConfig` fields it reads; the decorators only annotate, and
the registries `ADVANTAGE_ESTIMATORS` and `POLICY_LOSSES` below list the functions in one place.

Adding an algorithm: write its estimator here (and a loss in `losses.py` if it needs a new one),
list it in `ADVANTAGE_ESTIMATORS`, and add its name to `TrainConfig.algo`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from agentkit.records import SKILLS
from agentkit.training.advantages import skill1_rewards
from agentkit.training.config import TrainConfig
from agentkit.training.losses import ppo_clip_loss, sdar_loss
from agentkit.training.registry import advantage_estimator, declared_name
from agentkit.trajectory import Trajectory

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


@advantage_estimator("sdar", fields=("scale_adv_by_std", "adv_eps"))
def sdar(trajectories: Sequence[Trajectory], config: TrainConfig) -> dict[str, TrackCredit]:
    """SDAR: GRPO's track; its distillation term is the `sdar` loss (the trainer adds the teacher pass)."""
    return grpo(trajectories, config)


@advantage_estimator("skill1", fields=("scale_adv_by_std", "adv_eps", "skill1_rerank_coef", "skill1_distill_coef",
                                       "skill1_rerank_phases", "skill1_distill_phases"))
def skill1(trajectories: Sequence[Trajectory], config: TrainConfig) -> dict[str, TrackCredit]:
    """Skill1 credit: util (1) from r on utilization tokens (every phase but rerank/distill); rerank (λ1)
    from NDCG on rerank tokens; distill (λ2) from r − Û on distill tokens (METHODS.md §2)."""
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
    """Dual-Track GRPO (METHODS.md §5): schema (w_sch) from the schema reward on tokens up to the end of the
    last propose turn of the main chain; answer (w_ans) from the answer rewards on all tokens; both
    advantages clipped to ±dual_adv_clip."""
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

ADVANTAGE_ESTIMATORS: Mapping[str, AdvantageEstimator] = MappingProxyType(
    {declared_name(fn): fn for fn in (grpo, sdar, skill1, dual_track)}
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
