"""A note of the mistake notebook: a subject and guidance in five sections.

Kept apart from the notebook so the learning step (`agentkit.memory.learn`) can build notes without
importing the notebook that calls it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator

from agentkit.messages import new_id

if TYPE_CHECKING:
    from agentkit.environments.base import Task
    from agentkit.trajectory import Trajectory

NOTE_SCHEMA_VERSION = 1


def _clean_list(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict):  # {"task": ..., "wrong": ..., "correct": ...} from an analyst
            item = "; ".join(f"{k}: {v}" for k, v in item.items())
        text = str(item).strip() if item is not None else ""
        if text:
            out.append(text)
    return out


class Note(BaseModel):
    """One note: a subject (what kind of task it is about) and guidance in five sections."""

    schema_version: int = NOTE_SCHEMA_VERSION
    id: str = Field(default_factory=lambda: new_id("note"))
    subject: str
    corrected_examples: list[str]
    correct_approach: str
    mistake_summary: str
    generalisable_strategy: str
    anti_patterns: list[str]
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    source_trajectories: list[str] = Field(default_factory=list)
    source_tasks: list[str] = Field(default_factory=list)

    @field_validator("subject")
    @classmethod
    def _subject_words(cls, value: str) -> str:
        value = " ".join(str(value).split())
        n = len(value.split())
        if not 10 <= n <= 50:
            raise ValueError(f"subject must have 10 to 50 words, got {n}")
        return value

    @field_validator("corrected_examples", mode="before")
    @classmethod
    def _examples(cls, value: Any) -> list[str]:
        items = _clean_list(value)
        if not items:
            raise ValueError("at least one corrected example is required")
        return items[:3]

    @field_validator("anti_patterns", mode="before")
    @classmethod
    def _anti_patterns(cls, value: Any) -> list[str]:
        items = _clean_list(value)
        if not items:
            raise ValueError("at least one anti-pattern is required")
        return items

    @field_validator("correct_approach", "mistake_summary", "generalisable_strategy", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        text = "\n".join(_clean_list(value)) if isinstance(value, list) else str(value or "").strip()
        if not text:
            raise ValueError("section must not be empty")
        return text

    def render(self, max_words: int = 250) -> str:
        """The note as text for a prompt, at most about `max_words` words (long sections are cut)."""
        full = self._render(self.corrected_examples, None)
        if len(full.split()) <= max_words:
            return full
        short = self._render(self.corrected_examples[:1], None)
        if len(short.split()) <= max_words:
            return short
        # Share the budget among the sections, leaving room for the headings.
        per_section = max(8, (max_words - 30) // 6)
        return self._render(self.corrected_examples[:1], per_section)

    def _render(self, examples: list[str], limit: int | None) -> str:
        def cut(text: str) -> str:
            words = text.split()
            return text if limit is None or len(words) <= limit else " ".join(words[:limit]) + " …"

        lines = [f"Subject: {cut(self.subject)}",
                 f"Mistake: {cut(self.mistake_summary)}",
                 f"Correct approach: {cut(self.correct_approach)}",
                 f"Strategy: {cut(self.generalisable_strategy)}",
                 "Do not: " + cut("; ".join(self.anti_patterns)),
                 "Corrected example" + ("s" if len(examples) > 1 else "") + ":"]
        lines += [f"- {cut(e)}" for e in examples]
        return "\n".join(lines)

    def merged_with(self, newer: Note) -> Note:
        """This note updated with a newer note on the same subject (keeps this id and subject)."""

        def union(a: list[str], b: list[str]) -> list[str]:
            seen, out = set(), []
            for item in [*a, *b]:
                key = " ".join(item.lower().split())
                if key not in seen:
                    seen.add(key)
                    out.append(item)
            return out

        return self.model_copy(update={
            "corrected_examples": union(newer.corrected_examples, self.corrected_examples)[:3],
            "correct_approach": newer.correct_approach,
            "mistake_summary": newer.mistake_summary,
            "generalisable_strategy": newer.generalisable_strategy,
            "anti_patterns": union(newer.anti_patterns, self.anti_patterns)[:6],
            "updated_at": time.time(),
            "source_trajectories": union(self.source_trajectories, newer.source_trajectories),
            "source_tasks": union(self.source_tasks, newer.source_tasks),
        })


@runtime_checkable
class FailureAnalyst(Protocol):
    """Steps 3 and 4 of a learning step (`agentkit.memory.learn`) without a model: labels for each failed
    run (one cluster per label), and a note per cluster. `agentkit.memory.sql_analyst.SQLDiffAnalyst` is one."""

    def labels(self, task: Task, trajectory: Trajectory | None) -> list[str]:
        """The labels this failure falls under ([] when there is nothing to learn from it)."""
        ...

    def note(self, label: str, cases: Sequence[tuple[Task, Trajectory | None]]) -> Note:
        """One note for the failures labelled `label`."""
        ...
