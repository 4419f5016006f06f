"""What a run produces and how it is judged: `RunResult`, the reward types, and `succeeded`.

These sit low in the package (they import only messages, trajectories and approval state), so that the
loop, its events, extensions, environments and reward code can all name them without importing each
other. Import them from here or from where they are documented (`agentkit.RunResult`,
`agentkit.rewards.RewardFn`, `agentkit.environments.base.succeeded`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.messages import ToolCall, Usage
from agentkit.runs.approval import RunState
from agentkit.trajectory import Trajectory

Reward = float | Mapping[str, float]
"""A score: a float, or named components."""

RewardFn = Callable[[Trajectory], Reward]
"""Scores a finished trajectory."""


@dataclass
class RunResult:
    """The outcome of one run: the answer (None if the run stopped without one) and its trajectory.

    `output` is the typed value with `Agent(output_type=...)`, else the answer text. A run paused for
    approval has stop_reason "paused", lists the waiting calls in `pending`, and `state` resumes it.
    """

    answer: str | None
    trajectory: Trajectory
    output: Any = None
    pending: list[ToolCall] = field(default_factory=list)

    @property
    def stop_reason(self) -> str:
        """Why the run stopped: "final" (an answer), "max_steps", "paused", "invalid_output" or
        "repeated_call" (see `agentkit.loop.repeats`)."""
        return self.trajectory.stop_reason

    @property
    def state(self) -> RunState:
        """The paused run as JSON-serialisable state for `Agent.resume` (only for a paused run)."""
        if self.stop_reason != "paused":
            raise ValueError(f"only a paused run can be resumed; this one stopped by {self.stop_reason!r}")
        return RunState(trajectory=self.trajectory, pending=self.pending)

    @property
    def usage(self) -> Usage:
        """Tokens used by every model call of the run."""
        return self.trajectory.usage


def succeeded(trajectory: Trajectory) -> bool:
    """Whether a scored trajectory solved its task.

    A "success" component decides when the scorer gives one; else an "execution" component of 1
    (text-to-SQL); else a total reward of at least 1.
    """
    rewards = trajectory.rewards
    if "success" in rewards:
        return rewards["success"] >= 0.5
    if "execution" in rewards:
        return rewards["execution"] >= 1.0 - 1e-9
    return trajectory.reward is not None and trajectory.reward >= 1.0 - 1e-9


def apply_reward(trajectory: Trajectory, value: Reward) -> None:
    """Store a reward function's value on the trajectory: a float as `reward`; named components as `rewards`,
    with `reward` their "reward" entry, else their sum."""
    if isinstance(value, Mapping):
        trajectory.rewards = {k: float(v) for k, v in value.items()}
        trajectory.reward = float(trajectory.rewards.get("reward", sum(trajectory.rewards.values())))
    else:
        trajectory.reward = float(value)


def majority(results: Sequence[RunResult]) -> RunResult:
    """The first run whose answer (whitespace- and case-normalised) is the most common one."""
    norm = [" ".join(r.answer.split()).lower() if r.answer is not None else None for r in results]
    votes = Counter(a for a in norm if a is not None)
    if not votes:
        return results[0]
    return results[norm.index(votes.most_common(1)[0][0])]
