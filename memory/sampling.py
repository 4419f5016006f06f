"""Test-time scaling with the mistake notebook: sample n answers, steer away from known anti-patterns.

Each candidate (its answer plus the arguments of its tool calls, e.g. the SQL it ran) is compared with
the anti-patterns of the notes shown to the run; the candidates least similar to any anti-pattern are
kept, and a majority vote on their answers breaks the tie.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from agentkit.extras import require

require("numpy", "chromadb", "sentence_transformers", extra="memory", feature="notebook-guided sampling")

import numpy as np

from agentkit.agent import Agent, RunResult
from agentkit.environments.base import Task
from agentkit.loop.extensions import RunContext
from agentkit.memory.embeddings import Embedder
from agentkit.memory.notes import Note
from agentkit.records import NOTES, SAMPLES, NotesRecord, SamplesRecord
from agentkit.trajectory import Trajectory


class Notebook(Protocol):
    """What sampling needs of a notebook: `agentkit.memory.notebook.MistakeNotebook`, whose `choose` method
    calls `choose` here, so this module names the notebook by what it does."""

    name: str
    embedder: Embedder

    @property
    def notes(self) -> Mapping[str, Note]:
        """The notes by id."""
        ...

    def before_run(self, run: RunContext) -> None:
        """Show the notes relevant to the run's task."""
        ...

    def after_run(self, run: RunContext) -> None:
        """Nothing: a notebook learns in steps."""
        ...


def candidate_text(trajectory: Trajectory) -> str:
    """What a candidate did, as text: the arguments of its tool calls and its final answer."""
    parts: list[str] = []
    for message in trajectory.messages:
        if message.role == "assistant":
            for call in message.tool_calls:
                parts.extend(str(v) for v in call.arguments.values())
    parts.append(trajectory.answer or "")
    return "\n".join(p for p in parts if p.strip())


def _normalise(answer: str | None) -> str:
    return " ".join((answer or "").lower().split()).rstrip(".")


def choose(results: Sequence[RunResult], notebook: Notebook, margin: float = 0.05) -> int:
    """Index of the preferred candidate; the decision is recorded on its trajectory (`agentkit.records.SAMPLES`).

    Candidates whose highest cosine to an anti-pattern of the shown notes is within `margin` of the
    lowest such score are kept; among them the most common answer wins (ties: the earliest).
    """
    if not results:
        raise ValueError("no candidates to choose from")
    shown_ids = {n.id for r in results for n in (r.trajectory.records.get(NOTES) or NotesRecord()).root}
    anti = [p for i in shown_ids if i in notebook.notes for p in notebook.notes[i].anti_patterns]
    if anti:
        texts = [candidate_text(r.trajectory) or "(no answer)" for r in results]
        similarity = notebook.embedder.embed(texts) @ notebook.embedder.embed(anti).T
        risk = similarity.max(axis=1)
    else:
        risk = np.zeros(len(results), dtype=np.float32)
    answered = [r.answer is not None for r in results]
    pool = [i for i in range(len(results)) if answered[i]] or list(range(len(results)))
    best = min(float(risk[i]) for i in pool)
    kept = [i for i in pool if float(risk[i]) <= best + margin]
    votes = Counter(_normalise(results[i].answer) for i in kept)
    top = max(votes.values())
    chosen = next(i for i in kept if votes[_normalise(results[i].answer)] == top)
    info: dict[str, Any] = {
        "n": len(results), "chosen": chosen, "anti_patterns": len(anti),
        "candidates": [{"answer": r.answer, "anti_pattern_similarity": round(float(risk[i]), 4),
                        "kept": i in kept, "votes": votes.get(_normalise(r.answer), 0) if i in kept else 0}
                       for i, r in enumerate(results)],
    }
    results[chosen].trajectory.records.set(SAMPLES, SamplesRecord.model_validate(info))
    return chosen


def best_of_n(agent: Agent, task: str | Task, n: int, notebook: Notebook, **run_options: Any) -> RunResult:
    """Run `task` n times with the notebook attached and return the preferred candidate (see `choose`).

    Use a sampling temperature above 0 in the agent's settings, or the candidates will be identical.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    prompt = task.prompt if isinstance(task, Task) else task
    if isinstance(task, Task):
        run_options.setdefault("task_id", task.id)
    with_notes = agent.with_extensions(notebook)
    results = [with_notes.run(prompt, **run_options) for _ in range(n)]
    return results[choose(results, notebook)]
