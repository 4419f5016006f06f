"""Spare questions of the SQL task engine: checked questions over a database's data that its task file does
not hold, drawn from the build's own candidates, with the frozen task file left as it was."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentkit.environments.sql import load_tasks
from agentkit.sql.taskgen import build_tasks, spare_questions
from agentkit.sql.taskgen.build import build_database, check_gold, load_frozen
from agentkit.sql.taskgen.domains import ALL_DOMAINS
from agentkit.sql.taskgen.template_base import Question

NAME = "bakery_orders"
DOMAIN = next(d for d in ALL_DOMAINS if d.name == NAME)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("sqlgen")
    split = load_frozen()[NAME]["split"]
    manifest = build_tasks(out, domains=[DOMAIN], splits=(split,))  # raises FrozenMismatch if it moved
    assert manifest["databases"][NAME]["tasks"] == load_frozen()[NAME]["tasks"]
    records = [json.loads(line) for line in (out / f"{split}.jsonl").read_text().splitlines()]
    return out, records, spare_questions(DOMAIN, out)


def test_spares_are_new_checked_questions_over_the_same_database(
        built: tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    out, records, spares = built
    assert len(records) == 30 and len(spares) >= 10
    assert not {r["question"] for r in spares} & {r["question"] for r in records}
    assert not {r["sql"] for r in spares} & {r["sql"] for r in records}
    assert len({r["question"] for r in spares}) == len({r["sql"] for r in spares}) == len(spares)
    assert [r["id"] for r in spares] == [f"{NAME}-s{i:03d}" for i in range(1, len(spares) + 1)]
    assert all(r["spare"] is True and r["db"] == records[0]["db"] and r["db_id"] == NAME for r in spares)
    assert len({r["kind"] for r in spares[:5]}) == 5  # round-robin over kinds
    with sqlite3.connect(out / records[0]["db"]) as conn:
        for r in spares:
            assert check_gold(conn, Question(r["question"], r["sql"], r["kind"], r["difficulty"])) is None, r
    path = out / "spares.jsonl"  # loads as tasks of the task file's database
    path.write_text("".join(json.dumps(r) + "\n" for r in spares))
    tasks = load_tasks(path)
    assert tasks[0].data["db"] == str(out / records[0]["db"]) and tasks[0].data["gold_sql"] == spares[0]["sql"]


def test_spares_are_deterministic_and_leave_the_task_file_unchanged(
        built: tuple[Path, list[dict[str, Any]], list[dict[str, Any]]], tmp_path: Path) -> None:
    out, records, spares = built
    assert spare_questions(DOMAIN, out) == spares  # the built file reused
    assert spare_questions(DOMAIN, tmp_path) == spares  # the file written afresh
    assert spare_questions(DOMAIN, tmp_path, limit=3) == spares[:3]
    again = build_database(DOMAIN, tmp_path)
    assert again.questions == records and again.tasks == load_frozen()[NAME]["tasks"]
