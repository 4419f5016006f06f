"""Text-to-SQL environment: a database, questions with gold SQL, and the TRUST-SQL rewards.

    env = SQLEnvironment.chinook()                                   # 60+ tasks over Chinook
    env = SQLEnvironment.clinic()                                    # 26 tasks over a small clinic database
    env = SQLEnvironment(db="shop.sqlite", tasks="tasks.jsonl", schema_reward="f1")
    env = SQLEnvironment.from_spider("dev.json", db_root="database/")  # Spider or BIRD format

An episode's tools are the `SchemaToolkit` tools; run them through an `Agent` (instructions:
`env.instructions`, context: `episode.context`, reward: `episode.score`) or call `episode.step(call)` yourself.
`score(trajectory)` returns {"execution", "format", "schema", "answer", "reward"}:
execution is 1.0/0.2/0, format 0.1, schema 0.4·table-F + 0.6·column-F;
"answer" = execution + format is the outcome track of Dual-Track GRPO and "schema" its schema track;
"reward" equals "answer" by default (`total="all"` adds the schema reward) so that evaluation and
plain GRPO optimise the task's outcome, not the shaping signal.

Task files are JSONL (or a JSON list) of objects with an id, a question, the gold SQL (under "sql",
"query", "SQL" or "gold_sql"), and optionally "difficulty", "evidence" and "db" / "db_id".
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentkit.environments.base import StepResult, Task
from agentkit.messages import Message, ToolCall
from agentkit.records import SQL, SQLRecord
from agentkit.sql.connect import open_database
from agentkit.sql.database import Database, QueryError, QueryResult
from agentkit.sql.digest import SCHEMA_MODES, schema_context
from agentkit.sql.recipe import SQL_INSTRUCTIONS, SQL_INSTRUCTIONS_SHOWN, sql_record, sql_task_prompt
from agentkit.sql.rewards import (
    GOLD_MAX_ROWS,
    SCHEMA_VARIANTS,
    SchemaItems,
    gold_schema_items,
    score_sql_trajectory,
)
from agentkit.sql.toolkit import EmbedFn, SchemaToolkit
from agentkit.tools import Tool, ToolRunner
from agentkit.trajectory import Trajectory

DATA_DIR = Path(__file__).parent / "data"
CHINOOK_DB = DATA_DIR / "chinook.sqlite"
CHINOOK_TASKS = DATA_DIR / "chinook_tasks.jsonl"
CLINIC_DB = DATA_DIR / "clinic.sqlite"  # built by tests/fixtures/build_clinic_db.py
CLINIC_TASKS = DATA_DIR / "clinic_tasks.jsonl"
_SQL_KEYS = ("sql", "gold_sql", "query", "SQL")
log = logging.getLogger(__name__)


def load_tasks(source: str | Path | Sequence[Mapping[str, Any] | Task], *,
               db_root: str | Path | None = None) -> list[Task]:
    """Tasks from a JSONL/JSON file or a list of dicts/Tasks.

    A record needs a question and gold SQL; "db" (a path) or "db_id" (Spider/BIRD: `db_root/ID/ID.sqlite`)
    names its database when tasks span several (a relative "db" path is relative to the task file). Bad
    records raise ValueError naming the record.
    """
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no task file at {path}")
        base = path.parent
        text = path.read_text(encoding="utf-8")
        if text.lstrip().startswith("["):
            records: list[Any] = json.loads(text)
        else:
            records = []
            for lineno, line in enumerate(text.splitlines(), start=1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"{path}:{lineno}: not valid JSON ({exc})") from None
        origin = str(path)
    else:
        records, origin, base = list(source), "tasks", None
    tasks: list[Task] = []
    seen: set[str] = set()
    for i, rec in enumerate(records):
        task = rec if isinstance(rec, Task) else _task_from_record(rec, i, origin, db_root, base)
        if task.id in seen:
            raise ValueError(f"{origin}: task id {task.id!r} appears twice")
        seen.add(task.id)
        tasks.append(task)
    return tasks


def _task_from_record(rec: Any, i: int, origin: str, db_root: str | Path | None, base: Path | None) -> Task:
    if not isinstance(rec, Mapping):
        raise ValueError(f"{origin}: record {i} is not an object")
    question = rec.get("question")
    gold = next((rec[k] for k in _SQL_KEYS if isinstance(rec.get(k), str) and rec[k].strip()), None)
    if not isinstance(question, str) or not question.strip() or gold is None:
        raise ValueError(f"{origin}: record {i} needs a 'question' and gold SQL under one of {', '.join(_SQL_KEYS)}")
    db_id = rec.get("db_id")
    db = rec.get("db")
    if db is None and db_id and db_root is not None:
        db = str(Path(db_root) / db_id / f"{db_id}.sqlite")
    elif isinstance(db, str) and base is not None and "://" not in db and not Path(db).is_absolute():
        db = str(base / db)  # a relative path is relative to the task file
    task_id = rec.get("id", rec.get("question_id"))
    if task_id is None:
        task_id = f"{db_id}-{i}" if db_id else f"task-{i}"
    evidence = rec.get("evidence") or None
    data = {"question": question, "gold_sql": gold, "difficulty": rec.get("difficulty", ""),
            "evidence": evidence, "db": db, "db_id": db_id}
    return Task(id=str(task_id), prompt=sql_task_prompt(question, evidence), data=data)


class SQLEpisode:
    """One attempt at one question: the toolkit's tools as actions, scored against the gold SQL."""

    def __init__(self, task: Task, toolkit: SchemaToolkit, env: SQLEnvironment) -> None:
        self.task = task
        self.toolkit = toolkit
        self.observation = task.prompt
        self.context: dict[str, str] = {}
        # schema linking: the tables this question likely needs and the values it names, up front
        self.context = schema_context(toolkit, task.data.get("question") or task.prompt, env.schema,
                                      max_chars=env.digest_chars)
        self._env = env
        self._tools = {t.name: t for t in toolkit.tools()}
        self._runner: ToolRunner | None = None

    @property
    def done(self) -> bool:
        """True once confirm_answer has succeeded."""
        return self.toolkit.final is not None

    @property
    def tools(self) -> list[Tool]:
        """The schema-exploration and query tools of this episode."""
        return list(self._tools.values())

    def step(self, call: ToolCall) -> StepResult:
        """Run one tool call; errors come back as the observation."""
        if self._runner is None:
            self._runner = ToolRunner(max_workers=1)
        outcome = self._runner.run_many([(self._tools.get(call.name), call.name, call.arguments)])[0]
        self.observation = outcome.content
        return StepResult(observation=outcome.content, reward=0.0, done=self.done)

    def score(self, trajectory: Trajectory) -> dict[str, float]:
        """Reward components of the finished run; also stores `sql_record` as the `SQL` record."""
        db = self.toolkit.db
        gold_result, gold_items = self._env.gold(self.task)
        scores = score_sql_trajectory(trajectory, self.task.data["gold_sql"], db,
                                      schema_variant=self._env.schema_reward, gold_result=gold_result,
                                      gold_items=gold_items, total=self._env.total)
        trajectory.records.set(SQL, SQLRecord.model_validate(sql_record(trajectory)))
        return scores

    def close(self) -> None:
        """Close the episode's database connection."""
        if self._runner is not None:
            self._runner.close()
            self._runner = None


class SQLEnvironment:
    """Text-to-SQL tasks over one database (or several, Spider/BIRD style), scored by the TRUST-SQL rewards.

    Args:
        db: the database of tasks that name none (path, SQLAlchemy URL or `Database`).
        tasks: a JSONL/JSON file or a list of task dicts / `Task`s.
        schema_reward: "f1" (default), "exact", "precision" or "recall".
        embed: optional texts -> normalised vectors for search_columns.
        max_rows: rows shown per query; timeout_s: time limit per query.
        total: what "reward" holds: "answer" (execution + format) or "all" (+ schema).
        db_root: folder of Spider/BIRD databases for tasks that give a db_id.
        schema: "digest" (default) opens each episode with the CREATE TABLEs the question most likely
            needs (`agentkit.sql.digest`), within `digest_chars`, and the values it names with the columns
            holding them (`agentkit.sql.values`); "tables" the CREATE TABLEs only; "hidden" shows none, so
            the agent finds the schema with the tools alone (the TRUST-SQL four-phase
            recipe).
        check_limit: the toolkit's static LIMIT check (`SchemaToolkit(check_limit=True)`), off by default.
        check_case: the toolkit's letter-case check (`SchemaToolkit(check_case=True)`), off by default.
        check_count: the toolkit's check of COUNT(*) after a LEFT JOIN (`SchemaToolkit(check_count=True)`), off by
            default.
    """

    def __init__(self, db: str | Path | Database | None = None, tasks: str | Path | Sequence[Any] | None = None,
                 schema_reward: str = "f1", *, embed: EmbedFn | None = None, max_rows: int = 30,
                 timeout_s: float = 5.0, total: str = "answer", db_root: str | Path | None = None,
                 name: str = "sql", schema: str = "digest", digest_chars: int = 3000,
                 check_limit: bool = False, check_case: bool = False, check_count: bool = False) -> None:
        if schema_reward not in SCHEMA_VARIANTS:
            raise ValueError(f"schema_reward must be one of {', '.join(SCHEMA_VARIANTS)}, not {schema_reward!r}")
        if total not in ("answer", "all"):
            raise ValueError("total must be 'answer' or 'all'")
        if schema not in SCHEMA_MODES:
            raise ValueError(f"schema must be one of {', '.join(SCHEMA_MODES)}, not {schema!r}")
        self.schema = schema
        self.digest_chars = digest_chars
        self.check_limit = check_limit
        self.check_case = check_case
        self.check_count = check_count
        if tasks is None:
            raise ValueError("SQLEnvironment needs tasks (a JSONL/JSON file or a list); "
                             "SQLEnvironment.chinook() has a ready set")
        self.name = name
        self.schema_reward = schema_reward
        self.embed = embed
        self.max_rows = max_rows
        self.timeout_s = timeout_s
        self.total = total
        self._default_db = db
        self._tasks = load_tasks(tasks, db_root=db_root)
        if not self._tasks:
            raise ValueError("SQLEnvironment got no tasks")
        missing = [t.id for t in self._tasks if not t.data.get("db") and db is None]
        if missing:
            raise ValueError(f"tasks {', '.join(missing[:5])} name no database and no db= was given")
        self._dbs: dict[str, Database] = {}
        self._gold: dict[str, tuple[QueryResult, SchemaItems]] = {}
        self._lock = threading.Lock()

    @classmethod
    def chinook(cls, **options: Any) -> SQLEnvironment:
        """The shipped Chinook task set (graded easy/medium/hard) over the Chinook music-store database."""
        return cls(db=CHINOOK_DB, tasks=CHINOOK_TASKS, name="sql-chinook", **options)

    @classmethod
    def clinic(cls, **options: Any) -> SQLEnvironment:
        """A second, small shipped set (26 easy/medium questions) over an outpatient-clinic database:
        a domain unlike Chinook's, for measuring what was learned on one database on another."""
        return cls(db=CLINIC_DB, tasks=CLINIC_TASKS, name="sql-clinic", **options)

    @classmethod
    def from_spider(cls, questions: str | Path, db_root: str | Path, *, limit: int | None = None,
                    **options: Any) -> SQLEnvironment:
        """Spider (question, query, db_id) or BIRD (question, SQL, db_id, evidence) JSON, with databases
        at `db_root/DB_ID/DB_ID.sqlite`."""
        tasks = load_tasks(questions, db_root=db_root)
        if limit is not None:
            tasks = tasks[:limit]
        absent = sorted({t.data["db"] for t in tasks if not Path(t.data["db"]).is_file()})
        if absent:
            raise FileNotFoundError(f"database files missing under {db_root}: {', '.join(absent[:5])}")
        return cls(tasks=tasks, name=options.pop("name", f"sql-{Path(questions).stem}"), **options)

    @property
    def instructions(self) -> str:
        """The system prompt for this environment's agent: the four-phase recipe when the schema is
        hidden, a direct write-check-confirm recipe when the episode shows it."""
        return SQL_INSTRUCTIONS if self.schema == "hidden" else SQL_INSTRUCTIONS_SHOWN

    # -- Environment protocol ----------------------------------------------------------------------
    def identity(self) -> str:
        """Names the databases (by content digest), so exploration caches are shared per schema."""
        ids = sorted({self.database(t).identity for t in self._tasks})
        return f"{self.name}:" + (ids[0] if len(ids) == 1 else hashlib.sha256("|".join(ids).encode()).hexdigest()[:16])

    def tasks(self) -> list[Task]:
        """The loaded text-to-SQL tasks."""
        return list(self._tasks)

    def reset(self, task: Task) -> SQLEpisode:
        """Start an episode of `task` on its database."""
        kit = SchemaToolkit(self.database(task), embed=self.embed, max_rows=self.max_rows, timeout_s=self.timeout_s,
                            check_limit=self.check_limit, check_case=self.check_case,
                            check_count=self.check_count)
        return SQLEpisode(task, kit, self)

    # -- helpers -----------------------------------------------------------------------------------
    def database(self, task: Task) -> Database:
        """The (shared, read-only) database of `task`."""
        target = task.data.get("db") or self._default_db
        if target is None:
            raise ValueError(f"task {task.id!r} names no database (a 'db' field) and the environment has none (db=)")
        if isinstance(target, Database):
            return target
        key = str(target)
        with self._lock:
            if key not in self._dbs:
                self._dbs[key] = open_database(target)
            return self._dbs[key]

    def gold(self, task: Task) -> tuple[QueryResult, SchemaItems]:
        """The gold result set and schema items of `task` (computed once). Raises QueryError if the
        gold SQL itself fails (a broken task); gold SQL sqlglot cannot parse gets empty schema items
        (and a logged warning), so only its schema reward is lost."""
        if task.id not in self._gold:
            db = self.database(task)
            sql = task.data["gold_sql"]
            try:
                result = db.query(sql, max_rows=GOLD_MAX_ROWS, timeout_s=max(self.timeout_s, 30.0))
            except QueryError as exc:
                raise QueryError(f"gold SQL of task {task.id} fails: {exc}") from None
            try:
                items = gold_schema_items(sql, db.schema(), db.sqlglot_dialect)
            except ValueError as exc:  # the task still scores execution; its schema reward is 0
                log.warning("task %s: no schema reward: %s", task.id, exc)
                items = SchemaItems(frozenset(), frozenset())
            self._gold[task.id] = (result, items)
        return self._gold[task.id]

    def oracle_script(self, task: Task) -> list[Message]:
        """The assistant turns of a perfect four-phase run on `task`: describe the gold tables, propose
        exactly the gold schema, run the gold SQL, confirm it. For tests, baselines and warm-start data."""
        db = self.database(task)
        _, items = self.gold(task)
        real = {t.lower(): t for t in db.table_names()}
        tables = sorted(real[t] for t in items.tables if t in real)
        columns: dict[str, list[str]] = {}
        for item in sorted(items.columns):
            t, _, c = item.partition(".")
            if t in real:
                col = db.describe(real[t]).column(c)
                columns.setdefault(real[t], []).append(col.name if col else c)
        sql = task.data["gold_sql"]
        explore = Message.assistant(tool_calls=[ToolCall(name="describe_table", arguments={"table": t}) for t in tables]
                                    or [ToolCall(name="list_tables", arguments={})])
        return [
            Message.assistant(tool_calls=[ToolCall(name="list_tables", arguments={})]),
            explore,
            Message.assistant(tool_calls=[ToolCall(name="propose_schema",
                                                   arguments={"tables": tables, "columns": columns})]),
            Message.assistant(tool_calls=[ToolCall(name="run_query", arguments={"sql": sql})]),
            Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": sql})]),
        ]

    def close(self) -> None:
        """Close the databases this environment opened."""
        for db in self._dbs.values():
            db.close()
        self._dbs.clear()
