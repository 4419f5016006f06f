"""tests/benchmarks/replay_draft_votes.py on runs of the real draft planner over a generated SQLite database: the
replayed shipped rule keeps the query the run kept, and the other rules are scored against the gold query by
execution. The model stands for the model's choices."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from test_experience import build_train_db
from test_sql_drafts import Drafts, run_all

from agentkit.environments.sql import SQLEnvironment
from agentkit.messages import Message
from agentkit.sql.draft import VOTE_SEED
from agentkit.trajectory import append_jsonl

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
from replay_draft_votes import Vote, main, prefer_order_by, replay, shipped, tie_shortest


def test_rules_pick_as_documented() -> None:
    unordered = Vote("SELECT name FROM t", "a\nb", "b\na", False)
    ordered = Vote("SELECT name FROM t ORDER BY name", "a\nb", "a\nb", True)
    other = Vote("SELECT x FROM t", "c", "c", False)
    assert shipped([unordered, ordered, other]) is unordered
    assert prefer_order_by([unordered, ordered, other]) is ordered
    assert prefer_order_by([other, unordered]) is other  # one member each: the first group, no ORDER BY to prefer
    long_wrong = Vote("SELECT a, b FROM t JOIN u ON t.id = u.tid WHERE u.k < 3", "1", "1", False)
    short_right = Vote("SELECT a FROM t WHERE k < 3", "2", "2", True)
    assert shipped([long_wrong, short_right]) is long_wrong
    assert tie_shortest([long_wrong, short_right]) is short_right
    assert tie_shortest([long_wrong, long_wrong, short_right]) is long_wrong  # a bigger group is not a tie


def test_replay_of_real_draft_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, records = build_train_db(tmp_path / "sqlgen")
    rows = [r for r in records if r["id"] in ("bakery_orders-003", "bakery_orders-004")]
    tasks = tmp_path / "sqlgen" / "two.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = SQLEnvironment(tasks=tasks, schema="tables", name="sql-train")
    sql = {r["question"]: r["sql"] for r in rows}
    districts, employees = (next(r["question"] for r in rows if r["id"] == f"bakery_orders-00{n}") for n in (3, 4))
    padding = " AND 1 = 1" * 12
    long_wrong = f"SELECT COUNT(*) + 12345 FROM Shop WHERE 2 = 2{padding}"
    other_wrong = f"SELECT COUNT(*) + 999 FROM Shop WHERE 3 = 3{padding}"
    assert len(sql[districts]) < len(long_wrong)
    drafts = {  # per question: the greedy draft, then the two sampled ones
        districts: [long_wrong, sql[districts], other_wrong],  # three groups of one: the shipped rule keeps the first
        employees: [sql[employees], sql[employees] + " ", "SELECT count(EmployeeId) FROM Employee"],
    }
    model: Drafts

    def reply(messages: Sequence[Message], tools: Any) -> str:
        question = next(q for q in drafts if q in messages[1].content)
        settings = model.settings[-1]
        i = 0 if settings is None or not settings.temperature else 1 + int(settings.seed or 0) - VOTE_SEED
        return f"```sql\n{drafts[question][i]}\n```"

    model = Drafts(reply, name="drafts")
    runs = run_all(env, model)
    report = replay(runs, env)
    assert report["replayed"] == 2 and report["kept_differs_from_replay"] == 0
    rules = report["rules"]
    assert (rules["shipped"]["right"], rules["tie-shortest"]["right"]) == (1, 2)
    assert rules["tie-shortest"]["changed"] == [{"task": "bakery_orders-003", "right": True}]
    assert rules["ordered"]["right"] == 1 and rules["ordered"]["losses"] == 0

    log = tmp_path / "runs.jsonl"
    for t in runs:
        append_jsonl(log, t)
    out = tmp_path / "replay.json"
    monkeypatch.setattr(sys, "argv", ["replay", "--runs", str(log), "--tasks", str(tasks), "--kind", "train",
                                      "--out", str(out)])
    assert main() == 0
    written = json.loads(out.read_text())
    assert written["kind"] == "train" and written["rules"]["tie-shortest"]["wins"] == 1
