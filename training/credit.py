"""Credit assignment: which advantage each generated token carries, per algorithm.

A *track* is one PPO-clip term: a per-token advantage, a per-token mask and a weight; the policy loss
is Σ_k w_k · PPOclip(A_k; M_k), each term a token-mean over its own mask across the batch.

| algo        | tracks (weight)                                                                           |
|-------------|-------------------------------------------------------------------------------------------|
| grpo, sdar  | main (1): A = group-normalised r on every generated token                                 |
| skill1      | util (1): A(r) on utilization tokens (every phase but rerank/distill);                    |
|             | rerank (λ1 = 0.3): A(NDCG) on rerank tokens; distill (λ2 = 0.3): A(r − Û) on distill tokens |
| dual-track  | schema (w_sch = 0.25): clip(A(r_schema), ±10) on tokens up to the end of the last          |
|             | propose_schema turn of the main chain; answer (w_ans = 1): clip(A(r_answer), ±10) on all  |
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from agentkit.training.advantages import clipped, group_advantages, skill1_rewards, zero_variance_groups
from agentkit.training.config import TrainConfig
from agentkit.training.sequences import TokenSequence
from agentkit.trajectory import Trajectory


@dataclass(frozen=True)
class Track:
    """One PPO-clip term: values["adv:NAME"] and values["mask:NAME"] on the sequences, weight w."""

    name: str
    weight: float


def group_id(trajectory: Trajectory) -> Hashable:
    """The GRPO group of a trajectory: its task id (or, without one, its task text)."""
    return trajectory.task_id if trajectory.task_id is not None else trajectory.task


def track_rewards(trajectories: Sequence[Trajectory], config: TrainConfig) -> dict[str, list[float]]:
    """The scalar reward of each trajectory for each track (NaN = not applicable)."""
    algo = config.algo
    if algo in ("grpo", "sdar"):
        return {"main": [_reward(t) for t in trajectories]}
    if algo == "skill1":
        per = [skill1_rewards(_reward(t), t.extras.get("skills")) for t in trajectories]
        return {k: [p[k] for p in per] for k in ("util", "rerank", "distill")}
    if algo == "dual-track":
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
        return {"schema": schema, "answer": answer}
    raise ValueError(f"unknown algorithm {algo!r}")


def tracks_for(config: TrainConfig) -> list[Track]:
    if config.algo == "skill1":
        return [Track("util", 1.0), Track("rerank", config.skill1_rerank_coef),
                Track("distill", config.skill1_distill_coef)]
    if config.algo == "dual-track":
        return [Track("schema", config.dual_schema_coef), Track("answer", config.dual_answer_coef)]
    return [Track("main", 1.0)]


def informative_groups(trajectories: Sequence[Trajectory], config: TrainConfig) -> tuple[set[Hashable], set[Hashable]]:
    """(groups with signal on at least one track, groups with none)."""
    groups = [group_id(t) for t in trajectories]
    rewards = track_rewards(trajectories, config)
    dead = set.intersection(*(zero_variance_groups(r, groups) for r in rewards.values()))
    return set(groups) - dead, dead


def assign_credit(
    trajectories: Sequence[Trajectory], sequences: Sequence[TokenSequence], config: TrainConfig
) -> tuple[list[Track], dict[str, float]]:
    """Attach adv:/mask: values for each track to every sequence; return the tracks and reward stats."""
    groups = [group_id(t) for t in trajectories]
    rewards = track_rewards(trajectories, config)
    adv = {
        name: group_advantages(r, groups, scale_by_std=config.scale_adv_by_std, eps=config.adv_eps)
        for name, r in rewards.items()
    }
    if config.algo == "dual-track":
        adv = {k: clipped(v, config.dual_adv_clip) for k, v in adv.items()}
    rerank = set(config.skill1_rerank_phases)
    distill = set(config.skill1_distill_phases)
    propose_end = [_propose_turn(t, config.dual_propose_phase) for t in trajectories]
    for seq in sequences:
        traj = trajectories[seq.trajectory]
        turns = seq.generated_turns
        phases = [traj.turns[i].phase for i in turns]
        n = len(turns)
        if config.algo == "skill1":
            masks = {
                "rerank": [float(p in rerank) for p in phases],
                "distill": [float(p in distill) for p in phases],
                "util": [float(p not in rerank and p not in distill) for p in phases],
            }
        elif config.algo == "dual-track":
            end = propose_end[seq.trajectory]
            masks = {"schema": [float(end is not None and i <= end) for i in turns], "answer": [1.0] * n}
        else:
            masks = {"main": [1.0] * n}
        for name, m in masks.items():
            seq.values[f"mask:{name}"] = m
            seq.values[f"adv:{name}"] = [float(adv[name][seq.trajectory])] * n
    main = rewards.get("main") or rewards.get("util") or rewards.get("answer") or []
    valid = [r for r in main if not math.isnan(r)]
    stats = {
        "reward_mean": sum(valid) / max(1, len(valid)),
        "reward_max": max(valid, default=0.0),
        "reward_min": min(valid, default=0.0),
    }
    for name, r in rewards.items():
        if name != "main":
            v = [x for x in r if not math.isnan(x)]
            stats[f"reward_{name}"] = sum(v) / max(1, len(v))
    return tracks_for(config), stats


def privileged_context(trajectories: Sequence[Trajectory], index: int) -> str | None:
    """SDAR's privileged text for trajectory `index`: the skill it used (extras["skills"]["used_text"]),
    else the answer of another member of its group that reached the group's best reward (when the
    group is not all equal), else None (no teacher signal for it)."""
    traj = trajectories[index]
    skills = traj.extras.get("skills") or {}
    if skills.get("used_text"):
        return str(skills["used_text"])
    g = group_id(traj)
    members = [(i, t) for i, t in enumerate(trajectories) if group_id(t) == g and t.reward is not None]
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


def _reward(t: Trajectory) -> float:
    return float(t.reward) if t.reward is not None else math.nan


def _propose_turn(t: Trajectory, phase: str) -> int | None:
    idx = [turn.index for turn in t.turns if turn.phase == phase and turn.context == "main"]
    return max(idx) if idx else None
