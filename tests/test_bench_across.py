"""tests/benchmarks/bench_across.py end to end on two generated databases (real SQLite from the task engine, real
MiniLM embeddings): draft runs on one database scored against gold become worked examples, and questions on
the other database are run without and with them. The function model stands for the model's choices: it
answers one question of the second database right only when another database's example of its kind is shown."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from test_experience import build_train_db

from agentkit.environments.sql import SQLEnvironment
from agentkit.memory.experience import ACROSS_INTRO, Experience
from agentkit.messages import Message
from agentkit.sql.recipe import SQL_INSTRUCTIONS_SINGLE_SHOT, question_of
from agentkit.testing import FunctionModel

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
from bench_across import first_databases, run_benchmark

WRONG_21 = "SELECT MIN(Seats) FROM Shop"  # asked for the highest number of seats
WRONG_1 = "SELECT model FROM bike"  # asked for the bikes heavier than the average


def environment(tmp_path: Path, name: str, numbers: Sequence[int]) -> tuple[SQLEnvironment, dict[int, Any]]:
    """A generated train-split database's tasks `numbers` as an environment, and its records by number."""
    _, records = build_train_db(tmp_path / name, name)
    by_number = {int(r["id"].rsplit("-", 1)[1]): r for r in records}
    tasks = tmp_path / name / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(by_number[n]) + "\n" for n in numbers))
    return SQLEnvironment(tasks=tasks, schema="tables", name=f"sql-{name}"), by_number


def test_examples_from_one_database_are_shown_by_skeleton_on_another_and_flips_are_attributed(tmp_path: Path) -> None:
    bakery, cakes = environment(tmp_path, "bakery_orders", (25, 3, 21))  # 25: a nested AVG, as bike_shop-001
    bikes, bike = environment(tmp_path, "bike_shop", (1, 7))
    gold = {r["question"]: r["sql"] for r in (*cakes.values(), *bike.values())}
    drafts: list[str] = []

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> str:
        system, user = messages[0].content, next(m.content for m in messages if m.role == "user")
        question = question_of(user)
        sql = gold[question]
        if question == cakes[21]["question"]:
            sql = WRONG_21
        if question == bike[1]["question"]:  # right only with the bakery's nested example shown
            assert system.startswith(SQL_INSTRUCTIONS_SINGLE_SHOT)  # a draft, or the pre-prediction
            drafts.append(system)
            sql = sql if ACROSS_INTRO in system and cakes[25]["sql"] in system else WRONG_1
        return f"```sql\n{sql}\n```"

    report = run_benchmark(bakery, list(bakery.tasks()), bikes, list(bikes.tasks()), FunctionModel(reply),
                           tmp_path / "work", votes=1, concurrency=1)
    assert report["learning"]["matched_gold"] == 2 and report["learning"]["admitted"] == 2
    assert report["learning"]["per_database"] == {"bakery_orders": ["bakery_orders-025", "bakery_orders-003"]}
    experience = Experience.load(report["learning"]["experience"])
    assert sorted(e.task_id or "" for e in experience.examples) == ["bakery_orders-003", "bakery_orders-025"]

    assert (report["before"]["correct"], report["after"]["correct"]) == (1, 2) and report["delta_points"] == 50.0
    assert (report["became_right"], report["became_wrong"]) == (1, 0)
    (flip,) = report["flips"]
    assert flip["task"] == "bike_shop-001" and flip["became"] == "right" and flip["use"] == "adapted"
    assert sorted(flip["artefacts"]) == sorted(f"example {s['id']}" for s in flip["shown"])
    assert {s["from_task"] for s in flip["shown"]} == {"bakery_orders-025", "bakery_orders-003"}
    assert all(s["other_database"] and s["skeleton_similarity"] is not None for s in flip["shown"])
    # the draft before, the pre-prediction (without examples: it picks them), the draft after
    assert [ACROSS_INTRO in d for d in drafts] == [False, False, True]
    assert report["use"] == {"adapted": 1, "own": 1}  # the count wrote its own query: no count was learned
    assert set(report["nearest_learned_question"]["per_task"]) == {"bike_shop-001", "bike_shop-007"}
    assert set(report["minutes"]) == {"learn", "before", "after"}
    assert [t.id for t in first_databases([*bikes.tasks(), *bakery.tasks()], 1)] == ["bike_shop-001", "bike_shop-007"]
