"""What scores a run: the two reward-function types, defined once.

A reward is a float, or named components (summed into the reward unless one is named "reward").
`RewardFn` scores a finished trajectory (`Agent.run(..., reward_fn=...)`, an episode's `score`);
`TaskRewardFn` also gets the task it was run on (the mistake notebook's learning step, evaluation).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agentkit.environments.base import Task
from agentkit.trajectory import Trajectory

Reward = float | Mapping[str, float]
"""A score: a float, or named components."""

RewardFn = Callable[[Trajectory], Reward]
"""Scores a finished trajectory."""

TaskRewardFn = Callable[[Task, Trajectory], Reward]
"""Scores a finished trajectory of a known task (the task carries the expected answer)."""
