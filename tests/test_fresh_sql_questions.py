"""tests/benchmarks/fresh_sql_questions.py on the real task engine: the train split rebuilt with another generator
seed gives real SQLite files and checked questions of the kinds asked for, none of them a question or gold query of
the shipped build on the same database; the shipped seed and the frozen test split are refused."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from agentkit.sql.taskgen import spare_questions
from agentkit.sql.taskgen.build import SEED, build_database
from agentkit.sql.taskgen.domains import ALL_DOMAINS

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
from fresh_sql_questions import fresh_questions, main


def test_fresh_questions_repeat_nothing_of_the_shipped_build(tmp_path: Path) -> None:
    summary = fresh_questions("train", 7, tmp_path / "s7", {"left-join-group"})
    records = [json.loads(line) for line in (tmp_path / "s7" / "fresh.jsonl").read_text().splitlines()]
    assert summary["kept"] == len(records) > 0 and summary["kept_by_kind"] == {"left-join-group": len(records)}
    assert summary["dropped_as_seen_by_kind"]["left-join-group"] > 0   # the same templates: some repeat
    domains = {d.name: d for d in ALL_DOMAINS}
    for db_id in {r["db_id"] for r in records}:
        shipped = (build_database(domains[db_id], tmp_path / "s0", seed=SEED).questions
                   + spare_questions(domains[db_id], tmp_path / "s0"))
        mine = [r for r in records if r["db_id"] == db_id]
        assert not {r["question"] for r in mine} & {r["question"] for r in shipped}
        assert not {r["sql"] for r in mine} & {r["sql"] for r in shipped}
    first = records[0]
    assert first["id"].endswith("-g7") and first["kind"] == "left-join-group"
    with sqlite3.connect(tmp_path / "s7" / first["db"]) as db:   # the gold query runs on the rebuilt file
        assert db.execute(first["sql"]).fetchall()


def test_the_shipped_seed_and_the_test_split_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="shipped build"):
        fresh_questions("train", SEED, tmp_path)
    with pytest.raises(ValueError, match="frozen"):
        fresh_questions("test", 7, tmp_path)
    with pytest.raises(SystemExit):
        main(["--split", "test", "--seed", "7", "--out", str(tmp_path)])
