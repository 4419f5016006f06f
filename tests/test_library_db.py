"""The library database (a third SQL database, for trying `agentkit learn` on a schema it was not tuned on):
reproducible from its build script, and every question's gold SQL runs and returns rows."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

from agentkit.environments.sql import SQLEnvironment

FIXTURES = Path(__file__).parent / "fixtures"
DB, TASKS = FIXTURES / "library.sqlite", FIXTURES / "library_tasks.jsonl"


def test_every_gold_query_returns_rows() -> None:
    env = SQLEnvironment(db=DB, tasks=TASKS, name="sql-library")
    tasks = env.tasks()
    assert len(tasks) == 24 and len({t.id for t in tasks}) == 24
    for task in tasks:
        result, items = env.gold(task)
        assert result.rows and any(v is not None for v in result.rows[0]), task.id
        assert items.tables, task.id
    assert set(env.database(tasks[0]).schema()) == {"branches", "authors", "books", "members", "loans"}


def test_the_build_script_reproduces_the_shipped_files(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("build_library_db", FIXTURES / "build_library_db.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    module.build(tmp_path / "library.sqlite", tmp_path / "tasks.jsonl")
    assert (tmp_path / "tasks.jsonl").read_text() == TASKS.read_text()
    fresh, shipped = sqlite3.connect(tmp_path / "library.sqlite"), sqlite3.connect(DB)
    try:
        for (table,) in shipped.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            query = f"SELECT * FROM {table} ORDER BY 1"
            assert fresh.execute(query).fetchall() == shipped.execute(query).fetchall(), table
    finally:
        fresh.close()
        shipped.close()
