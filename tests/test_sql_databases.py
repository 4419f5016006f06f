"""The SQL databases written here, each reproducible from its build script, and every question's gold SQL
runs and returns rows: the clinic (shipped, the unseen database of `agentkit learn`) and the library (a test
fixture, for trying the loop on a schema it was not tuned on)."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import pytest

from agentkit.environments.sql import CLINIC_DB, CLINIC_TASKS, SQLEnvironment

FIXTURES = Path(__file__).parent / "fixtures"
LIBRARY_DB, LIBRARY_TASKS = FIXTURES / "library.sqlite", FIXTURES / "library_tasks.jsonl"
DATABASES = {  # name: (build script, database, tasks, tables, number of questions)
    "clinic": (FIXTURES / "build_clinic_db.py", CLINIC_DB, CLINIC_TASKS,
               {"Department", "Doctor", "Patient", "Appointment", "Prescription"}, 26),
    "library": (FIXTURES / "build_library_db.py", LIBRARY_DB, LIBRARY_TASKS,
                {"branches", "authors", "books", "members", "loans"}, 24),
}


@pytest.mark.parametrize("name", sorted(DATABASES))
def test_every_gold_query_returns_rows(name: str) -> None:
    _, db, tasks_file, tables, n = DATABASES[name]
    env = SQLEnvironment(db=db, tasks=tasks_file, name=f"sql-{name}")
    tasks = env.tasks()
    assert len(tasks) == n == len({t.id for t in tasks})
    for task in tasks:
        result, items = env.gold(task)
        assert result.rows and any(v is not None for v in result.rows[0]), task.id
        assert items.tables, task.id  # sqlglot reads the schema items (the schema reward works)
    assert set(env.database(tasks[0]).schema()) == tables


def test_the_clinic_questions_have_difficulties() -> None:
    assert {t.data["difficulty"] for t in SQLEnvironment.clinic().tasks()} == {"easy", "medium"}


@pytest.mark.parametrize("name", sorted(DATABASES))
def test_the_build_script_reproduces_the_files(name: str, tmp_path: Path) -> None:
    script, db, tasks_file, _, _ = DATABASES[name]
    spec = importlib.util.spec_from_file_location(script.stem, script)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    module.build(tmp_path / "db.sqlite", tmp_path / "tasks.jsonl")
    assert (tmp_path / "tasks.jsonl").read_text() == tasks_file.read_text()
    fresh, shipped = sqlite3.connect(tmp_path / "db.sqlite"), sqlite3.connect(db)
    try:
        for (table,) in shipped.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            query = f"SELECT * FROM {table} ORDER BY 1"
            assert fresh.execute(query).fetchall() == shipped.execute(query).fetchall(), table
    finally:
        fresh.close()
        shipped.close()
