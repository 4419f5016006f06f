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
| sft         | main (1): A = 1 on every generated token of a trajectory with r ≥ sft_min_reward, no       |
|             | baseline (the others carry nothing)                                                       |

**Nested runs.** A run that called other agents (as tools, or by handing over) holds their runs as child
trajectories, each with its own token ids. `TrainConfig.credit_nested` says whose tokens its outcome trains:
"outer" (the default) the top-level run's, "inner" its descendants', "both" all. The rule: the rewards, groups
and group statistics are the top-level runs' alone; every descendant carries its top-level run's reward and
advantage on every track, and each track's mask over its tokens follows its own phases (as for any trajectory).
So an inner agent's tokens move in the direction the whole run's outcome says, by as much as the outer
agent's do, and adding children to a batch changes no advantage (`nested_batch`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import torch

from agentkit.training.advantages import clipped, group_advantages, group_id, zero_variance_groups
from agentkit.training.algorithms import estimator_for
from agentkit.training.config import TrainConfig
from agentkit.training.sequences import TokenSequence, TrackValues
from agentkit.trajectory import Trajectory


@dataclass(frozen=True)
class Track:
    """One PPO-clip term: `tracks[name]` (advantages and mask) on the sequences and batches, weight w."""

    name: str
    weight: float


@dataclass
class NestedBatch:
    """A batch with its runs' child runs: `trajectories` (the top-level runs first, then the descendants that get
    credit, each a copy carrying its top-level run's reward and group), `roots[i]` the index of member i's
    top-level run, and `credited` the members whose tokens are trained."""

    trajectories: list[Trajectory]
    roots: list[int]
    credited: set[int] = field(default_factory=set)


def nested_batch(trajectories: Sequence[Trajectory], config: TrainConfig) -> NestedBatch:
    """The members of a batch of top-level runs under `config.credit_nested` (see the module docstring).
    Descendants without token ids are left out (a child run on a backend that returns none)."""
    members = list(trajectories)
    roots = list(range(len(members)))
    if config.credit_nested == "outer":
        return NestedBatch(members, roots, set(roots))
    for i, root in enumerate(trajectories):
        inherited = {"reward": root.reward, "rewards": dict(root.rewards), "task_id": str(group_id(root))}
        for child in descendants(root):
            if child.has_tokens:
                members.append(child.model_copy(update=inherited))
                roots.append(i)
    credited = set(range(len(trajectories), len(members)))
    if config.credit_nested == "both":
        credited |= {i for i, t in enumerate(trajectories) if t.has_tokens}
    return NestedBatch(members, roots, credited)


def descendants(trajectory: Trajectory) -> list[Trajectory]:
    """The child runs of a run, theirs, and so on (depth first, in the order they started)."""
    out: list[Trajectory] = []
    for child in trajectory.children:
        out.append(child)
        out.extend(descendants(child))
    return out


def track_rewards(trajectories: Sequence[Trajectory], config: TrainConfig) -> dict[str, list[float]]:
    """The scalar reward of each trajectory for each track (NaN = not applicable)."""
    return {name: track.rewards for name, track in estimator_for(config)(trajectories, config).items()}


def informative_groups(trajectories: Sequence[Trajectory], config: TrainConfig) -> tuple[set[Hashable], set[Hashable]]:
    """(groups with signal on at least one track, groups with none)."""
    groups = [group_id(t) for t in trajectories]
    credit = estimator_for(config)(trajectories, config)
    dead = set.intersection(*(zero_variance_groups(track.rewards, groups) if track.baseline
                              else _silent_groups(track.rewards, groups) for track in credit.values()))
    return set(groups) - dead, dead


def _silent_groups(rewards: Sequence[float], groups: Sequence[Hashable]) -> set[Hashable]:
    """Groups with no nonzero reward (for a track without a baseline, the reward is the advantage)."""
    live = {g for r, g in zip(rewards, groups, strict=True) if not math.isnan(r) and r != 0}
    return set(groups) - live


def assign_credit(
    trajectories: Sequence[Trajectory], sequences: Sequence[TokenSequence], config: TrainConfig,
    roots: Sequence[int] | None = None,
) -> tuple[list[Track], dict[str, float]]:
    """Attach each track's advantages and mask to every sequence (`TokenSequence.tracks`); return the
    tracks and reward stats.

    The tracks come from the algorithm's advantage estimator (`agentkit.training.algorithms`); this
    function only normalises each track's rewards within groups and spreads them over the tokens. With
    `roots` (a `NestedBatch`'s), only the top-level runs enter the group statistics and every member takes its
    top-level run's advantage.
    """
    groups = [group_id(t) for t in trajectories]
    credit = estimator_for(config)(trajectories, config)
    top = [i for i, r in enumerate(roots) if r == i] if roots is not None else list(range(len(trajectories)))
    rewards = {name: [track.rewards[i] for i in top] for name, track in credit.items()}
    adv = {}
    for name, track in credit.items():
        own = track.rewards if roots is None else [r if roots[i] == i else math.nan
                                                   for i, r in enumerate(track.rewards)]
        if track.baseline:
            a = group_advantages(own, groups, scale_by_std=config.scale_adv_by_std, eps=config.adv_eps)
        else:
            a = torch.nan_to_num(torch.tensor(own, dtype=torch.float32), nan=0.0)
        if roots is not None:
            a = a[torch.tensor(list(roots), dtype=torch.long)]
        adv[name] = clipped(a, track.clip) if track.clip is not None else a
    for seq in sequences:
        traj = trajectories[seq.trajectory]
        turns = seq.generated_turns
        phases = [traj.turns[i].phase for i in turns]
        n = len(turns)
        for name, track in credit.items():
            seq.tracks[name] = TrackValues(advantages=[float(adv[name][seq.trajectory])] * n,
                                           mask=track.mask(seq.trajectory, turns, phases))
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
    return [Track(name, track.weight) for name, track in credit.items()], stats
