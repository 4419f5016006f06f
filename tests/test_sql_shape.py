"""Shape checks: slips learned from failed train runs, checked against similar questions' gold clauses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentkit import Agent
from agentkit.environments.base import run_episode, succeeded
from agentkit.environments.sql import SQLEnvironment
from agentkit.memory.shape_checks import Example, ShapeChecks, clauses, gold_of, without_limit
from agentkit.testing import ScriptedModel, call
from agentkit.trajectory import Trajectory

if TYPE_CHECKING:
    from conftest import ClinicCLI

BRAZIL = "SELECT FirstName, LastName FROM Customer WHERE Country = 'Brazil'"  # chinook-007's gold


def test_shape_checks_are_a_check_of_finishing_calls_and_nothing_else() -> None:
    from agentkit.loop.extensions import Extension
    from agentkit.loop.hooks import defined_hooks
    from agentkit.memory.repairs import Repairs

    checks, repairs = ShapeChecks([], {}), Repairs()
    assert isinstance(checks, Extension) and defined_hooks(checks) == ("check",)
    assert isinstance(repairs, Extension) and defined_hooks(repairs) == ("advise",)


def test_clauses_and_the_last_limit_are_read_outside_string_literals() -> None:
    assert clauses("select a from t group  by a order by 2 desc limit 1") == {"group_by", "limit"}
    assert clauses("SELECT a FROM t WHERE b = 'ORDER BY' LIMIT 3") == {"limit", "unordered_limit"}
    assert clauses("SELECT a FROM (SELECT a FROM t ORDER BY a) LIMIT 3") == {"limit", "unordered_limit"}
    assert clauses("SELECT Name FROM t WHERE Name = 'no LIMIT here' OR Name = 'GROUP BY'") == frozenset()
    assert clauses("SELECT COUNT(*) FROM t") == frozenset()
    assert without_limit("SELECT a FROM t WHERE x = 'LIMIT 5' LIMIT 5") == "SELECT a FROM t WHERE x = 'LIMIT 5'"
    assert without_limit("select a from t limit 10 offset 5;") == "select a from t"
    assert without_limit("SELECT a FROM t WHERE x = 'b LIMIT 5'") is None
    assert without_limit("SELECT * FROM (SELECT a FROM t LIMIT 1) WHERE a > 1") is None  # not the last clause


def episode(env: SQLEnvironment, task_id: str, script: list, extensions: tuple = (),
            max_steps: int = 8) -> tuple[Trajectory, ScriptedModel]:
    task = next(t for t in env.tasks() if t.id == task_id)
    model = ScriptedModel(script)
    trajectory = run_episode(lambda tools: Agent(model, tools, instructions=env.instructions, max_steps=max_steps,
                                                 extensions=extensions), env, task)
    return trajectory, model


def test_fit_learns_the_slips_failed_runs_made_often_enough_and_every_gold_clause() -> None:
    env = SQLEnvironment.chinook()
    try:
        tasks = [t for t in env.tasks() if t.id in ("chinook-007", "chinook-008", "chinook-016", "chinook-030")]
        gold = gold_of(tasks)
        runs = [episode(env, tid, [call("confirm_answer", sql=gold[tid][1] + " LIMIT 1")])[0]
                for tid in ("chinook-007", "chinook-008")]  # two wrong answers cut by a LIMIT
        runs.append(episode(env, "chinook-016", [call("confirm_answer", sql=gold["chinook-016"][1])])[0])  # right
        # a count over all customers where the gold counts per country: no slip that is checked for
        runs.append(episode(env, "chinook-030", [call("confirm_answer", sql="SELECT COUNT(*) FROM Customer")])[0])
    finally:
        env.close()
    assert [succeeded(r) for r in runs] == [False, False, True, False]
    checks = ShapeChecks.fit(runs, gold)
    assert checks.slips == {"extra_limit": 2}
    # one run is not enough for a slip its neighbours vote on; nothing is learned before a run has slipped
    assert ShapeChecks.fit(runs[1:], gold).slips == {}
    assert ShapeChecks.fit(runs[1:], gold, min_slips=1).slips == {"extra_limit": 1}
    assert ShapeChecks.fit(runs[2:], gold, min_slips=0).slips == {}
    # a LIMIT cutting unordered rows is no learned slip (it is the toolkit's static check, off by default)
    assert ShapeChecks.fit([], gold).find_slip(gold["chinook-016"][0], gold["chinook-016"][1] + " LIMIT 1") is None
    assert {e.question: e.clauses for e in checks.examples}[gold["chinook-030"][0]] == ("group_by",)
    assert len(checks.examples) == 4


LISTS = [Example("Question: List the names of the customers who live in Canada.", ()),
         Example("Question: List the names of the customers whose city is Paris.", ()),
         Example("Question: Give the names of the customers who live in Germany.", ()),
         Example("Question: Which customer has the most invoices?", ("group_by", "limit"))]


def test_a_confirmed_query_with_a_limit_similar_questions_never_had_runs_without_it() -> None:
    checks = ShapeChecks(LISTS, {"extra_limit": 2})
    env = SQLEnvironment.chinook()
    try:  # chinook-007: "What are the first and last names of the customers who live in Brazil?"
        trajectory, model = episode(env, "chinook-007", [call("describe_table", table="Customer"),
                                                         call("confirm_answer", sql=BRAZIL + " LIMIT 1")],
                                    extensions=(checks,))
        bare, _ = episode(env, "chinook-007", [call("confirm_answer", sql=BRAZIL + " LIMIT 1")])
    finally:
        env.close()
    assert succeeded(trajectory) and not succeeded(bare)  # scored on the query that ran
    assert trajectory.extras["shape_checks"] == {"fixed": [{"slip": "extra_limit", "sql": BRAZIL + " LIMIT 1",
                                                            "ran": BRAZIL}]}
    confirmed = trajectory.messages[-2].tool_calls[0]  # the model's own call stays in the trajectory
    assert confirmed.arguments == {"sql": BRAZIL + " LIMIT 1"}
    assert trajectory.messages[-1].content.startswith(f"Final SQL:\n{BRAZIL}\n") and "(5 rows)" in \
        trajectory.messages[-1].content
    assert trajectory.extras["sql"]["final_sql"] == BRAZIL and len(model.requests) == 2


def test_a_limit_is_left_alone_where_similar_questions_had_one_or_it_is_not_the_last_clause() -> None:
    ranked = [Example(f"Question: Which {x} has the most tracks?", ("group_by", "limit"))
              for x in ("album", "genre", "playlist")]
    checks = ShapeChecks([*LISTS, *ranked], {"extra_limit": 2})
    question = "Question: Which media type has the most tracks?"
    assert checks.find_slip(question, "SELECT Name FROM MediaType ORDER BY Name LIMIT 1") is None
    listing = "Question: List the names of the customers who live in Brazil."
    assert checks.find_slip(listing, BRAZIL + " LIMIT 5") == ("extra_limit", BRAZIL)
    assert checks.find_slip(listing, f"SELECT * FROM ({BRAZIL} LIMIT 5) AS b WHERE 1") is None
    # a slip that was not learned is not checked, and a question too unlike the train ones is left alone
    assert ShapeChecks(LISTS, {}).find_slip(listing, BRAZIL + " LIMIT 5") is None
    assert checks.find_slip("Question: Count the invoices of 2010.", "SELECT 1 LIMIT 1") is None


def test_the_toolkits_limit_check_refuses_an_unordered_limit_once_and_is_off_by_default(tmp_path: Path) -> None:
    from agentkit.environments.sql import CHINOOK_DB
    from agentkit.sql import SchemaToolkit
    from agentkit.sql.toolkit import UNORDERED_LIMIT, unordered_limit

    assert unordered_limit(BRAZIL + " LIMIT 1") and not unordered_limit(BRAZIL + " ORDER BY LastName LIMIT 1")
    assert not unordered_limit(BRAZIL) and not unordered_limit(f"SELECT * FROM ({BRAZIL} LIMIT 5) WHERE 1")
    kit = SchemaToolkit(CHINOOK_DB, check_limit=True)
    confirm = {t.name: t for t in kit.tools()}["confirm_answer"]
    with pytest.raises(ValueError, match="refused this query once"):
        confirm(sql=BRAZIL + " LIMIT 1")
    assert kit.final is None
    assert "(1 row)" in confirm(sql=BRAZIL + " LIMIT 1")  # the same query again: the model keeps it
    assert "(5 rows)" in confirm(sql=BRAZIL + " ORDER BY LastName LIMIT 5")  # ranked rows: never refused
    kit.reset()  # a new run: refused again
    with pytest.raises(ValueError, match="refused"):
        confirm(sql=BRAZIL + " LIMIT 1")
    plain = {t.name: t for t in SchemaToolkit(CHINOOK_DB).tools()}["confirm_answer"]
    assert "(1 row)" in plain(sql=BRAZIL + " LIMIT 1")  # off by default
    # in a run, the model sees why and confirms again; the trajectory keeps both calls
    env = SQLEnvironment.chinook(check_limit=True)
    try:
        trajectory, _ = episode(env, "chinook-007", [call("confirm_answer", sql=BRAZIL + " LIMIT 1"),
                                                     call("confirm_answer", sql=BRAZIL)])
    finally:
        env.close()
    refused = [m for m in trajectory.messages if m.role == "tool" and m.is_error]
    assert len(refused) == 1 and UNORDERED_LIMIT in refused[0].content and succeeded(trajectory)
    # a checks file written when the unordered LIMIT was a learned slip still loads, without it
    old = tmp_path / "checks.json"
    old.write_text(json.dumps({"kind": "agentkit.sql.shape", "version": 1, "neighbours": 3, "examples": [],
                               "slips": {"extra_limit": 2, "unordered_limit": 0}}))
    assert ShapeChecks.load(old).slips == {"extra_limit": 2}


def test_checks_survive_a_save_and_malformed_checks_are_a_clear_error(tmp_path: Path) -> None:
    path = ShapeChecks(LISTS, {"extra_limit": 2}).save(tmp_path / "checks.json")
    loaded = ShapeChecks.load(path)
    assert loaded.examples == LISTS and loaded.slips == {"extra_limit": 2}
    (tmp_path / "odd.json").write_text('{"kind": "agentkit.sql.shape", "examples": [{"q": 1}]}')
    with pytest.raises(ValueError, match="malformed shape checks"):
        ShapeChecks.load(tmp_path / "odd.json")
    with pytest.raises(ValueError, match="unknown slips"):
        ShapeChecks(LISTS, {"made_up": 1})


def test_the_cli_learns_checks_from_the_train_split_and_eval_takes_the_file(clinic_cli: ClinicCLI) -> None:
    cut = {"tool": "confirm_answer", "arguments": {"sql": "SELECT * FROM Patient LIMIT 1"}}  # every answer, cut
    result = clinic_cli.learn("checks", [cut] * 40, tasks=8, budget="20ep", extra=("--validation", "0"))
    out = clinic_cli.out
    rows = [json.loads(line) for line in clinic_cli.tasks.read_text().splitlines()]
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    learned = ShapeChecks.load(out / "checks.json")
    train = {r["id"]: r for r in rows if r["id"] in summary["train_tasks"]}
    assert sorted(e.question for e in learned.examples) == sorted(f"Question: {r['question']}"
                                                                  for r in train.values())
    slipped = sum("LIMIT" not in r["sql"].upper() for r in train.values())
    assert learned.slips == {"extra_limit": slipped}
    assert f"--checks {out / 'checks.json'}" in result.output.replace("\n", "")
    from agentkit.cli.chat_cmd import memory_and_skills

    extensions = memory_and_skills(skills=None, notes=None, session=None, model="x", checks=out / "checks.json")[0]
    assert [type(e) for e in extensions] == [ShapeChecks]  # what `agentkit chat --checks FILE` attaches
    runs = clinic_cli.evaluate("--checks", str(out / "checks.json"))
    fixed = [f for r in runs for f in r["extras"].get("shape_checks", {}).get("fixed", [])]
    assert fixed and all(f["slip"] == "extra_limit" and f["sql"] == "SELECT * FROM Patient LIMIT 1"
                         and f["ran"] == "SELECT * FROM Patient" for f in fixed)


def score(label: str, solved: dict[str, bool]) -> Any:
    from agentkit.training.learning.report import Score

    wins = sum(solved.values())
    return Score(label=label, environment="sql", tasks=len(solved), successes=wins, success_rate=wins / len(solved),
                 ci_low=0.0, ci_high=1.0, per_task=solved)


def validation_run(method: str, task_id: str, acted: bool) -> Trajectory:
    """A validation trajectory on which `method` (checks: a fixed query; experience: examples shown) acted or not."""
    from agentkit.records import EXPERIENCE, ExperienceRecord, ShownExample

    if method == "checks":
        return Trajectory(task_id=task_id, extras={"shape_checks": {"fixed": [{}]}} if acted else {})
    run = Trajectory(task_id=task_id)  # experience records every run; acted: it was shown examples
    examples = [ShownExample(id="ex-1", question="Count the shops.", question_similarity=0.91)] if acted else []
    run.records.set(EXPERIENCE, ExperienceRecord(database="db", shown=examples))
    return run


@pytest.mark.parametrize("method", ["checks", "experience"])
def test_validation_judges_a_method_that_acts_on_some_runs_by_the_runs_it_acted_on(method: str,
                                                                                   tmp_path: Path) -> None:
    from agentkit.training.learning.loop import validation_tally, validation_verdict
    from agentkit.trajectory import append_jsonl

    runs = tmp_path / f"validation-{method}.jsonl"
    for task_id, acted in (("a", True), ("b", False), ("c", False), ("d", True)):
        append_jsonl(runs, validation_run(method, task_id, acted))
    without = score("validation-before", {"a": False, "b": True, "c": False, "d": False})
    # "b" was lost where the method did nothing (the engine's noise) and "a" won where it acted: kept, though
    # the totals tie
    won = score("v", {"a": True, "b": False, "c": False, "d": False})
    assert validation_verdict(method, won, without, runs) is None
    assert validation_tally(method, won, without, runs) == (["a", "d"], ["a"], [])
    # lost where it acted ("a" solved without, not with): set aside, though the totals say otherwise
    lost = validation_verdict(method, score("v", {"a": False, "b": True, "c": True, "d": False}),
                              score("w", {"a": True, "b": True, "c": False, "d": False}), runs)
    assert lost == (f"{method} set aside: on the 2 validation tasks it acted on it lost 1 and won 0 "
                    "(in all 2 of 4 solved with it, 2 without)")


def test_validation_judges_a_method_that_changes_every_run_in_all(tmp_path: Path) -> None:
    from agentkit.training.learning.loop import validation_verdict

    runs = tmp_path / "validation-skills.jsonl"
    without = score("validation-before", {"a": False, "b": True, "c": False, "d": False})
    # a method that changes every run must solve at least MIN_GAIN (2) more in all: one more is not enough
    assert validation_verdict("skills", score("v", {"a": True, "b": True, "c": False, "d": False}), without,
                              runs) == ("skills set aside: with it the agent solved 2 of 4 validation tasks, 1 "
                                        "without (a method that changes every run must solve at least 2 more to "
                                        "be kept)")
    assert validation_verdict("skills", score("v", {"a": True, "b": True, "c": True, "d": False}), without,
                              runs) is None
    # where the agent without it already solved every validation task, nothing shows that it helps: set aside
    every = {"a": True, "b": True, "c": True, "d": True}
    assert validation_verdict("skills", score("v", every), score("w", every), runs) == (
        "skills set aside: with it the agent solved 4 of 4 validation tasks, 4 without (a method that changes "
        "every run must solve at least 2 more to be kept)")
