"""The letter-case check (`agentkit.sql.spellings`, `SchemaToolkit(check_case=True)`) on a real SQLite file whose
status column stores one value as 'paid', 'Paid' and 'PAID': found through aliases and IN lists, silent where
the comparison already covers every spelling, a note in run_query, one refusal in confirm_answer, and a run in
the SQL environment where the model fixes the comparison after the refusal."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import sqlglot

from agentkit import Agent
from agentkit.environments.sql import SQLEnvironment
from agentkit.evaluation import run_episode
from agentkit.sql import SchemaToolkit
from agentkit.sql.connect import open_database
from agentkit.sql.spellings import MAX_COMPARISONS, MAX_PROBES, MAX_SQL_CHARS, case_gaps, comparisons
from agentkit.sql.toolkit import CASE_GAP
from agentkit.testing import ScriptedModel, call
from agentkit.trajectory import Trajectory

NARROW = "SELECT COUNT(*) FROM invoice WHERE status = 'paid'"
WIDE = "SELECT COUNT(*) FROM invoice WHERE LOWER(status) = 'paid'"


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
        db.execute("CREATE TABLE invoice (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(id), "
                   "status TEXT, note TEXT)")
        db.executemany("INSERT INTO customer (name, city) VALUES (?, ?)", [("Ana", "Porto"), ("Ben", "porto")])
        db.executemany("INSERT INTO invoice (customer_id, status, note) VALUES (?, ?, ?)",
                       [(1, "paid", "ok"), (1, "Paid", "late"), (2, "PAID", None), (2, "open", "it's due"),
                        (1, "open", "x")])
    return path


def test_case_gaps_finds_comparisons_that_miss_stored_spellings(shop: Path) -> None:
    db = open_database(shop)
    (gap,) = case_gaps(db, NARROW)
    assert (gap.table, gap.column, gap.written, set(gap.stored)) == ("invoice", "status", "paid", {"Paid", "PAID"})
    assert "LOWER(status) = 'paid'" in gap.render() and "'Paid'" in gap.render()
    # an alias, the literal on the left, an IN list, and a join that names both tables' columns
    assert [g.written for g in case_gaps(db, "SELECT i.id FROM invoice AS i WHERE 'Paid' = i.status")] == ["Paid"]
    assert [g.written for g in case_gaps(db, "SELECT id FROM invoice WHERE status IN ('open', 'PAID')")] == ["PAID"]
    joined = ("SELECT c.name FROM customer c JOIN invoice i ON i.customer_id = c.id "
              "WHERE c.city = 'Porto' AND i.status = 'open'")
    assert [(g.table, g.column, g.stored) for g in case_gaps(db, joined)] == [("customer", "city", ("porto",))]


def test_case_gaps_is_silent_where_nothing_is_left_out_or_nothing_can_be_read(shop: Path) -> None:
    db = open_database(shop)
    for sql in (WIDE,                                                      # already case-blind
                "SELECT id FROM invoice WHERE status = 'open'",            # one spelling stored
                "SELECT id FROM invoice WHERE status = 'refunded'",        # not stored at all
                "SELECT id FROM invoice WHERE id = '1'",                   # no text stored in another case
                "SELECT id FROM invoice WHERE nothere = 'paid'",           # no such column
                "SELECT id FROM invoice WHERE status LIKE 'paid'",         # LIKE is case-blind already
                "SELEC id FRM invoice WHERE status = 'paid'",              # unreadable
                "SELECT id FROM invoice WHERE note = 'it''s due'",         # a quote in the literal, one spelling
                NARROW + " AND note <> '" + "x" * MAX_SQL_CHARS + "'"):    # too long to read
        assert case_gaps(db, sql) == [], sql
    many = " OR ".join(f"note = 'n{i}'" for i in range(3 * MAX_COMPARISONS))
    assert len(comparisons(sqlglot.parse_one(f"SELECT id FROM invoice WHERE {many}"))) == MAX_COMPARISONS


def test_the_toolkit_notes_the_gap_and_refuses_it_once_and_is_off_by_default(shop: Path) -> None:
    kit = SchemaToolkit(shop, check_case=True)
    tools = {t.name: t for t in kit.tools()}
    shown = tools["run_query"](sql=NARROW)
    assert shown.startswith("Note: invoice.status stores 'paid' also as") and shown.rstrip().endswith("(1 row)")
    assert not tools["run_query"](sql=WIDE).startswith("Note:")
    with pytest.raises(ValueError, match=r"refused this query once: invoice\.status stores 'paid'"):
        tools["confirm_answer"](sql=NARROW)
    assert kit.final is None
    assert "Final SQL" in tools["confirm_answer"](sql=NARROW)  # the same query again: the model keeps it
    kit.reset()
    with pytest.raises(ValueError, match="refused"):
        tools["confirm_answer"](sql=NARROW)
    plain = {t.name: t for t in SchemaToolkit(shop).tools()}
    assert not plain["run_query"](sql=NARROW).startswith("Note:")
    assert "Final SQL" in plain["confirm_answer"](sql=NARROW)


def confirm_twice(tasks: Path, first: str, second: str, **checks: bool) -> Trajectory:
    """The run of the first task of `tasks` in an SQL environment with `checks`, where the model confirms `first`
    and then, if the run goes on, `second`."""
    env = SQLEnvironment(tasks=tasks, schema="tables", **checks)  # type: ignore[arg-type]
    try:
        model = ScriptedModel([call("confirm_answer", sql=first), call("confirm_answer", sql=second)])
        prompt = env.instructions
        return run_episode(lambda tools: Agent(model, tools, instructions=prompt, max_steps=4), env, env.tasks()[0])
    finally:
        env.close()


def test_a_run_with_the_check_is_refused_then_confirms_the_fixed_query(shop: Path, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "shop-1", "question": "How many invoices are paid?", "sql": WIDE,
                                 "db": str(shop)}) + "\n")
    for check in (True, False):
        trajectory = confirm_twice(tasks, NARROW, WIDE, check_case=check)
        refused = [m for m in trajectory.messages if m.role == "tool" and m.is_error]
        assert len(refused) == (1 if check else 0)
        if check:
            assert CASE_GAP.split("{")[0] in refused[0].content
        assert (trajectory.rewards["execution"] == 1.0) is check  # without the check, the narrow count stands


def test_the_sql_command_checks_case_by_default(shop: Path, tmp_path: Path) -> None:
    """`agentkit sql` checks by default: the draft's narrow count is refused once and the model confirms the fixed
    one; with --no-check-case the narrow count stands."""
    from typer.testing import CliRunner

    from agentkit.cli.main import app

    script = tmp_path / "s.json"
    script.write_text(json.dumps([f"```sql\n{NARROW}\n```", {"tool": "confirm_answer", "arguments": {"sql": WIDE}}]))
    args = ["sql", "How many invoices are paid?", "--db", str(shop), "--model", f"script:{script}", "--no-embed",
            "--votes", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "refused this query once" in result.output and result.output.rstrip().endswith("3\n(1 row)")
    plain = CliRunner().invoke(app, [*args, "--no-check-case"])
    assert plain.exit_code == 0 and plain.output.rstrip().endswith("1\n(1 row)")


def test_agentkit_eval_passes_check_case_to_each_episodes_toolkit(shop: Path, tmp_path: Path) -> None:
    from agentkit.cli.eval_cmd import load_environment

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "shop-1", "question": "How many invoices are paid?", "sql": WIDE,
                                 "db": str(shop)}) + "\n")
    for check in (True, False):
        env = load_environment("sql", tasks, check_case=check)
        try:
            assert env.reset(env.tasks()[0]).toolkit.check_case is check
        finally:
            env.close()


def test_a_query_is_looked_up_once_per_database_and_its_lookups_are_capped(shop: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    db = open_database(shop)
    asked: list[str] = []
    real_query = db.query
    monkeypatch.setattr(db, "query", lambda sql, **kw: asked.append(sql) or real_query(sql, **kw))
    first = case_gaps(db, NARROW)
    assert case_gaps(db, NARROW) == first and len(first) == 1
    assert len(asked) == 1  # the second ask (run, then confirm) reads the database's cache
    # eight unqualified comparisons over three tables that all have the column: capped at MAX_PROBES lookups
    wide = tmp_path / "wide.sqlite"
    with sqlite3.connect(wide) as conn:
        for name in ("a", "b", "c"):
            conn.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, kind TEXT)")
            conn.executemany(f"INSERT INTO {name} (kind) VALUES (?)", [("x",), ("X",)])
    many = open_database(wide)
    probes: list[str] = []
    real_many = many.query
    monkeypatch.setattr(many, "query", lambda sql, **kw: probes.append(sql) or real_many(sql, **kw))
    where = " OR ".join(f"kind = 'v{i}'" for i in range(MAX_COMPARISONS - 1)) + " OR kind = 'x'"
    case_gaps(many, f"SELECT a.id FROM a, b, c WHERE {where}")
    assert len(probes) == MAX_PROBES
