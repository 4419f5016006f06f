"""What a skill is: a named procedure with a description to find it by, and its record of use.

A skill is stored as a folder holding `SKILL.md` (YAML front matter: name, description,
when_to_use; body: the procedure) and `skill.json` (id, provenance, utility, counts). Hand-written
folders without `skill.json` are first-class: they get an id and neutral statistics on import.
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from agentkit.loop.cognitive_map import SubGoal
from agentkit.trajectory import NewerSchemaError as NewerSchemaError  # the one error for newer records

SKILL_SCHEMA_VERSION = 1
LIBRARY_SCHEMA_VERSION = 1

NAME_MAX = 64
_NAME_OK = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")


class SkillFormatError(ValueError):
    """A skill's files or fields are not what a skill needs (the message says what to fix)."""


def new_skill_id() -> str:
    """A fresh skill id."""
    return f"skill_{uuid.uuid4().hex[:12]}"


def slugify(text: str, max_len: int = 48) -> str:
    """A folder-safe skill name from free text: lowercase words joined by '-'."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_len:
            break
        slug = candidate
    return slug or "skill"


def check_name(name: str) -> str:
    """Validate a skill name (lowercase letters, digits and '-', at most 64 characters)."""
    if not isinstance(name, str) or not _NAME_OK.match(name) or "--" in name:
        raise SkillFormatError(
            f"invalid skill name {name!r}: use 1-{NAME_MAX} lowercase letters, digits and single '-' "
            "(for example 'count-rows-per-group')"
        )
    return name


class Skill(BaseModel):
    """One skill: the text people and models read, and the statistics the library learns.

    `utility` is the Skill1 trend estimate U(s), an exponential moving average of the outcomes of
    the runs that used the skill; `use_count`/`success_count` count those runs.
    """

    schema_version: int = SKILL_SCHEMA_VERSION
    id: str = Field(default_factory=new_skill_id)
    name: str
    description: str
    when_to_use: str = ""
    body: str = ""
    # distilled skills: the task they solved (`example_task`, found by it when queries are tasks) in the
    # environment named `example_scope` ("" where the run had none), and with `examples=True` the calls that
    # solved it (`example`), shown only to runs in that same environment
    example: str = ""
    example_task: str = ""
    example_scope: str = ""
    # provenance
    source: str = "hand-written"  # hand-written | distilled | imported
    source_trajectory: str | None = None
    created_at: float = Field(default_factory=time.time)
    merged_from: list[str] = Field(default_factory=list)
    # statistics
    utility: float = 0.5
    use_count: int = 0
    success_count: int = 0
    last_used_at: float | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    def index_text(self, by_task: bool = False) -> str:
        """The text whose embedding retrieval matches queries against: with `by_task`, the task the skill was
        distilled from when there is one (the nearest solved task, as ExpeL retrieves: for libraries queried
        by the task itself; MiniLM scores a similar question ~0.7 against it and ~0.45 against it joined to a
        generic description), else description and when to use (what a model-written query describes)."""
        if by_task and self.example_task.strip():
            return self.example_task.strip()
        parts = [self.description.strip(), self.when_to_use.strip()]
        return "\n".join(p for p in parts if p)

    def render(self, max_chars: int = 4000, scope: str | None = None) -> str:
        """The skill as shown to a model: description, when to use, the worked example when the run is in the
        example's environment (`scope`; placed before the procedure, so a long one cannot crowd it out), then
        the procedure. The name is left out: a heading such as "### track-count" reads like a tool, and models
        call it. Why: docs/decisions.md#skills"""
        lines = [f"### Skill: {self.description.strip()}"]
        if self.when_to_use.strip():
            lines.append(f"When to use: {self.when_to_use.strip()}")
        if self.example.strip() and scope is not None and scope == self.example_scope:
            lines.append(f"Worked example (an earlier task it solved):\nTask: {self.example_task.strip()}\n"
                         f"{self.example.strip()}")
        if self.body.strip():
            lines.append(self.body.strip())
        text = "\n\n".join(lines)
        if len(text) > max_chars:
            text = text[: max_chars - 20].rstrip() + "\n[... truncated]"
        return text

    def summary(self) -> dict[str, Any]:
        """The fields a listing shows."""
        return {
            "id": self.id, "name": self.name, "description": self.description, "source": self.source,
            "utility": round(self.utility, 4), "use_count": self.use_count, "success_count": self.success_count,
        }


class DistilledSkill(BaseModel):
    """What a distillation turn writes (parsed from its JSON) before it becomes a `Skill`."""

    name: str = ""
    description: str
    when_to_use: str = ""
    subgoals: list[SubGoal] = Field(default_factory=list)
    strategy: str = ""
    lessons: list[str] = Field(default_factory=list)
    success: bool = True

    def body(self) -> str:
        """The procedure as Markdown: sub-goals, strategy, lessons."""
        out: list[str] = []
        if self.subgoals:
            out.append("## Procedure")
            out += [f"{i}. {g.goal.strip()}" + (f" ({g.status})" if g.status and g.status != "done" else "")
                    for i, g in enumerate(self.subgoals, 1)]
        if self.strategy.strip():
            out += ["", "## Strategy", self.strategy.strip()]
        if self.lessons:
            out += ["", "## Lessons"] + [f"- {lesson.strip()}" for lesson in self.lessons if lesson.strip()]
        return "\n".join(out).strip()

    def to_skill(self, *, trajectory_id: str | None, initial_utility: float) -> Skill:
        """The `Skill` this distillation becomes when admitted."""
        name = self.name.strip().lower()
        try:
            name = check_name(name)
        except SkillFormatError:
            name = slugify(self.name or self.description)
        return Skill(
            name=name, description=self.description.strip(), when_to_use=self.when_to_use.strip(),
            body=self.body(), source="distilled", source_trajectory=trajectory_id, utility=initial_utility,
        )


@dataclass
class Retrieved:
    """A skill found for a query, with its cosine similarity to it."""

    skill: Skill
    score: float


@dataclass
class Admission:
    """What happened to a skill offered to the library."""

    status: str  # added | merged | refused
    skill_id: str | None = None
    name: str | None = None
    reason: str | None = None
    similarity: float | None = None

    @property
    def admitted(self) -> bool:
        """Whether the skill entered the library (added or merged)."""
        return self.status in ("added", "merged")
