"""The count check (`agentkit.sql.outer_count`, `SchemaToolkit(check_count=True)`) on a real SQLite file where one
brand has no bike: COUNT(*) after a LEFT JOIN found through aliases, bare table names, HAVING and ORDER BY, silent
where every group has a match or the count is already on a column, a note in run_query, one refusal in
confirm_answer, and a run where the model confirms the rewritten query after the refusal."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from test_sql_spellings import confirm_twice

from agentkit import Agent
from agentkit.environments.sql import SQLEnvironment
from agentkit.evaluation import run_episode
from agentkit.sql import SchemaToolkit
from agentkit.sql.connect import open_database
from agentkit.sql.outer_count import MAX_SQL_CHARS, count_gap, recount
from agentkit.sql.toolkit import COUNT_GAP
from agentkit.testing import ScriptedModel, call

STAR = "SELECT b.name, COUNT(*) FROM brand AS b LEFT JOIN bike AS k ON k.brand_id = b.id GROUP BY b.id"
FIXED = "SELECT b.name, COUNT(k.brand_id) FROM brand AS b LEFT JOIN bike AS k ON k.brand_id = b.id GROUP BY b.id"


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE brand (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("CREATE TABLE bike (id INTEGER PRIMARY KEY, brand_id INTEGER REFERENCES brand(id), model TEXT)")
        db.executemany("INSERT INTO brand (name) VALUES (?)", [("Alma",), ("Brisa",), ("Cierzo",)])
        db.executemany("INSERT INTO bike (brand_id, model) VALUES (?, ?)", [(1, "a1"), (1, "a2"), (2, "b1")])
    return path


def test_recount_moves_every_outer_count_onto_the_joined_tables_join_column() -> None:
    assert recount(STAR) == (FIXED, "bike", "k.brand_id")
    bare = ("SELECT name, COUNT(1) FROM brand LEFT JOIN bike ON brand.id = bike.brand_id GROUP BY name "
            "HAVING COUNT(1) < 2 ORDER BY COUNT(*) DESC")
    assert recount(bare) == ("SELECT name, COUNT(bike.brand_id) FROM brand LEFT JOIN bike ON brand.id = "
                             "bike.brand_id GROUP BY name HAVING COUNT(bike.brand_id) < 2 ORDER BY "
                             "COUNT(bike.brand_id) DESC", "bike", "bike.brand_id")
    # a count inside a subquery is not the outer count, and it stays as written
    sub = ("SELECT b.name, (SELECT COUNT(*) FROM bike) FROM brand AS b LEFT JOIN bike AS k ON k.brand_id = b.id "
           "GROUP BY b.id")
    assert recount(sub) is None


@pytest.mark.parametrize("sql", [
    FIXED,                                                                            # already on a column
    "SELECT b.name, COUNT(*) FROM brand AS b JOIN bike AS k ON k.brand_id = b.id GROUP BY b.id",   # inner join
    "SELECT COUNT(*) FROM brand AS b LEFT JOIN bike AS k ON k.brand_id = b.id",       # no GROUP BY
    "SELECT b.name, COUNT(DISTINCT k.id) FROM brand AS b LEFT JOIN bike AS k ON k.brand_id = b.id GROUP BY b.id",
    "SELECT b.name, COUNT(*) FROM brand AS b LEFT JOIN bike AS k ON k.brand_id = b.id "
    "LEFT JOIN bike AS j ON j.brand_id = b.id GROUP BY b.id",                         # two LEFT JOINs: ambiguous
    "SELECT b.name, COUNT(*) FROM brand AS b LEFT JOIN bike AS k ON brand_id = id GROUP BY b.id",  # unqualified ON
    "SELECT b.name, COUNT(*) FROM brand AS b LEFT JOIN bike AS k ON k.brand_id = b.id WHERE k.id IS NULL "
    "GROUP BY b.id",                                                                  # counts the unmatched rows
    "SELEC b.name FRM brand",                                                         # unreadable
    STAR + " -- " + "x" * MAX_SQL_CHARS,                                              # too long to read
])
def test_recount_leaves_what_it_cannot_read_as_one_outer_count(sql: str) -> None:
    assert recount(sql) is None


def test_count_gap_speaks_only_when_the_count_changes_the_result(shop: Path) -> None:
    db = open_database(shop)
    gap = count_gap(db, STAR)
    assert gap is not None and (gap.table, gap.column, gap.changed, gap.rows) == ("bike", "k.brand_id", 1, 3)
    assert gap.fixed == FIXED and "counts a row with no bike as 1" in gap.render() and FIXED in gap.render()
    # every brand that is left has a bike: COUNT(*) is right there
    assert count_gap(db, STAR.replace("GROUP BY", "WHERE b.id < 3 GROUP BY")) is None
    # a query that fails gives no gap
    assert count_gap(db, STAR.replace("brand_id", "maker_id")) is None


def test_the_toolkit_notes_the_gap_and_refuses_it_once_and_is_off_by_default(shop: Path) -> None:
    kit = SchemaToolkit(shop, check_count=True)
    tools = {t.name: t for t in kit.tools()}
    shown = tools["run_query"](sql=STAR)
    assert shown.startswith("Note: COUNT(*) after `LEFT JOIN bike`") and "Cierzo | 1" in shown
    assert not tools["run_query"](sql=FIXED).startswith("Note:")
    with pytest.raises(ValueError, match=r"refused this query once: COUNT\(\*\) after `LEFT JOIN bike`"):
        tools["confirm_answer"](sql=STAR)
    assert kit.final is None
    assert "Final SQL" in tools["confirm_answer"](sql=STAR)  # the same query again: the model keeps it
    plain = {t.name: t for t in SchemaToolkit(shop).tools()}
    assert not plain["run_query"](sql=STAR).startswith("Note:")
    assert "Final SQL" in plain["confirm_answer"](sql=STAR)


def test_a_run_with_the_check_is_refused_then_confirms_the_rewritten_query(shop: Path, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "shop-1", "question": "List each brand's name with how many bikes it has "
                                 "(0 when there are none).", "sql": FIXED, "db": str(shop)}) + "\n")
    for check in (True, False):
        trajectory = confirm_twice(tasks, STAR, FIXED, check_count=check)
        refused = [m for m in trajectory.messages if m.role == "tool" and m.is_error]
        assert len(refused) == (1 if check else 0)
        if check:
            assert COUNT_GAP.split("{")[0] in refused[0].content and FIXED in refused[0].content
        assert (trajectory.rewards["execution"] == 1.0) is check  # without the check, COUNT(*) stands


def test_the_sql_command_and_eval_pass_the_check_on(shop: Path, tmp_path: Path) -> None:
    """`agentkit sql --check-count`: the draft's COUNT(*) is refused once and the model confirms the rewritten
    query; without it the COUNT(*) stands. `agentkit eval --check-count` gives each episode's toolkit the check."""
    from typer.testing import CliRunner

    from agentkit.cli.eval_cmd import load_environment
    from agentkit.cli.main import app

    script = tmp_path / "s.json"
    script.write_text(json.dumps([f"```sql\n{STAR}\n```", {"tool": "confirm_answer", "arguments": {"sql": FIXED}}]))
    args = ["sql", "How many bikes has each brand?", "--db", str(shop), "--model", f"script:{script}", "--no-embed",
            "--votes", "1"]
    checked = CliRunner().invoke(app, [*args, "--check-count"])
    assert checked.exit_code == 0, checked.output
    assert "refused this query once" in checked.output and checked.output.rstrip().endswith("Cierzo | 0\n(3 rows)")
    plain = CliRunner().invoke(app, args)
    assert plain.exit_code == 0 and plain.output.rstrip().endswith("Cierzo | 1\n(3 rows)")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "shop-1", "question": "q", "sql": FIXED, "db": str(shop)}) + "\n")
    env = load_environment("sql", tasks, check_count=True)
    try:
        episode = env.reset(env.tasks()[0])
        assert episode.toolkit.check_count is True
    finally:
        env.close()


def test_the_offline_replay_counts_where_the_check_would_fire(shop: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`tests/benchmarks/replay_count_check.py` over logged runs: it fires on the run that confirmed COUNT(*) (wrong,
    its rewrite right), not on the one that confirmed the column count (right)."""
    import sys

    from agentkit.trajectory import append_jsonl

    monkeypatch.syspath_prepend(str(Path(__file__).parent / "benchmarks"))
    from replay_count_check import main

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"shop-{i}", "question": "How many bikes has each brand?",
                                         "sql": FIXED, "db": str(shop)}) + "\n" for i in (1, 2)))
    log = tmp_path / "runs.jsonl"
    env = SQLEnvironment(tasks=tasks, schema="tables")
    try:
        for task, sql in zip(env.tasks(), (STAR, FIXED), strict=True):
            model = ScriptedModel([call("confirm_answer", sql=sql)])
            append_jsonl(log, run_episode(lambda tools, m=model: Agent(m, tools, max_steps=2), env, task))
    finally:
        env.close()
    out = tmp_path / "replay.json"
    monkeypatch.setattr(sys, "argv", ["replay_count_check.py", "--runs", str(log), "--tasks", str(tasks),
                                      "--kind", "dev", "--out", str(out)])
    assert main() == 0
    report = json.loads(out.read_text())
    assert (report["checked"], report["right"], report["fired_on_right"], report["fired_on_wrong"],
            report["rewrite_right_on_wrong"]) == (2, 1, 0, 1, 1)
    assert report["details"] == [{"task": "shop-1", "right": False, "rewrite_right": True, "changed_rows": 1}]
