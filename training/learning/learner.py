"""What every learning method of `learn` is and needs: the learner protocol (`Learner`), the run's context
(`LearnContext`: environment, train tasks, metered model, out folder), and the helpers the methods share
(train episodes in batches, the skill library and notebook as a run opens them, frozen copies for evaluation).
The methods themselves are in `agentkit.training.learning.methods` (and `rl_method` for rl).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentkit.agent import DEFAULT_INSTRUCTIONS, Agent
from agentkit.environments.base import Environment, Task, run_episode
from agentkit.environments.sql import SQLEnvironment
from agentkit.loop.extensions import Extension
from agentkit.memory.notebook import DEFAULT_THRESHOLD
from agentkit.memory.notes import FailureAnalyst
from agentkit.memory.sql_analyst import SQLDiffAnalyst
from agentkit.messages import Message
from agentkit.models.protocol import GenerationSettings, ModelResponse, StreamItem, ToolSpecs
from agentkit.trajectory import Trajectory, append_jsonl


class MeteredModel:
    """A model wrapper that counts the tokens of every call (agent turns, skill and analyst calls alike)."""

    def __init__(self, model: Any) -> None:
        self.inner = model
        self.name = getattr(model, "name", type(model).__name__)
        self.tokens = 0
        self._lock = threading.Lock()

    def __getattr__(self, item: str) -> Any:  # text_tools, tokenizer, ... of the wrapped model
        return getattr(self.inner, item)

    def _count(self, response: ModelResponse) -> None:
        with self._lock:
            self.tokens += response.usage.input_tokens + response.usage.output_tokens

    def generate(self, messages: Sequence[Message], tools: ToolSpecs = (),
                 settings: GenerationSettings | None = None) -> ModelResponse:
        """The inner model's reply, its tokens counted."""
        response: ModelResponse = self.inner.generate(messages, tools, settings)
        self._count(response)
        return response

    def stream(self, messages: Sequence[Message], tools: ToolSpecs = (),
               settings: GenerationSettings | None = None) -> Iterator[StreamItem]:
        """The inner model's stream, the final response's tokens counted."""
        for item in self.inner.stream(messages, tools, settings):
            if isinstance(item, ModelResponse):
                self._count(item)
            yield item


NotesAnalyst = Literal["environment", "model"] | FailureAnalyst
"""Who writes the notes: the analyst for the environment's kind when there is one (else the model), the
model, or a given analyst."""


def notes_analyst(choice: NotesAnalyst, env: Environment, model: MeteredModel) -> FailureAnalyst | MeteredModel:
    """The analyst `choice` names for `env`: SQL environments have one that needs no model."""
    if isinstance(choice, FailureAnalyst):
        return choice
    if choice == "environment" and isinstance(env, SQLEnvironment):
        return SQLDiffAnalyst()
    return model


@dataclass
class LearnContext:
    """What every learner needs: the environment, the train tasks, the (metered) model, where to write."""

    env: Environment
    train: list[Task]
    model: MeteredModel
    out: Path
    seed: int
    max_steps: int
    train_settings: GenerationSettings
    instructions: str | None = None
    skill_options: dict[str, Any] = field(default_factory=dict)
    experience_options: dict[str, Any] = field(default_factory=dict)
    hinted_retries: bool = False
    notes_threshold: float = DEFAULT_THRESHOLD
    notes_batch: int = 4
    notes_analyst: NotesAnalyst = "environment"
    rl_config: Any = None
    concurrency: int = 1
    planner: Any = "react"

    def agent(self, tools: list[Any], *, settings: GenerationSettings, extensions: Sequence[Extension] = (),
              model: Any = None) -> Agent:
        """An agent for the environment's tools with the run's instructions, planner, step limit and
        `extensions`."""
        instructions = self.instructions or getattr(self.env, "instructions", None) or DEFAULT_INSTRUCTIONS
        return Agent(model or self.model, tools, instructions=instructions, planner=self.planner,
                     max_steps=self.max_steps, settings=settings, extensions=extensions)

    def trajectory_file(self, name: str) -> Path:
        """The JSONL log of the trajectories of `name` (a phase or method) in the output folder."""
        return self.out / "trajectories" / f"{name}.jsonl"

    def next_task(self, progress: dict[str, Any]) -> Task:
        """The next train task in a seeded order, epoch after epoch (advances `progress`)."""
        import random

        n = len(self.train)
        if progress.get("cursor", 0) >= n:
            progress["epoch"] = progress.get("epoch", 0) + 1
            progress["cursor"] = 0
        order = list(range(n))
        random.Random(self.seed * 1_000_003 + progress.get("epoch", 0)).shuffle(order)
        task: Task = self.train[order[progress.get("cursor", 0)]]
        progress["cursor"] = progress.get("cursor", 0) + 1
        return task

    def next_tasks(self, progress: dict[str, Any], n: int, *, skip: Set[str] = frozenset()) -> list[Task]:
        """The next `n` train tasks (at most the split's size), each once, passing over the ids in `skip`; fewer
        when one pass over the split finds fewer."""
        tasks: dict[str, Task] = {}
        for _ in range(len(self.train)):
            if len(tasks) >= min(n, len(self.train)):
                break
            task = self.next_task(progress)
            if task.id not in skip:
                tasks[task.id] = task
        return list(tasks.values())


def skills_settings(options: dict[str, Any], *, learning: bool) -> dict[str, Any]:
    """Skill-cycle settings: rule-based query and rerank (cheap, and no model-written tags to misread), distil only
    successful runs while learning; never distil while evaluating."""
    base = {"query": "task", "rerank": "top", "distill": "on-success"}
    merged = {**base, **options}
    if not learning:
        merged["distill"] = "off"
    return merged


def open_skills(folder: Path, options: dict[str, Any], *, learning: bool) -> Any:
    """The skill library in `folder` with the run's skill settings (`learning`: it may admit skills)."""
    from agentkit.skills import SkillLibrary

    return SkillLibrary.open(folder, **skills_settings(options, learning=learning))


def open_notes(folder: Path, threshold: float) -> Any:
    """The mistake notebook in `folder`, showing notes at cosine similarity ≥ `threshold`."""
    from agentkit.memory.notebook import MistakeNotebook

    return MistakeNotebook.open(folder, threshold=threshold)


def frozen_copy(folder: Path, target: Path) -> Path:
    """A copy of a learned artefact folder for evaluation, so held-out runs can change nothing learned
    (no skill utility updates, no distillation); the derived indexes are rebuilt in the copy."""
    if target.exists():
        shutil.rmtree(target)
    if folder.exists():
        shutil.copytree(folder, target, ignore=shutil.ignore_patterns("index", "*.index", ".lock", "*.lock"))
    else:
        target.mkdir(parents=True)
    return target


def run_batch(ctx: LearnContext, tasks: Sequence[Task], extensions: Sequence[Extension],
              method: str, *, per_task: Callable[[Task], Sequence[Extension]] | None = None,
              metadata: Mapping[str, Any] | None = None) -> list[Trajectory]:
    """Train episodes of `tasks` with `extensions` (and `per_task(task)`'s after them), `concurrency` at once;
    their trajectories in task order, each with `learn_method` = `method` and `metadata` in its metadata."""

    def play(task: Task) -> Trajectory:
        attached = [*extensions, *(per_task(task) if per_task is not None else ())]

        def build(tools: list[Any]) -> Agent:
            return ctx.agent(tools, settings=ctx.train_settings, extensions=attached)

        return run_episode(build, ctx.env, task, metadata={"learn_method": method, **(metadata or {})})

    if len(tasks) == 1:
        return [play(tasks[0])]
    with ThreadPoolExecutor(len(tasks), thread_name_prefix="agentkit-learn") as pool:
        return list(pool.map(play, tasks))


class Learner:
    """One method's learning phase: `step` plays train episodes and learns from them, until the loop's budget
    share is spent or `finished` says there is nothing left to learn."""

    name = ""
    record: str | None = None
    """The trajectory record (`extras` key) a run holds when the method acted on it, for a method that acts only
    on some runs (checks, repairs, pacing, experience): validation judges it on those runs (`acted`,
    `loop.validation_verdict`). None: the method changes every run (context in every prompt, new weights) and must
    solve `loop.MIN_GAIN` more validation tasks."""

    @classmethod
    def acted(cls, trajectory: Trajectory) -> bool:
        """Whether the method acted on this run: by default, the run holds a non-empty `record`."""
        return cls.record is not None and bool(trajectory.extras.get(cls.record))

    def step(self, progress: dict[str, Any]) -> list[Trajectory]:
        """One step of learning from new train episodes; the trajectories it played. `progress` is the
        method's saved position (the learner may keep its own figures in it)."""
        raise NotImplementedError(f"{type(self).__name__} must define step")

    def finished(self, progress: dict[str, Any]) -> bool:
        """Whether the phase may end before its budget share (by default only the budget ends it)."""
        return False

    def details(self, progress: dict[str, Any]) -> dict[str, Any]:
        """The method's progress figures for the report."""
        return {}

    def learned_nothing(self) -> bool:
        """True when nothing the method learned can reach a prompt or a reply (an empty notebook, no limits):
        the agent after it is the agent before it, so the evaluation after it would only repeat the last one."""
        return False

    def close(self) -> None:
        """Release what the learner holds open."""


def save_trajectories(path: Path, trajectories: Sequence[Trajectory]) -> None:
    """Append trajectories to a JSONL log (the loop records the file's length after each step)."""
    for trajectory in trajectories:
        append_jsonl(path, trajectory)
