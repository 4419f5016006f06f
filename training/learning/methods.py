"""The ways the loop learns from the agent's own runs on the train split, each resumable step by step.

    skills  Skill1: run a train task with the library attached; a successful run is distilled into a
            skill and admitted (SkillLibrary). One step = one episode.
    notes   Mistake Notebook Learning: one batch of train tasks, notes from the failures, kept only if the
            re-answered batch wins more than it loses (MistakeNotebook.learn). One step = one batch.
    experience  the agent's verified train runs (its answer matched the gold query's) as worked examples, shown
            by question and SQL-skeleton similarity to later runs on the same database (agentkit.memory.experience).
            One step = `concurrency` episodes with the experience attached; one pass over the train split.
            With hinted retries (`learn(hinted_retries=True)`), a failed run is played once more with its gold
            query's shape as a hint (STaR's rationalisation), and a verified retry is an example like any other.
    checks  (SQL) the slips the failed train runs made (a LIMIT not asked for) and the clauses of every
            train question's gold query; a confirmed query showing a slip that similar questions' answers
            lack runs fixed (agentkit.memory.shape_checks).
    repairs each failed call of the train runs next to a call that worked for its task (the reference call,
            e.g. the gold SQL, or a later call of a run that succeeded), shown to a call that fails the same
            way (agentkit.memory.repairs).
    pacing  per-phase call limits from the runs that succeeded (agentkit.memory.pacing).
            checks, repairs and pacing are fitted from every train trajectory of the run (all methods'), then
            from bare train episodes until the run holds one per train task, refitted after each step.
            One step = `concurrency` episodes.
    rl      online GRPO (Dual-Track GRPO for SQL) with a LoRA adapter (Trainer; `rl_method`). One step = one
            update on `tasks_per_step × group_size` fresh rollouts.

Every learner's position lives in the run's state dict (`state`), so a stopped run continues where it was.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from agentkit.agent import Agent
from agentkit.environments.base import Environment, Task, succeeded
from agentkit.environments.sql import SQLEnvironment
from agentkit.loop.extensions import Extension, Instructions
from agentkit.memory.experience import HINTED
from agentkit.memory.notes import FailureAnalyst
from agentkit.memory.pacing import Pacing
from agentkit.memory.repairs import ReferenceCalls, Repairs
from agentkit.memory.shape_checks import ShapeChecks, gold_of
from agentkit.messages import Message, ToolCall
from agentkit.records import EXPERIENCE, SKILLS
from agentkit.sql.rewards import FIXES
from agentkit.training.learning.learner import (
    LearnContext,
    Learner,
    MeteredModel,
    NotesAnalyst,
    frozen_copy,
    notes_analyst,
    open_notes,
    open_skills,
    run_batch,
    save_trajectories,
    skills_settings,
)
from agentkit.training.learning.rl_method import (
    RLLearner,
    default_rl_config,
    rl_by_default,
    untrainable,
    use_adapter,
)
from agentkit.training.sql_drafts import skeleton_hint
from agentkit.trajectory import Trajectory, read_jsonl

HINT_TITLE = "Hint"
"""The heading of a hinted retry's hint (`ExperienceLearner.hint`)."""

METHODS = ("skills", "notes", "experience", "checks", "repairs", "pacing", "rl")
DEFAULT_METHODS = ("skills", "notes", "checks", "pacing", "experience", "rl")
"""What `learn` runs when no methods are named, in this order (`default_methods`): experience only on a SQL
environment, after the context methods whose verified runs it admits; rl only for a local torch model
(`rl_by_default`), last. Repairs are opt-in (why: docs/decisions.md#repairs, docs/decisions.md#experience)."""


def default_methods(env: Environment, rl: bool) -> list[str]:
    """DEFAULT_METHODS for `env`: experience only on a `SQLEnvironment`, rl only when `rl` (a model `learn` can
    train)."""
    sql = isinstance(env, SQLEnvironment)
    return [m for m in DEFAULT_METHODS if (m != "experience" or sql) and (m != "rl" or rl)]


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


class ExperienceLearner(Learner):
    """Experience: train episodes with the experience attached; every verified run (its answer matched the gold
    query's) on a train task becomes a worked example of its database, from the run's earlier train trajectories
    (every method's) and from this phase's own; OUT/experience.json. The phase ends after one pass over the
    train split (greedy runs of the same tasks would mostly repeat themselves), and its pass skips the tasks an
    earlier method's run already made an example of: placed after other methods, it spends its budget on the
    questions they did not answer. A run is shown examples only when its question is like a verified one
    (`Experience.min_similarity`), so validation judges the method on the runs that were shown some (`acted`).
    With `ctx.hinted_retries`, a train run that failed is played once more with the skeleton of its task's gold
    query in the system prompt (`hint`): the kinds of question the agent never answers by itself can still become
    examples, of its own SQL, while held-out runs never see a hint."""

    name = "experience"
    record = EXPERIENCE.name

    @classmethod
    def acted(cls, trajectory: Trajectory) -> bool:
        """Whether the run was shown worked examples."""
        shown = trajectory.records.get(EXPERIENCE)
        return shown is not None and bool(shown.shown)

    def __init__(self, ctx: LearnContext, progress: dict[str, Any]) -> None:
        from agentkit.memory.experience import Experience

        self.ctx = ctx
        self.path = ctx.out / "experience.json"
        options = ctx.experience_options
        self.experience = Experience.load(self.path, **options) if self.path.exists() else Experience(**options)
        self._train = {t.id: t for t in ctx.train}
        self._gold = gold_of(ctx.train)
        self._keys: dict[str, str | None] = {}
        if not progress.get("seeded"):  # the verified runs the earlier methods already played
            earlier = read_jsonl(sorted((ctx.out / "trajectories").glob("train-*.jsonl")))
            progress["admitted"] = sum(self.admit(t) for t in earlier)
            progress["seeded"] = True
            self.experience.save(self.path)

    def database(self, task: Task) -> str | None:
        """The database key of `task`'s episode tools (`agentkit.memory.experience.database_key`), once per
        database."""
        from agentkit.memory.experience import database_key

        where = str(task.data.get("db") or "")
        if where not in self._keys:
            episode = self.ctx.env.reset(task)
            try:
                self._keys[where] = database_key({t.name: t for t in episode.tools})
            finally:
                episode.close()
        return self._keys[where]

    def admit(self, trajectory: Trajectory) -> bool:
        """Keep a verified run of a train task as an example; whether it was kept."""
        task = self._train.get(trajectory.task_id or "")
        if task is None:
            return False
        return self.experience.admit(trajectory, database=self.database(task)) is not None

    def step(self, progress: dict[str, Any]) -> list[Trajectory]:
        """`concurrency` train episodes with the experience attached, their verified runs admitted; with
        `hinted_retries`, each that failed played once more with its gold query's shape as a hint (`hint`)."""
        tasks = self.unanswered(progress, self.ctx.concurrency)
        trajectories = run_batch(self.ctx, tasks, [self.experience], "experience") if tasks else []
        missed = [task for task, trajectory in zip(tasks, trajectories, strict=True)
                  if self.ctx.hinted_retries and not succeeded(trajectory) and task.id in self._gold]
        hinted = run_batch(self.ctx, missed, [self.experience], "experience", per_task=self.hint,
                           metadata={HINTED: True}) if missed else []
        uses: Counter[str] = Counter(progress.get("use", {}))
        for trajectory in [*trajectories, *hinted]:
            admitted = self.admit(trajectory)
            progress["admitted"] = progress.get("admitted", 0) + int(admitted)
            progress["successes"] = progress.get("successes", 0) + int(succeeded(trajectory))
            if trajectory.metadata.get(HINTED):
                progress["hinted"] = progress.get("hinted", 0) + 1
                progress["hinted_admitted"] = progress.get("hinted_admitted", 0) + int(admitted)
            record = trajectory.records.get(EXPERIENCE)
            if record is not None and record.use is not None:
                uses[record.use] += 1
        progress["use"] = dict(uses)
        self.experience.save(self.path)
        return [*trajectories, *hinted]

    def hint(self, task: Task) -> list[Extension]:
        """The hint of a retried train task: the skeleton of its gold query (`skeleton_hint`: what the query
        does, every name and value masked) in the system prompt, never in the question, so the example a verified
        retry makes holds the plain question."""
        return [Instructions(skeleton_hint(self._gold[task.id][1]), title=HINT_TITLE, name="hint")]

    def unanswered(self, progress: dict[str, Any], n: int) -> list[Task]:
        """The next at most `n` train tasks of this phase's one pass that no example answers yet: a task an
        earlier method's verified run already made an example of is passed over, so the budget goes to questions
        the experience does not hold."""
        answered = {e.task_id for e in self.experience.examples if e.task_id}
        tasks: list[Task] = []
        while len(tasks) < n and not self.finished(progress):
            task = self.ctx.next_task(progress)
            if task.id not in answered:
                tasks.append(task)
        return tasks

    def finished(self, progress: dict[str, Any]) -> bool:
        """Done after one pass over the train split."""
        return int(progress.get("epoch", 0)) >= 1 or int(progress.get("cursor", 0)) >= len(self.ctx.train)

    def details(self, progress: dict[str, Any]) -> dict[str, Any]:
        """The method's progress figures for the report (`use`: how the runs' confirmed queries related to the
        examples shown: copied, adapted, own)."""
        out = {"examples": len(self.experience), "admitted": progress.get("admitted", 0),
               "train_successes": progress.get("successes", 0), "episodes": progress.get("episodes", 0),
               "use": progress.get("use", {})}
        if self.ctx.hinted_retries:
            out |= {"hinted": progress.get("hinted", 0), "hinted_admitted": progress.get("hinted_admitted", 0)}
        return out

    def learned_nothing(self) -> bool:
        """No example: nothing to show."""
        return len(self.experience) == 0


class FittedLearner(Learner):
    """A method fitted from the run's train trajectories (every method's, read once), then from bare train
    episodes of the train tasks no run has played yet, until the run holds one per train task, refitted after
    each step (pacing, repairs, checks). Why: docs/decisions.md#fitted-methods-play-new-tasks"""


    def __init__(self, ctx: LearnContext, progress: dict[str, Any]) -> None:
        self.ctx = ctx
        runs = read_jsonl(sorted((ctx.out / "trajectories").glob("train-*.jsonl")))
        self.seen = [t for t in runs if not t.metadata.get(HINTED)]  # a hinted retry is not how runs go
        self.refit(progress)  # something is saved even if the budget leaves no step

    def played(self) -> set[str]:
        """The ids of the train tasks the run holds a trajectory of."""
        return {t.task_id for t in self.seen if t.task_id is not None}

    def finished(self, progress: dict[str, Any]) -> bool:
        """Done when the run holds a trajectory of every train task."""
        return {t.id for t in self.ctx.train} <= self.played()

    def step(self, progress: dict[str, Any]) -> list[Trajectory]:
        """`concurrency` bare train episodes of tasks not played yet (nothing attached: the method learns how
        runs go by themselves), then the method refitted from every train trajectory of the run."""
        tasks = self.ctx.next_tasks(progress, self.ctx.concurrency, skip=self.played())
        trajectories = run_batch(self.ctx, tasks, [], self.name)
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


def learner_class(method: str) -> type[Learner]:
    """The learner class of `method` (one of METHODS), for what it says before it is built."""
    classes: dict[str, type[Learner]] = {"skills": SkillsLearner, "notes": NotesLearner,
                                         "experience": ExperienceLearner, "checks": ChecksLearner,
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
    if method == "experience":
        return ExperienceLearner(ctx, progress)
    if method == "pacing":
        return PacingLearner(ctx, progress)
    if method == "repairs":
        return RepairsLearner(ctx, progress)
    if method == "checks":
        return ChecksLearner(ctx, progress)
    if method == "rl":
        return RLLearner(ctx, resume=resume)
    raise ValueError(f"unknown learning method {method!r}; choose from {', '.join(METHODS)}")


__all__ = ["DEFAULT_METHODS", "METHODS", "ChecksLearner", "ExperienceLearner", "FittedLearner", "LearnContext",
           "Learner", "MeteredModel", "NotesAnalyst", "NotesLearner", "PacingLearner", "RLLearner", "RepairsLearner",
           "SkillsLearner", "default_methods", "default_rl_config", "frozen_copy", "learner_class", "make_learner",
           "notes_analyst", "open_notes", "open_skills", "reference_calls", "rl_by_default", "run_batch",
           "save_trajectories", "skills_settings", "untrainable", "use_adapter"]
