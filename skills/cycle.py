"""The Skill1 cycle around one run: query → retrieve → rerank → utilize, then distill and learn.

Every step is recorded on the trajectory (`agentkit.records.SKILLS`, a `SkillsRecord`) so training
can credit each phase:

    {"retrieved": [{"id", "name", "utility", "score"}, ...], "ranking": [ids, best first],
     "used": id | None, "used_text": str | None, "u_hat": max utility of the retrieved (0 if none),
     "query": str, "distilled": {...} | None, "admitted": bool, "refused_reason": str | None}

Each model stage can be replaced by a cheaper rule: `query="task"` embeds the task itself,
`rerank="top"` takes the best hit (`"utility"` the highest U), `distill="on-success"` skips
the distillation turn when the run failed, `distill="off"` never distills, `inject=False` retrieves
without using. A distilled skill remembers the task it solved; a library queried by the task
(`query="task"`) finds skills by that task (the nearest solved task, as ExpeL retrieves), one queried by a
model-written query by their description. With `examples=True` a distilled skill also carries its run's
calls that worked as a worked example, shown only to runs in the same environment (another database's tables
would mislead); off by default. Why: docs/decisions.md#skills
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentkit.messages import Message
from agentkit.records import SKILLS, RetrievedSkill, SkillsRecord
from agentkit.skills import prompts
from agentkit.skills.distill import (
    admission_refusal,
    distill_messages,
    outcome_refusal,
    outcome_text,
    parse_distilled,
    worked_example,
)
from agentkit.skills.select import parse_query, parse_ranking

if TYPE_CHECKING:
    from agentkit.loop.extensions import RunContext
    from agentkit.skills.model import Admission, Retrieved, Skill
    from agentkit.trajectory import Trajectory



@dataclass(frozen=True)
class SkillSettings:
    """How a library selects, uses and grows skills (defaults follow Skill1)."""

    k: int = 3
    min_score: float = 0.4
    ucb_c: float = 0.0
    query: Literal["model", "task"] = "model"
    rerank: Literal["model", "top", "utility"] = "model"
    inject: bool = True
    distill: Literal["model", "on-success", "off"] = "model"
    alpha: float = 0.05
    success_at: float = 1.0
    initial_utility: float = 0.5
    dedup_threshold: float = 0.92
    on_duplicate: Literal["merge", "refuse"] = "merge"
    capacity: int = 5000
    max_inject_chars: int = 4000
    distill_max_tokens: int = 512
    query_when_empty: bool = False
    examples: bool = False

    def __post_init__(self) -> None:
        checks = {
            "k": self.k >= 0, "alpha": 0.0 <= self.alpha <= 1.0, "capacity": self.capacity >= 1,
            "query": self.query in ("model", "task"), "rerank": self.rerank in ("model", "top", "utility"),
            "distill": self.distill in ("model", "on-success", "off"),
            "on_duplicate": self.on_duplicate in ("merge", "refuse"), "ucb_c": self.ucb_c >= 0.0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"invalid skill settings: {', '.join(f'{b}={getattr(self, b)!r}' for b in bad)}")

    def replace(self, **changes: Any) -> SkillSettings:
        """A copy with some settings changed."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise TypeError(f"unknown skill settings: {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes)


class Library(Protocol):
    """What the cycle needs of its skill library (`agentkit.skills.library.SkillLibrary`, which builds on
    this module)."""

    name: str
    settings: SkillSettings

    def has_skills(self) -> bool:
        """Whether the library holds at least one skill."""
        ...

    def retrieve(self, query: str) -> list[Retrieved]:
        """The skills most similar to `query`, best first."""
        ...

    def add(self, skill: Skill, *, trajectory_id: str | None = None) -> Admission:
        """Offer a distilled skill to the library."""
        ...

    def refuse(self, reason: str, *, trajectory_id: str | None, name: str | None = None) -> Admission:
        """Log a skill that never entered the library."""
        ...

    def record_outcome(self, skill_id: str, reward: float | None, *, count_use: bool = True) -> Skill | None:
        """Count a use of the skill and update its utility with `reward`."""
        ...


class SkillCycle:
    """Runs the cycle for a library; stateless between runs (state lives in the trajectory)."""

    def __init__(self, library: Library) -> None:
        self.library = library

    @property
    def settings(self) -> SkillSettings:
        """The library's settings for the cycle."""
        return self.library.settings

    # -- before the run -----------------------------------------------------------------------------
    def before_run(self, run: RunContext) -> None:
        """Query, retrieve, rerank and put the chosen skill into context; recorded as `SKILLS`."""
        record = SkillsRecord()
        try:
            self._select(run, record)
        finally:
            run.record(SKILLS, record)

    def _select(self, run: RunContext, record: SkillsRecord) -> None:
        s = self.settings
        if s.k == 0 or (not s.query_when_empty and not self.library.has_skills()):
            return
        record.query = self._query(run)
        hits = self.library.retrieve(record.query)
        record.retrieved = [RetrievedSkill(id=h.skill.id, name=h.skill.name, utility=h.skill.utility,
                                           score=round(h.score, 6)) for h in hits]
        record.u_hat = max((h.skill.utility for h in hits), default=0.0)
        if not hits:
            return
        order = self._rank(run, hits)
        record.ranking = [hits[i].skill.id for i in order]
        if s.inject:
            chosen = hits[order[0]].skill
            text = chosen.render(s.max_inject_chars, scope=_scope(run.trajectory))
            run.add_context(self.library.name, prompts.UTILIZE_TITLE, f"{prompts.UTILIZE_CAVEAT}\n\n{text}")
            record.used, record.used_text = chosen.id, text

    def _query(self, run: RunContext) -> str:
        if self.settings.query == "task":
            return run.task
        reply = run.call_model(
            [Message.system(prompts.QUERY_SYSTEM), Message.user(prompts.QUERY_USER.format(task=run.task))],
            phase="query", context="skills.query",
        )
        query, _found = parse_query(reply.content, fallback=run.task)
        return query

    def _rank(self, run: RunContext, hits: list[Retrieved]) -> list[int]:
        n = len(hits)
        if self.settings.rerank == "utility":
            return sorted(range(n), key=lambda i: -hits[i].skill.utility)
        if self.settings.rerank == "top" or n == 1:
            return list(range(n))
        candidates = "\n".join(
            prompts.RERANK_CANDIDATE.format(
                number=i + 1, name=h.skill.name, description=h.skill.description,
                when=f" (when: {h.skill.when_to_use})" if h.skill.when_to_use else "")
            for i, h in enumerate(hits)
        )
        reply = run.call_model(
            [Message.system(prompts.RERANK_SYSTEM),
             Message.user(prompts.RERANK_USER.format(task=run.task, candidates=candidates))],
            phase="rerank", context="skills.rerank",
        )
        order, _found = parse_ranking(reply.content, n, [h.skill.name for h in hits])
        return order

    # -- after the run ------------------------------------------------------------------------------
    def after_run(self, run: RunContext) -> None:
        """Credit the used skill with the outcome, then distill and admit a new one; updates `SKILLS`."""
        trajectory = run.trajectory
        record = trajectory.records.get(SKILLS) or SkillsRecord()
        try:
            self._learn(run, record)
        finally:
            trajectory.records.set(SKILLS, record)

    def _learn(self, run: RunContext, record: SkillsRecord) -> None:
        s = self.settings
        trajectory = run.trajectory
        reward = trajectory.reward
        if record.used:
            self.library.record_outcome(record.used, reward)
        if s.distill == "off":
            record.refused_reason = "distillation is off"
            return
        if s.distill == "on-success" and (skip := outcome_refusal(reward, s.success_at)) is not None:
            record.refused_reason = f"{skip} (distillation skipped)"
            return
        budget = run.settings
        if budget.max_tokens is not None and budget.max_tokens < s.distill_max_tokens:
            budget = dataclasses.replace(budget, max_tokens=s.distill_max_tokens)  # a JSON skill needs room
        reply = run.call_model(distill_messages(trajectory, outcome_text(reward, s.success_at)),
                               phase="distill", context="skills.distill", settings=budget)
        parsed = parse_distilled(reply.content)
        record.distilled = parsed.data
        self._admit(trajectory, record, reward)

    def settle(self, trajectory: Trajectory, reward: float) -> SkillsRecord:
        """Apply an outcome that arrived after the run (chat feedback): update U, admit the pending skill."""
        record = trajectory.records.get(SKILLS) or SkillsRecord()
        try:
            first_outcome = trajectory.reward is None
            trajectory.reward = float(reward)
            if record.used and first_outcome:  # the use was counted when the run ended
                self.library.record_outcome(record.used, trajectory.reward, count_use=False)
            if not record.admitted and _last_distill_text(trajectory):
                self._admit(trajectory, record, trajectory.reward)
        finally:
            trajectory.records.set(SKILLS, record)
        return record

    def _admit(self, trajectory: Trajectory, record: SkillsRecord, reward: float | None) -> None:
        parsed = parse_distilled(_last_distill_text(trajectory))
        reason = admission_refusal(parsed, reward, self.settings.success_at, trajectory)
        name = parsed.skill.name if parsed.skill else None
        if reason is not None or parsed.skill is None:
            reason = reason or "distilled skill did not parse"
            record.admitted, record.refused_reason = False, reason
            self.library.refuse(reason, trajectory_id=trajectory.id, name=name or None)
            return
        skill = parsed.skill.to_skill(trajectory_id=trajectory.id, initial_utility=self.settings.initial_utility)
        # found by the task it solved (the nearest solved task, as ExpeL retrieves); its calls are kept as a
        # worked example only with `examples=True` (the run's own calls: right, since the run succeeded)
        example = worked_example(trajectory) if self.settings.examples else ""
        task = " ".join(trajectory.task.split())[:600]
        skill = skill.model_copy(update={"example": example, "example_task": task, "example_scope": _scope(trajectory)})
        admission = self.library.add(skill, trajectory_id=trajectory.id)
        record.admitted = admission.admitted
        record.refused_reason = None if admission.admitted else admission.reason
        if admission.admitted and isinstance(record.distilled, dict):
            record.distilled = {**record.distilled, "admitted_as": admission.skill_id,
                                "admission": admission.status}


def _scope(trajectory: Trajectory) -> str:
    """The environment a run is in (`metadata["environment"]`, set by `run_episode`; "" outside one)."""
    return str(trajectory.metadata.get("environment") or "")


def _last_distill_text(trajectory: Trajectory) -> str:
    turns = trajectory.turns_in("distill")
    return turns[-1].output.content if turns else ""
