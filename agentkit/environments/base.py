"""The environment interface shared by evaluation and RL training.

An `Environment` holds a set of tasks; `reset(task)` starts an `Episode`, whose tools are the actions
the agent can take (each tool call is one `step`), and whose `score` turns the finished trajectory into
named reward components (the total under "reward").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentkit.messages import ToolCall
from agentkit.tools import Tool
from agentkit.trajectory import Trajectory


@dataclass
class Task:
    """One task: a stable id (GRPO groups are formed by it), the prompt, and whatever scoring needs."""

    id: str
    prompt: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class StepResult:
    """What one action produced: the observation for the agent, a step reward, and whether it ended."""

    observation: str
    reward: float = 0.0
    done: bool = False


@runtime_checkable
class Episode(Protocol):
    """One attempt at one task."""

    task: Task
    observation: str
    done: bool

    @property
    def tools(self) -> list[Tool]: ...

    def step(self, call: ToolCall) -> StepResult: ...

    def score(self, trajectory: Trajectory) -> dict[str, float]: ...

    def close(self) -> None: ...


@runtime_checkable
class Environment(Protocol):
    """A source of tasks and episodes. `identity` names it for caches (global exploration)."""

    name: str

    def identity(self) -> str: ...

    def tasks(self) -> Sequence[Task]: ...

    def reset(self, task: Task) -> Episode: ...
