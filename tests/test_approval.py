"""Tool approval: runs pause before calls that need a decision, and resume (here or in another process)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentkit import Agent, tool
from agentkit.events import RunFinished, RunPaused, ToolFinished
from agentkit.runs.approval import RunState, approve, deny, policy_from_spec
from agentkit.testing import ScriptedModel, call, calls
from agentkit.trajectory import read_jsonl


def make_db(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE logs (id INTEGER PRIMARY KEY, day TEXT)")
        db.executemany("INSERT INTO logs (day) VALUES (?)", [("2024-01-01",), ("2024-06-01",), ("2025-01-01",)])
    return path


def db_tools(path: Path) -> list:
    @tool(read_only=True)
    def count_logs() -> int:
        """Count the log rows."""
        with sqlite3.connect(path) as db:
            return db.execute("SELECT COUNT(*) FROM logs").fetchone()[0]

    @tool(requires_approval=True)
    def delete_logs_before(day: str) -> int:
        """Delete the log rows older than a day.

        Args:
            day: ISO date; rows before it are deleted.
        """
        with sqlite3.connect(path) as db:
            return db.execute("DELETE FROM logs WHERE day < ?", (day,)).rowcount

    return [count_logs, delete_logs_before]


def rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM logs").fetchone()[0]


def test_a_call_needing_approval_pauses_before_any_call_of_the_reply_runs(tmp_path) -> None:
    db = make_db(tmp_path / "logs.db")
    log = tmp_path / "runs.jsonl"
    reply = calls(("count_logs", {}), ("delete_logs_before", {"day": "2025-01-01"}), ("count_logs", {}))
    model = ScriptedModel([reply, "Deleted 2 rows; 1 left."])
    agent = Agent(model, tools=db_tools(db), log=log)

    paused = agent.run("clean up old logs")
    assert paused.stop_reason == "paused" and paused.answer is None and paused.output is None
    [pending] = paused.pending
    assert (pending.name, pending.arguments) == ("delete_logs_before", {"day": "2025-01-01"})
    assert pending.id == reply.tool_calls[1].id
    assert rows(db) == 3  # nothing ran, not even the calls that need no approval
    assert not log.exists()  # a paused run is not logged: its end is

    done = agent.resume(paused.state, {pending.id: approve()})
    assert done.answer == "Deleted 2 rows; 1 left." and done.stop_reason == "final"
    assert rows(db) == 1
    observations = [m for m in done.trajectory.messages if m.role == "tool"]
    # The reply's three calls ran together, in order: the first count saw 3 rows (they run in parallel,
    # so only the call ids and the deletion are certain), the deletion removed 2.
    assert [m.tool_call_id for m in observations] == [c.id for c in reply.tool_calls]
    assert observations[1].content == "2" and not observations[1].is_error
    [decision] = done.trajectory.approvals
    assert decision.approved and decision.call_id == pending.id and decision.tool == "delete_logs_before"
    assert decision.arguments == {"day": "2025-01-01"} and decision.turn == 0
    [logged] = read_jsonl(log)
    assert logged.id == paused.trajectory.id and logged.approvals == done.trajectory.approvals
    assert len(model.requests) == 2 and model.requests[1][-1].role == "tool"


def test_a_denied_call_is_an_observation_and_is_recorded(tmp_path) -> None:
    db = make_db(tmp_path / "logs.db")
    model = ScriptedModel([call("delete_logs_before", day="2099-01-01"), "OK, I left the logs alone."])
    agent = Agent(model, tools=db_tools(db))
    paused = agent.run("delete everything")
    [pending] = paused.pending
    done = agent.resume(paused.state, {pending.id: deny("keep this year's logs")})
    assert rows(db) == 3
    obs = done.trajectory.messages[-2]
    assert obs.role == "tool" and obs.is_error and obs.tool_call_id == pending.id
    assert obs.content == "The user denied this call. Reason: keep this year's logs"
    assert model.requests[1][-1] == obs  # the model saw the denial
    [decision] = done.trajectory.approvals
    assert not decision.approved and decision.reason == "keep this year's logs"
    assert done.answer == "OK, I left the logs alone."


def test_policies_from_the_tool_and_the_agent(tmp_path) -> None:
    db = make_db(tmp_path / "logs.db")

    @tool(requires_approval=lambda args: args["amount"] > 100)
    def pay(amount: int) -> str:
        """Pay an amount."""
        return f"paid {amount}"

    # Small payments need no approval; large ones do.
    small = Agent(ScriptedModel([call("pay", amount=5), "done"]), tools=[pay]).run("pay 5")
    assert small.stop_reason == "final"
    big = Agent(ScriptedModel([call("pay", amount=500), "done"]), tools=[pay]).run("pay 500")
    assert big.stop_reason == "paused"
    # The agent's policy adds to the tools' rules: here every tool that is not read-only.
    count, _delete = db_tools(db)
    agent = Agent(ScriptedModel([call("count_logs"), call("pay", amount=1), "done"]), tools=[count, pay],
                  approval=policy_from_spec("writes"))
    paused = agent.run("t")
    assert [c.name for c in paused.pending] == ["pay"]  # count_logs (read-only) ran without asking
    assert paused.trajectory.messages[3].content == "3"
    # A rule that raises counts as "needs approval".
    @tool(requires_approval=lambda args: args["missing"])
    def odd(x: int) -> int:
        """Return x."""
        return x

    assert Agent(ScriptedModel([call("odd", x=1), "ok"]), tools=[odd]).run("t").stop_reason == "paused"
    assert policy_from_spec("none") is None
    with pytest.raises(ValueError, match="none, all, writes"):
        policy_from_spec("all,pay")


def test_resume_checks_the_decisions_and_the_state(tmp_path) -> None:
    db = make_db(tmp_path / "logs.db")
    agent = Agent(ScriptedModel([call("delete_logs_before", day="2025-01-01"), "done"]), tools=db_tools(db))
    paused = agent.run("t")
    [pending] = paused.pending
    with pytest.raises(ValueError, match="no decision for pending call"):
        agent.resume(paused.state, {})
    with pytest.raises(ValueError, match="not pending: call_nope"):
        agent.resume(paused.state, {pending.id: True, "call_nope": False})
    with pytest.raises(TypeError, match="approve\\(\\), deny"):
        agent.resume(paused.state, {pending.id: "yes"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="not a run state"):
        RunState.from_json(json.dumps({"kind": "something else"}))
    newer = json.loads(paused.state.to_json())
    newer["schema_version"] = 99
    with pytest.raises(ValueError, match="Upgrade agentkit"):
        RunState.from_json(json.dumps(newer))
    # Nothing was lost by the bad attempts: the same state still resumes (bools work as decisions).
    done = agent.resume(paused.state.to_json(), {pending.id: True})
    assert done.answer == "done" and rows(db) == 1
    with pytest.raises(ValueError, match="only a paused run"):
        agent.resume(done, {})


def test_a_resumed_run_may_pause_again_and_keeps_the_step_budget(tmp_path) -> None:
    db = make_db(tmp_path / "logs.db")
    script = [call("delete_logs_before", day="2024-03-01"), call("delete_logs_before", day="2024-09-01"), "two"]
    agent = Agent(ScriptedModel(script), tools=db_tools(db), max_steps=2)
    first = agent.run("t")
    second = agent.resume(first, {first.pending[0].id: approve()})
    assert second.stop_reason == "paused" and rows(db) == 2
    third = agent.resume(second, {second.pending[0].id: approve()})
    # Two model calls were the whole budget: the run stops at the step limit, not after a third call.
    assert third.stop_reason == "max_steps" and len(third.trajectory.turns) == 2 and rows(db) == 1
    assert [a.turn for a in third.trajectory.approvals] == [0, 1]


def test_streaming_yields_a_pause_event_and_resumes_streaming(tmp_path) -> None:
    db = make_db(tmp_path / "logs.db")
    agent = Agent(ScriptedModel([call("delete_logs_before", day="2025-01-01"), "all clean"]), tools=db_tools(db))
    events = list(agent.stream("t"))
    assert isinstance(events[-2], RunPaused) and isinstance(events[-1], RunFinished)
    assert events[-2].result is events[-1].result and events[-1].result.pending
    paused = events[-1].result
    resumed = list(agent.resume_stream(paused.state, {paused.pending[0].id: approve()}))
    assert [e.result.content for e in resumed if isinstance(e, ToolFinished)] == ["2"]
    assert resumed[-1].result.answer == "all clean"


RESUMER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from approval_tools import make_agent
    from agentkit.runs.approval import RunState, approve, deny
    state = RunState.from_json(open(sys.argv[2]).read())
    decisions = {c.id: (approve() if c.name == "delete_logs_before" else deny("no")) for c in state.pending}
    result = make_agent(sys.argv[3], ["Deleted."]).resume(state, decisions)
    print(json.dumps({"answer": result.answer, "approvals": len(result.trajectory.approvals),
                      "turns": len(result.trajectory.turns), "id": result.trajectory.id}))
""")

TOOLS_MODULE = textwrap.dedent("""
    import sqlite3
    from agentkit import Agent, tool
    from agentkit.testing import ScriptedModel

    def make_agent(db, script):
        @tool(requires_approval=True)
        def delete_logs_before(day: str) -> int:
            \"\"\"Delete the log rows older than a day.\"\"\"
            with sqlite3.connect(db) as conn:
                return conn.execute("DELETE FROM logs WHERE day < ?", (day,)).rowcount
        return Agent(ScriptedModel(script), tools=[delete_logs_before])
""")


def test_resume_in_another_process(tmp_path) -> None:
    db = make_db(tmp_path / "logs.db")
    (tmp_path / "approval_tools.py").write_text(TOOLS_MODULE)
    sys.path.insert(0, str(tmp_path))
    try:
        from approval_tools import make_agent  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    from agentkit.messages import Message, ToolCall

    reply = Message.assistant(tool_calls=[ToolCall(name="delete_logs_before", arguments={"day": "2025-01-01"})])
    paused = make_agent(str(db), [reply]).run("clean up")
    state_file = tmp_path / "state.json"
    state_file.write_text(paused.state.to_json())
    proc = subprocess.run([sys.executable, "-c", RESUMER, str(tmp_path), str(state_file), str(db)],
                          capture_output=True, text=True, timeout=120, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out == {"answer": "Deleted.", "approvals": 1, "turns": 2, "id": paused.trajectory.id}
    assert rows(db) == 1


def test_async_stream_pauses_and_aresume_continues(tmp_path) -> None:
    import asyncio

    db = make_db(tmp_path / "logs.db")
    agent = Agent(ScriptedModel([call("delete_logs_before", day="2025-01-01"), "done"]), tools=db_tools(db))

    async def go() -> tuple[list[type], str | None]:
        events = [e async for e in agent.astream("t")]
        paused = events[-1].result
        done = await agent.aresume(paused, {paused.pending[0].id: approve()})
        return [type(e) for e in events], done.answer

    kinds, answer = asyncio.run(go())
    assert kinds[-2:] == [RunPaused, RunFinished] and answer == "done" and rows(db) == 1
