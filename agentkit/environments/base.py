"""The environment interface shared by evaluation and RL training.

An `Environment` holds a set of tasks; `reset(task)` starts an `Episode`, whose tools are the actions
the agent can take (each tool call is one `step`), and whose `score` turns the finished trajectory into
named reward components (the total under "reward").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentkit.agent import Agent
from agentkit.messages import Message, ToolCall
from agentkit.results import succeeded as succeeded
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
    """One attempt at one task. An episode may also carry `context: dict[str, str]`, titled text the
    agent's system prompt shows for this episode (the SQL environment's schema digest); `run_episode`
    passes it on."""

    task: Task
    observation: str
    done: bool

    @property
    def tools(self) -> list[Tool]:
        """The actions of this episode, as tools the agent may call."""
        ...

    def step(self, call: ToolCall) -> StepResult:
        """Apply one action; returns the observation, a step reward and whether the episode ended."""
        ...

    def score(self, trajectory: Trajectory) -> dict[str, float]:
        """Named reward components of the finished run (the total under "reward")."""
        ...

    def close(self) -> None:
        """Release what the episode holds (connections, processes)."""
        ...


@runtime_checkable
class Environment(Protocol):
    """A source of tasks and episodes. `identity` names it for caches (global exploration)."""

    name: str

    def identity(self) -> str:
        """A stable name of this environment's contents, for caches (global exploration)."""
        ...

    def tasks(self) -> Sequence[Task]:
        """The tasks of this environment."""
        ...

    def reset(self, task: Task) -> Episode:
        """Start an episode of `task`."""
        ...


@runtime_checkable
class OracleEnvironment(Protocol):
    """An environment that ships its oracle policy beside its code: the expected actions of each task."""

    def oracle_script(self, task: Task) -> Sequence[Message | str]:
        """The replies an oracle gives for `task`: its expected tool calls in order, then a final answer."""
        ...


AgentFactory = Callable[[list[Tool]], Agent]
"""Builds a fresh agent for one episode from the episode's tools."""


def episode_prompt(task: Task, episode: Episode) -> str:
    """The task's prompt, followed by the episode's first observation when that adds something."""
    observation = (episode.observation or "").strip()
    if not observation or observation in task.prompt:
        return task.prompt
    return f"{task.prompt}\n\n{observation}"


def run_episode(
    agent_factory: AgentFactory,
    env: Environment,
    task: Task,
    *,
    metadata: Mapping[str, Any] | None = None,
) -> Trajectory:
    """Play one task: reset the environment, build an agent with the episode's tools, run it with
    `task_id=task.id` and the episode's scorer as `reward_fn`, and close everything again."""
    episode = env.reset(task)
    try:
        agent = agent_factory(list(episode.tools))
        try:
            result = agent.run(
                episode_prompt(task, episode),
                task_id=task.id,
                reward_fn=episode.score,
                metadata={"environment": env.name, **(metadata or {})},
                context=getattr(episode, "context", None),
            )
        finally:
            agent.close()
    finally:
        episode.close()
    return result.trajectory
