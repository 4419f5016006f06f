"""The shipped clinic database (the unseen database of `agentkit learn`): reproducible from its build
script, and every question's gold SQL runs and returns rows."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

from agentkit.environments.sql import CLINIC_DB, CLINIC_TASKS, SQLEnvironment

BUILD = Path(__file__).parent / "fixtures" / "build_clinic_db.py"


def test_every_gold_query_returns_rows() -> None:
    env = SQLEnvironment.clinic()
    tasks = env.tasks()
    assert len(tasks) == 26 and {t.data["difficulty"] for t in tasks} == {"easy", "medium"}
    for task in tasks:
        result, items = env.gold(task)
        assert result.rows and any(v is not None for v in result.rows[0]), task.id
        assert items.tables, task.id  # sqlglot reads the schema items (the schema reward works)
    assert set(env.database(tasks[0]).schema()) == {"Department", "Doctor", "Patient", "Appointment", "Prescription"}


def test_the_build_script_reproduces_the_shipped_files(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("build_clinic_db", BUILD)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    module.build(tmp_path / "clinic.sqlite", tmp_path / "tasks.jsonl")
    assert (tmp_path / "tasks.jsonl").read_text() == CLINIC_TASKS.read_text()
    fresh, shipped = sqlite3.connect(tmp_path / "clinic.sqlite"), sqlite3.connect(CLINIC_DB)
    try:
        for (table,) in shipped.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            query = f"SELECT * FROM {table} ORDER BY 1"
            assert fresh.execute(query).fetchall() == shipped.execute(query).fetchall(), table
    finally:
        fresh.close()
        shipped.close()

