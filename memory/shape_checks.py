"""Shape checks: the clauses answers to questions like this one had, learned from train tasks; a confirmed
query with a slip the agent is known to make is fixed before it runs.

An agent may write the right filter and then cut the answer with a LIMIT nobody asked for. The fix is
applied, not asked for: a model told to drop the clause may keep it or write another (Why:
docs/decisions.md#shape-checks). Everything a `ShapeChecks` acts on is learned from the train split: which
slips the agent makes (`SLIPS`: a clause its failed runs' confirmed queries had and the gold query had not,
seen in at least `Slip.min_runs` failed runs), and, for every train question, the clauses of its gold query.
Attached to an agent (an `Extension` with a `check` hook), it looks at the query of a `confirm_answer` call and
at the train questions that share the most words with this one: when the query shows a learned slip and
none of their answers did, the query runs fixed (`Slip.fix`); the trajectory keeps the model's call and
records the fix (`final_sql` and the reward read the query that ran, so a trainer fed such runs would credit
the model's own tokens with the fix's reward: learn's rl plays its rollouts without checks).

A LIMIT that cuts unordered rows is not a learned slip: it is a static check of the SQL toolkit, off by
default (`SchemaToolkit(check_limit=True)`, `agentkit sql --check-limit`). A checks file written before
that moved still loads; its `unordered_limit` entry is dropped with a warning.

Which clauses a question needs is read from its wording (list, top, which one), not from one schema, so
the checks carry to other databases (`tests/benchmarks/bench_shape_checks.py` counts how often the vote
fires on questions of other databases, and how often wrongly).
`agentkit learn --method checks` learns them into checks.json of the learn run's folder; that folder
(`agentkit chat/eval --memory DIR`, `agentkit.memory.load_memory`) or
`Agent(..., extensions=[ShapeChecks.load(f)])` attaches them.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentkit.files import read_artefact, write_artefact
from agentkit.loop.extensions import RunContext
from agentkit.messages import ToolCall
from agentkit.ranking import content_words, overlap
from agentkit.results import succeeded
from agentkit.sql.rewards import FIXES, final_sql
from agentkit.sql.toolkit import blank_strings, unordered_limit, without_limit
from agentkit.trajectory import Trajectory

KIND = "agentkit.sql.shape"  # the saved file's format tag (kept: files written before stay readable)
VERSION = 1
NEIGHBOURS = 3
"""Train questions consulted per check: the ones sharing the most words with the question."""

MOVED = {"unordered_limit": "a static check of the SQL toolkit now (SchemaToolkit(check_limit=True), "
                            "agentkit sql --check-limit)"}
"""Slips older checks files may name that are no longer learned, and where each went."""
_CLAUSES = {"limit": re.compile(r"\bLIMIT\b"), "group_by": re.compile(r"\bGROUP\s+BY\b")}
log = logging.getLogger(__name__)


def clauses(sql: str) -> frozenset[str]:
    """The checked clauses a query has, outside its string literals: `limit`, `group_by`, and
    `unordered_limit` (a LIMIT closing a query whose outermost SELECT has no ORDER BY: it keeps arbitrary rows)."""
    code = blank_strings(sql).upper()
    found = {name for name, pattern in _CLAUSES.items() if pattern.search(code)}
    if unordered_limit(sql):
        found.add("unordered_limit")
    return frozenset(found)


@dataclass(frozen=True)
class Slip:
    """A clause a failed run's answer had and the gold query had not (or the reverse), and its fix."""

    clause: str
    has: bool  # whether the slip is having the clause (or lacking it)
    fix: Callable[[str], str | None]  # the query with the slip fixed, or None when it cannot be
    min_runs: int = 2  # failed train runs that must show it before it is learned


SLIPS: dict[str, Slip] = {"extra_limit": Slip("limit", True, without_limit)}
"""The slips checked for. An extra LIMIT is judged by the nearest train questions (a ranked question's answer
has one). A missing GROUP BY has no mechanical fix and is not checked. Why: docs/decisions.md#shape-checks"""


@dataclass(frozen=True)
class Example:
    """A train question and the checked clauses of its gold query."""

    question: str
    clauses: tuple[str, ...]


def lacked_by_all(examples: list[Example], slip: Slip, at_least: int = NEIGHBOURS) -> bool:
    """Whether each of `examples` (at least `at_least` of them) lacks `slip`: the vote of the voters' gold answers."""
    return len(examples) >= at_least and all((slip.clause in e.clauses) != slip.has for e in examples)


class ShapeChecks:
    """Checks of a confirmed query's clauses against those of similar train questions (see the module).

    Args:
        examples: train questions with their gold queries' clauses.
        slips: the slips checked for (keys of `SLIPS`) -> how many failed train runs showed each.
        neighbours: train questions consulted per check.
    """

    name = FIXES  # the trajectory record final_sql reads

    def __init__(self, examples: Iterable[Example], slips: Mapping[str, int], *, neighbours: int = NEIGHBOURS) -> None:
        unknown = set(slips) - set(SLIPS)
        if unknown:
            raise ValueError(f"unknown slips {sorted(unknown)}; known: {', '.join(SLIPS)}")
        self.examples = list(examples)
        self.slips = dict(slips)
        self.neighbours = neighbours
        self._words = [content_words(e.question) for e in self.examples]

    @classmethod
    def fit(cls, trajectories: Iterable[Trajectory], gold: Mapping[str, tuple[str, str]], *,
            min_slips: int | None = None) -> ShapeChecks:
        """Learn from scored train runs and `gold` (task id -> (question, gold SQL) of every train task):
        the slips seen in enough failed runs (`Slip.min_runs`, or `min_slips` for all), and every train
        question's gold clauses."""
        seen: Counter[str] = Counter()
        for trajectory in trajectories:
            task_id = trajectory.task_id
            final = final_sql(trajectory)  # its confirmed answer, which was wrong
            if succeeded(trajectory) or task_id is None or task_id not in gold or final is None:
                continue
            mine, theirs = clauses(final), clauses(gold[task_id][1])
            for name, slip in SLIPS.items():
                if (slip.clause in mine) == slip.has and (slip.clause in theirs) != slip.has:
                    seen[name] += 1
        examples = [Example(q, tuple(sorted(clauses(sql)))) for q, sql in gold.values()]
        least = {name: slip.min_runs if min_slips is None else min_slips for name, slip in SLIPS.items()}
        return cls(examples, {name: seen[name] for name in sorted(SLIPS) if seen[name] >= max(1, least[name])})

    def nearest(self, question: str) -> list[Example]:
        """The train questions sharing the most words with `question` (not itself; none sharing no word)."""
        words = content_words(question)
        scored = sorted((-overlap(words, w), i) for i, w in enumerate(self._words)
                        if self.examples[i].question != question and words & w)
        return [self.examples[i] for _, i in scored[:self.neighbours]]

    def find_slip(self, question: str, sql: str) -> tuple[str, str] | None:
        """The first learned slip this query of `question` shows where none of the nearest train questions' gold
        answers did, and the query with it fixed; None when there is none (or it cannot be fixed)."""
        has = clauses(sql)
        near: list[Example] | None = None  # found only when a slip shows
        for name in self.slips:
            slip = SLIPS[name]
            if (slip.clause in has) != slip.has or (fixed := slip.fix(sql)) is None:
                continue
            near = self.nearest(question) if near is None else near
            if lacked_by_all(near, slip, self.neighbours):
                return name, fixed
        return None

    # -- files --------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the checks as JSON (atomically)."""
        return write_artefact(path, KIND, {"version": VERSION, "slips": self.slips, "neighbours": self.neighbours,
                                           "examples": [asdict(e) for e in self.examples]})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ShapeChecks:
        """Read checks saved by `save`; a missing or malformed file is a clear error."""
        data = read_artefact(path, KIND, "shape-checks file", "agentkit.memory.shape_checks.ShapeChecks.save",
                             "examples")
        slips = dict(data.get("slips", {})) if isinstance(data.get("slips", {}), dict) else data.get("slips")
        for name, where in MOVED.items():
            if isinstance(slips, dict) and slips.pop(name, None) is not None:
                log.warning("%s: the %s check is no longer learned (it is %s); loading the rest", path, name, where)
        try:
            examples = [Example(str(e["question"]), tuple(e["clauses"])) for e in data["examples"]]
            return cls(examples, slips or {}, neighbours=int(data.get("neighbours", NEIGHBOURS)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path} holds malformed shape checks: {exc}") from exc

    # -- the Extension protocol and its check hook ----------------------------------------------------
    def before_run(self, run: RunContext) -> None:
        """Nothing before the run: the checks act on the confirmed query."""

    def after_run(self, run: RunContext) -> None:
        """Nothing after it: checks are learned by `fit`, not run by run."""

    def check(self, run: RunContext, call: ToolCall) -> ToolCall | None:
        """A `confirm_answer` call with its query fixed when it shows a learned slip; recorded on the trajectory."""
        sql = call.arguments.get("sql")
        if call.name != "confirm_answer" or not isinstance(sql, str) or not self.slips:
            return None
        found = self.find_slip(run.task, sql)
        if found is None:
            return None
        fixed = list(run.trajectory.extras.get(self.name, {}).get("fixed", []))
        run.record(self.name, {"fixed": [*fixed, {"slip": found[0], "sql": sql, "ran": found[1]}]})
        return ToolCall(id=call.id, name=call.name, arguments={**call.arguments, "sql": found[1]})

    def __repr__(self) -> str:
        return f"ShapeChecks({sorted(self.slips)}, {len(self.examples)} examples)"


def gold_of(tasks: Iterable[Any]) -> dict[str, tuple[str, str]]:
    """Task id -> (prompt, gold SQL) of the SQL tasks that have one."""
    return {t.id: (t.prompt, t.data["gold_sql"]) for t in tasks if isinstance(t.data.get("gold_sql"), str)}


__all__ = ["SLIPS", "Example", "ShapeChecks", "Slip", "clauses", "gold_of", "lacked_by_all", "without_limit"]
