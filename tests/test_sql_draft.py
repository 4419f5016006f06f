"""The SQL draft planner: one completion first, repairs in text while it fails, drafts voting by results."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentkit import Agent
from agentkit.cli.main import app
from agentkit.messages import Message, ToolCall
from agentkit.sql import SchemaToolkit, sql_task_prompt
from agentkit.sql.digest import schema_context
from agentkit.sql.draft import SQLDraftPlanner, returned_rows
from agentkit.sql.recipe import SQL_INSTRUCTIONS_SHOWN, SQLRunRecorder
from agentkit.sql.rewards import final_sql
from agentkit.testing import ScriptedModel


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
        conn.executemany("INSERT INTO customer (name, city) VALUES (?, ?)",
                         [("Ana", "Oslo"), ("Ben", "Oslo"), ("Caro", "Lyon")])
    return path


def run(db: Path, replies: list[object], planner: SQLDraftPlanner, question: str = "How many customers live in Oslo?"):
    kit = SchemaToolkit(str(db))
    model = ScriptedModel(replies)
    agent = Agent(model, [kit], instructions=SQL_INSTRUCTIONS_SHOWN, planner=planner, max_steps=3,
                  extensions=[SQLRunRecorder(kit)])
    result = agent.run(sql_task_prompt(question), context=schema_context(kit, question, "tables"))
    return result, model


def test_a_draft_that_returns_rows_is_confirmed_without_the_loop(db: Path) -> None:
    result, model = run(db, ["```sql\nSELECT COUNT(*) FROM customer WHERE city = 'Oslo'\n```"], SQLDraftPlanner())
    t = result.trajectory
    assert t.stop_reason == "final" and [turn.phase for turn in t.turns] == ["draft"]
    assert final_sql(t) == "SELECT COUNT(*) FROM customer WHERE city = 'Oslo'"
    assert "CREATE TABLE customer" in model._seen[0][0][0].content  # the draft saw the schema
    assert t.turns[0].context == "draft"  # its own turn, outside the main conversation


def test_a_failing_draft_is_repaired_in_text_with_the_error_shown(db: Path) -> None:
    replies = ["```sql\nSELECT COUNT(*) FROM customers WHERE city = 'Oslo'\n```",
               "```sql\nSELECT COUNT(*) FROM customer WHERE city = 'Oslo'\n```"]
    result, model = run(db, replies, SQLDraftPlanner())
    t = result.trajectory
    assert [turn.phase for turn in t.turns] == ["draft", "repair"]
    assert "no such table" in model._seen[1][0][-1].content.lower()
    assert final_sql(t) == "SELECT COUNT(*) FROM customer WHERE city = 'Oslo'"
    repair_settings = model.settings[1]
    assert repair_settings is not None and repair_settings.temperature == 0.8 and repair_settings.seed == 1


def test_a_draft_that_stays_wrong_opens_the_loop_as_the_models_own_query(db: Path) -> None:
    bad = "SELECT COUNT(*) FROM nowhere"
    replies = [f"```sql\n{bad}\n```", f"```sql\n{bad}\n```",
               {"tool": "confirm_answer", "arguments": {"sql": "SELECT COUNT(*) FROM customer WHERE city = 'Oslo'"}}]
    script = [r if isinstance(r, str) else Message.assistant(tool_calls=[ToolCall(name=r["tool"],
                                                                                  arguments=r["arguments"])])
              for r in replies]
    result, _ = run(db, script, SQLDraftPlanner(repairs=1))
    t = result.trajectory
    calls = [c.name for m in t.messages if m.role == "assistant" for c in m.tool_calls]
    assert calls[0] == "run_query" and calls[-1] == "confirm_answer"
    assert t.stop_reason == "final" and final_sql(t) == "SELECT COUNT(*) FROM customer WHERE city = 'Oslo'"


def test_drafts_vote_by_their_results(db: Path) -> None:
    wrong = "```sql\nSELECT COUNT(*) FROM customer\n```"
    right = "```sql\nSELECT COUNT(*) FROM customer WHERE city = 'Oslo'\n```"
    also_right = "```sql\nSELECT COUNT(id) FROM customer WHERE city LIKE 'Oslo'\n```"
    result, model = run(db, [wrong, right, also_right], SQLDraftPlanner(votes=3))
    assert final_sql(result.trajectory) == "SELECT COUNT(*) FROM customer WHERE city = 'Oslo'"
    assert [s.seed for s in model.settings[1:]] == [101, 102]


def test_no_sql_in_the_draft_leaves_the_loop_as_it_was(db: Path) -> None:
    sql = "SELECT COUNT(*) FROM customer WHERE city = 'Oslo'"
    confirm = Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": sql})])
    result, _ = run(db, ["I am not sure.", confirm], SQLDraftPlanner())
    t = result.trajectory
    assert [(turn.phase, turn.context) for turn in t.turns] == [("draft", "draft"), ("confirm_answer", "main")]
    assert [m.role for m in t.messages[:4]] == ["system", "user", "assistant", "tool"]  # no opening reply
    assert t.messages[2].tool_calls[0].name == "confirm_answer"
    assert final_sql(t) == sql


def test_an_opening_reply_may_only_call_read_only_tools(db: Path) -> None:
    from agentkit import tool
    from agentkit.loop.extensions import RunContext

    @tool
    def delete_all() -> str:
        """Delete everything."""
        return "gone"

    kit = SchemaToolkit(str(db))
    agent = Agent(ScriptedModel(["x"]), [kit, delete_all])
    ctx = RunContext(task="t", model=agent.model, tools=agent.tools, trajectory=result_trajectory(),
                     settings=agent.settings)
    with pytest.raises(ValueError, match="read-only"):
        ctx.open_with(Message.assistant(tool_calls=[ToolCall(name="delete_all", arguments={})]))
    with pytest.raises(ValueError, match="must call a tool"):
        ctx.open_with(Message.assistant("text"))


def result_trajectory():
    from agentkit.trajectory import Trajectory

    return Trajectory(task="t")


def test_returned_rows_reads_the_row_count() -> None:
    assert returned_rows("a\n1\n(1 row)") and not returned_rows("a\n(0 rows)")


def test_the_sql_command_drafts_by_default(db: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps(["```sql\nSELECT name FROM customer WHERE city = 'Lyon'\n```"]))
    result = CliRunner().invoke(app, ["sql", "Who lives in Lyon?", "--db", str(db), "--model", f"script:{script}",
                                      "--no-embed", "--votes", "1"])
    assert result.exit_code == 0, result.output
    assert "== draft ==" in result.output and result.output.rstrip().endswith("Caro\n(1 row)")


def test_the_sql_command_runs_the_sql_model_unless_told_otherwise(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --model, `agentkit sql` asks for `SQL_MODEL`, whose shipped adapter passes its size and sha256."""
    import agentkit.sql
    from agentkit.models.embedded_adapters import EMBEDDED_ADAPTERS, PACKAGED, builtin_adapter
    from agentkit.models.protocol import ModelConfigError
    from agentkit.sql import SQL_MODEL

    asked: list[str] = []

    def no_model(model: str, *args: object, **kwargs: object) -> None:
        asked.append(model)
        raise ModelConfigError("stop here")

    monkeypatch.setattr(agentkit.sql, "sql_agent", no_model)
    result = CliRunner().invoke(app, ["sql", "Who lives in Lyon?", "--db", str(db), "--no-embed"])
    assert result.exit_code == 2 and "stop here" in result.output
    assert asked == [SQL_MODEL] == ["local:qwen2.5-coder-1.5b-sql"]
    spec = EMBEDDED_ADAPTERS["qwen2.5-coder-1.5b-sql"]
    assert (PACKAGED / spec.file).stat().st_size == spec.size
    folder = builtin_adapter(SQL_MODEL.removeprefix("local:"))
    assert folder is not None and (folder / "adapter_model.safetensors").is_file()
