"""`learn`: measure the agent on held-out tasks, learn from its own runs on the train split, measure again.

    from agentkit.environments.sql import SQLEnvironment
    from agentkit.training.learning import learn

    report = learn(SQLEnvironment.chinook(), "local:default", budget="45m", methods=("skills", "notes", "rl"),
                   out="learn-runs/chinook", seed=0, unseen=SQLEnvironment.clinic())
    print(report.before.success_rate, report.after.success_rate, report.delta)

Phases, in order: split → before (held-out, and the unseen set) → one learning phase per method, each
followed by a check on validation tasks (a seeded share of the train split that no method learns from:
what a method learned is set aside when the agent with it solves no more of them than without it (skills,
notes, rl change every run), or when it lost more than it won on the tasks it acted on (checks, repairs,
pacing act only on some runs)) and a
held-out evaluation with everything kept so far → after on the unseen set. Every
evaluation decodes greedily and runs on frozen copies of the learned skills and notes, so it can teach
the artefacts nothing; held-out tasks never reach a learner (their ids are checked against every
learning trajectory before the report is written). The budget (minutes and/or episodes) covers the
learning phases; each method gets an equal share, plus whatever earlier methods left unused (a step
that runs over its share is finished, so a run can exceed its budget by at most one step per method).
The run's position is saved atomically in OUT/state.json after every step: `resume=True` continues a
stopped run.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from agentkit.environments.base import Environment, Task
from agentkit.environments.sql import SQLEnvironment
from agentkit.evaluation import EvalConfig, evaluate
from agentkit.files import atomic_write
from agentkit.memory.experience import Experience
from agentkit.memory.notebook import DEFAULT_THRESHOLD
from agentkit.memory.notes import FailureAnalyst
from agentkit.memory.pacing import Pacing
from agentkit.memory.repairs import Repairs
from agentkit.memory.shape_checks import ShapeChecks
from agentkit.models import resolve_model
from agentkit.models.protocol import GenerationSettings, Model
from agentkit.training.learning.methods import (
    METHODS,
    LearnContext,
    MeteredModel,
    NotesAnalyst,
    RLLearner,
    default_methods,
    frozen_copy,
    learner_class,
    make_learner,
    open_notes,
    open_skills,
    rl_by_default,
    save_trajectories,
    untrainable,
    use_adapter,
)
from agentkit.training.learning.report import (
    CurvePoint,
    Flip,
    LearningReport,
    PhaseCost,
    Score,
    flipped,
    write_report_files,
)
from agentkit.training.learning.splits import _split, check_no_leak, validation_split
from agentkit.trajectory import read_jsonl

STATE_VERSION = 1
MIN_GAIN = 2
"""How many more validation tasks than without it a method that changes every run (skills, notes, rl) must
solve to be kept (`validation_verdict`)."""
FITTED: dict[str, tuple[str, Any]] = {"experience": ("experience.json", Experience),
                                      "checks": ("checks.json", ShapeChecks), "repairs": ("repairs.json", Repairs),
                                      "pacing": ("pacing.json", Pacing)}
"""The methods whose artefact is one file in the out folder, and the class that loads it (in the order the
agent gets them)."""


@dataclass(frozen=True)
class Budget:
    """How much learning to do: wall-clock minutes and/or episodes (None: no limit on that axis)."""

    minutes: float | None = None
    episodes: int | None = None

    @classmethod
    def parse(cls, value: str | float | int | Budget | None) -> Budget:
        """"45m", "90s", "1.5h", "200ep", "45m,200ep", or a number of minutes."""
        if isinstance(value, Budget):
            return value
        if value is None:
            raise ValueError("learning needs a budget: minutes (e.g. '45m') and/or episodes (e.g. '200ep')")
        if isinstance(value, int | float):
            return cls(minutes=float(value))
        minutes, episodes = None, None
        for part in re.split(r"[,\s]+", value.strip().lower()):
            match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(h|m|min|s|ep|episodes?)", part)
            if not match:
                raise ValueError(f"cannot read budget {value!r}: use e.g. 45m, 90s, 1.5h, 200ep or 45m,200ep")
            number, unit = float(match.group(1)), match.group(2)
            if unit.startswith("ep"):
                episodes = int(number)
            else:
                minutes = number * {"h": 60.0, "s": 1 / 60}.get(unit, 1.0)
        return cls(minutes=minutes, episodes=episodes)


@dataclass
class LearnEvent:
    """Progress for a display: the phase, what just happened, how far along, and learning budget left."""

    phase: str
    message: str
    done: int = 0
    total: int | None = None
    minutes_left: float | None = None
    episodes_left: int | None = None


def learn(
    env: Environment,
    model: Model | str,
    *,
    budget: str | float | Budget = "45m",
    methods: Sequence[str] | None = None,
    out: str | Path = "learn-runs/run",
    seed: int = 0,
    heldout: Environment | Sequence[str] | None = None,
    heldout_fraction: float = 0.3,
    validation: float = 0.25,
    unseen: Environment | None = None,
    resume: bool = False,
    max_steps: int = 8,
    train_temperature: float = 0.0,
    max_tokens: int | None = 512,
    instructions: str | None = None,
    skill_options: dict[str, Any] | None = None,
    experience_options: dict[str, Any] | None = None,
    hinted_retries: bool = False,
    notes_threshold: float = DEFAULT_THRESHOLD,
    notes_batch: int = 4,
    notes_analyst: NotesAnalyst = "environment",
    rl_config: Any = None,
    concurrency: int = 1,
    planner: str = "react",
    votes: int = 5,
    measure_set_aside: bool = False,
    on_event: Callable[[LearnEvent], None] | None = None,
) -> LearningReport:
    """Learn on the train split with `methods` and report held-out success before and after.

    Args:
        env: the environment whose tasks are split (or that is all train when `heldout` is an environment).
        model: a model string or `Model`; the rl method needs a local model: a torch model is trained in
            place (a LoRA adapter); a GGUF model on llama.cpp plays the episodes while a torch copy trains,
            the adapter set on llama.cpp after every step.
        budget: learning budget, e.g. "45m", "200ep", "45m,200ep" (evaluations are not counted).
        methods: any of METHODS ("skills", "notes", "checks", "repairs", "pacing", "rl"), run in the order
            given; default: `default_methods`, skills, notes, checks and pacing, then experience on a SQL
            environment, then rl for a local torch model (on llama.cpp rl runs only when named: see
            `rl_by_default`).
        out: the run folder (artefacts, trajectories, report.html, learning_curve.png, summary.json, state.json).
        seed: seeds the split and the order of train tasks (and the RL run).
        heldout: task ids of `env` to hold out, or a separate environment of held-out tasks; default: a
            seeded `heldout_fraction` of env's tasks.
        validation: the share of the train split kept from learning to check each method on: what a method
            learned is set aside (kept in `out`, not used) when the agent with it solves fewer than `MIN_GAIN`
            more validation tasks than without it (skills, notes, rl: they change every run), or, for a method
            that acts only on some runs (checks, repairs, pacing, experience), when on the tasks it acted on it
            lost more than it won (`validation_verdict`). 0 turns the check off, as does a train split too small for
            MIN_VALIDATION tasks on each side.
        unseen: an environment never used for learning (e.g. another database), measured before and after.
        resume: continue the run saved in `out` (its settings must match).
        max_steps: agent steps per episode; train_temperature: sampling in the skills and notes runs (default 0:
            they learn from the policy as it is deployed; why: docs/decisions.md#learning-loop; rl samples at its
            `TrainConfig.temperature`). Evaluations are greedy.
        skill_options: `SkillSettings` overrides; experience_options: `Experience` constructor options (e.g.
            `min_similarity`), for learning and evaluating; notes_threshold: the notebook's retrieval cosine.
        hinted_retries: the experience method plays each train task its run failed once more, with the skeleton
            of the task's gold query as a hint (names and values masked), and admits a verified retry as an
            example (SQL environments; held-out runs never see a hint).
        notes_batch: tasks per Mistake Notebook Learning batch; rl_config: a `TrainConfig` for the rl method.
        notes_analyst: who names the mistakes and writes the notes: "environment" (the analyst for the
            environment's kind when there is one: SQL compares each failed query with the gold query,
            `SQLDiffAnalyst`; else the model), "model" (the acting model), or your own `FailureAnalyst`.
        concurrency: evaluation tasks run at once, skills-learning episodes per step and notes-batch tasks
            answered at once (a model string naming a local model gets as many llama.cpp slots); rl steps keep
            their own order.
        planner: how the acting agent of every evaluation and of the skills, notes, experience, checks, repairs
            and pacing runs works: "react" (the loop alone) or, on a SQL environment, "draft" (`agentkit sql`'s
            default: the query drafted in one completion, `votes` drafts voting by their results, the loop
            repairing; `agentkit.sql.draft.SQLDraftPlanner`). The rl method plays its own episodes.
        measure_set_aside: also run the held-out tasks with each method validation set aside (label
            `set-aside-METHOD`: the kept methods and it), report only (`LearningReport.set_aside`): the agent that
            goes on never uses it, so the held-out score says what the verdict cost or saved. One more held-out
            evaluation per set-aside method.
        on_event: called with a `LearnEvent` as the run progresses.
    """
    if methods is not None:
        methods = list(dict.fromkeys(methods))
        unknown = [m for m in methods if m not in METHODS]
        if unknown or not methods:
            raise ValueError(f"unknown or no learning methods {unknown or methods}; choose from {', '.join(METHODS)}")
    if hinted_retries and (not isinstance(env, SQLEnvironment)
                           or "experience" not in (methods or default_methods(env, rl=False))):
        raise ValueError("hinted retries are made by the experience method on a SQL environment (its gold queries "
                         "give the hints): name experience in the methods, or leave the hints off")
    if not isinstance(notes_analyst, FailureAnalyst) and notes_analyst not in ("environment", "model"):
        raise ValueError(f"notes_analyst must be 'environment', 'model' or a FailureAnalyst, not {notes_analyst!r}")
    acting = _planner(planner, votes, env)
    spent_budget = Budget.parse(budget)
    out = Path(out)
    emit = on_event or (lambda event: None)
    train, held, held_env = _split(env, heldout, heldout_fraction, seed)
    train, check = validation_split(train, validation, seed)
    meter = MeteredModel(resolve_model(model, parallel=concurrency))
    if methods is None:
        methods = default_methods(env, rl_by_default(meter.inner))
    elif "rl" in methods and (problem := untrainable(meter.inner)):
        raise ValueError(problem)  # before any evaluation, not after the other methods have run
    config = {"environment": env.name, "model": meter.name, "methods": methods, "seed": seed,
              "train": [t.id for t in train], "heldout": [t.id for t in held], "validation": [t.id for t in check],
              "unseen": getattr(unseen, "name", None), "budget": [spent_budget.minutes, spent_budget.episodes],
              "planner": planner if planner == "react" else f"{planner}:{votes}",
              **({"hinted_retries": True} if hinted_retries else {})}
    state = _open_state(out, config, resume)
    ctx = LearnContext(env=env, train=train, model=meter, out=out, seed=seed, max_steps=max_steps,
                       train_settings=GenerationSettings(temperature=train_temperature, max_tokens=max_tokens),
                       instructions=instructions, skill_options=dict(skill_options or {}),
                       experience_options=dict(experience_options or {}), hinted_retries=hinted_retries,
                       notes_threshold=notes_threshold, notes_batch=notes_batch, notes_analyst=notes_analyst,
                       rl_config=rl_config, concurrency=concurrency, planner=acting)
    run = _Run(ctx, state, out, emit, max_tokens)

    run.evaluate("before", held_env, held, artefacts=())
    if unseen is not None:
        run.evaluate("unseen-before", unseen, list(unseen.tasks()), artefacts=())
    if check:
        run.evaluate("validation-before", env, check, artefacts=())
    kept: list[str] = []  # the methods whose artefacts the agent uses from here on
    base = "validation-before"  # the validation score of the agent with `kept`
    for i, method in enumerate(methods):
        if method not in state["done"]:
            run.use_rl(kept)  # a phase after rl learns with the agent that kept (or set aside) its adapter
            run.learn_phase(method, spent_budget, n_methods=len(methods), remaining_methods=len(methods) - i,
                            resume=resume)
        label, last = f"after-{method}", ("before" if i == 0 else f"after-{methods[i - 1]}")
        if state["progress"].get(method, {}).get("learned_nothing"):  # kept, but the agent is unchanged
            kept.append(method)
            run.repeat(label, last, why=f"{method} learned nothing a prompt or reply would show")
            continue
        if check:
            trial = run.evaluate(f"validation-{method}", env, check, artefacts=[*kept, method])
            without = Score.model_validate(state["scores"][base])
            why = validation_verdict(method, trial, without, ctx.trajectory_file(trial.label))
            if why is not None:
                state["set_aside"][method] = why
                if measure_set_aside:
                    run.evaluate(f"set-aside-{method}", held_env, held, artefacts=[*kept, method])
                run.repeat(label, last, why=why)
                continue
            base = trial.label
        kept.append(method)
        run.evaluate(label, held_env, held, artefacts=kept, curve=True)
    if unseen is not None:
        run.evaluate("unseen-after", unseen, list(unseen.tasks()), artefacts=kept)
    report = run.report(config, spent_budget, train, held, methods, unseen is not None, kept, check)
    check_no_leak(report, out)
    write_report_files(report, out)
    return report


def validation_verdict(method: str, trial: Score, without: Score, runs: Path) -> str | None:
    """Why `method` is set aside after its validation run (`trial`, its trajectories in `runs`) against the agent
    without it, or None to keep it. A method that acts only on some runs (`Learner.record`: checks, repairs,
    pacing, experience) is judged on the tasks it acted on (`Learner.acted`), won against lost: elsewhere its
    agent is the agent without it, and a task that changed there changed by the engine's run-to-run noise
    (llama.cpp is not bit-reproducible). Any other method changes every run, so any task may flip under it: it
    must solve at least `MIN_GAIN` more validation tasks in all (none is kept where the agent without it already
    solves them all: nothing there shows it helps)."""
    if learner_class(method).record is None:
        if trial.successes - without.successes >= MIN_GAIN:
            return None
        return (f"{method} set aside: with it the agent solved {trial.successes} of {trial.tasks} validation tasks, "
                f"{without.successes} without (a method that changes every run must solve at least {MIN_GAIN} more "
                "to be kept)")
    acted, won, lost = validation_tally(method, trial, without, runs)
    if len(lost) <= len(won):
        return None
    return (f"{method} set aside: on the {len(acted)} validation tasks it acted on it lost {len(lost)} and won "
            f"{len(won)} (in all {trial.successes} of {trial.tasks} solved with it, {without.successes} without)")


def validation_tally(method: str, trial: Score, without: Score,
                     runs: Path) -> tuple[list[str], list[str], list[str]]:
    """The validation tasks `method` acted on in its validation run (`Learner.acted` on the trajectories in
    `runs`), and of those, the ones it won (solved with it, not without) and lost (solved without, not with)."""
    learner = learner_class(method)
    acted = sorted({t.task_id for t in read_jsonl([runs]) if t.task_id and learner.acted(t)}) if runs.exists() else []
    return (acted, [t for t in acted if trial.per_task.get(t) and not without.per_task.get(t)],
            [t for t in acted if without.per_task.get(t) and not trial.per_task.get(t)])


def _planner(name: str, votes: int, env: Environment) -> Any:
    """The acting agent's planner for `learn(planner=name)`: "react", or the SQL draft planner with `votes`."""
    if name == "react":
        return "react"
    if name != "draft":
        raise ValueError(f"planner must be 'react' or 'draft', not {name!r}")
    if not isinstance(env, SQLEnvironment):
        raise ValueError("planner 'draft' drafts SQL: it needs a SQL environment")
    if votes < 1:
        raise ValueError("votes must be 1 or more")
    from agentkit.sql.draft import SQLDraftPlanner

    return SQLDraftPlanner(votes=votes)


def _open_state(out: Path, config: dict[str, Any], resume: bool) -> dict[str, Any]:
    path = out / "state.json"
    if resume:
        if not path.exists():
            raise FileNotFoundError(f"nothing to resume: {path} does not exist (start without --resume)")
        state: dict[str, Any] = json.loads(path.read_text())
        state.get("config", {}).setdefault("validation", [])  # runs started before validation existed
        state.get("config", {}).setdefault("planner", "react")  # runs started before the planner was a choice
        state.setdefault("set_aside", {})
        if state.get("config") != config:
            diff = [k for k in config if state.get("config", {}).get(k) != config[k]]
            raise ValueError(f"cannot resume {out}: the run was started with different {', '.join(diff)}; "
                             "resume with the same settings or start a new --out folder")
        return state
    if path.exists():
        raise FileExistsError(f"{out} already holds a learning run; pass resume=True (--resume) or a new folder")
    out.mkdir(parents=True, exist_ok=True)
    state = new_state(config)
    _save_state(out, state)
    return state


def new_state(config: dict[str, Any]) -> dict[str, Any]:
    """The saved position of a run that has done nothing yet (OUT/state.json)."""
    return {"version": STATE_VERSION, "config": config, "done": [], "scores": {}, "costs": {}, "progress": {},
            "files": {}, "learning": {"minutes": 0.0, "tokens": 0, "episodes": 0}, "curve": [], "set_aside": {}}


def _save_state(out: Path, state: dict[str, Any]) -> None:
    atomic_write(out / "state.json", json.dumps(state, indent=1).encode())


class _Run:
    """The phases of one learning run over a shared, persisted state."""

    def __init__(self, ctx: LearnContext, state: dict[str, Any], out: Path, emit: Callable[[LearnEvent], None],
                 max_tokens: int | None) -> None:
        self.ctx, self.state, self.out, self.emit = ctx, state, out, emit
        self.eval_settings = GenerationSettings(temperature=0.0, max_tokens=max_tokens)
        self.details: dict[str, dict[str, Any]] = {}
        # Train trajectory files back to their last saved length (a step killed after writing is redone).
        for name, size in state["files"].items():
            path = out / name
            if path.exists() and path.stat().st_size > size:
                with open(path, "r+b") as f:
                    f.truncate(size)

    def save(self) -> None:
        _save_state(self.out, self.state)

    # -- evaluation ----------------------------------------------------------------------------------
    def evaluate(self, label: str, env: Environment, tasks: list[Task], *, artefacts: Sequence[str],
                 curve: bool = False) -> Score:
        if label in self.state["scores"]:
            return Score.model_validate(self.state["scores"][label])
        self.use_rl(artefacts)
        log = self.ctx.trajectory_file(label if label.startswith(("unseen", "validation")) else f"heldout-{label}")
        log.unlink(missing_ok=True)  # an evaluation stopped half-way is run again from the start
        scratch = self.out / ".eval"
        skills = notes = None
        if "skills" in artefacts:
            skills = open_skills(frozen_copy(self.out / "skills", scratch / label / "skills"),
                                 self.ctx.skill_options, learning=False)
        if "notes" in artefacts:
            notes = open_notes(frozen_copy(self.out / "notes", scratch / label / "notes"), self.ctx.notes_threshold)
        fitted = [cls.load(self.out / file, **(self.ctx.experience_options if method == "experience" else {}))
                  for method, (file, cls) in FITTED.items()
                  if method in artefacts and (self.out / file).exists()]

        def build(tools: list[Any]) -> Any:
            return self.ctx.agent(tools, settings=self.eval_settings,
                                  extensions=[*(e for e in (skills, notes) if e is not None), *fitted])

        done = [0]

        def advance(result: Any) -> None:
            done[0] += 1
            mark = "✓" if result.success else "✗"
            self.emit(LearnEvent(f"eval {label}", f"{mark} {result.task_id}", done[0], len(tasks)))

        self.emit(LearnEvent(f"eval {label}", "starting", 0, len(tasks)))
        tokens0, t0 = self.ctx.model.tokens, time.perf_counter()
        result = evaluate(env, EvalConfig(label, build), tasks=tasks, log=log, on_result=advance,
                          concurrency=self.ctx.concurrency)
        if notes is not None:
            notes.close()
        score = Score.of(label, result, minutes=(time.perf_counter() - t0) / 60, tokens=self.ctx.model.tokens - tokens0)
        self.state["scores"][label] = score.model_dump(mode="json")
        self.state["costs"][f"eval-{label}"] = PhaseCost(phase=f"eval-{label}", minutes=score.minutes,
                                                         tokens=score.tokens, episodes=len(tasks)).model_dump()
        if curve:
            self._add_to_curve(score)
        self.save()
        return score

    def use_rl(self, artefacts: Sequence[str]) -> None:
        """The model with the rl phase's adapter when `artefacts` hold rl, without it otherwise (nothing to do
        before the rl phase has finished: until then the adapter is the trainer's)."""
        adapter = self.out / "adapter"
        if "rl" in self.state["done"] and adapter.is_dir():
            use_adapter(self.ctx.model.inner, adapter if "rl" in artefacts else None)

    def repeat(self, label: str, source: str, *, why: str) -> Score:
        """The held-out score `source` again under `label`, without running it: the agent is unchanged since
        (greedy decoding, identical prompts), so a second evaluation would only spend the budget's time."""
        if label in self.state["scores"]:
            return Score.model_validate(self.state["scores"][label])
        score = Score.model_validate({**self.state["scores"][source], "label": label, "minutes": 0.0, "tokens": 0,
                                      "same_as": source, "why_same": why})
        self.state["scores"][label] = score.model_dump(mode="json")
        self._add_to_curve(score)
        self.save()
        self.emit(LearnEvent(f"eval {label}", f"not run: {why}; the score of {source} stands", 1, 1))
        return score

    def _add_to_curve(self, score: Score) -> None:
        learning = self.state["learning"]
        self.state["curve"].append(CurvePoint(label=score.label, minutes=round(learning["minutes"], 3),
                                              tokens=learning["tokens"], success_rate=score.success_rate,
                                              ci_low=score.ci_low, ci_high=score.ci_high).model_dump())

    # -- learning ------------------------------------------------------------------------------------
    def learn_phase(self, method: str, budget: Budget, *, n_methods: int, remaining_methods: int,
                    resume: bool) -> None:
        """Run `method` until its share of the budget is spent (fixed when the phase starts: an equal share,
        or more when earlier methods left some unused; a step that runs over is finished, never cut)."""
        learning = self.state["learning"]
        progress = self.state["progress"].setdefault(method, {"minutes": 0.0, "tokens": 0, "episodes": 0})
        if "share_minutes" not in progress:  # an equal share of the budget, plus what earlier methods left unused
            if budget.minutes is not None:
                left = budget.minutes - learning["minutes"]
                progress["share_minutes"] = max(budget.minutes / n_methods, left / remaining_methods)
            else:
                progress["share_minutes"] = None
            if budget.episodes is not None:
                left_ep = budget.episodes - learning["episodes"]
                progress["share_episodes"] = max(budget.episodes // n_methods, left_ep // remaining_methods, 1)
            else:
                progress["share_episodes"] = None
            self.save()
        learner = make_learner(method, self.ctx, progress, resume=resume)
        file_name = f"trajectories/train-{method}.jsonl"
        path = self.out / file_name
        phase = f"learn-{method}"
        try:
            while True:
                minutes_left = (None if progress["share_minutes"] is None
                                else progress["share_minutes"] - progress["minutes"])
                episodes_left = (None if progress["share_episodes"] is None
                                 else progress["share_episodes"] - progress["episodes"])
                if any(left is not None and left <= 0 for left in (minutes_left, episodes_left)):
                    break
                if learner.finished(progress):
                    break
                tokens0, t0 = self.ctx.model.tokens, time.perf_counter()
                trajectories = learner.step(progress)
                minutes = (time.perf_counter() - t0) / 60
                tokens = self.ctx.model.tokens - tokens0
                if method == "rl":  # rollouts run on the trained module itself, not through the meter
                    tokens += sum(t.usage.input_tokens + t.usage.output_tokens for t in trajectories)
                save_trajectories(path, trajectories)
                self.state["files"][file_name] = path.stat().st_size if path.exists() else 0
                for key, value in (("minutes", minutes), ("tokens", tokens), ("episodes", len(trajectories))):
                    progress[key] += value
                    learning[key] += value
                self.save()
                self.emit(LearnEvent(phase, _step_message(method, progress, trajectories), progress["episodes"],
                                     progress["share_episodes"], minutes_left=None if minutes_left is None
                                     else max(0.0, minutes_left - minutes), episodes_left=episodes_left))
            if isinstance(learner, RLLearner):
                adapter = learner.export_adapter()
                progress["adapter"] = str(adapter) if adapter else None
            progress["details"] = learner.details(progress)
            progress["learned_nothing"] = learner.learned_nothing()
        finally:
            learner.close()
        self.state["costs"][phase] = PhaseCost(phase=phase, minutes=round(progress["minutes"], 3),
                                               tokens=progress["tokens"], episodes=progress["episodes"]).model_dump()
        self.state["done"].append(method)
        self.save()

    # -- the report ----------------------------------------------------------------------------------
    def report(self, config: dict[str, Any], budget: Budget, train: list[Task], held: list[Task],
               methods: list[str], has_unseen: bool, kept: list[str], check: list[Task]) -> LearningReport:
        scores = {k: Score.model_validate(v) for k, v in self.state["scores"].items()}
        artefacts = {}  # what the agent uses after the run: the kept methods' artefacts
        if "skills" in kept:
            artefacts["skills"] = str(self.out / "skills")
        if "notes" in kept:
            artefacts["notes"] = str(self.out / "notes")
        for method, (file, _) in FITTED.items():
            if method in kept and (self.out / file).exists():
                artefacts[method] = str(self.out / file)
        if "rl" in kept and (self.out / "adapter").is_dir():
            artefacts["adapter"] = str(self.out / "adapter")
        details = {m: self.state["progress"].get(m, {}).get("details", {}) for m in methods}
        for method, why in self.state["set_aside"].items():
            details[method] = {**details[method], "set_aside": why}
        files = sorted(str(p) for p in (self.out / "trajectories").glob("*.jsonl"))
        if (self.out / "rl" / "rollouts.jsonl").exists():
            files.append(str(self.out / "rl" / "rollouts.jsonl"))
        order = ["before", *(f"after-{m}" for m in methods)]
        return LearningReport(
            environment=config["environment"], model=config["model"], methods=methods, seed=config["seed"],
            planner=config["planner"], budget_minutes=budget.minutes, budget_episodes=budget.episodes,
            train_tasks=[t.id for t in train], heldout_tasks=[t.id for t in held],
            before=scores["before"], after=scores[f"after-{methods[-1]}"],
            evaluations=[scores[k] for k in order[1:]],
            unseen_before=scores.get("unseen-before") if has_unseen else None,
            unseen_after=scores.get("unseen-after") if has_unseen else None,
            costs=[PhaseCost.model_validate(c) for c in self.state["costs"].values()],
            curve=[CurvePoint(label="before", minutes=0.0, tokens=0, success_rate=scores["before"].success_rate,
                              ci_low=scores["before"].ci_low, ci_high=scores["before"].ci_high),
                   *(CurvePoint.model_validate(p) for p in self.state["curve"])],
            details=details, artefacts=artefacts, trajectories=files,
            validation_tasks=[t.id for t in check],
            validation=[scores[k] for k in ("validation-before", *(f"validation-{m}" for m in methods)) if k in scores],
            set_aside=[scores[k] for k in (f"set-aside-{m}" for m in methods) if k in scores],
            flips=self.flips(scores, methods))

    def flips(self, scores: dict[str, Score], methods: list[str]) -> list[Flip]:
        """The held-out tasks that flipped between each evaluation that ran and the next, each with what its run
        in the later evaluation was shown or used (read from the held-out trajectories)."""
        ran = [label for label in ("before", *(f"after-{m}" for m in methods))
               if label in scores and scores[label].same_as is None]
        out: list[Flip] = []
        for earlier, later in pairwise(ran):
            log = self.ctx.trajectory_file(f"heldout-{later}")
            runs = {t.task_id: t for t in read_jsonl([log]) if t.task_id} if log.exists() else {}
            done = methods[:methods.index(later.removeprefix("after-")) + 1]
            adapter = "rl" in done and "rl" not in self.state["set_aside"] and (self.out / "adapter").is_dir()
            out += flipped(scores[earlier], scores[later], runs, adapter=adapter)
        return out


def _step_message(method: str, progress: dict[str, Any], trajectories: Sequence[Any]) -> str:
    from agentkit.environments.base import succeeded

    wins = sum(succeeded(t) for t in trajectories)
    if method == "skills":
        return f"episode {progress['episodes']}: {'solved' if wins else 'failed'}; {progress.get('admitted', 0)} " \
               "skills admitted"
    if method == "notes":
        return f"batch {progress.get('batches', 0)}: {progress.get('last', '')}"
    if method == "pacing":
        return f"episode {progress['episodes']}: {wins}/{len(trajectories)} solved; limits {progress.get('limits', {})}"
    if method == "checks":
        return f"episode {progress['episodes']}: {wins}/{len(trajectories)} solved; slips {progress.get('slips', {})}"
    if method == "experience":
        return (f"episode {progress['episodes']}: {wins}/{len(trajectories)} solved; "
                f"{progress.get('admitted', 0)} examples admitted")
    if method == "repairs":
        return (f"episode {progress['episodes']}: {wins}/{len(trajectories)} solved; "
                f"{progress.get('repairs', 0)} repairs")
    return f"step {progress.get('steps', 0)}: {wins}/{len(trajectories)} rollouts solved"
