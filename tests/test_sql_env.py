"""SQLEnvironment: the shipped Chinook task set, Spider/BIRD loading, and end-to-end four-phase runs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from agentkit import Agent
from agentkit.environments.base import Environment, Episode
from agentkit.environments.sql import CHINOOK_DB, CHINOOK_TASKS, SQLEnvironment, load_tasks
from agentkit.messages import ToolCall
from agentkit.sql import sql_agent
from agentkit.sql.database import file_digest
from agentkit.testing import ScriptedModel, call
from agentkit.trajectory import append_jsonl, read_jsonl

FIXTURES = Path(__file__).parent / "fixtures" / "spider_mini"
PHASE_ORDER = ["explore_schema", "explore_schema", "propose_schema", "generate_sql", "confirm_answer"]


@pytest.fixture(scope="module")
def env() -> SQLEnvironment:
    environment = SQLEnvironment.chinook()
    yield environment
    environment.close()


def test_chinook_task_set_is_graded_and_every_gold_query_returns_rows(env: SQLEnvironment) -> None:
    tasks = env.tasks()
    assert len(tasks) >= 60
    grades = Counter(t.data["difficulty"] for t in tasks)
    assert set(grades) == {"easy", "medium", "hard"} and min(grades.values()) >= 15
    assert len({t.id for t in tasks}) == len(tasks)
    assert len({t.data["question"] for t in tasks}) == len(tasks)
    for task in tasks:
        result, items = env.gold(task)          # executes the gold SQL through the read-only guard
        assert result.rows and not result.truncated, task.id
        assert result.rows[0] != (None,), task.id
        assert items.tables, task.id
        assert task.prompt.startswith("Question: ")
    # Graded: harder tasks touch more tables on average (easy ones touch exactly one).
    mean_tables = {g: sum(len(env.gold(t)[1].tables) for t in tasks if t.data["difficulty"] == g) / grades[g]
                   for g in grades}
    assert mean_tables["easy"] == 1.0 < mean_tables["medium"] < mean_tables["hard"]


def test_environment_and_episode_follow_the_protocols(env: SQLEnvironment) -> None:
    assert isinstance(env, Environment)
    episode = env.reset(env.tasks()[0])
    assert isinstance(episode, Episode)
    assert env.identity() == SQLEnvironment.chinook().identity()
    assert env.identity().startswith("sql-chinook:sqlite:chinook.sqlite:")
    assert {t.name for t in episode.tools} >= {"list_tables", "propose_schema", "run_query", "confirm_answer"}
    episode.close()


@pytest.mark.parametrize("task_id", ["chinook-001", "chinook-035", "chinook-062"])
def test_oracle_policy_end_to_end_gets_full_reward_and_phase_labels(env: SQLEnvironment, task_id: str,
                                                                    tmp_path: Path) -> None:
    before = file_digest(CHINOOK_DB)
    task = next(t for t in env.tasks() if t.id == task_id)
    episode = env.reset(task)
    agent = Agent(ScriptedModel(env.oracle_script(task)), tools=episode.tools, instructions=env.instructions,
                  log=tmp_path / "runs.jsonl")
    result = agent.run(task.prompt, task_id=task.id, reward_fn=episode.score)
    agent.close()
    traj = result.trajectory
    assert result.stop_reason == "final" and episode.done
    assert traj.rewards["execution"] == 1.0
    assert traj.rewards["schema"] == 1.0
    assert traj.rewards["format"] == 0.1
    assert traj.rewards["answer"] == pytest.approx(1.1) and traj.reward == pytest.approx(1.1)
    assert [t.phase for t in traj.turns] == PHASE_ORDER
    record = traj.extras["sql"]
    assert record["propose_end_turn"] == 2 and record["final_sql"] == task.data["gold_sql"]
    # The log that training reads keeps phases, rewards and the propose-end marker.
    (logged,) = read_jsonl(tmp_path / "runs.jsonl")
    assert [t.phase for t in logged.turns] == PHASE_ORDER
    assert logged.rewards == traj.rewards
    assert file_digest(CHINOOK_DB) == before
    episode.close()


def test_sql_agent_recipe_records_the_propose_turn(env: SQLEnvironment, tmp_path: Path) -> None:
    gold = "SELECT COUNT(*) FROM Track WHERE Composer IS NULL"
    model = ScriptedModel([
        call("search_columns", query="composer of a track"),
        call("describe_table", table="Track"),
        call("propose_schema", tables=["Track"], columns={"Track": ["Composer"]}),
        call("run_query", sql="SELECT COUNT(*) FROM Track WHERE Composer = ''"),
        call("propose_schema", tables=["Track"], columns={"Track": ["Composer"]}),  # loops are allowed
        call("run_query", sql=gold),
        call("confirm_answer", sql=gold),
    ])
    agent = sql_agent(model, CHINOOK_DB, planner="react", schema="hidden", max_steps=24)
    result = agent.run("Question: How many tracks have no composer recorded?")
    agent.close()
    assert "Final SQL" in result.answer and "977" in result.answer
    record = result.trajectory.extras["sql"]
    assert record["phases"] == ["explore_schema", "explore_schema", "propose_schema", "generate_sql",
                                "propose_schema", "generate_sql", "confirm_answer"]
    assert record["propose_end_turn"] == 4
    assert record["proposal"] == {"tables": ["Track"], "columns": {"Track": ["Composer"]}}
    assert "Work in four phases" in model.requests[0][0].content        # the recipe's instructions
    assert "Track" not in model.requests[0][0].content                  # the schema is never shown up front
    append_jsonl(tmp_path / "r.jsonl", result.trajectory)
    assert read_jsonl(tmp_path / "r.jsonl")[0].extras["sql"]["propose_end_turn"] == 4


def test_wrong_answer_and_step_api(env: SQLEnvironment) -> None:
    task = next(t for t in env.tasks() if t.id == "chinook-025")  # AC/DC album count
    episode = env.reset(task)
    first = episode.step(ToolCall(name="describe_table", arguments={"table": "Artist"}))
    assert "ArtistId INTEGER PRIMARY KEY" in first.observation and not first.done
    bad = episode.step(ToolCall(name="run_query", arguments={"sql": "UPDATE Artist SET Name = 'x'"}))
    assert bad.observation.startswith("Tool run_query raised QueryError: Refused") and not bad.done
    unknown = episode.step(ToolCall(name="drop_db", arguments={}))
    assert unknown.observation == "Unknown tool 'drop_db'."
    end = episode.step(ToolCall(name="confirm_answer", arguments={"sql": "SELECT COUNT(*) FROM Album"}))
    assert end.done and "347" in end.observation
    episode.close()

    episode = env.reset(task)
    script = [call("propose_schema", tables=["Album"]), call("confirm_answer", sql="SELECT COUNT(*) FROM Album")]
    agent = Agent(ScriptedModel(script), tools=episode.tools)
    traj = agent.run(task.prompt, reward_fn=episode.score).trajectory
    agent.close()
    assert traj.rewards["execution"] == 0.2                          # runs, wrong result
    assert traj.rewards["format"] == 0.0                             # explore and generate phases missing
    assert traj.rewards["schema"] == pytest.approx(0.4 * (2 / 3) + 0.6 * 0.0)
    assert traj.reward == pytest.approx(0.2)
    episode.close()


def test_spider_format_loads_and_scores(tmp_path: Path) -> None:
    env = SQLEnvironment.from_spider(FIXTURES / "dev.json", db_root=FIXTURES / "database")
    tasks = env.tasks()
    assert [t.id for t in tasks] == ["pets-0", "pets-1", "pets-2", "pets-3", "concerts-4", "concerts-5"]
    assert {Path(t.data["db"]).name for t in tasks} == {"pets.sqlite", "concerts.sqlite"}
    assert env.identity().startswith("sql-dev:") and env.identity() != f"sql-dev:{env.database(tasks[0]).identity}"
    for task in tasks:
        episode = env.reset(task)
        agent = Agent(ScriptedModel(env.oracle_script(task)), tools=episode.tools)
        traj = agent.run(task.prompt, task_id=task.id, reward_fn=episode.score).trajectory
        agent.close()
        assert traj.rewards["execution"] == 1.0 and traj.rewards["schema"] == 1.0, task.id
        episode.close()
    oldest = env.gold(tasks[3])
    assert oldest[0].rows == [("Brian",)]
    assert oldest[1].columns == {"owner.name", "owner.ownerid", "pet.ownerid", "pet.age"}
    env.close()


def test_bird_format_with_evidence() -> None:
    env = SQLEnvironment.from_spider(FIXTURES / "dev_bird.json", db_root=FIXTURES / "database")
    first, second = env.tasks()
    assert first.id == "0" and first.data["difficulty"] == "simple"
    assert first.prompt == ("Question: What is the average weight of the cats?\n"
                            "Hint: cats are pets whose Kind is 'cat'")
    assert second.prompt == "Question: How many concerts did Justin Brown sing in?"
    assert env.gold(first)[0].rows == [(pytest.approx(4.05),)]
    assert env.gold(second)[0].rows == [(2,)]
    env.close()


def test_bad_task_sources_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs a 'question' and gold SQL"):
        load_tasks([{"question": "q?"}])
    with pytest.raises(ValueError, match="appears twice"):
        load_tasks([{"id": "a", "question": "q", "sql": "SELECT 1"}, {"id": "a", "question": "r", "sql": "SELECT 2"}])
    broken = tmp_path / "t.jsonl"
    broken.write_text('{"question": "q", "sql": "SELECT 1"}\n{not json\n')
    with pytest.raises(ValueError, match=r"t.jsonl:2: not valid JSON"):
        load_tasks(broken)
    with pytest.raises(FileNotFoundError):
        load_tasks(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="name no database"):
        SQLEnvironment(tasks=[{"question": "q", "sql": "SELECT 1"}])
    with pytest.raises(ValueError, match="schema_reward must be one of"):
        SQLEnvironment(db=CHINOOK_DB, tasks=CHINOOK_TASKS, schema_reward="jaccard")
    missing = tmp_path / "spider.json"
    missing.write_text(json.dumps([{"db_id": "nowhere", "question": "q", "query": "SELECT 1"}]))
    with pytest.raises(FileNotFoundError, match="database files missing"):
        SQLEnvironment.from_spider(missing, db_root=tmp_path)
    env = SQLEnvironment(db=CHINOOK_DB, tasks=[{"id": "x", "question": "q", "sql": "SELECT * FROM Nope"}])
    with pytest.raises(Exception, match="gold SQL of task x fails"):
        env.gold(env.tasks()[0])
    env.close()


def test_cli_prints_phases_final_sql_and_table(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentkit.cli.main import app

    gold = "SELECT Name FROM Genre WHERE Name LIKE 'Rock%'"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool": "list_tables", "arguments": {"name_filter": "genre"}},
        {"tool": "propose_schema", "arguments": {"tables": ["Genre"], "columns": {"Genre": ["Name"]}}},
        {"tool": "run_query", "arguments": {"sql": gold}},
        {"tool": "confirm_answer", "arguments": {"sql": gold}},
    ]))
    log = tmp_path / "runs.jsonl"
    result = CliRunner().invoke(app, ["sql", "Which genres start with Rock?", "--db", str(CHINOOK_DB), "--planner",
                                      "react", "--model", f"script:{script}", "--no-embed", "--log", str(log)])
    assert result.exit_code == 0, result.output
    out = result.output
    order = [out.index(f"== {p} ==") for p in ("explore_schema", "propose_schema", "generate_sql",
                                                 "confirm_answer", "answer")]
    assert order == sorted(order)
    assert out.rstrip().endswith(f"{gold}\nName\nRock\nRock And Roll\n(2 rows)")
    assert read_jsonl(log)[0].extras["sql"]["final_sql"] == gold
    system = read_jsonl(log)[0].messages[0].content
    assert "CREATE TABLE Genre (GenreId INTEGER PRIMARY KEY, Name NVARCHAR(120));" in system  # the digest, shown
    assert "'Rock' is a value of Genre.Name" in system  # and the value the question names, linked

    tables = CliRunner().invoke(app, ["sql", "Which genres start with Rock?", "--db", str(CHINOOK_DB), "--schema",
                                      "tables", "--planner", "react", "--model", f"script:{script}", "--no-embed",
                                      "--log", str(log)])
    assert tables.exit_code == 0, tables.output
    system = read_jsonl(log)[1].messages[0].content
    assert "CREATE TABLE Genre (" in system and "is a value of" not in system

    hidden = CliRunner().invoke(app, ["sql", "Which genres start with Rock?", "--db", str(CHINOOK_DB), "--schema",
                                      "hidden", "--planner", "react", "--model", f"script:{script}", "--no-embed",
                                      "--log", str(log)])
    assert hidden.exit_code == 0, hidden.output
    system = read_jsonl(log)[2].messages[0].content
    assert "CREATE TABLE" not in system and "schema you have not seen" in system

    missing = CliRunner().invoke(app, ["sql", "q", "--db", str(tmp_path / "nope.sqlite"), "--no-embed"])
    assert missing.exit_code == 2 and "Cannot open the database" in missing.output


def test_identity_follows_content_and_samples_big_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import sqlite3

    from agentkit.sql import database

    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    shutil.copyfile(CHINOOK_DB, a)
    shutil.copyfile(CHINOOK_DB, b)
    assert database.sqlite_identity(a).split(":")[2] == database.sqlite_identity(b).split(":")[2]
    conn = sqlite3.connect(b)
    conn.execute("UPDATE Genre SET Name = 'Rock!' WHERE GenreId = 1")
    conn.commit()
    conn.close()
    assert database.sqlite_identity(a).split(":")[2] != database.sqlite_identity(b).split(":")[2]
    full = database.sqlite_identity(a)
    monkeypatch.setattr(database, "FULL_DIGEST_BYTES", 1024)  # as if the files were gigabytes: sampled digest
    sampled = database.sqlite_identity(a)
    assert sampled.startswith("sqlite:a.sqlite:") and sampled != full
    assert database.sqlite_identity(a) == sampled
    assert database.sqlite_identity(b).split(":")[2] != sampled.split(":")[2]


def test_a_reused_sql_agent_starts_each_run_clean() -> None:
    from agentkit.sql import SchemaToolkit

    kit = SchemaToolkit(CHINOOK_DB)
    model = ScriptedModel([call("propose_schema", tables=["Genre"]), call("confirm_answer", sql="SELECT 1"),
                           call("list_tables"), "I give up", "I give up"])  # (asked once to confirm instead)
    agent = sql_agent(model, kit, planner="react", schema="hidden")
    agent.run("Question: one?")
    assert kit.final is not None and len(kit.proposals) == 1
    second = agent.run("Question: two?")
    agent.close()
    assert kit.final is None and kit.proposals == []
    assert second.trajectory.extras["sql"]["final_sql"] is None and second.answer == "I give up"


def test_sql_agent_answers_as_agentkit_sql_does_by_default() -> None:
    """`sql_agent(model, db)`: each run is shown the CREATE TABLEs for its question, the query is drafted in one
    completion (five drafts voting) and confirmed. The model stands for the model's
    choices: it writes the right query only when it sees the Artist table's CREATE TABLE."""
    from agentkit.messages import Message
    from agentkit.sql import sql_task_prompt
    from agentkit.sql.digest import DIGEST_TITLE
    from agentkit.testing import FunctionModel

    seen: list[str] = []

    def reply(messages: list[Message], tools: object) -> str:
        system = messages[0].content if messages and messages[0].role == "system" else ""
        seen.append(system)
        shown = "CREATE TABLE Artist" in system or "CREATE TABLE \"Artist\"" in system
        return "```sql\nSELECT COUNT(*) FROM Artist\n```" if shown else "```sql\nSELECT 0\n```"

    agent = sql_agent(FunctionModel(reply), CHINOOK_DB)
    try:
        result = agent.run(sql_task_prompt("How many artists are there?"))
    finally:
        agent.close()
    trajectory = result.trajectory
    assert [t.phase for t in trajectory.turns] == ["draft"] * 5  # five drafts vote, the winner is confirmed
    assert f"## {DIGEST_TITLE}" in seen[0] and "275" in (result.answer or "")
    assert trajectory.extras["sql"]["final_sql"] == "SELECT COUNT(*) FROM Artist"
    with pytest.raises(ValueError, match="schema must be one of"):
        sql_agent(FunctionModel(reply), CHINOOK_DB, schema="everything")
