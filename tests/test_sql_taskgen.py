"""The SQL task engine: generated databases, checked gold SQL, the frozen split, the single-shot baseline."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentkit.cli.main import app
from agentkit.environments.sql import SQLEnvironment, load_tasks
from agentkit.sql.extract import sql_in_text
from agentkit.sql.taskgen import Col, Domain, FrozenMismatch, Table, build_tasks, split_of
from agentkit.sql.taskgen.build import FROZEN, check_gold, load_frozen
from agentkit.sql.taskgen.domains import ALL_DOMAINS
from agentkit.sql.taskgen.template_base import Question


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("sqlgen")
    return out, build_tasks(out)


def test_builds_the_frozen_set_exactly(built: tuple[Path, dict]) -> None:
    out, manifest = built
    frozen = load_frozen()
    assert len(ALL_DOMAINS) >= 40
    assert set(manifest["databases"]) == set(frozen) == {d.name for d in ALL_DOMAINS}
    keys = ("split", "data", "tasks")
    for name, entry in manifest["databases"].items():
        assert {k: entry[k] for k in keys} == {k: frozen[name][k] for k in keys}
    splits = Counter(e["split"] for e in manifest["databases"].values())
    assert splits["train"] >= 15 and splits["dev"] >= 6 and splits["test"] >= 6
    for split in ("train", "dev", "test"):
        assert sum(1 for _ in (out / f"{split}.jsonl").open()) >= 6 * 20


def test_every_gold_query_runs_and_scores_itself(built: tuple[Path, dict]) -> None:
    out, _ = built
    env = SQLEnvironment(tasks=out / "test.jsonl")
    tasks = env.tasks()
    assert all(Path(t.data["db"]).is_file() for t in tasks)
    kinds = Counter()
    for record in map(json.loads, (out / "test.jsonl").open()):
        kinds[record["kind"]] += 1
        with sqlite3.connect(out / record["db"]) as conn:
            q = Question(record["question"], record["sql"], record["kind"], record["difficulty"])
            assert check_gold(conn, q) is None, record
    for needed in ("join-count", "chain-count", "four-tables", "nested", "having", "negation", "both", "except",
                   "join-superlative", "superlative", "top-k", "order", "age", "null", "group-count"):
        assert any(k.startswith(needed) for k in kinds), f"no {needed} question in the test split"
    assert {"easy", "medium", "hard"} <= {t.data["difficulty"] for t in tasks}


def test_the_split_is_by_database_and_stable() -> None:
    assert split_of("bike_shop") == split_of("bike_shop")
    assert {split_of(f"db{i}") for i in range(40)} == {"train", "dev", "test"}
    frozen = load_frozen()
    assert all(frozen[d.name]["split"] == split_of(d.name) for d in ALL_DOMAINS)


def test_a_changed_generator_cannot_rewrite_a_frozen_database(tmp_path: Path) -> None:
    name = next(iter(load_frozen()))
    real = next(d for d in ALL_DOMAINS if d.name == name)
    changed = Domain(real.name, real.about, real.tables[:-1] if len(real.tables) > 2 else real.tables,
                     today=real.today + 1, style=real.style)
    with pytest.raises(FrozenMismatch, match=name):
        build_tasks(tmp_path, domains=[changed], splits=(load_frozen()[name]["split"],))
    assert FROZEN.is_file()


def _db(tmp_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "t.sqlite")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [(1, "a", 5), (2, "b", 5), (3, "c", 7), (4, "d", 1)])
    return conn


@pytest.mark.parametrize(("sql", "why"), [
    ("SELECT name FROM t WHERE score > 100", "empty result"),
    ("SELECT COUNT(*) FROM t WHERE score > 100", "a zero count"),
    ("SELECT name FROM t LIMIT 2", "not deterministic"),
    ("SELECT name FROM t", "the whole table"),
    ("SELECT nme FROM t", "does not run"),
    ("SELECT NULL FROM t WHERE id = 1", "only NULLs"),
])
def test_check_gold_rejects_unfit_queries(tmp_path: Path, sql: str, why: str) -> None:
    assert (check_gold(_db(tmp_path), Question("q", sql, "k", "easy")) or "").startswith(why)


def test_check_gold_keeps_a_fit_query(tmp_path: Path) -> None:
    assert check_gold(_db(tmp_path), Question("q", "SELECT name FROM t WHERE score = 5", "k", "easy")) is None


def test_domain_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="not declared before"):
        Domain("x", "", (Table("a", "a", (Col("b_id", "fk", ref="b"),)),)).check()
    with pytest.raises(ValueError, match="at least two values"):
        Domain("x", "", (Table("a", "a", (Col("c", "category", values=("one",)),)),)).check()


@pytest.mark.parametrize(("text", "sql"), [
    ("```sql\nSELECT 1;\n```", "SELECT 1"),
    ("first ```sql\nSELECT 1\n``` then ```sql\nSELECT 2\n```", "SELECT 2"),
    ("The answer:\nSELECT a FROM t\nWHERE b = 1; -- done", "SELECT a FROM t\nWHERE b = 1"),
    ("```\nwith x as (select 1) select * from x\n```", "with x as (select 1) select * from x"),
    ("I don't know.", None),
    ("```sql\nunclosed", None),
])
def test_sql_in_text(text: str, sql: str | None) -> None:
    assert sql_in_text(text) == sql


def test_sql_in_text_is_linear_on_many_fences() -> None:
    import time

    text = "```x\n" * 200_000
    start = time.perf_counter()
    sql_in_text(text)
    assert time.perf_counter() - start < 2.0


def test_single_shot_baseline_through_the_cli(built: tuple[Path, dict], tmp_path: Path) -> None:
    out, _ = built
    tasks = load_tasks(out / "dev.jsonl")[:3]
    replies = [f"Here is the query:\n```sql\n{t.data['gold_sql']}\n```" for t in tasks[:2]] + ["No idea."]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(replies))
    subset = tmp_path / "three.jsonl"
    lines = (out / "dev.jsonl").read_text().splitlines()[:3]
    subset.write_text("\n".join(json.dumps({**json.loads(x), "db": str(out / json.loads(x)["db"])}) for x in lines))
    result = CliRunner().invoke(app, ["eval", "--env", "sql", "--tasks", str(subset), "--planner", "single-shot",
                                      "--schema", "full", "--model", f"script:{script}", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "r" / "results.json").read_text())
    outcomes = [r["success"] for run in summary["runs"] for r in run["results"]]
    assert outcomes == [True, True, False]


def test_sql_tasks_command_writes_the_dev_split(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["sql-tasks", str(tmp_path), "--split", "dev"])
    assert result.exit_code == 0, result.output
    assert "dev:" in result.output and (tmp_path / "dev.jsonl").stat().st_size > 0
    assert not (tmp_path / "test.jsonl").exists()
