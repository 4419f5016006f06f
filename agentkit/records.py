"""The framework's records on a trajectory: typed, keyed once, read and written through one accessor.

A trajectory carries two kinds of free-form data:

- `Trajectory.metadata` is the **user's**: whatever was passed as `Agent.run(..., metadata=...)` (an
  environment name, a training step, an experiment tag). agentkit stores it as given and never reads it.
- `Trajectory.extras` holds the **framework's records**: what extensions and planners did during the
  run (the skills retrieved and used, the notes shown, the map built, the SQL written, the sample
  chosen). Training, the CLI and evaluation read them. Each record the framework itself writes has a
  pydantic model here and a `RecordKey` naming it once; it is read and written only through
  `trajectory.records` (`records.get(SKILLS)`, `records.set(SKILLS, value)`), never by a string key.
  A third-party extension may store its own record under its own name with `RunContext.record(name, value)`.

Records are stored as plain JSON under `extras[key.name]`, so a log stays readable without agentkit.
They are versioned with the trajectory schema (`agentkit.trajectory.SCHEMA_VERSION`): the shapes of
version N are snapshotted in `tests/data/record-schemas-vN.json`, a change to a record model here must
bump that version, and logs of older versions still load (tested against a log written by release
0.1.0, `tests/data/trajectories-0.1.0.jsonl`, whose records these models read and write back unchanged).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, RootModel

from agentkit.loop.cognitive_map import CognitiveMap

R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class RecordKey(Generic[R]):
    """The name a record is stored under in `trajectory.extras`, and its model."""

    name: str
    model: type[R]


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")  # a newer writer's extra fields survive a round trip

    omit_none: ClassVar[bool] = False
    """Leave fields that are None out of the stored JSON (records whose variants have different keys)."""


# -- skills (agentkit.skills: the Skill1 cycle) ----------------------------------------------------


class RetrievedSkill(_Record):
    """A skill the library retrieved for the run's query."""

    id: str
    name: str = ""
    utility: float = 0.0
    score: float = 0.0


class SkillsRecord(_Record):
    """The Skill1 cycle of one run: query → retrieve → rerank → use, then distill and admit.

    `u_hat` is the highest utility among the retrieved (0 if none); `ranking` holds ids, best first;
    `used_text` is the skill text put in context (SDAR's privileged context); `distilled` is the JSON
    the distillation turn wrote (with `admitted_as` and `admission` once admitted).
    """

    retrieved: list[RetrievedSkill] = Field(default_factory=list)
    ranking: list[str] = Field(default_factory=list)
    used: str | None = None
    used_text: str | None = None
    u_hat: float = 0.0
    query: str = ""
    distilled: dict[str, Any] | None = None
    admitted: bool = False
    refused_reason: str | None = None


# -- notes (agentkit.memory: the mistake notebook) -------------------------------------------------


class ShownNote(_Record):
    """A note the mistake notebook put into the run's context, with its similarity to the task."""

    id: str
    subject: str = ""
    score: float = 0.0


class NotesRecord(RootModel[list[ShownNote]]):
    """The notes shown to the run, most similar first."""

    root: list[ShownNote] = Field(default_factory=list)


class NotesTiming(RootModel[float]):
    """Seconds the notebook spent retrieving the notes."""

    root: float = 0.0


# -- samples (agentkit.memory.sampling: test-time scaling) -----------------------------------------


class SampleCandidate(_Record):
    """One of the sampled runs, as the chooser saw it."""

    answer: str | None = None
    anti_pattern_similarity: float = 0.0
    kept: bool = False
    votes: int = 0


class SamplesRecord(_Record):
    """How the chosen run was picked among `n` samples (stored on the chosen run's trajectory)."""

    n: int
    chosen: int
    anti_patterns: int = 0
    candidates: list[SampleCandidate] = Field(default_factory=list)


# -- map-then-act planning ------------------------------------------------------------------------


class ExploreRecord(_Record):
    """Global exploration before the task: skipped (and why), or its tool calls (cached or fresh)."""

    omit_none: ClassVar[bool] = True

    identity: str
    skipped: str | None = None
    cached: bool | None = None
    calls: list[Any] | None = None


class MapError(RootModel[str]):
    """Why the model's map could not be read (the run went on with an empty map)."""


class MapProbes(RootModel[list[Any]]):
    """The read-only tool calls the model made while mapping."""

    root: list[Any] = Field(default_factory=list)


# -- SQL (agentkit.sql: the four-phase recipe) -----------------------------------------------------


class SQLRecord(_Record):
    """A finished SQL run: the final SQL, the last schema proposal, the turn that ends the propose
    phase, and every turn's phase label."""

    final_sql: str | None = None
    proposal: Any = None
    propose_end_turn: int | None = None
    phases: list[str] = Field(default_factory=list)


# -- online training (agentkit.training.online) ---------------------------------------------------


class PolicyRecord(_Record):
    """The behaviour policy of an online-training rollout: `version` is the number of optimiser steps the
    weights (or adapter) that generated the run had taken. A run trained on at step k is `k − version`
    steps stale (0 when rollouts and updates alternate; asynchronous training bounds it by `max_staleness`)."""

    version: int


# -- tool selection (agentkit.memory.tool_selection) ------------------------------------------------


class ToolsOffered(_Record):
    """The tools a run offered the model (`offered`, nearest the task first) and every choosable
    tool's cosine to the task."""

    offered: list[str] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)


# -- experience (agentkit.memory.experience: worked examples of verified runs) ---------------------------


class ShownExample(_Record):
    """A worked example the experience put into the run's context: its id, the question it answered, how it
    was chosen (cosine of the questions; similarity of its SQL skeleton to the pre-predicted query's, None
    when there was no pre-prediction), and whether it came from another database."""

    id: str
    question: str = ""
    question_similarity: float = 0.0
    skeleton_similarity: float | None = None
    other_database: bool = False


class ExperienceRecord(_Record):
    """What the experience did in one run: the database it recognised, the pre-predicted query whose skeleton
    chose the examples (None: chosen by the question alone), the examples shown, best first, and, after the
    run, how its confirmed query relates to them (`use`: "copied" one's SQL, "adapted" one's skeleton,
    "own" neither; None when nothing was shown or no query was confirmed)."""

    database: str
    draft_sql: str | None = None
    draft_skeleton: str | None = None
    shown: list[ShownExample] = Field(default_factory=list)
    use: str | None = None


# -- feedback (agentkit.feedback: a person's or a program's verdict on a run) ----------------------------


class FeedbackRecord(_Record):
    """A verdict on the run: good or bad, why (for a bad one, what was wrong), who gave it ("user": /good,
    /bad or `agentkit.feedback.rate`; "approval": the person's decisions on its calls; "callback": a
    reward function) and when (Unix seconds)."""

    good: bool
    why: str | None = None
    source: str = "user"
    at: float = 0.0


SKILLS: RecordKey[SkillsRecord] = RecordKey("skills", SkillsRecord)
NOTES: RecordKey[NotesRecord] = RecordKey("notes", NotesRecord)
NOTES_RETRIEVAL_S: RecordKey[NotesTiming] = RecordKey("notes_retrieval_s", NotesTiming)
SAMPLES: RecordKey[SamplesRecord] = RecordKey("samples", SamplesRecord)
EXPLORE: RecordKey[ExploreRecord] = RecordKey("explore", ExploreRecord)
MAP: RecordKey[CognitiveMap] = RecordKey("map", CognitiveMap)
MAP_ERROR: RecordKey[MapError] = RecordKey("map_error", MapError)
MAP_PROBES: RecordKey[MapProbes] = RecordKey("map_probes", MapProbes)
SQL: RecordKey[SQLRecord] = RecordKey("sql", SQLRecord)
POLICY: RecordKey[PolicyRecord] = RecordKey("policy", PolicyRecord)
TOOLS_OFFERED: RecordKey[ToolsOffered] = RecordKey("tools_offered", ToolsOffered)
EXPERIENCE: RecordKey[ExperienceRecord] = RecordKey("experience", ExperienceRecord)
FEEDBACK: RecordKey[FeedbackRecord] = RecordKey("feedback", FeedbackRecord)

RECORD_KEYS: tuple[RecordKey[Any], ...] = (SKILLS, NOTES, NOTES_RETRIEVAL_S, SAMPLES, EXPLORE, MAP, MAP_ERROR,
                                           MAP_PROBES, SQL, POLICY, TOOLS_OFFERED, EXPERIENCE, FEEDBACK)
"""Every record the framework writes."""


class Records:
    """Typed access to the framework's records of one trajectory (stored as JSON in its `extras`)."""

    def __init__(self, extras: MutableMapping[str, Any]) -> None:
        self._extras = extras

    def get(self, key: RecordKey[R]) -> R | None:
        """The record under `key`, validated into its model; None when the run has none.

        Raises:
            pydantic.ValidationError: the stored data does not fit the record's model.
        """
        raw = self._extras.get(key.name)
        if raw is None:
            return None
        return key.model.model_validate(raw)

    def set(self, key: RecordKey[R], value: R) -> None:
        """Store `value` under `key` as JSON data (so the trajectory serialises as before); a record
        already there is updated in place, so a dict read from `extras` earlier sees the update."""
        if not isinstance(value, key.model):
            raise TypeError(f"record {key.name!r} takes a {key.model.__name__}, not {type(value).__name__}")
        data = value.model_dump(mode="json", exclude_none=getattr(value, "omit_none", False))
        stored = self._extras.get(key.name)
        if isinstance(stored, dict) and isinstance(data, dict):  # in place: a dict read earlier stays current
            stored.clear()
            stored.update(data)
        else:
            self._extras[key.name] = data

    def __contains__(self, key: RecordKey[Any]) -> bool:
        return key.name in self._extras
