"""What scores a run: the two reward-function types, defined once.

A reward is a float, or named components (summed into the reward unless one is named "reward").
`RewardFn` scores a finished trajectory (`Agent.run(..., reward_fn=...)`, an episode's `score`);
`TaskRewardFn` also gets the task it was run on (the mistake notebook's learning step, evaluation).
`Reward` and `RewardFn` are defined in `agentkit.results` (low in the package, for the loop) and named here.
"""

from __future__ import annotations

from collections.abc import Callable

from agentkit.environments.base import Task
from agentkit.results import Reward as Reward
from agentkit.results import RewardFn as RewardFn
from agentkit.trajectory import Trajectory

TaskRewardFn = Callable[[Task, Trajectory], Reward]
"""Scores a finished trajectory of a known task (the task carries the expected answer)."""
