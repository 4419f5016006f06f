"""Evaluate agent configurations on an environment (the reports are written by `agentkit.evaluation.reports`).

    env = ToolUseEnvironment.sample()
    runs = [evaluate(env, EvalConfig("react", lambda tools: Agent(model, tools))),
            evaluate(env, EvalConfig("map-then-act", lambda tools: Agent(model, tools, planner="map-then-act")))]
    write_report(runs, "eval-out")        # agentkit.evaluation.reports: results.json, results.md, report.html

Each task is one episode (`agentkit.environments.base.run_episode`): a fresh agent, the episode's
tools, the episode's scorer as reward function. Tasks run in worker threads (`concurrency`); a task
that raises is recorded as a failure with its error, never ends the evaluation.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, computed_field

from agentkit.environments.base import AgentFactory, Environment, OracleEnvironment, Task, run_episode, succeeded
from agentkit.loop.planning import EXPLORE_SYSTEM, MAP_SYSTEM
from agentkit.messages import Message
from agentkit.testing import FunctionModel
from agentkit.trajectory import Trajectory, append_jsonl

RESULTS_SCHEMA_VERSION = 1


@dataclass
class EvalConfig:
    """One configuration under evaluation: a label and how to build the agent for an episode."""

    label: str
    agent_factory: AgentFactory


class TaskResult(BaseModel):
    """The outcome of one task under one configuration."""

    task_id: str
    config: str
    success: bool = False
    reward: float | None = None
    rewards: dict[str, float] = Field(default_factory=dict)
    steps: int = 0
    turns: int = 0
    phases: dict[str, int] = Field(default_factory=dict)
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    wall_s: float = 0.0
    stop_reason: str = ""
    answer: str | None = None
    error: str | None = None
    trajectory_id: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tokens(self) -> int:
        """Input plus output tokens of every model call of the task."""
        return self.input_tokens + self.output_tokens


class EvalRun(BaseModel):
    """All task results of one configuration on one environment (trajectories kept in memory only)."""

    schema_version: int = RESULTS_SCHEMA_VERSION
    config: str
    environment: str
    model: str = ""
    started_at: float = Field(default_factory=time.time)
    wall_s: float = 0.0
    results: list[TaskResult] = Field(default_factory=list)
    trajectories: dict[str, Trajectory] = Field(default_factory=dict, exclude=True)

    def summary(self) -> dict[str, Any]:
        """Success rate, mean reward, per-task means of steps, tokens and wall time, and the total cost
        (US dollars, None when no model call had a known price)."""
        rs = self.results
        if not rs:
            return {"config": self.config, "tasks": 0}

        def mean(values: list[float]) -> float:
            return round(statistics.fmean(values), 4) if values else 0.0

        return {
            "config": self.config,
            "tasks": len(rs),
            "success_rate": mean([float(r.success) for r in rs]),
            "mean_reward": mean([r.reward or 0.0 for r in rs]),
            "mean_steps": mean([float(r.steps) for r in rs]),
            "mean_tokens": mean([float(r.tokens) for r in rs]),
            "mean_wall_s": mean([r.wall_s for r in rs]),
            "cost_usd": round(sum(costs), 6) if (costs := [r.cost_usd for r in rs if r.cost_usd is not None]) else None,
            "errors": sum(r.error is not None for r in rs),
        }


def result_of(task: Task, config: str, trajectory: Trajectory) -> TaskResult:
    """Summarise a scored trajectory as a `TaskResult`."""
    phases: dict[str, int] = {}
    for turn in trajectory.turns:
        phases[turn.phase] = phases.get(turn.phase, 0) + 1
    usage = trajectory.usage
    return TaskResult(
        task_id=task.id, config=config, success=succeeded(trajectory), reward=trajectory.reward,
        rewards=dict(trajectory.rewards), steps=sum(t.context == "main" for t in trajectory.turns),
        turns=len(trajectory.turns), phases=phases,
        tool_calls=sum(len(m.tool_calls) for m in trajectory.messages if m.role == "assistant"),
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost_usd=usage.cost_usd,
        wall_s=round(trajectory.duration_s, 4),
        stop_reason=trajectory.stop_reason, answer=trajectory.answer, trajectory_id=trajectory.id,
    )


def evaluate(
    env: Environment,
    config: EvalConfig,
    *,
    tasks: Sequence[Task] | None = None,
    concurrency: int = 1,
    log: str | Path | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
) -> EvalRun:
    """Run every task (default: all of the environment's) under one configuration.

    Args:
        env: the environment.
        config: label and agent factory.
        tasks: a subset of tasks to run.
        concurrency: worker threads running episodes at once.
        log: a JSONL file each trajectory is appended to as it finishes.
        on_result: called (from the worker thread) after each task, e.g. to advance a progress bar.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    todo = list(tasks if tasks is not None else env.tasks())
    run = EvalRun(config=config.label, environment=env.name)
    started = time.perf_counter()
    lock = threading.Lock()
    results: dict[int, TaskResult] = {}

    def one(i: int, task: Task) -> None:
        t0 = time.perf_counter()
        try:
            trajectory = run_episode(config.agent_factory, env, task, metadata={"config": config.label})
            result = result_of(task, config.label, trajectory)
            result.wall_s = round(time.perf_counter() - t0, 4)  # the whole episode, environment set-up included
        except Exception as exc:  # a broken episode is a failed task, not a failed evaluation
            trajectory = None
            result = TaskResult(task_id=task.id, config=config.label, error=f"{type(exc).__name__}: {exc}",
                                wall_s=round(time.perf_counter() - t0, 4), stop_reason="error")
        with lock:
            results[i] = result
            if trajectory is not None:
                run.trajectories[task.id] = trajectory
                run.model = run.model or trajectory.model
                if log is not None:
                    append_jsonl(log, trajectory)
            if on_result is not None:  # one at a time, so callers need no lock of their own
                on_result(result)

    if concurrency == 1:
        for i, task in enumerate(todo):
            one(i, task)
    else:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="agentkit-eval") as pool:
            for future in as_completed([pool.submit(one, i, t) for i, t in enumerate(todo)]):
                future.result()
    run.results = [results[i] for i in range(len(todo))]
    run.wall_s = round(time.perf_counter() - started, 4)
    return run


# -- a scripted upper bound -----------------------------------------------------------------------

ScriptFor = Callable[[Task], Sequence[Message | str]]

ORACLE_PRIORS = "- (oracle) the expected actions are known; no exploration needed."
ORACLE_MAP = '{"subgoals": [{"goal": "carry out the expected actions"}], "unknowns": []}'


def oracle_model(tasks: Sequence[Task], script_for: ScriptFor, name: str = "oracle") -> FunctionModel:
    """A scripted "oracle-policy" model: for each task it replays `script_for(task)` (the expected actions,
    then a final reply), whatever the planner. Its score is the upper bound the harness allows: anything
    below 100% is a bug in the environment's reward code or the harness."""
    scripts = {t.id: list(script_for(t)) for t in tasks}
    by_prompt = sorted(tasks, key=lambda t: len(t.prompt), reverse=True)

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> Message | str:
        system = messages[0].content if messages and messages[0].role == "system" else ""
        if system.startswith(EXPLORE_SYSTEM):
            return ORACLE_PRIORS
        if system.startswith(MAP_SYSTEM):
            return ORACLE_MAP
        first_user = next((m.content for m in messages if m.role == "user"), "")
        task = next((t for t in by_prompt if t.prompt and t.prompt in first_user), None)
        if task is None:
            raise LookupError("oracle: the conversation matches no known task")
        step = sum(m.role == "assistant" for m in messages)
        script = scripts[task.id]
        return script[min(step, len(script) - 1)]

    return FunctionModel(reply, name=name)


def oracle_script_for(env: Any) -> ScriptFor:
    """The oracle policy an environment offers beside its code (an `OracleEnvironment`'s `oracle_script`)."""
    if isinstance(env, OracleEnvironment):
        return env.oracle_script
    raise ValueError(f"environment {getattr(env, 'name', env)!r} has no oracle policy (oracle_script)")
