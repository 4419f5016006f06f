"""tests/benchmarks/bench_from_runs.py end to end on one generated database (real SQLite from the task engine, real
MiniLM embeddings): an afternoon of draft runs rated against gold, learned with `learn_from_runs`, and the next
day's held-out questions without and with the learned folder. The function model stands for the model's choices:
it answers one held-out question right only when the prompt shows worked examples."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from test_experience import build_train_db

from agentkit.environments.base import Task
from agentkit.environments.sql import SQLEnvironment
from agentkit.feedback import feedback_of
from agentkit.memory.experience import TITLE, Experience
from agentkit.messages import Message
from agentkit.records import EXPERIENCE
from agentkit.sql.recipe import question_of
from agentkit.testing import FunctionModel
from agentkit.trajectory import read_jsonl

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
from bench_from_runs import Options, Plan, markdown, plan_split, run_before, run_benchmark, spare_tasks, split_database

ORDER = (4, 21, 24, 27, 28)  # the afternoon: 4, 21, 24; the next day: 27 (24's sibling at cosine 0.83), 28
WRONG_21 = "SELECT MIN(Seats) FROM Shop"  # asked for the highest number of seats
WRONG_27 = "SELECT COUNT(*) FROM Shop"  # asked for the shops with more than 5 employees


def bakery(tmp_path: Path) -> tuple[SQLEnvironment, dict[int, dict[str, Any]], dict[str, str]]:
    """The generated bakery_orders database's tasks of ORDER as an environment, its records by number, and each
    question's gold SQL."""
    _, records = build_train_db(tmp_path / "sqlgen")
    by_number = {int(r["id"].rsplit("-", 1)[1]): r for r in records}
    tasks = tmp_path / "sqlgen" / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(by_number[n]) + "\n" for n in ORDER))
    env = SQLEnvironment(tasks=tasks, schema="tables", name="sql-train")
    return env, by_number, {r["question"]: r["sql"] for r in records}


def test_an_afternoon_rated_against_gold_is_learned_and_shown_the_next_day(tmp_path: Path) -> None:
    env, by_number, gold = bakery(tmp_path)
    shown_examples: list[str] = []

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> str:
        system, user = messages[0].content, next(m.content for m in messages if m.role == "user")
        question = question_of(user)
        sql = gold[question]
        if question == by_number[21]["question"]:
            sql = WRONG_21
        if question == by_number[27]["question"]:
            shown = f"## {TITLE}" in system
            shown_examples.append(system if shown else "")
            sql = sql if shown else WRONG_27
        return f"```sql\n{sql}\n```"

    model = FunctionModel(reply)
    report = run_benchmark(env, ["bakery_orders"], model, "function", tmp_path / "work", afternoon=3, heldout=2,
                           options=Options(votes=1, concurrency=2), split="train")
    (d,) = report["databases"]
    ids = {n: f"bakery_orders-{n:03d}" for n in ORDER}

    # the afternoon: rated by gold, logged as an application logs runs (no gold scores), no reasons
    assert d["afternoon"]["tasks"] == [ids[4], ids[21], ids[24]]
    assert d["afternoon"]["ratings"] == {ids[4]: "good", ids[21]: "bad", ids[24]: "good"}
    assert (d["afternoon"]["good"], d["afternoon"]["bad"]) == (2, 1)
    logged = {t.task_id: t for t in read_jsonl([d["afternoon"]["log"]])}
    assert set(logged) == {ids[4], ids[21], ids[24]}
    verdicts = {k: feedback_of(t) for k, t in logged.items()}
    assert {k: v.good for k, v in verdicts.items() if v is not None} == {ids[4]: True, ids[21]: False, ids[24]: True}
    assert all(v is not None and v.why is None for v in verdicts.values())
    assert all(t.rewards == {} and t.reward is None for t in logged.values())

    # learned: the two good runs, not the bad one
    experience = Experience.load(Path(d["learned"]["folder"]) / "experience.json")
    assert sorted(e.task_id or "" for e in experience.examples) == [ids[4], ids[24]]
    assert d["learned"]["examples"] == 2 and len(d["learned"]["admitted"]) == 2 and d["learned"]["notes"] == []
    example_of_24 = next(e.id for e in experience.examples if e.task_id == ids[24])

    # the next day: the same tasks before and after; the run after was shown the afternoon's examples
    assert d["before"]["outcomes"] == {ids[27]: False, ids[28]: True}
    assert d["after"]["outcomes"] == {ids[27]: True, ids[28]: True}
    for phase in ("before", "after"):
        assert d[phase]["correct"] == sum(d[phase]["outcomes"].values()) and d[phase]["tasks"] == 2
    assert d["delta_points"] == 50.0
    assert shown_examples[0] == "" and by_number[24]["sql"] in shown_examples[-1]
    before = {t.task_id: t for t in read_jsonl([tmp_path / "work" / "bakery_orders" / "before.jsonl"])}
    after = {t.task_id: t for t in read_jsonl([tmp_path / "work" / "bakery_orders" / "after.jsonl"])}
    assert before[ids[27]].records.get(EXPERIENCE) is None
    record = after[ids[27]].records.get(EXPERIENCE)
    assert record is not None and [s.question for s in record.shown] == [by_number[24]["question"]]

    (flip,) = d["flips"]
    assert flip["task"] == ids[27] and flip["became"] == "right"
    assert f"example {example_of_24}" in flip["artefacts"]
    assert [s["from_task"] for s in flip["shown"]] == [ids[24]]  # "Count the employees." is another kind: not shown
    assert (d["became_right"], d["became_wrong"]) == (1, 0)

    overall = report["overall"]
    assert (overall["before"]["correct"], overall["after"]["correct"], overall["heldout_tasks"]) == (1, 2, 2)
    assert overall["delta_points"] == 50.0 and overall["afternoon_good"] == 2 and overall["afternoon_bad"] == 1
    assert overall["after"]["wilson95"][0] < 1.0 == overall["after"]["accuracy"]
    table = markdown(report)
    assert "| **all** | 2 / 1 | 2 | 2 |" in table and f"- {ids[27]}: became right; shown ex" in table
    json.dumps(report)  # what the script writes: plain JSON


def test_a_short_database_is_split_in_the_asked_proportion() -> None:
    assert [len(p) for p in split_database(list(range(30)), 40, 20)] == [20, 10]
    assert [len(p) for p in split_database(list(range(70)), 40, 20)] == [40, 20]
    first, then = split_database(list(range(5)), 3, 2)
    assert (first, then) == ([0, 1, 2], [3, 4])
    assert [len(p) for p in split_database([0, 1], 40, 20)] == [1, 1]


def test_spares_fill_the_afternoon_and_never_the_held_out_set(tmp_path: Path) -> None:
    data = tmp_path / "sqlgen"
    _, records = build_train_db(data)
    env = SQLEnvironment(tasks=data / "train.jsonl", name="sql-train")
    spares = spare_tasks(data, ["bakery_orders"])["bakery_orders"]
    assert len(spares) >= 30 and all("-s" in t.id for t in spares)
    assert spares[0].data["db"] == env.tasks()[0].data["db"]  # the split's own database file
    frozen = [r["id"] for r in records]
    held_q, held_sql = records[20]["question"], records[21]["sql"]
    paraphrase = Task(id="bakery_orders-s900", prompt=held_q, data={**spares[0].data, "question": held_q})
    twin = Task(id="bakery_orders-s901", prompt="x",
                data={**spares[1].data, "gold_sql": "  " + held_sql.upper().replace(" ", "\n  ") + " ;"})
    offered = [paraphrase, twin, *spares]

    (plan,) = plan_split(env, ["bakery_orders"], 40, 20, spares={"bakery_orders": offered}).values()
    assert [t.id for t in plan.heldout] == frozen[10:]  # the task file's last 20, in order
    ids = [t.id for t in plan.afternoon]
    assert ids[:10] == frozen[:10] and len(ids) == 40 and len(set(ids)) == 40
    assert all(i.startswith("bakery_orders-s") for i in ids[10:]) and not set(ids) & set(frozen[10:])
    check = plan.spares
    assert check is not None and check["used"] == 30 and check["available"] == len(offered)
    dropped = {d["id"]: d for d in check["dropped"]}
    assert dropped[paraphrase.id]["why"] == "paraphrase" and dropped[paraphrase.id]["similarity"] >= 0.99
    assert dropped[paraphrase.id]["heldout"] == records[20]["id"]
    assert dropped[twin.id]["why"] == "same SQL" and dropped[twin.id]["heldout"] == records[21]["id"]
    assert paraphrase.id not in ids and twin.id not in ids
    assert check["dropped_paraphrase"] >= 1 and check["dropped_same_sql"] >= 1
    near = check["heldout_nearest_afternoon"]
    assert 0.0 < near["median"] <= near["max"] < 0.9 + 1e-6

    (old,) = plan_split(env, ["bakery_orders"], 40, 20).values()  # --no-spare: the task file alone
    assert [t.id for t in old.afternoon] == frozen[:20] and [t.id for t in old.heldout] == frozen[20:]
    assert old.spares is None


def test_spare_runs_are_rated_and_reported(tmp_path: Path) -> None:
    data = tmp_path / "sqlgen"
    _, records = build_train_db(data)
    spares = spare_tasks(data, ["bakery_orders"])["bakery_orders"]
    tasks = data / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in records[:4]))
    env = SQLEnvironment(tasks=tasks, name="sql-train")
    gold = {r["question"]: r["sql"] for r in records} | {t.data["question"]: t.data["gold_sql"] for t in spares}

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> str:
        return f"```sql\n{gold[question_of(next(m.content for m in messages if m.role == 'user'))]}\n```"

    report = run_benchmark(env, ["bakery_orders"], FunctionModel(reply), "function", tmp_path / "work", afternoon=4,
                           heldout=2, options=Options(votes=1, concurrency=2, min_similarity=0.3), split="train",
                           spares={"bakery_orders": spares})
    (d,) = report["databases"]
    learned = tmp_path / "work" / "bakery_orders" / "learned" / "experience.json"
    assert Experience.load(learned).min_similarity == 0.3  # the floor asked for is the one learning saved
    assert d["afternoon"]["tasks"] == [records[0]["id"], records[1]["id"], spares[0].id, spares[1].id]
    assert d["afternoon"]["good"] == 4 and d["learned"]["examples"] == 4
    assert list(d["before"]["outcomes"]) == [records[2]["id"], records[3]["id"]] and not d["short"]
    assert d["spares"]["used"] == 2 and report["overall"]["spares_used"] == 2
    json.dumps(report)


def test_before_only_scores_each_databases_held_out_questions_without_memory_hardest_first(tmp_path: Path) -> None:
    env, by_number, gold = bakery(tmp_path)
    asked: list[str] = []

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> str:
        question = question_of(next(m.content for m in messages if m.role == "user"))
        asked.append(question)
        return f"```sql\n{WRONG_27 if question == by_number[27]['question'] else gold[question]}\n```"

    plans = plan_split(env, ["bakery_orders"], 3, 2)
    held = plans["bakery_orders"].heldout
    easier = {"bakery_easier": Plan(held[:0], held[1:], len(held))}  # only the question answered right
    row, easy = run_before(env, {**easier, **plans}, FunctionModel(reply), tmp_path / "work",
                           options=Options(votes=1), split="train")
    assert (row["db_id"], easy["db_id"]) == ("bakery_orders", "bakery_easier")  # hardest first
    assert easy["before"]["outcomes"] == {"bakery_orders-028": True}
    assert row["before"]["outcomes"] == {"bakery_orders-027": False, "bakery_orders-028": True}
    assert row["before"]["correct"] == 1 and row["before"]["accuracy"] == 0.5
    assert set(asked) == {by_number[27]["question"], by_number[28]["question"]}  # no afternoon question was run
    logged = read_jsonl([tmp_path / "work" / "bakery_orders" / "before.jsonl"])
    assert {t.task_id for t in logged} == {"bakery_orders-027", "bakery_orders-028"}
    assert all(t.records.get(EXPERIENCE) is None for t in logged)


def test_the_map_then_act_configuration_maps_each_question_then_acts(tmp_path: Path) -> None:
    """`bench_sql_split.py --configs map-then-act`: each episode writes a map (no exploration stage: a split's
    databases share one environment name), then answers; the run is scored like any other."""
    from bench_sql_split import config_factory

    from agentkit.evaluation import EvalConfig, evaluate
    from agentkit.records import EXPLORE, MAP

    _, records = build_train_db(tmp_path / "sqlgen")
    tasks = tmp_path / "sqlgen" / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in records[:2]))
    env = SQLEnvironment(tasks=tasks, schema="tables", name="sql-train")
    gold = {r["question"]: r["sql"] for r in records}
    stages: list[str] = []

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> str:
        if "cognitive map" in messages[0].content:
            stages.append("map")
            return json.dumps({"entities": [{"name": "orders", "kind": "table"}], "unknowns": []})
        stages.append("act")
        return f"```sql\n{gold[question_of(next(m.content for m in messages if m.role == 'user'))]}\n```"

    build = config_factory("map-then-act", env, FunctionModel(reply), max_steps=4, votes=1)
    run = evaluate(env, EvalConfig("map-then-act", build), tasks=list(env.tasks()), log=tmp_path / "runs.jsonl")
    assert [r.success for r in run.results] == [True, True]
    assert stages.count("map") == 2 and stages.count("act") >= 2
    for trajectory in read_jsonl([tmp_path / "runs.jsonl"]):
        assert trajectory.records.get(MAP) is not None
        assert trajectory.records.get(EXPLORE).skipped == "budget 0"


def test_bench_sql_split_picks_per_database_and_by_what_the_gold_query_holds() -> None:
    from bench_sql_split import pick

    tasks = [Task(id=f"{db}-{i}", prompt="q", data={"db": db, "gold_sql": sql})
             for db, i, sql in [("a", 1, "SELECT 1"), ("a", 2, "SELECT x FROM t WHERE LOWER(s) = 'p'"),
                                ("a", 3, "SELECT lower(s) FROM t"), ("b", 1, "SELECT 2")]]
    assert [t.id for t in pick(tasks, 1)] == ["a-1", "b-1"]
    assert [t.id for t in pick(tasks, 5, "LOWER(")] == ["a-2", "a-3"]
    assert [t.id for t in pick(tasks, 1, "lower(")] == []  # positions first, then the gold's text among them
    assert [t.id for t in pick(tasks, 2, "lower(")] == ["a-2"]
    assert [t.id for t in pick(tasks, 5, "LOWER(", skip=2)] == ["a-3"]
    assert [t.id for t in pick(tasks, 1, skip=1)] == ["a-2"]  # b has one question
    assert [t.id for t in pick(tasks, 5, skip=2)] == ["a-3"]
