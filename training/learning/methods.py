"""The ways the loop learns from the agent's own runs on the train split, each resumable step by step.

    skills  Skill1: run a train task with the library attached; a successful run is distilled into a
            skill and admitted (SkillLibrary). One step = one episode.
    notes   Mistake Notebook Learning: one batch of train tasks, notes from the failures, kept only if the
            re-answered batch wins more than it loses (MistakeNotebook.learn). One step = one batch.
    checks  (SQL) the slips the failed train runs made (a LIMIT not asked for) and the clauses of every
            train question's gold query; a confirmed query showing a slip that similar questions' answers
            lack (or every train answer lacks: a LIMIT with no ORDER BY) runs fixed (agentkit.memory.shape_checks).
    repairs each failed call of the train runs next to a call that worked for its task (the reference call,
            e.g. the gold SQL, or a later call of a run that succeeded), shown to a call that fails the same
            way (agentkit.memory.repairs).
    pacing  per-phase call limits from the runs that succeeded (agentkit.memory.pacing).
            checks, repairs and pacing are fitted from every train trajectory of the run (all methods'), then
            from bare train episodes until the run holds one per train task, refitted after each step.
            One step = `concurrency` episodes.
    rl      online GRPO (Dual-Track GRPO for SQL) with a LoRA adapter (Trainer). One step = one update on
            `tasks_per_step × group_size` fresh rollouts.

Every learner's position lives in the run's state dict (`state`), so a stopped run continues where it was.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentkit.agent import DEFAULT_INSTRUCTIONS, Agent
from agentkit.environments.base import Environment, Task, run_episode, succeeded
from agentkit.environments.sql import SQLEnvironment
from agentkit.extensions import Extension, Instructions
from agentkit.memory.notebook import DEFAULT_THRESHOLD
from agentkit.memory.notes import FailureAnalyst
from agentkit.memory.pacing import Pacing
from agentkit.memory.repairs import ReferenceCalls, Repairs
from agentkit.memory.shape_checks import ShapeChecks, gold_of
from agentkit.memory.sql_analyst import SQLDiffAnalyst
from agentkit.messages import Message, ToolCall
from agentkit.models.protocol import GenerationSettings, ModelResponse, StreamItem, ToolSpecs
from agentkit.records import SKILLS
from agentkit.sql.rewards import FIXES
from agentkit.trajectory import Trajectory, append_jsonl, read_jsonl

METHODS = ("skills", "notes", "checks", "repairs", "pacing", "rl")
DEFAULT_METHODS = ("skills", "notes", "checks", "pacing", "rl")
"""What `learn` runs when no methods are named (rl only for a local torch model: `rl_by_default`); repairs is
opt-in (why: docs/decisions.md#repairs)."""


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
    notes_threshold: float = DEFAULT_THRESHOLD
    notes_batch: int = 4
    notes_analyst: NotesAnalyst = "environment"
    rl_config: Any = None
    concurrency: int = 1

    def agent(self, tools: list[Any], *, settings: GenerationSettings, extensions: Sequence[Extension] = (),
              model: Any = None) -> Agent:
        """An agent for the environment's tools with the run's instructions, step limit and `extensions`."""
        instructions = self.instructions or getattr(self.env, "instructions", None) or DEFAULT_INSTRUCTIONS
        return Agent(model or self.model, tools, instructions=instructions, max_steps=self.max_steps,
                     settings=settings, extensions=extensions)

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

    def next_tasks(self, progress: dict[str, Any], n: int) -> list[Task]:
        """The next `n` train tasks (at most the split's size), each once."""
        tasks = [self.next_task(progress) for _ in range(min(n, len(self.train)))]
        return list({t.id: t for t in tasks}.values())


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
              method: str) -> list[Trajectory]:
    """Train episodes of `tasks` with `extensions`, `concurrency` at once; their trajectories in task order."""

    def build(tools: list[Any]) -> Agent:
        return ctx.agent(tools, settings=ctx.train_settings, extensions=extensions)

    def play(task: Task) -> Trajectory:
        return run_episode(build, ctx.env, task, metadata={"learn_method": method})

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
    on some runs (checks, repairs, pacing): validation judges it on those runs (`validation_verdict`). None: the
    method changes every run (context in every prompt, new weights) and must solve more validation tasks."""

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


class SkillsLearner(Learner):
    """Skill1 on the train split: one episode per step, successful runs distilled into the library."""

    name = "skills"

    def __init__(self, ctx: LearnContext) -> None:
        self.ctx = ctx
        self.library = open_skills(ctx.out / "skills", ctx.skill_options, learning=True)

    def step(self, progress: dict[str, Any]) -> list[Trajectory]:
        """One train episode with the learning library (`concurrency` of them at once, on different tasks);
        returns their trajectories."""
        trajectories = run_batch(self.ctx, self.ctx.next_tasks(progress, self.ctx.concurrency), [self.library],
                                 "skills")
        for trajectory in trajectories:
            record = trajectory.records.get(SKILLS)
            progress["admitted"] = progress.get("admitted", 0) + int(record is not None and record.admitted)
            progress["successes"] = progress.get("successes", 0) + int(succeeded(trajectory))
        return trajectories

    def details(self, progress: dict[str, Any]) -> dict[str, Any]:
        """The method's progress figures for the report."""
        return {"skills_in_library": len(self.library), "admitted": progress.get("admitted", 0),
                "train_successes": progress.get("successes", 0), "episodes": progress.get("episodes", 0)}

    def close(self) -> None:
        """Nothing to release."""
        return None


class NotesLearner(Learner):
    """Mistake Notebook Learning on the train split: one accept-or-roll-back batch per step. The analyst is
    `ctx.notes_analyst`: by default the one for the environment's kind (SQL compares a failed query with the
    gold query, `SQLDiffAnalyst`), else the acting model. The phase ends early when `PATIENCE` batches in a
    row that had failures to study kept no note (none was written, or none helped the re-answered batch):
    its budget goes to the next method. Why: docs/decisions.md#notes"""

    name = "notes"
    PATIENCE = 3

    def __init__(self, ctx: LearnContext) -> None:
        self.ctx = ctx
        self.notebook = open_notes(ctx.out / "notes", ctx.notes_threshold)
        self.analyst: FailureAnalyst | MeteredModel = notes_analyst(ctx.notes_analyst, ctx.env, ctx.model)

    def step(self, progress: dict[str, Any]) -> list[Trajectory]:
        """One batch of train tasks run with the notebook, learnt from (kept or rolled back); returns its runs."""
        ctx = self.ctx
        batch = ctx.next_tasks(progress, ctx.notes_batch)
        episodes: dict[str, Any] = {}
        produced: list[Trajectory] = []

        def agent_for(task: Task) -> Agent:
            episode = ctx.env.reset(task)
            episodes[task.id] = episode
            # The notebook runs the bare task: the episode's context joins as run_episode would pass it.
            context = [Instructions(text, title=title, name="episode_context")
                       for title, text in (getattr(episode, "context", None) or {}).items()]
            return ctx.agent(list(episode.tools), settings=ctx.train_settings, extensions=context)

        def reward(task: Task, trajectory: Trajectory) -> dict[str, float]:
            episode = episodes.pop(task.id)
            try:
                trajectory.rewards = dict(episode.score(trajectory))
                trajectory.reward = trajectory.rewards.get("reward")
                trajectory.metadata = {**trajectory.metadata, "learn_method": "notes"}
            finally:
                episode.close()
            produced.append(trajectory)
            return {"reward": 1.0 if succeeded(trajectory) else 0.0}

        try:
            result = self.notebook.learn(batch, reward, agent_for, analyst=self.analyst, concurrency=ctx.concurrency)
        finally:
            for episode in episodes.values():
                episode.close()
        progress["batches"] = progress.get("batches", 0) + 1
        if result.accepted:
            progress["unkept"] = 0
        elif result.failures:
            progress["unkept"] = progress.get("unkept", 0) + 1
        progress["accepted"] = progress.get("accepted", 0) + int(result.accepted)
        progress["rolled_back"] = progress.get("rolled_back", 0) + int(result.rolled_back)
        progress["last"] = result.summary()
        return produced

    def finished(self, progress: dict[str, Any]) -> bool:
        """Done when `PATIENCE` batches in a row kept no note."""
        return int(progress.get("unkept", 0)) >= self.PATIENCE

    def details(self, progress: dict[str, Any]) -> dict[str, Any]:
        """The method's progress figures for the report."""
        out = {"notes_in_notebook": len(self.notebook), "batches": progress.get("batches", 0),
               "accepted": progress.get("accepted", 0), "rolled_back": progress.get("rolled_back", 0),
               "last_batch": progress.get("last", ""), "episodes": progress.get("episodes", 0)}
        if self.finished(progress):
            out["stopped"] = (f"no note was kept in {self.PATIENCE} batches in a row (none usable was written, or "
                              "none helped its batch); the rest of the budget went to the next method")
        return out

    def learned_nothing(self) -> bool:
        """An empty notebook shows nothing (no notes section in any prompt)."""
        return len(self.notebook) == 0

    def close(self) -> None:
        """Close the notebook."""
        self.notebook.close()


class FittedLearner(Learner):
    """A method fitted from the run's train trajectories (every method's, read once), then from bare train
    episodes until the run holds one per train task, refitted after each step (pacing, repairs, checks)."""


    def __init__(self, ctx: LearnContext, progress: dict[str, Any]) -> None:
        self.ctx = ctx
        self.seen = read_jsonl(sorted((ctx.out / "trajectories").glob("train-*.jsonl")))
        self.refit(progress)  # something is saved even if the budget leaves no step

    def finished(self, progress: dict[str, Any]) -> bool:
        """Done when the run's train trajectories number at least the train split."""
        return len(self.seen) >= len(self.ctx.train)

    def step(self, progress: dict[str, Any]) -> list[Trajectory]:
        """`concurrency` bare train episodes (nothing attached: the method learns how runs go by themselves),
        then the method refitted from every train trajectory of the run."""
        trajectories = run_batch(self.ctx, self.ctx.next_tasks(progress, self.ctx.concurrency), [], self.name)
        self.seen += trajectories
        self.refit(progress)
        return trajectories

    def refit(self, progress: dict[str, Any]) -> None:
        """Fit from `self.seen`, save to the out folder, keep the figures in `progress`."""
        raise NotImplementedError(f"{type(self).__name__} must define refit")

    def close(self) -> None:
        """Nothing to release."""
        return None


class PacingLearner(FittedLearner):
    """Pacing: per-phase limits from the successful train runs; saved to OUT/pacing.json."""

    name = record = "pacing"

    def __init__(self, ctx: LearnContext, progress: dict[str, Any]) -> None:
        episode = ctx.env.reset(ctx.train[0])
        try:  # the phases of the tools that finish a run get no limit
            self.exempt = {"act"} | {t.phase for t in episode.tools if t.final and t.phase}
        finally:
            episode.close()
        super().__init__(ctx, progress)

    def refit(self, progress: dict[str, Any]) -> None:
        """Limits from every train run so far."""
        pacing = self.pacing = Pacing.fit(self.seen, exempt=self.exempt)
        pacing.save(self.ctx.out / "pacing.json")
        progress["limits"] = pacing.limits
        progress["evidence"] = pacing.evidence

    def details(self, progress: dict[str, Any]) -> dict[str, Any]:
        """The method's progress figures for the report."""
        return {"limits": progress.get("limits", {}), "evidence": progress.get("evidence", {}),
                "episodes": progress.get("episodes", 0)}

    def learned_nothing(self) -> bool:
        """Pacing without a limit declines nothing."""
        return not self.pacing.limits


def reference_calls(env: Environment, tasks: Sequence[Task]) -> ReferenceCalls | None:
    """The calls a correct run of each of `tasks` makes, from the environment's oracle (`oracle_script`), or
    None when it has none. Only `tasks` are looked up: a held-out task's reference never reaches a learner."""
    script = getattr(env, "oracle_script", None)
    if script is None:
        return None
    by_id = {t.id: t for t in tasks}

    def calls(task_id: str) -> list[ToolCall]:
        task = by_id.get(task_id)
        return [] if task is None else [c for m in script(task) if isinstance(m, Message) for c in m.tool_calls]

    return calls


class RepairsLearner(FittedLearner):
    """Repairs: each failed call of the train runs next to a call that worked for its task; OUT/repairs.json."""

    name = record = "repairs"

    def refit(self, progress: dict[str, Any]) -> None:
        """Repairs from every train run so far, with the train tasks' reference calls."""
        self.repairs = Repairs.fit(self.seen, reference_calls(self.ctx.env, self.ctx.train))
        self.repairs.save(self.ctx.out / "repairs.json")
        progress["repairs"] = len(self.repairs)
        progress["kinds"] = sorted({r.kind for r in self.repairs.items})

    def details(self, progress: dict[str, Any]) -> dict[str, Any]:
        """The method's progress figures for the report."""
        return {"repairs": progress.get("repairs", 0), "kinds": progress.get("kinds", []),
                "episodes": progress.get("episodes", 0)}

    def learned_nothing(self) -> bool:
        """No repair: nothing to show."""
        return not self.repairs.items


class ChecksLearner(FittedLearner):
    """Shape checks (SQL): the slips of the failed train runs and the train questions' gold clauses;
    OUT/checks.json. Other environments have no gold query: nothing is learned."""

    name = "checks"
    record = FIXES

    def refit(self, progress: dict[str, Any]) -> None:
        """Checks from every train run so far and the train tasks' gold queries."""
        self.checks = ShapeChecks.fit(self.seen, gold_of(self.ctx.train))
        self.checks.save(self.ctx.out / "checks.json")
        progress["slips"] = self.checks.slips

    def details(self, progress: dict[str, Any]) -> dict[str, Any]:
        """The method's progress figures for the report."""
        return {"slips": progress.get("slips", {}), "episodes": progress.get("episodes", 0)}

    def learned_nothing(self) -> bool:
        """No slip to check: none seen often enough, or every one outvoted by the train answers."""
        return not self.checks.slips


def default_rl_config(env: Environment, seed: int, max_turns: int, max_new_tokens: int | None) -> Any:
    """GRPO settings for learning on a CPU budget: Dual-Track GRPO on SQL, plain GRPO elsewhere; LoRA,
    one task of four rollouts per update, no reference model (the LoRA adapter is small); episodes as long
    as the evaluations' (turns and tokens per reply)."""
    from agentkit.training.config import TrainConfig

    algo: Literal["dual-track", "grpo"] = "dual-track" if getattr(env, "name", "").startswith("sql") else "grpo"
    return TrainConfig(algo=algo, group_size=4, tasks_per_step=1, groups_per_step=1, lr=5e-5, kl_coef=0.0,
                       max_new_tokens=max_new_tokens or 256, max_turns=max_turns, temperature=1.0, save_every=1,
                       keep_checkpoints=1, progress=False, seed=seed, max_steps=10**9)


def untrainable(model: Any) -> str | None:
    """Why the rl method cannot train `model` (None when it can: a local torch model, trained in place, or
    a GGUF model on llama.cpp, trained as a torch copy (of the adapter it runs, if any) while llama.cpp plays
    the episodes)."""
    inner = getattr(model, "inner", model)
    if _is_torch_local(inner):
        if getattr(inner, "peft", None) is not None:
            return (f"the rl method trains a torch model in place, and {inner.name!r} runs an adapter it could not "
                    "set aside again: learn on the llama.cpp engine (which trains a copy of the adapter), or "
                    "from the base model without it")
        return None
    if _is_llamacpp(inner):
        if inner.lora is not None and inner.adapter is None:
            return (f"the rl method continues the peft adapter a model was loaded with; {inner.name!r} runs a GGUF "
                    "LoRA without one (load it as local:BASE+ADAPTER_DIR)")
        return None
    name = getattr(inner, "name", type(inner).__name__)
    return (f"the rl method trains the model in-process: it needs a local model (local:NAME), not {name!r} "
            "(a server cannot be trained from here). Learn skills, notes, checks and pacing with this model: "
            "--method skills,notes,checks,pacing.")


def rl_by_default(model: Any) -> bool:
    """Whether learn's default methods include rl for `model`: only for a local torch model. On llama.cpp
    the rl method works when named (`--method ...,rl`) but is not a default: a GRPO step on a CPU costs
    minutes of the budget. Why: docs/decisions.md#rl-in-the-learning-loop"""
    return _is_torch_local(getattr(model, "inner", model)) and untrainable(model) is None


def _is_torch_local(model: Any) -> bool:
    return getattr(model, "tokenizer", None) is not None and getattr(model, "model", None) is not None


def _is_llamacpp(model: Any) -> bool:
    from agentkit.models.llamacpp import LlamaCppModel

    return isinstance(model, LlamaCppModel)


class RLLearner(Learner):
    """Online GRPO / Dual-Track GRPO with a LoRA adapter; one optimiser step per learner step."""

    name = "rl"

    def __init__(self, ctx: LearnContext, *, resume: bool) -> None:
        from agentkit.training.checkpoint import latest_checkpoint
        from agentkit.training.trainer import Trainer

        self.ctx = ctx
        problem = untrainable(ctx.model.inner)
        if problem:
            raise ValueError(problem)
        cfg = ctx.rl_config or default_rl_config(ctx.env, ctx.seed, ctx.max_steps, ctx.train_settings.max_tokens)
        cfg = cfg.model_copy(deep=True)
        cfg.progress = False
        self.folder = ctx.out / "rl"
        inner, rollout = ctx.model.inner, None
        if _is_llamacpp(inner):  # train a torch copy of the GGUF (and its adapter); llama.cpp plays the episodes
            from agentkit.models.adapter import load_with_adapter
            from agentkit.models.local import LocalModel
            from agentkit.training.llamacpp_rollout import LlamaCppRollout

            rollout = LlamaCppRollout(inner, self.folder / "adapters")
            start = inner.adapter
            inner = load_with_adapter(inner.source, start) if start is not None else LocalModel.load(inner.source)
            if "rollout_correction" not in cfg.model_fields_set:
                cfg.rollout_correction = "tis"  # the engines' numerics differ (quantised vs dequantised weights)
            if "dtype" not in cfg.model_fields_set:
                cfg.dtype = "bf16"  # the copy already differs from the GGUF, and bf16 is faster on CPUs
            if "micro_batch_size" not in cfg.model_fields_set and "gradient_checkpointing" not in cfg.model_fields_set:
                # multi-turn SQL episodes are long (thousands of tokens each): one per micro-batch, and only
                # each layer's input kept for the backward pass
                cfg.micro_batch_size, cfg.gradient_checkpointing = 1, True
        self.trainer = Trainer(inner, cfg, out_dir=self.folder, rollout=rollout)
        self._resume = resume and latest_checkpoint(self.folder) is not None
        self._rollouts = self.folder / "rollouts.jsonl"

    def step(self, progress: dict[str, Any]) -> list[Trajectory]:
        """One online trainer step on the train tasks; returns the rollouts it made."""
        from agentkit.trajectory import read_jsonl

        start = self._rollouts.stat().st_size if self._rollouts.exists() else 0
        self.trainer.config.max_steps = self.trainer.step + 1
        summary = self.trainer.fit(self.ctx.env, tasks=self.ctx.train, resume=self._resume)
        self._resume = False
        progress["steps"] = self.trainer.step
        progress["last"] = {k: v for k, v in summary.get("last", {}).items() if isinstance(v, int | float)}
        new: list[Trajectory] = []
        if self._rollouts.exists():
            with open(self._rollouts, "rb") as f:
                f.seek(start)
                chunk = f.read()
            if chunk:
                tmp = self.folder / ".step-rollouts.jsonl"
                tmp.write_bytes(chunk)
                new = read_jsonl([tmp])
                tmp.unlink()
        return new

    def export_adapter(self) -> Path | None:
        """Copy the newest checkpoint's peft adapter to OUT/adapter (loadable as local:BASE+OUT/adapter)."""
        from agentkit.training.checkpoint import latest_checkpoint

        found = latest_checkpoint(self.folder)
        if found is None or not (found / "adapter").is_dir():
            return None
        target = self.ctx.out / "adapter"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(found / "adapter", target)
        (target / "agentkit-base.json").write_text(json.dumps({"base_model": self.ctx.model.name}))
        return target

    def details(self, progress: dict[str, Any]) -> dict[str, Any]:
        """The method's progress figures for the report."""
        return {"algo": self.trainer.config.algo, "steps": progress.get("steps", 0),
                "episodes": progress.get("episodes", 0), "last": progress.get("last", {})}

    def close(self) -> None:
        """Nothing to release."""
        return None


def learner_class(method: str) -> type[Learner]:
    """The learner class of `method` (one of METHODS), for what it says before it is built."""
    classes: dict[str, type[Learner]] = {"skills": SkillsLearner, "notes": NotesLearner, "checks": ChecksLearner,
                                         "repairs": RepairsLearner, "pacing": PacingLearner, "rl": RLLearner}
    if method not in classes:
        raise ValueError(f"unknown learning method {method!r}; choose from {', '.join(METHODS)}")
    return classes[method]


def make_learner(method: str, ctx: LearnContext, progress: dict[str, Any], *, resume: bool) -> Learner:
    """The learner of `method` (one of METHODS); `progress` is its saved position."""
    if method == "skills":
        return SkillsLearner(ctx)
    if method == "notes":
        return NotesLearner(ctx)
    if method == "pacing":
        return PacingLearner(ctx, progress)
    if method == "repairs":
        return RepairsLearner(ctx, progress)
    if method == "checks":
        return ChecksLearner(ctx, progress)
    if method == "rl":
        return RLLearner(ctx, resume=resume)
    raise ValueError(f"unknown learning method {method!r}; choose from {', '.join(METHODS)}")


def use_adapter(model: Any, adapter: Path | None) -> None:
    """Run local `model` with the learned LoRA `adapter`, or without it (None: as loaded, the base weights or
    the adapter it came with). The rl phase leaves its adapter on the model; an agent that does not keep rl
    (validation set it aside) must run the model as loaded, and a run resumed after the phase must get the
    learned adapter back."""
    if _is_llamacpp(model):
        from agentkit.models.gguf_lora import gguf_adapter

        adapter = adapter or model.adapter
        target = gguf_adapter(adapter, model.model_path) if adapter is not None else None
        if model.lora != target:
            model.set_lora(target)
        return
    from peft.tuners.tuners_utils import BaseTunerLayer

    layers = [m for m in model.model.modules() if isinstance(m, BaseTunerLayer)]
    if adapter is not None and not layers:
        import peft

        peft.PeftModel.from_pretrained(model.model, str(adapter))  # injects the LoRA layers into the module
    for layer in layers:
        layer.enable_adapters(adapter is not None)
    reset = getattr(model, "reset_cache", None)
    if callable(reset):
        reset()


def save_trajectories(path: Path, trajectories: Sequence[Trajectory]) -> None:
    """Append trajectories to a JSONL log (the loop records the file's length after each step)."""
    for trajectory in trajectories:
        append_jsonl(path, trajectory)
