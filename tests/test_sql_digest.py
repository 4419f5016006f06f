"""Schema linking: the CREATE TABLEs a question needs, chosen within a budget, shown to the agent."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agentkit.environments.base import run_episode
from agentkit.environments.sql import CHINOOK_DB, SQLEnvironment
from agentkit.messages import Message, ToolCall
from agentkit.sql.digest import DIGEST_TITLE, create_table, rank_tables, schema_digest
from agentkit.sql.recipe import SQL_INSTRUCTIONS, SQL_INSTRUCTIONS_SHOWN
from agentkit.sql.toolkit import SchemaToolkit
from agentkit.testing import ScriptedModel


@pytest.fixture(scope="module")
def kit() -> SchemaToolkit:
    return SchemaToolkit(CHINOOK_DB)


def test_create_table_keeps_keys_and_references(kit: SchemaToolkit) -> None:
    text = create_table(kit.db.describe("Track"))
    assert text.startswith("CREATE TABLE Track (TrackId INTEGER PRIMARY KEY, Name NVARCHAR(200)")
    assert "AlbumId INTEGER REFERENCES Album(AlbumId)" in text
    assert text.endswith(");")


def test_whole_schema_when_it_fits(kit: SchemaToolkit) -> None:
    digest = schema_digest(kit, "How many tracks are there?", max_chars=10_000)
    assert digest.count("CREATE TABLE") == len(kit.db.table_names()) == 11
    assert "Other tables" not in digest


def test_budget_keeps_the_relevant_tables_and_names_the_rest(kit: SchemaToolkit) -> None:
    question = "Which customers live in Brazil?"
    assert rank_tables(kit, question)[0] == "Customer"
    digest = schema_digest(kit, question, max_chars=1500)
    assert len(digest) <= 1500 + 200  # the statements keep to the budget; the closing line names the rest
    assert "CREATE TABLE Customer (" in digest
    assert "CREATE TABLE Employee (" in digest  # Customer.SupportRepId references it
    assert "CREATE TABLE PlaylistTrack" not in digest
    last = digest.splitlines()[-1]
    assert last.startswith("-- Other tables") and "PlaylistTrack" in last


def test_odd_names_are_quoted(tmp_path: Path) -> None:
    db = tmp_path / "odd.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute('CREATE TABLE "order items" ("unit price" REAL, id INTEGER PRIMARY KEY)')
    digest = schema_digest(SchemaToolkit(db), "price of items")
    assert digest == 'CREATE TABLE "order items" ("unit price" REAL, id INTEGER PRIMARY KEY);'


def test_episode_shows_the_digest_in_the_system_prompt() -> None:
    env = SQLEnvironment.chinook()
    task = env.tasks()[0]
    assert env.instructions == SQL_INSTRUCTIONS_SHOWN
    sql = task.data["gold_sql"]
    model = ScriptedModel([Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": sql})])])
    from agentkit.agent import Agent

    trajectory = run_episode(lambda tools: Agent(model, tools, instructions=env.instructions), env, task)
    system, user = trajectory.messages[0].content, trajectory.messages[1].content
    assert DIGEST_TITLE in system and "CREATE TABLE Track (" in system
    assert user == task.prompt  # the task stays what memory and skills retrieve by
    assert trajectory.rewards["execution"] == 1.0


def test_hidden_schema_keeps_the_four_phase_recipe() -> None:
    env = SQLEnvironment.chinook(schema="hidden")
    episode = env.reset(env.tasks()[0])
    try:
        assert episode.context == {}
        assert env.instructions == SQL_INSTRUCTIONS
    finally:
        episode.close()
    with pytest.raises(ValueError, match="schema must be"):
        SQLEnvironment.chinook(schema="shown")
