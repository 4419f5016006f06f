"""Experience: verified runs of a database kept as worked examples and shown to new questions on it, chosen by
question similarity (the packaged MiniLM) and SQL skeleton. Real SQLite files from the task engine (a train-split
database), real embeddings; the scripted model stands for the model's choices only."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentkit import Agent
from agentkit.environments.base import run_episode, succeeded
from agentkit.environments.sql import SQLEnvironment
from agentkit.feedback import rate
from agentkit.memory.experience import (
    ACROSS_INTRO,
    INTRO,
    MIN_SIMILARITY,
    PRE_PREDICT_PHASE,
    TITLE,
    Experience,
    NotAdmitted,
    WorkedExample,
    database_key,
    database_key_of,
    example_of,
    result_shape,
)
from agentkit.memory.skeleton import skeleton_similarity, sql_skeleton
from agentkit.messages import Message, ToolCall
from agentkit.records import EXPERIENCE
from agentkit.sql import SchemaToolkit, sql_agent, sql_task_prompt
from agentkit.sql.recipe import SQL_INSTRUCTIONS_SINGLE_SHOT, question_of
from agentkit.testing import FunctionModel, ScriptedModel, call
from agentkit.trajectory import Trajectory

DB_NAME = "bakery_orders"  # a train-split database of the task engine
FOUR_PHASE: dict[str, Any] = {"planner": "react", "schema": "hidden"}  # the agent reads no schema up front


def build_train_db(out: Path, name: str = DB_NAME) -> tuple[Path, list[dict[str, Any]]]:
    """Build one train-split database of the SQL task engine into `out`: its file and its task records."""
    from agentkit.sql.taskgen import build_tasks, split_of
    from agentkit.sql.taskgen.domains import ALL_DOMAINS

    domain = next(d for d in ALL_DOMAINS if d.name == name)
    assert split_of(name) == "train"
    build_tasks(out, domains=[domain], splits=("train",))
    records = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    return out / "database" / name / f"{name}.sqlite", records


@pytest.fixture(scope="module")
def bakery(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]], Path]:
    out = tmp_path_factory.mktemp("sqlgen")
    db, records = build_train_db(out)
    return db, records, out / "train.jsonl"


def gold(records: list[dict[str, Any]], number: int) -> tuple[str, str]:
    record = records[number - 1]
    assert record["id"] == f"{DB_NAME}-{number:03d}"
    return record["question"], record["sql"]


def example(records: list[dict[str, Any]], number: int, database: str = "db") -> WorkedExample:
    question, sql = gold(records, number)
    return WorkedExample(id=f"ex-{number}", database=database, question=question, sql=sql, skeleton=sql_skeleton(sql),
                         verified_by="gold")


def test_a_skeleton_masks_names_and_values_and_keeps_what_the_query_does() -> None:
    a = "SELECT p.ShopName, COUNT(*) AS n FROM OrderLine AS c JOIN Shop AS p ON c.ShopId = p.ShopId GROUP BY p.ShopId"
    b = "select x.Title, count(*) from Loan l join Book x on l.BookId = x.BookId group by x.BookId;"
    assert sql_skeleton(a) == sql_skeleton(b) == "SELECT _ , COUNT ( * ) FROM _ JOIN _ ON _ = _ GROUP BY _"
    assert sql_skeleton("SELECT COUNT(*) FROM Shop WHERE District = 'Old Town'") == \
        sql_skeleton("SELECT COUNT(*) FROM Product p WHERE p.Category = 'bread'") == \
        "SELECT COUNT ( * ) FROM _ WHERE _ = _"
    assert sql_skeleton("SELECT COUNT(*) FROM Product WHERE Price > 2.5") == "SELECT COUNT ( * ) FROM _ WHERE _ > _"
    assert sql_skeleton("SELECT Name FROM t WHERE a = 'LIMIT 5' ORDER BY b DESC LIMIT 5") == \
        "SELECT _ FROM _ WHERE _ = _ ORDER BY _ DESC LIMIT _"  # a keyword inside a string is a value
    assert sql_skeleton("SELECT strftime('%Y', d) FROM t WHERE x IS NULL") == \
        "SELECT STRFTIME ( _ , _ ) FROM _ WHERE _ IS NULL"
    count, count_where = sql_skeleton("SELECT COUNT(*) FROM t"), sql_skeleton("SELECT COUNT(*) FROM t WHERE a = 1")
    grouped = sql_skeleton("SELECT a, COUNT(*) FROM t GROUP BY a")
    assert skeleton_similarity(count, count) == 1.0
    assert 1.0 > skeleton_similarity(count, count_where) > skeleton_similarity(count_where, grouped) > 0.0
    assert sql_skeleton("SELEC FROM ((") and skeleton_similarity("", "") == 1.0  # never raises


def test_the_database_is_known_by_its_tables_wherever_it_lies(bakery: tuple[Path, Any, Path], tmp_path: Path) -> None:
    db, _, _ = bakery
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(db.read_bytes())
    key = database_key({t.name: t for t in SchemaToolkit(db).tools()})
    assert key is not None and key == database_key_of(copy)
    from agentkit.environments.sql import CLINIC_DB

    assert database_key_of(CLINIC_DB) != key
    assert database_key({}) is None  # not a SQL agent's tools


def test_retrieval_ranks_by_question_then_puts_the_pre_predictions_kind_first(bakery: tuple[Path, Any, Path]) -> None:
    _, records, _ = bakery
    experience = Experience([example(records, n) for n in (2, 4, 26, 30)], k=2, min_similarity=0.0)
    # "Which shops have more than 5 employees? Give their name.": by the question alone, "Count the employees."
    # comes first; the pre-predicted query (a HAVING count) puts the question answered by that kind of query,
    # "Which products have more than 5 order lines?", first
    question, having = gold(records, 27)
    by_question = experience.select("db", question)
    assert [c.example.id for c in by_question] == ["ex-4", "ex-2"]
    assert by_question[0].question_similarity > by_question[1].question_similarity
    assert all(c.skeleton_similarity is None for c in by_question)
    drafted = experience.select("db", question, having)
    assert [c.example.id for c in drafted] == ["ex-2", "ex-4"] and drafted[0].skeleton_similarity == 1.0
    # "Count the order lines.": nearest by question is "How many order lines does each product have?" (a grouped
    # count); a pre-predicted plain count puts "Count the employees." first, a filtered count the filtered one
    count_question, _ = gold(records, 29)
    assert experience.select("db", count_question)[0].example.id == "ex-26"
    assert experience.select("db", count_question, "SELECT COUNT(*) FROM OrderLine")[0].example.id == "ex-4"
    filtered = experience.select("db", count_question, "SELECT COUNT(*) FROM OrderLine WHERE Channel = 'app'")
    assert filtered[0].example.id == "ex-30" and filtered[0].skeleton_similarity == 1.0
    assert filtered[1].example.id == "ex-26"  # below the threshold, the rest go by the question
    # only the database's own examples, never another's
    assert experience.select("another-db", question) == []
    assert len(Experience([example(records, 4), example(records, 4, database="db")])) == 1  # same question: one


def test_by_default_only_examples_of_the_same_kind_of_question_are_shown(bakery: tuple[Path, Any, Path]) -> None:
    db, records, _ = bakery
    key = database_key_of(db)
    examples = [example(records, n, key) for n in (2, 4, 26, 29, 30)]
    floored, open_ = Experience(examples), Experience(examples, min_similarity=0.0)
    assert floored.min_similarity == MIN_SIMILARITY == 0.8
    # a paraphrase of "Count the order lines." is shown that example alone; without the floor, two more kinds
    # of question ("Which products have more than 5 order lines?", a grouped count) fill up to k
    paraphrase = "What is the number of order lines?"
    assert [c.example.id for c in floored.select(key, paraphrase)] == ["ex-29"]
    assert floored.select(key, paraphrase)[0].question_similarity >= 0.8
    wide = open_.select(key, paraphrase)
    assert len(wide) == 3 and wide[0].example.id == "ex-29" and min(c.question_similarity for c in wide) < 0.8
    # a question unlike every example is shown none, and no pre-prediction is spent on choosing among them
    drafts: list[str] = []

    def reply(messages: Sequence[Message], tools: Any) -> Message | str:
        if shown_sections(messages).startswith(SQL_INSTRUCTIONS_SINGLE_SHOT):
            drafts.append("pre-prediction")
            return "```sql\nSELECT 1\n```"
        return Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": "SELECT 1"})])

    question = gold(records, 27)[0]  # "Which shops have more than 5 employees?": every example below 0.8

    def run(experience: Experience) -> Trajectory:
        agent = sql_agent(FunctionModel(reply), db, extensions=[experience], max_steps=3, **FOUR_PHASE)
        return agent.run(sql_task_prompt(question)).trajectory

    record = run(floored).records.get(EXPERIENCE)
    assert record is not None and record.shown == [] and record.draft_sql is None and drafts == []
    record = run(open_).records.get(EXPERIENCE)  # five examples, more than k: one pre-prediction, k shown
    assert record is not None and len(record.shown) == 3 and drafts == ["pre-prediction"]


def test_the_skeleton_gate_shows_an_example_only_to_a_pre_prediction_of_its_kind(
        bakery: tuple[Path, Any, Path]) -> None:
    db, records, _ = bakery
    key = database_key_of(db)
    examples = [example(records, n, key) for n in (2, 4, 26, 29, 30)]
    paraphrase = "What is the number of order lines?"  # only "Count the order lines." passes the floor
    drafts: list[str] = []

    def drafting(sql: str | None) -> Any:
        def reply(messages: Sequence[Message], tools: Any) -> Message | str:
            if shown_sections(messages).startswith(SQL_INSTRUCTIONS_SINGLE_SHOT):
                drafts.append(sql or "")
                return f"```sql\n{sql}\n```" if sql else "I would count them."
            return Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": "SELECT 1"})])
        return reply

    def shown(experience: Experience, sql: str | None) -> list[str]:
        agent = sql_agent(FunctionModel(drafting(sql)), db, extensions=[experience], max_steps=3, **FOUR_PHASE)
        record = agent.run(sql_task_prompt(paraphrase)).trajectory.records.get(EXPERIENCE)
        assert record is not None
        return [s.id for s in record.shown]

    # without the gate one eligible example (at most k) is shown with no pre-prediction
    assert shown(Experience(examples), "SELECT COUNT(*) FROM OrderLine") == ["ex-29"] and drafts == []
    gated = Experience(examples, skeleton_gate=True)
    assert shown(gated, "SELECT COUNT(*) FROM OrderLine") == ["ex-29"]  # the same kind of query: shown
    assert len(drafts) == 1
    grouped = "SELECT Channel, COUNT(*) FROM OrderLine GROUP BY Channel"
    assert skeleton_similarity(sql_skeleton(grouped), examples[3].skeleton) < gated.skeleton_threshold
    assert shown(gated, grouped) == []  # another kind of query: the question's likeness is not enough
    assert shown(gated, None) == [] and len(drafts) == 3  # no SQL in the pre-prediction: nothing to match
    assert gated.select(key, paraphrase) == []  # and so for `select` without a pre-prediction
    # a question no example passes the floor for spends no pre-prediction
    agent = sql_agent(FunctionModel(drafting("SELECT 1")), db, extensions=[gated], max_steps=3, **FOUR_PHASE)
    agent.run(sql_task_prompt(gold(records, 27)[0]))
    assert len(drafts) == 3


def scripted_run(db: Path, question: str, script: list[Any], extensions: Sequence[Any] = ()) -> Trajectory:
    agent = sql_agent(ScriptedModel(script), db, extensions=extensions, max_steps=4, **FOUR_PHASE)
    return agent.run(sql_task_prompt(question)).trajectory


def test_only_verified_runs_are_admitted(bakery: tuple[Path, list[dict[str, Any]], Path]) -> None:
    db, records, tasks = bakery
    env = SQLEnvironment(tasks=tasks, name="sql-bakery")
    by_id = {t.id: t for t in env.tasks()}
    try:
        def episode(task_id: str, sql: str) -> Trajectory:
            return run_episode(lambda tools: Agent(ScriptedModel([call("confirm_answer", sql=sql)]), tools,
                                                   instructions=env.instructions, max_steps=3), env, by_id[task_id])

        right = episode(f"{DB_NAME}-004", "SELECT COUNT(*) FROM Employee")
        wrong = episode(f"{DB_NAME}-029", "SELECT COUNT(*) FROM Employee")
    finally:
        env.close()
    key = database_key_of(db)
    experience = Experience()
    assert succeeded(right) and not succeeded(wrong)
    admitted = experience.admit(right, database=key)
    assert admitted is not None and admitted.verified_by == "gold" and admitted.question == "Count the employees."
    assert admitted.tables == ["employee"] and admitted.shape is not None and admitted.shape.rows == 1
    assert admitted.skeleton == "SELECT COUNT ( * ) FROM _" and admitted.task_id == f"{DB_NAME}-004"
    assert experience.admit(wrong, database=key) is None  # a gold mismatch is never an example
    # real use: no gold; a person's rating decides
    question, sql = gold(records, 30)
    unrated = scripted_run(db, question, [call("confirm_answer", sql=sql)])
    with pytest.raises(NotAdmitted, match="not verified"):
        example_of(unrated, key)
    rate(unrated, good=False, why="count the bread products only")
    assert experience.admit(unrated, database=key) is None
    rate(unrated, good=True)  # a later verdict replaces the earlier one
    assert experience.admit(unrated, database=key) is not None
    no_answer = scripted_run(db, question, ["I do not know.", "I still do not know."])
    rate(no_answer, good=True)
    with pytest.raises(NotAdmitted, match="no confirmed SQL"):
        example_of(no_answer, key)
    with pytest.raises(NotAdmitted, match="database is not known"):
        example_of(unrated)
    assert [e.question for e in experience.examples] == ["Count the employees.", question]
    assert result_shape(unrated) is not None and result_shape(unrated).columns == ["COUNT(*)"]  # type: ignore[union-attr]


def shown_sections(messages: Sequence[Message]) -> str:
    return messages[0].content if messages and messages[0].role == "system" else ""


def test_the_prompt_shows_the_examples_and_the_trajectory_records_which(bakery: tuple[Path, Any, Path]) -> None:
    db, records, _ = bakery
    key = database_key_of(db)
    experience = Experience([example(records, n, key) for n in (2, 4, 26, 30, 3)], k=2, min_similarity=0.0)
    question, _ = gold(records, 29)
    prompts: list[str] = []
    pre_predictions: list[str] = []

    def reply(messages: Sequence[Message], tools: Any) -> Message | str:
        system = shown_sections(messages)
        if system.startswith(SQL_INSTRUCTIONS_SINGLE_SHOT):  # the pre-prediction: the model's own query, alone
            pre_predictions.append(system)
            return "```sql\nSELECT COUNT(*) FROM OrderLine WHERE Channel = 'app'\n```"
        prompts.append(system)
        return Message.assistant(tool_calls=[ToolCall(name="confirm_answer",
                                                      arguments={"sql": "SELECT COUNT(*) FROM Product WHERE "
                                                                        "Category = 'bread'"})])

    agent = sql_agent(FunctionModel(reply), db, extensions=[experience], max_steps=3, **FOUR_PHASE)
    trajectory = agent.run(sql_task_prompt(question)).trajectory
    assert len(pre_predictions) == 1 and TITLE not in pre_predictions[0]  # drafted without the examples
    assert trajectory.turns[0].phase == PRE_PREDICT_PHASE
    shown = trajectory.records.get(EXPERIENCE)
    assert shown is not None and shown.database == key
    nearest = experience.select(key, question)[0].example.id  # by the question alone
    assert nearest != "ex-30"
    assert [s.id for s in shown.shown] == ["ex-30", nearest]  # the pre-prediction's kind first, then by question
    assert shown.draft_skeleton == "SELECT COUNT ( * ) FROM _ WHERE _ = _" and shown.shown[0].skeleton_similarity == 1.0
    prompt = prompts[0]
    assert f"## {TITLE}" in prompt and prompt.count("```sql") == 2
    assert gold(records, 30)[1] in prompt and gold(records, int(nearest[3:]))[1] in prompt
    assert "Result: 1 row; columns: COUNT(*)" in prompt or "Result:" not in prompt
    assert shown.use == "copied"  # it confirmed ex-30's SQL as it was
    # at most k examples on the database: no pre-prediction is spent, the question alone orders them
    few = Experience([example(records, n, key) for n in (4, 30)], k=2, min_similarity=0.0)
    plain = sql_agent(ScriptedModel([call("confirm_answer", sql="SELECT COUNT(*) FROM OrderLine")]), db,
                      extensions=[few], max_steps=3, **FOUR_PHASE).run(sql_task_prompt(question)).trajectory
    record = plain.records.get(EXPERIENCE)
    assert record is not None and record.draft_sql is None and [s.id for s in record.shown] == ["ex-4", "ex-30"]
    assert record.use == "adapted" and all(t.phase != PRE_PREDICT_PHASE for t in plain.turns)
    # a run on another database is shown nothing, and a run without SQL tools is left alone
    from agentkit.environments.sql import CLINIC_DB

    other = sql_agent(ScriptedModel([call("confirm_answer", sql="SELECT 1")]), CLINIC_DB, extensions=[few],
                      max_steps=2, **FOUR_PHASE).run("Question: How many patients?").trajectory
    assert other.records.get(EXPERIENCE).shown == []  # type: ignore[union-attr]
    bare = Agent(ScriptedModel(["hi"]), extensions=[few]).run("hello").trajectory
    assert EXPERIENCE not in bare.records


def test_across_fills_a_database_without_enough_examples_with_other_databases_by_skeleton(
        bakery: tuple[Path, Any, Path]) -> None:
    from agentkit.environments.sql import CLINIC_DB

    db, records, _ = bakery
    key, clinic = database_key_of(db), database_key_of(CLINIC_DB)
    bakery_examples = [example(records, n, key) for n in (2, 4, 26, 30)]
    own = WorkedExample(id="ex-clinic", database=clinic, question="How many doctors are there?",
                        sql="SELECT COUNT(*) FROM Doctor", skeleton=sql_skeleton("SELECT COUNT(*) FROM Doctor"),
                        verified_by="user")
    experience = Experience([*bakery_examples, own], k=2, across=True, min_similarity=0.0)
    prompts: list[str] = []

    def reply(messages: Sequence[Message], tools: Any) -> Message | str:
        system = shown_sections(messages)
        if system.startswith(SQL_INSTRUCTIONS_SINGLE_SHOT):  # the pre-prediction, whose skeleton picks across
            return "```sql\nSELECT COUNT(*) FROM Patient WHERE City = 'Leeds'\n```"
        prompts.append(system)
        return Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={
            "sql": "SELECT COUNT(*) FROM Patient WHERE City = 'Leeds'"})])

    run = sql_agent(FunctionModel(reply), CLINIC_DB, extensions=[experience], max_steps=3, **FOUR_PHASE).run(
        "Question: How many patients live in Leeds?").trajectory
    record = run.records.get(EXPERIENCE)
    assert record is not None and record.draft_skeleton == "SELECT COUNT ( * ) FROM _ WHERE _ = _"
    # its own example first, then the other database's example most alike in skeleton to the pre-prediction
    assert [(s.id, s.other_database) for s in record.shown] == [("ex-clinic", False), ("ex-30", True)]
    assert record.shown[1].skeleton_similarity == 1.0
    prompt = prompts[0]
    assert prompt.index(INTRO) < prompt.index("SELECT COUNT(*) FROM Doctor") < prompt.index(ACROSS_INTRO)
    assert prompt.index(ACROSS_INTRO) < prompt.index(gold(records, 30)[1])
    assert record.use == "adapted"  # ex-30's form, the clinic's table
    # a database with k examples of its own is shown only those; without `across`, none from elsewhere
    assert all(not c.other_database for c in experience.select(key, gold(records, 27)[0], "SELECT 1"))
    alone = Experience(bakery_examples, k=2)
    assert alone.select(clinic, "How many patients live in Leeds?", "SELECT COUNT(*) FROM Patient") == []


def test_experience_is_a_versioned_file_load_memory_attaches(bakery: tuple[Path, Any, Path], tmp_path: Path) -> None:
    from agentkit.memory import load_memory
    from agentkit.memory.load import kept

    _, records, _ = bakery
    experience = Experience([example(records, 4), example(records, 30)])
    path = experience.save(tmp_path / "run" / "experience.json")
    data = json.loads(path.read_text())
    assert data["kind"] == "agentkit.experience" and data["version"] == 1 and len(data["examples"]) == 2
    loaded = Experience.load(path, k=1)
    assert loaded.examples == experience.examples and loaded.k == 1
    assert data["min_similarity"] == MIN_SIMILARITY == loaded.min_similarity
    # the floor is saved with the examples and applies on load, unless the caller names another
    lenient = Experience(experience.examples, min_similarity=0.25).save(tmp_path / "lenient.json")
    assert Experience.load(lenient).min_similarity == 0.25
    assert Experience.load(lenient, min_similarity=0.9).min_similarity == 0.9
    older = tmp_path / "older.json"  # written before the floor was saved: the default
    older.write_text(json.dumps({k: v for k, v in data.items() if k != "min_similarity"}))
    assert Experience.load(older).min_similarity == MIN_SIMILARITY
    for floor in ("high", True, 2.5):
        (tmp_path / "floor.json").write_text(json.dumps({**data, "min_similarity": floor}))
        with pytest.raises(ValueError, match=r"min_similarity .* is not a cosine"):
            Experience.load(tmp_path / "floor.json")
    attached = load_memory(tmp_path / "run")  # a folder without a summary: every artefact present
    assert [type(e) for e in attached] == [Experience] and attached[0].examples == experience.examples
    (tmp_path / "run" / "summary.json").write_text(json.dumps({"artefacts": {"checks": "x"}}))
    assert kept(tmp_path / "run") == []  # a summary that does not name it: not kept (set aside)
    (tmp_path / "run" / "summary.json").write_text(json.dumps({"artefacts": {"experience": str(path)}}))
    assert kept(tmp_path / "run") == ["experience"]
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**data, "version": 99}))
    with pytest.raises(ValueError, match="version 99"):
        Experience.load(newer)
    (tmp_path / "odd.json").write_text(json.dumps({"kind": "agentkit.experience", "examples": [{"id": 1}]}))
    with pytest.raises(ValueError, match="malformed experience"):
        Experience.load(tmp_path / "odd.json")
    with pytest.raises(ValueError, match=r"is not a file of worked examples \(experience\)"):
        Experience.load(tmp_path / "run" / "summary.json")


def test_question_of_reads_an_sql_task_prompt() -> None:
    assert question_of(sql_task_prompt("Count the  employees.", "active ones only")) == "Count the employees."
    assert question_of("How many orders?") == "How many orders?"
