"""One batch step of Mistake Notebook Learning (steps 1–7).

1. answer the batch with the current notes → baseline rewards;
2. keep the real failures (reward below `success_at`);
3. the analyst labels each failure with a subject, reusing labels for similar questions (cluster = label);
4. per cluster, the analyst writes one note from the error contexts;
   (steps 3 and 4 are a model's by default; a `FailureAnalyst`, such as `agentkit.memory.sql_analyst.SQLDiffAnalyst`,
   labels failures and writes notes without one)
5. each new note merges into an existing note whose subject has cosine ≥ `merge_threshold`;
6. back up, insert, re-answer the SAME batch;
7. compare per task with the baseline (W wins, L losses): keep only if W > L, else roll back, leaving
   the notebook file byte-identical.

Crash safety: the notebook file only ever changes by atomic replacement, and the pre-step bytes stay in
`<file>.learn-backup` until the step is decided; `MistakeNotebook.open` rolls back an interrupted step.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentkit.extras import require

require("numpy", "chromadb", "sentence_transformers", extra="memory", feature="learning notes")

import numpy as np
from pydantic import ValidationError

from agentkit.agent import Agent, RunResult
from agentkit.environments.base import Task
from agentkit.files import atomic_write
from agentkit.jsontext import copies_placeholder, first_json_object
from agentkit.loop.extensions import RunContext
from agentkit.memory.embeddings import Embedder
from agentkit.memory.notes import FailureAnalyst, Note
from agentkit.memory.prompts import (
    ANALYST_SYSTEM,
    CASE_TEMPLATE,
    LABEL_PROMPT,
    NOTE_PLACEHOLDERS,
    NOTE_PROMPT,
    RETRY_PROMPT,
)
from agentkit.messages import Message
from agentkit.models import resolve_model
from agentkit.models.protocol import GenerationSettings, Model
from agentkit.rewards import TaskRewardFn
from agentkit.trajectory import Trajectory

log = logging.getLogger(__name__)


class Notebook(Protocol):
    """What a learn step needs of its notebook: `agentkit.memory.notebook.MistakeNotebook`, which builds on this
    module (its `learn` method runs a step here), so this module names the notebook by what it does."""

    name: str
    embedder: Embedder
    notes: dict[str, Note]

    @property
    def backup_file(self) -> Path:
        """Where the notebook as it was before the step is kept until the step is decided."""
        ...

    def before_run(self, run: RunContext) -> None:
        """Show the notes relevant to the run's task."""
        ...

    def after_run(self, run: RunContext) -> None:
        """Nothing: a notebook learns in steps."""
        ...

    def learn_lock(self) -> AbstractContextManager[None]:
        """Exclusive across processes for one learn step."""
        ...

    def __iter__(self) -> Iterator[Note]:
        ...

    def similar_subjects(self, subject: str, threshold: float) -> list[tuple[Note, float]]:
        """Notes whose subject is at least `threshold` similar to `subject`."""
        ...

    def snapshot(self) -> bytes | None:
        """The notebook file's bytes (None when it does not exist)."""
        ...

    def save(self) -> None:
        """Write the notes to the notebook file."""
        ...

    def restore_bytes(self, data: bytes | None) -> None:
        """Put the notebook file back as `data` (a `snapshot`)."""
        ...

AgentSource = Agent | Callable[[Task], Agent]
REFERENCE_KEYS = ("expected", "answer", "gold", "gold_sql", "sql", "solution")


@dataclass
class LearnReport:
    """What one learn step did."""

    tasks: int = 0
    failures: int = 0
    clusters: dict[str, list[str]] = field(default_factory=dict)  # label → task ids
    notes_added: list[str] = field(default_factory=list)
    notes_merged: list[str] = field(default_factory=list)
    wins: int = 0
    ties: int = 0
    losses: int = 0
    accepted: bool = False
    rolled_back: bool = False
    baseline: dict[str, float] = field(default_factory=dict)
    after: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # reasons (malformed analyst output, run errors)
    # (reward, trajectory) per task id under the notebook as the step left it; a later step on the
    # same batch with a deterministic agent may pass it as `baseline_results` to skip re-answering.
    results: dict[str, tuple[float, Trajectory | None]] = field(default_factory=dict, repr=False)

    @property
    def success_before(self) -> float:
        """The success rate of the batch before the step's notes."""
        return _rate(self.baseline)

    @property
    def success_after(self) -> float:
        """Success rate of the re-answer (of the baseline when nothing was re-answered)."""
        return _rate(self.after or self.baseline)

    def summary(self) -> str:
        """The report as a short dict for printing and logging."""
        state = "accepted" if self.accepted else ("rolled back" if self.rolled_back else "no change")
        return (f"{self.tasks} tasks, {self.failures} failures, {len(self.clusters)} clusters; "
                f"notes +{len(self.notes_added)} added, {len(self.notes_merged)} merged; "
                f"W/T/L {self.wins}/{self.ties}/{self.losses}: {state}")


def _rate(rewards: Mapping[str, float], success_at: float = 1.0) -> float:
    return sum(r >= success_at for r in rewards.values()) / len(rewards) if rewards else 0.0


def as_tasks(tasks: Sequence[Task | Mapping[str, Any]]) -> list[Task]:
    """Tasks from `Task`s or dicts {id, prompt (or question), ...}; ids must be unique."""
    out = []
    for i, item in enumerate(tasks):
        if isinstance(item, Task):
            out.append(item)
            continue
        if not isinstance(item, Mapping):
            raise TypeError(f"task #{i} is {type(item).__name__}, expected a Task or a dict")
        prompt = item.get("prompt") or item.get("question")
        if not prompt:
            raise ValueError(f"task #{i} has no 'prompt' (or 'question')")
        data = {k: v for k, v in item.items() if k not in ("id", "prompt")}
        out.append(Task(id=str(item.get("id", f"task-{i}")), prompt=str(prompt), data=data))
    ids = [t.id for t in out]
    if len(set(ids)) != len(ids):
        raise ValueError("task ids must be unique within a batch")
    return out


def _reward(value: float | Mapping[str, float]) -> float:
    if isinstance(value, Mapping):
        return float(value["reward"]) if "reward" in value else float(sum(value.values()))
    return float(value)


def answer_batch(notebook: Notebook, tasks: Sequence[Task], reward_fn: TaskRewardFn, agent: AgentSource,
                 report: LearnReport, concurrency: int = 1) -> dict[str, tuple[float, Trajectory | None]]:
    """Run every task once with the notebook attached (`concurrency` at a time); reward by
    `reward_fn(task, trajectory)`. Results come back in the tasks' order."""

    def one(task: Task) -> tuple[float, Trajectory | None]:
        runner = (agent if isinstance(agent, Agent) else agent(task)).with_extensions(notebook)
        try:
            result: RunResult = runner.run(task.prompt, task_id=task.id)
            return _reward(reward_fn(task, result.trajectory)), result.trajectory
        except Exception as error:  # one broken run must not lose the batch; it counts as a failure
            log.warning("task %s failed to run: %s", task.id, error)
            report.skipped.append(f"task {task.id}: run error {type(error).__name__}: {error}")
            return 0.0, None

    if concurrency <= 1 or len(tasks) <= 1:
        return {task.id: one(task) for task in tasks}
    with ThreadPoolExecutor(max_workers=min(concurrency, len(tasks))) as pool:
        return dict(zip([t.id for t in tasks], pool.map(one, tasks), strict=True))


def error_context(trajectory: Trajectory | None, max_chars: int = 1500) -> str:
    """What the agent did, compactly: its tool calls, the observations, and its answer."""
    if trajectory is None:
        return "(the run crashed before producing an answer)"
    lines = []
    for message in trajectory.messages:
        if message.role == "assistant":
            if message.content.strip():
                lines.append(f"assistant: {message.content.strip()[:400]}")
            for call in message.tool_calls:
                lines.append(f"tool call {call.name}({json.dumps(call.arguments, ensure_ascii=False)[:400]})")
        elif message.role == "tool":
            status = "error" if message.is_error else "result"
            lines.append(f"{status}: {message.content.strip()[:300]}")
    lines.append(f"final answer: {trajectory.answer!r} (stop: {trajectory.stop_reason})")
    text = "\n".join(lines)
    return text if len(text) <= max_chars else "…" + text[-max_chars:]


def _reference(task: Task) -> str:
    for key in REFERENCE_KEYS:
        if task.data.get(key) not in (None, ""):
            return f"Reference solution ({key}): {task.data[key]}"
    return ""


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model reply (code fences and surrounding prose are tolerated)."""
    value = first_json_object(text)
    if value is None:
        raise ValueError("no JSON object in the reply")
    return value


class Analyst:
    """Asks a model for JSON and validates it, retrying a bounded number of times."""

    def __init__(self, model: Model, max_retries: int = 2, settings: GenerationSettings | None = None) -> None:
        self.model = model
        self.max_retries = max_retries
        self.settings = settings or GenerationSettings()
        self.calls = 0

    def ask(self, prompt: str, validate: Callable[[dict[str, Any]], Any]) -> Any:
        """`validate(parsed_json)` → the value, or raises ValueError/ValidationError (then retried)."""
        messages = [Message.system(ANALYST_SYSTEM), Message.user(prompt)]
        error = ""
        for _ in range(self.max_retries + 1):
            self.calls += 1
            reply = self.model.generate(messages, (), self.settings).message
            try:
                return validate(parse_json_object(reply.content))
            except (ValueError, ValidationError, TypeError, KeyError) as exc:
                error = _short_error(exc)
                messages = [*messages, reply, Message.user(RETRY_PROMPT.format(error=error))]
        raise ValueError(f"analyst output unusable after {self.max_retries + 1} tries: {error}")


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:4])
    return str(exc)[:300]


def _subject(data: dict[str, Any]) -> str:
    subject = " ".join(str(data["subject"]).split())
    n = len(subject.split())
    if not 10 <= n <= 50:
        raise ValueError(f"the subject must have 10 to 50 words (it has {n})")
    return subject


def label_failures(notebook: Notebook, analyst: Analyst, failures: Sequence[tuple[Task, Trajectory | None]],
                   report: LearnReport, same_label_at: float) -> dict[str, list[tuple[Task, Trajectory | None]]]:
    """Step 3: a subject per failure; equal labels (or labels with cosine ≥ same_label_at) form a cluster."""
    clusters: dict[str, list[tuple[Task, Trajectory | None]]] = {}
    vectors: dict[str, np.ndarray] = {}
    for task, trajectory in failures:
        known = list(dict.fromkeys([*clusters, *(n.subject for n in notebook)]))
        prompt = LABEL_PROMPT.format(task=task.prompt, context=error_context(trajectory),
                                     labels="\n".join(f"- {s}" for s in known) or "(none yet)")
        try:
            label = analyst.ask(prompt, _subject)
        except Exception as error:
            log.warning("skipping failure %s: %s", task.id, error)
            report.skipped.append(f"label for task {task.id}: {error}")
            continue
        if label not in clusters and clusters:
            vector = notebook.embedder.embed([label])[0]
            best = max(clusters, key=lambda s: float(vectors[s] @ vector))
            if float(vectors[best] @ vector) >= same_label_at:
                label = best
            else:
                vectors[label] = vector
        elif label not in clusters:
            vectors[label] = notebook.embedder.embed([label])[0]
        clusters.setdefault(label, []).append((task, trajectory))
    return clusters


def labelled_failures(analyst: FailureAnalyst, failures: Sequence[tuple[Task, Trajectory | None]],
                      report: LearnReport) -> dict[str, list[tuple[Task, Trajectory | None]]]:
    """Step 3 by a `FailureAnalyst`: each failure joins the cluster of every label it is given."""
    clusters: dict[str, list[tuple[Task, Trajectory | None]]] = {}
    for task, trajectory in failures:
        labels = analyst.labels(task, trajectory)
        if not labels:
            report.skipped.append(f"label for task {task.id}: nothing the analyst can name")
        for label in labels:
            clusters.setdefault(label, []).append((task, trajectory))
    return clusters


def write_note(analyst: Analyst, label: str, cases: Sequence[tuple[Task, Trajectory | None]],
               max_cases: int = 4) -> Note:
    """Step 4: one note for a cluster, from its error contexts."""
    shown = list(cases)[:max_cases]
    text = "\n\n".join(
        CASE_TEMPLATE.format(i=i, task=task.prompt, context=error_context(traj, 900), expected=_reference(task))
        for i, (task, traj) in enumerate(shown, start=1))
    prompt = NOTE_PROMPT.format(n=len(shown), subject=label, cases=text)

    def validate(data: dict[str, Any]) -> Note:
        required = ("corrected_examples", "correct_approach", "mistake_summary", "generalisable_strategy",
                    "anti_patterns")
        missing = [k for k in required if k not in data]
        if missing:
            raise ValueError(f"missing sections: {', '.join(missing)}")
        data = _without_placeholders({k: data[k] for k in required})
        return Note(subject=label, **data,
                    source_trajectories=[t.id for _, t in cases if t is not None],
                    source_tasks=[task.id for task, _ in cases])

    note: Note = analyst.ask(prompt, validate)
    return note


def _without_placeholders(sections: dict[str, Any]) -> dict[str, Any]:
    """The note's sections without what the analyst copied from the template: copied list items are dropped
    (the rest is kept); a copied text section, or a list left empty, is an error the analyst is asked to fix."""
    out: dict[str, Any] = {}
    for key, value in sections.items():
        if isinstance(value, list):
            value = [item for item in value if not copies_placeholder(item, NOTE_PLACEHOLDERS)]
            if not value:
                raise ValueError(f"{key} only repeats the template's description; write real items")
        elif copies_placeholder(value, NOTE_PLACEHOLDERS):
            raise ValueError(f"{key} only repeats the template's description; write the real text")
        out[key] = value
    return out


def learn(notebook: Notebook, tasks: Sequence[Task | Mapping[str, Any]], reward_fn: TaskRewardFn,
          agent: AgentSource, analyst: Model | str | FailureAnalyst | None = None, *, success_at: float = 1.0,
          merge_threshold: float = 0.9, max_retries: int = 2,
          analyst_settings: GenerationSettings | None = None,
          baseline_results: Mapping[str, tuple[float, Trajectory | None]] | None = None,
          concurrency: int = 1) -> LearnReport:
    """One batch step of Mistake Notebook Learning (see the module docstring).

    Args:
        notebook: the notebook to improve; it is attached to the agent for both answering passes.
        tasks: `Task`s or dicts {id, prompt, ...}; a reference answer under "expected"/"answer"/"sql"
            is shown to the analyst.
        reward_fn: `reward_fn(task, trajectory)` → a float (or components with "reward").
        agent: an `Agent`, or a function task → `Agent` (for environments whose tools are per task).
        analyst: the model that labels failures and writes notes (default: the agent's model), or a
            `FailureAnalyst` that does both without a model.
        success_at: a reward at or above this is a success; below it, a failure to learn from.
        merge_threshold: subject cosine at which a new note merges into an existing one.
        baseline_results: the previous step's `report.results` on this same batch, reused as the
            baseline instead of answering again (only sound for a deterministic agent, e.g. greedy).
        concurrency: tasks answered at once in each answering pass (`reward_fn` and `agent` must then be
            safe to call from several threads).
    """
    batch = as_tasks(tasks)
    report = LearnReport(tasks=len(batch))
    if not batch:
        return report
    with notebook.learn_lock():
        return _learn_step(notebook, batch, reward_fn, agent, analyst, report, success_at=success_at,
                           merge_threshold=merge_threshold, max_retries=max_retries,
                           analyst_settings=analyst_settings, baseline_results=baseline_results,
                           concurrency=concurrency)


def _learn_step(notebook: Notebook, batch: list[Task], reward_fn: TaskRewardFn, agent: AgentSource,
                analyst: Model | str | FailureAnalyst | None, report: LearnReport, *, success_at: float,
                merge_threshold: float, max_retries: int, analyst_settings: GenerationSettings | None,
                baseline_results: Mapping[str, tuple[float, Trajectory | None]] | None,
                concurrency: int) -> LearnReport:
    asker: FailureAnalyst | Analyst
    if isinstance(analyst, FailureAnalyst):
        asker = analyst
    elif analyst is not None:
        asker = Analyst(resolve_model(analyst), max_retries=max_retries, settings=analyst_settings)
    elif isinstance(agent, Agent):
        asker = Analyst(agent.model, max_retries=max_retries, settings=analyst_settings)
    else:
        raise ValueError("pass analyst= when agent is a factory function")

    # 1. Baseline with the current notes.
    if baseline_results is not None and all(t.id in baseline_results for t in batch):
        baseline = {t.id: baseline_results[t.id] for t in batch}
    else:
        baseline = answer_batch(notebook, batch, reward_fn, agent, report, concurrency)
    report.results = dict(baseline)
    report.baseline = {tid: r for tid, (r, _) in baseline.items()}
    # 2. Real failures.
    failures = [(t, baseline[t.id][1]) for t in batch if baseline[t.id][0] < success_at]
    report.failures = len(failures)
    if not failures:
        return report
    # 3. Cluster by analyst labels.
    if isinstance(asker, Analyst):
        clusters = label_failures(notebook, asker, failures, report, same_label_at=merge_threshold)
    else:
        clusters = labelled_failures(asker, failures, report)
    report.clusters = {label: [t.id for t, _ in cases] for label, cases in clusters.items()}
    # 4. One note per cluster.
    new_notes: list[Note] = []
    for label, cases in clusters.items():
        try:
            note = write_note(asker, label, cases) if isinstance(asker, Analyst) else asker.note(label, cases)
            new_notes.append(note)
        except Exception as error:
            log.warning("skipping cluster %r: %s", label, error)
            report.skipped.append(f"note for cluster {label!r}: {error}")
    if not new_notes:
        return report
    # 5. Merge with existing notes on the same subject.
    updated: dict[str, Note] = {}
    for note in new_notes:
        similar = notebook.similar_subjects(note.subject, merge_threshold)
        if similar:
            target = updated.get(similar[0][0].id, similar[0][0])
            updated[target.id] = target.merged_with(note)
            report.notes_merged.append(target.id)
        else:
            updated[note.id] = note
            report.notes_added.append(note.id)
    # 6. Back up, insert, re-answer the same batch.
    old = notebook.snapshot()
    atomic_write(notebook.backup_file, old if old is not None else b"")
    try:
        notebook.notes.update(updated)
        notebook.save()
        again = answer_batch(notebook, batch, reward_fn, agent, report, concurrency)
        report.after = {tid: r for tid, (r, _) in again.items()}
        # 7. Pairwise comparison with the baseline.
        for task in batch:
            before, after = report.baseline[task.id], report.after[task.id]
            report.wins += after > before
            report.losses += after < before
            report.ties += after == before
        report.accepted = report.wins > report.losses
        if report.accepted:
            report.results = dict(again)
    finally:
        if not report.accepted:
            notebook.restore_bytes(old)
            report.rolled_back = True
        notebook.backup_file.unlink(missing_ok=True)
    return report
