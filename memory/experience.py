"""Experience: the agent's own verified runs on a database, shown as worked examples for new questions on it.

    from agentkit.memory.experience import Experience

    experience = Experience.load("learn-runs/shop/experience.json")     # or Experience() to start empty
    agent = sql_agent(model, "shop.sqlite", extensions=[experience])
    result = agent.run(sql_task_prompt("How many orders are unpaid?"))
    feedback.rate(result.trajectory, good=True)                         # a person checked the answer
    experience.admit(result.trajectory)                                 # now a worked example
    experience.save("learn-runs/shop/experience.json")

**What is kept.** A worked example is one verified run: the question, the database it ran on, the confirmed
SQL and its skeleton (`agentkit.memory.skeleton`), the tables it read and the shape of its result (rows and
columns). A run is admitted only when it is verified (`verification`): its answer matched the gold query's
(`agentkit learn`, which scores every train run), or it was rated good (`/good` in the chat,
`agentkit.feedback.rate`, or calls the person approved). An unverified run, or one rated bad, is never
admitted; a later verified answer to the same question on the same database replaces the earlier one.

**Which database.** A database is known by its table names (`database_key`: a digest of what the agent's
`list_tables` tool shows), so a copy of a database, or the same database with more rows, is the same one;
examples are shown for the database they came from. With `across=True`, a run with fewer than `k` eligible
examples of its own database (see below) is also shown examples from other databases, chosen by SQL skeleton
whatever their question similarity (DAIL-SQL's cross-domain selection): the shape of a query (a join then a
count, a NOT EXISTS, a GROUP BY with HAVING) carries to a database whose tables differ; they are shown under
their own heading, as forms to follow with this database's tables.

**What is shown.** Before a run whose tools query a database with examples, the `k` (3) examples nearest the
question go into the system prompt, as question, SQL and result shape (DAIL-SQL's question–SQL pairs). Only the
database's examples at question cosine `min_similarity` (0.8) or more are eligible: a small model follows an example
of another kind of question into a wrong query. experience.json keeps the floor its examples were learned with, and
`load` applies it (`agentkit learn --min-similarity` sets another). They are chosen by question similarity (cosine
of the packaged MiniLM embeddings) and by SQL skeleton: when more than `k` are eligible, the model first writes the
query it would write without them (one completion with the single-shot SQL prompt and the run's context: the
pre-prediction, its own turn with phase "pre_predict"), and examples whose skeleton is at least `skeleton_threshold`
similar to that query's come first, each group in order of question similarity (DAIL-SQL's selection). With
`pre_predict=False`, or with at most `k` eligible, the question alone orders them and no completion is spent.
With `skeleton_gate=True` the pre-prediction is written whenever an example is eligible, and only examples of its
kind (skeleton at least `skeleton_threshold` alike) are shown: a question that reads like an example's but needs
another kind of query ("agents with over 5 policyholders" beside "every agent, including those with none") is
shown nothing, and so is one whose pre-prediction is the wrong kind of query, where an example would correct it
(off by default; decisions#experience).

Every run records what was shown (`agentkit.records.EXPERIENCE`: the database, the pre-prediction, the
examples with both similarities) and, after the run, whether its confirmed query "copied" an example's SQL,
"adapted" an example's skeleton, or is its "own". `agentkit learn --method experience` learns the examples
into experience.json of the learn run's folder (`agentkit.training.learning`), `agentkit learn --from-runs LOG`
from rated runs (`agentkit.memory.from_runs`); `agentkit chat/run/eval/sql --memory DIR` and
`agentkit.memory.load_memory(DIR)` attach it. Needs `agentkit[memory]` (the embeddings).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentkit.feedback import feedback_of
from agentkit.files import read_artefact, write_artefact
from agentkit.loop.extensions import RunContext
from agentkit.memory.skeleton import skeleton_similarity, sql_skeleton
from agentkit.messages import Message, new_id
from agentkit.records import EXPERIENCE, ExperienceRecord, ShownExample
from agentkit.results import succeeded
from agentkit.sql.extract import sql_in_text
from agentkit.sql.recipe import SQL_INSTRUCTIONS_SINGLE_SHOT, question_of
from agentkit.sql.rewards import final_sql, gold_schema_items
from agentkit.sql.toolkit import SchemaToolkit
from agentkit.trajectory import Trajectory

KIND = "agentkit.experience"
VERSION = 1
DEFAULT_K = 3
SKELETON_THRESHOLD = 0.8
"""Skeleton similarity at which an example counts as the same kind of query as the pre-prediction."""
MIN_SIMILARITY = 0.8
"""The question cosine below which a database's own example is not shown: a small model follows an example of
another kind of question into a wrong query (decisions#experience)."""
PRE_PREDICT_PHASE = "pre_predict"
TITLE = "Worked examples"
INTRO = ("Questions about this database that were answered correctly before, with the SQL that answered them. "
         "Use what fits this question (its tables, joins and filters); write the query this question needs.")
ACROSS_INTRO = ("Questions about other databases that were answered correctly, with the SQL that answered them. "
                "Their tables and columns are not this database's: follow only the form of a query that fits "
                "(its joins, grouping, subqueries), written with this database's tables and columns.")
LIST_TOOL, QUERY_TOOL, FINISH_TOOL = "list_tables", "run_query", "confirm_answer"
RESULT_MARK = "\n\nResult:\n"
HINTED = "hinted"
"""The trajectory metadata key (true) of a run shown its gold query's skeleton (`agentkit learn --hints`)."""


class ResultShape(BaseModel):
    """The shape of a confirmed query's result: rows (at least, when `more`), and its columns."""

    rows: int
    columns: list[str] = Field(default_factory=list)
    more: bool = False

    def text(self) -> str:
        """E.g. "3 rows; columns: Name, Total"."""
        rows = f"{'at least ' if self.more else ''}{self.rows} row{'' if self.rows == 1 else 's'}"
        return rows + (f"; columns: {', '.join(self.columns)}" if self.columns else "")


class WorkedExample(BaseModel):
    """One verified run kept as an example (see the module): the question, the confirmed SQL and its
    skeleton, the tables it read, its result's shape, who verified it ("gold", "user", "approval",
    "callback"), where it came from, and whether a hint led to it."""

    id: str = Field(default_factory=lambda: new_id("ex"))
    database: str
    question: str
    sql: str
    skeleton: str
    tables: list[str] = Field(default_factory=list)
    shape: ResultShape | None = None
    verified_by: str
    task_id: str | None = None
    trajectory_id: str | None = None
    hinted: bool = False
    """Made by a hinted retry (`agentkit learn --hints`): the run was shown its gold query's skeleton."""
    added_at: float = Field(default_factory=lambda: round(time.time(), 3))

    def render(self) -> str:
        """The example as prompt text: its question, its SQL in a block, its result's shape."""
        shape = f"\nResult: {self.shape.text()}" if self.shape is not None else ""
        return f"Question: {self.question}\n```sql\n{self.sql}\n```{shape}"


@dataclass(frozen=True)
class Choice:
    """An example chosen for a question, with its question similarity and skeleton similarity (None: no
    pre-prediction to compare with), and whether it came from another database (`across`)."""

    example: WorkedExample
    question_similarity: float
    skeleton_similarity: float | None = None
    other_database: bool = False


def _with_skeleton(choice: Choice, draft_skeleton: str | None) -> Choice:
    """`choice` with its example's skeleton similarity to the pre-prediction's (None without one)."""
    if draft_skeleton is None:
        return choice
    return replace(choice, skeleton_similarity=round(skeleton_similarity(draft_skeleton, choice.example.skeleton), 4))


class NotAdmitted(ValueError):
    """Why a run cannot be a worked example (not verified, no confirmed query, no known database)."""


# -- reading runs ---------------------------------------------------------------------------------------


def database_key(tools: Mapping[str, Any]) -> str | None:
    """The database an agent's tools query, as a digest of the table names its `list_tables` tool shows
    (None when the tools have no `list_tables` and `run_query`, or listing fails)."""
    lister = tools.get(LIST_TOOL)
    if lister is None or QUERY_TOOL not in tools:
        return None
    try:
        shown = str(lister())
    except Exception:  # a database that cannot be listed has no examples either
        return None
    names = sorted(line.strip() for line in shown.splitlines()[1:] if line.strip())
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16] if names else None


def database_key_of(db: str | os.PathLike[str]) -> str:
    """`database_key` of the SQL toolkit's tools over `db` (a file or SQLAlchemy URL), for runs that did not
    record theirs. Raises ValueError when the database has no tables."""
    kit = SchemaToolkit(str(db))
    try:
        key = database_key({t.name: t for t in kit.tools()})
    finally:
        kit.db.close()
    if key is None:
        raise ValueError(f"{db} has no tables to know it by")
    return key


def verification(trajectory: Trajectory) -> str | None:
    """Who verified a run, or None: its verdict's source ("user", "approval", "callback") when it was rated
    good (`agentkit.feedback.feedback_of`), "gold" when it was scored and succeeded; None when it was rated
    bad, failed, or nobody judged it."""
    verdict = feedback_of(trajectory)
    if verdict is not None:
        return verdict.source if verdict.good else None
    return "gold" if trajectory.rewards and succeeded(trajectory) else None


def result_shape(trajectory: Trajectory) -> ResultShape | None:
    """The shape of the result the run's last successful `confirm_answer` showed (None without one)."""
    answered = {m.tool_call_id: m for m in trajectory.messages if m.role == "tool" and not m.is_error}
    calls = [c for m in trajectory.messages if m.role == "assistant" for c in m.tool_calls
             if c.name == FINISH_TOOL and c.id in answered]
    if not calls:
        return None
    text = answered[calls[-1].id].content
    if RESULT_MARK not in text:
        return None
    lines = text.split(RESULT_MARK, 1)[1].strip().splitlines()
    count = re.match(r"\((\d+) rows?( shown)?", lines[-1].strip()) if lines else None
    if count is None:
        return None
    columns = [c.strip() for c in lines[0].split(" | ")] if len(lines) > 1 else []
    return ResultShape(rows=int(count.group(1)), columns=columns, more=count.group(2) is not None)


def tables_of(sql: str) -> list[str]:
    """The tables a query reads (lower case, sorted; [] when sqlglot cannot parse it)."""
    try:
        return sorted(gold_schema_items(sql).tables)
    except ValueError:
        return []


def example_of(trajectory: Trajectory, database: str | None = None) -> WorkedExample:
    """The worked example a verified run makes. `database`: the run's database key when the run did not record
    it (a run without the experience attached). Raises NotAdmitted saying why it makes none."""
    verified = verification(trajectory)
    if verified is None:
        verdict = feedback_of(trajectory)
        raise NotAdmitted("rated bad" if verdict is not None else "not verified (no gold match, nobody rated it)")
    sql = final_sql(trajectory)
    if not sql:
        raise NotAdmitted("no confirmed SQL query")
    record = trajectory.records.get(EXPERIENCE)
    key = record.database if record is not None else database
    if not key:
        raise NotAdmitted("its database is not known (give the database it ran on)")
    return WorkedExample(database=key, question=question_of(trajectory.task), sql=sql.strip(),
                         skeleton=sql_skeleton(sql), tables=tables_of(sql), shape=result_shape(trajectory),
                         verified_by=verified, task_id=trajectory.task_id, trajectory_id=trajectory.id,
                         hinted=bool(trajectory.metadata.get(HINTED)))


def _same_sql(a: str, b: str) -> bool:
    def norm(sql: str) -> str:
        return " ".join(sql.strip().rstrip(";").lower().split())

    return norm(a) == norm(b)


# -- the experience --------------------------------------------------------------------------------------


class Experience:
    """Worked examples of verified runs, shown to new runs on the same database, and with `across` on others
    (see the module).

    Args:
        examples: the examples to start with.
        k: examples shown per run.
        pre_predict: choose by SQL skeleton too, from a pre-predicted query (one completion per run, only
            when the database has more than `k` examples).
        skeleton_threshold: skeleton similarity at which an example counts as the pre-prediction's kind.
        min_similarity: the database's own examples whose question cosine is below this are not shown (0.0
            shows the nearest whatever their similarity); other databases' examples (`across`) are chosen by
            skeleton and are not held to it.
        embedder: the question embedder (default: the packaged MiniLM).
        across: fill up to `k` with other databases' examples, most alike in skeleton to the pre-prediction
            first, when fewer than `k` of its own are eligible.
        skeleton_gate: pre-predict whenever an example is eligible, and show only the eligible examples whose
            skeleton is at least `skeleton_threshold` alike to the pre-prediction's (none when it wrote no SQL).
    """

    name = "experience"

    def __init__(self, examples: Iterable[WorkedExample] = (), *, k: int = DEFAULT_K, pre_predict: bool = True,
                 skeleton_threshold: float = SKELETON_THRESHOLD, min_similarity: float = MIN_SIMILARITY,
                 embedder: Any = None, across: bool = False, skeleton_gate: bool = False) -> None:
        if k < 1:
            raise ValueError("k must be at least 1")
        self.k, self.pre_predict, self.across, self.skeleton_gate = k, pre_predict, across, skeleton_gate
        self.skeleton_threshold, self.min_similarity = skeleton_threshold, min_similarity
        self._embedder = embedder
        self.examples: list[WorkedExample] = []
        for example in examples:
            self.add(example)

    @property
    def embedder(self) -> Any:
        """The question embedder (the packaged MiniLM unless another was given), loaded on first use."""
        if self._embedder is None:
            from agentkit.memory.embeddings import Embedder

            self._embedder = Embedder.default()
        return self._embedder

    def __len__(self) -> int:
        return len(self.examples)

    # -- learning -----------------------------------------------------------------------------------
    def add(self, example: WorkedExample) -> WorkedExample:
        """Keep `example`, replacing an example of the same question on the same database."""
        same = " ".join(example.question.lower().split())
        self.examples = [e for e in self.examples if not (e.database == example.database and
                                                          " ".join(e.question.lower().split()) == same)]
        self.examples.append(example)
        return example

    def admit(self, trajectory: Trajectory, *, database: str | None = None) -> WorkedExample | None:
        """Keep a verified run as an example (`example_of`); None when it makes none (unverified, rated bad,
        no confirmed query, no known database)."""
        try:
            example = example_of(trajectory, database)
        except NotAdmitted:
            return None
        return self.add(example)

    # -- choosing -----------------------------------------------------------------------------------
    def candidates(self, database: str) -> list[WorkedExample]:
        """The examples of one database."""
        return [e for e in self.examples if e.database == database]

    def others(self, database: str) -> list[WorkedExample]:
        """The examples of every other database (what `across` may show)."""
        return [e for e in self.examples if e.database != database]

    def select(self, database: str, question: str, draft_sql: str | None = None) -> list[Choice]:
        """The at most `k` examples to show for `question` on `database`: its own at question cosine
        `min_similarity` or more, those whose skeleton is at least `skeleton_threshold` similar to `draft_sql`'s
        first, then the rest, each in order of question cosine; with `across`, then other databases' examples,
        by skeleton similarity, then question cosine. With `skeleton_gate`, only the database's examples alike to
        `draft_sql` (none without it)."""
        return self._choose(database, question, self.eligible(database, question), draft_sql)

    def eligible(self, database: str, question: str) -> list[Choice]:
        """The database's own examples at question cosine `min_similarity` or more, each with its cosine."""
        return self._scored(self.candidates(database), question, self.min_similarity)

    def _choose(self, database: str, question: str, own: Sequence[Choice], draft_sql: str | None) -> list[Choice]:
        """`select` from the database's eligible examples `own` (already scored by question)."""
        draft = sql_skeleton(draft_sql) if draft_sql else None

        def alike(c: Choice) -> bool:
            return c.skeleton_similarity is not None and c.skeleton_similarity >= self.skeleton_threshold

        scored = [_with_skeleton(c, draft) for c in own]
        if self.skeleton_gate:
            scored = [c for c in scored if alike(c)]
        chosen = sorted(scored, key=lambda c: (not alike(c), -c.question_similarity, c.example.id))[:self.k]
        if not self.across or len(chosen) == self.k:
            return chosen
        foreign = [replace(_with_skeleton(c, draft), other_database=True)
                   for c in self._scored(self.others(database), question, 0.0)]
        foreign.sort(key=lambda c: (-(c.skeleton_similarity or 0.0), -c.question_similarity, c.example.id))
        return chosen + foreign[:self.k - len(chosen)]

    def _scored(self, pool: Sequence[WorkedExample], question: str, floor: float) -> list[Choice]:
        """`pool` with each example's question cosine, those below `floor` left out."""
        if not pool:
            return []
        vectors = self.embedder.embed([question_of(question), *(e.question for e in pool)])
        cosines = vectors[1:] @ vectors[0]
        return [Choice(e, round(float(q), 4)) for e, q in zip(pool, cosines, strict=True) if float(q) >= floor]

    def render(self, chosen: Sequence[Choice]) -> str:
        """The prompt section of the chosen examples: this database's, then other databases' under their own
        heading."""
        own = [c.example.render() for c in chosen if not c.other_database]
        foreign = [c.example.render() for c in chosen if c.other_database]
        return "\n\n".join([*([INTRO, *own] if own else []), *([ACROSS_INTRO, *foreign] if foreign else [])])

    def draft(self, run: RunContext) -> str | None:
        """The pre-prediction: the query the model writes for the task from the single-shot SQL prompt and the
        run's context so far, in one recorded completion (phase "pre_predict"); None when it wrote none."""
        system = "\n\n".join([SQL_INSTRUCTIONS_SINGLE_SHOT, *(s.render() for s in run.sections)])
        reply = run.call_model([Message.system(system), Message.user(run.task)], phase=PRE_PREDICT_PHASE,
                               settings=replace(run.settings, tool_choice=None))
        return sql_in_text(reply.content)

    # -- the Extension protocol -----------------------------------------------------------------------
    def before_run(self, run: RunContext) -> None:
        """Show the examples chosen for the task (pre-predicting a query first when more than `k` of the
        database's examples pass `min_similarity`, or with `skeleton_gate` when any does); record the database
        and what was shown (`EXPERIENCE`). Runs without SQL tools are left alone."""
        key = database_key(run.tools)
        if key is None:
            return
        eligible = self.eligible(key, run.task)
        filling = self.across and len(eligible) < self.k and bool(self.others(key))
        if self.skeleton_gate:  # the gate needs the pre-prediction's skeleton for any eligible example
            wanted = bool(eligible) or filling
        else:
            wanted = self.pre_predict and (len(eligible) > self.k or filling)
        draft = self.draft(run) if wanted else None
        chosen = self._choose(key, run.task, eligible, draft) if eligible or filling else []
        if chosen:
            run.add_context(self.name, TITLE, self.render(chosen))
        run.record(EXPERIENCE, ExperienceRecord(
            database=key, draft_sql=draft, draft_skeleton=sql_skeleton(draft) if draft else None,
            shown=[ShownExample(id=c.example.id, question=c.example.question,
                                question_similarity=c.question_similarity, skeleton_similarity=c.skeleton_similarity,
                                other_database=c.other_database)
                   for c in chosen]))

    def after_run(self, run: RunContext) -> None:
        """Record how the confirmed query relates to the examples shown: "copied", "adapted" or "own"."""
        record = run.trajectory.records.get(EXPERIENCE)
        if record is None or not record.shown:
            return
        sql = final_sql(run.trajectory)
        if not sql:
            return
        shown = {e.id: e for e in self.examples}
        examples = [shown[s.id] for s in record.shown if s.id in shown]
        skeleton = sql_skeleton(sql)
        if any(_same_sql(sql, e.sql) for e in examples):
            record.use = "copied"
        elif any(skeleton == e.skeleton for e in examples):
            record.use = "adapted"
        else:
            record.use = "own"
        run.record(EXPERIENCE, record)

    # -- files --------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the examples and `min_similarity` as JSON (atomically); the path."""
        return write_artefact(path, KIND, {"version": VERSION, "min_similarity": self.min_similarity,
                                           "examples": [e.model_dump(mode="json") for e in self.examples]})

    @classmethod
    def load(cls, path: str | os.PathLike[str], **options: Any) -> Experience:
        """Read examples written by `save` (options as for the constructor). The file's `min_similarity`, the
        floor its examples were learned and validated with, applies unless `options` names another; a missing,
        malformed or newer file is a clear error."""
        data = read_artefact(path, KIND, "file of worked examples (experience)",
                             "agentkit.memory.experience.Experience.save", "examples")
        version = data.get("version", VERSION)
        if not isinstance(version, int) or version > VERSION:
            raise ValueError(f"{path} is experience version {version}; this agentkit reads up to {VERSION}")
        try:
            examples = [WorkedExample.model_validate(e) for e in data["examples"]]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path} holds malformed experience: {exc}") from exc
        floor = data.get("min_similarity", MIN_SIMILARITY)
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not -1.0 <= floor <= 1.0:
            raise ValueError(f"{path} holds malformed experience: min_similarity {floor!r} is not a cosine")
        return cls(examples, **{"min_similarity": float(floor), **options})

    def __repr__(self) -> str:
        databases = len({e.database for e in self.examples})
        return f"Experience({len(self.examples)} examples on {databases} database{'' if databases == 1 else 's'})"
