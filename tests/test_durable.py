"""Durable runs (issue 43): a run checkpointed with `Agent(store=DIR)` is saved before every step, its calls in
flight and their results as each returns, and `agent.resume(run_id)` continues it with no finished call run
again and no call that may have completed run twice. (Killed processes: tests/test_durable_kills.py.)"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from agentkit import Agent, Message, tool
from agentkit.events import PhaseStarted, ToolStarted
from agentkit.runs.approval import RunState, approve
from agentkit.runs.durable import INTERRUPTED, DirectoryStore, RunStore, UnknownRunError, open_store
from agentkit.testing import FunctionModel, ScriptedModel, call, calls
from agentkit.tools.builtin import calculator


def saved(store: Path) -> RunState:
    [path] = store.glob("*.json")
    return RunState.from_json(path.read_bytes())


def observations(result_or_state) -> dict[str, Message]:
    return {m.tool_call_id: m for m in result_or_state.trajectory.messages if m.role == "tool"}


def test_the_run_is_saved_before_every_model_call_and_when_it_finishes(tmp_path) -> None:
    store = tmp_path / "runs"
    seen: list[tuple[str, int, str]] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def model(messages, tools):
        state = saved(store)
        seen.append((state.status, len(state.trajectory.turns), state.trajectory.messages[-1].role))
        return call("add", a=len(seen), b=1) if len(seen) < 3 else "done"

    result = Agent(FunctionModel(model), tools=[add], store=store).run("add twice")
    assert result.answer == "done"
    # Each model call found the run saved as it stood: every earlier turn and observation on disk.
    assert seen == [("running", 0, "user"), ("running", 1, "tool"), ("running", 2, "tool")]
    final = saved(store)
    assert final.status == "finished" and final.run_id == result.trajectory.id
    assert final.trajectory.answer == "done" and final.trajectory.stop_reason == "final"
    assert not final.in_flight and not final.finished
    assert [p.name for p in store.iterdir()] == [f"{result.trajectory.id}.json"]  # no temporary file left


def test_calls_are_saved_in_flight_before_they_run_and_with_their_result_as_each_returns(tmp_path) -> None:
    store = tmp_path / "runs"
    during: list[RunState] = []

    @tool
    def fast() -> str:
        """Return at once."""
        return "fast result"

    @tool
    def slow() -> str:
        """Return once fast's result is saved."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            state = saved(store)
            if state.finished:
                during.append(state)
                break
            time.sleep(0.01)
        return "slow result"

    reply = calls(("slow", {}), ("fast", {}))
    Agent(ScriptedModel([reply, "both done"]), tools=[fast, slow], store=store).run("two at once")
    [state] = during
    slow_id, fast_id = (c.id for c in reply.tool_calls)
    assert state.status == "running" and state.trajectory.messages[-1].tool_calls == reply.tool_calls
    assert [c.id for c in state.in_flight] == [slow_id]
    [done] = state.finished
    assert (done.tool_call_id, done.content, done.is_error) == (fast_id, "fast result", False)


def _snapshot_agent(store: Path, counts: Counter[str], snapshots: list[bytes] | None) -> Agent:
    """An agent whose one reply calls `fast`, `slow` and `again` (idempotent) at once; `slow` copies the
    checkpoint as it is once `fast` has returned (what a kill at that moment would leave) when `snapshots` is
    given."""

    @tool
    def fast() -> str:
        """Send the first email."""
        counts["fast"] += 1
        return "first email sent"

    @tool
    def slow() -> str:
        """Send the second email."""
        counts["slow"] += 1
        if snapshots is not None:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not any(m.content == "first email sent"
                                                          for m in saved(store).finished):
                time.sleep(0.01)
            snapshots.append(next(store.glob("*.json")).read_bytes())
        return "second email sent"

    @tool(idempotent=True)
    def again() -> str:
        """Read the outbox (safe to repeat)."""
        counts["again"] += 1
        if snapshots is not None:
            time.sleep(0.5)  # still running when `slow` takes its copy
        return "outbox: 2 emails"

    def model(messages, tools):
        if not any(m.role == "tool" for m in messages):
            return calls(("fast", {}), ("slow", {}), ("again", {}))
        return " | ".join(m.content for m in messages if m.role == "tool")

    return Agent(FunctionModel(model), tools=[fast, slow, again], store=store)


def test_a_run_killed_mid_reply_reruns_no_finished_call_and_tells_the_model_about_the_one_in_flight(tmp_path) -> None:
    first, snapshots = Counter(), []
    original = _snapshot_agent(tmp_path / "a", first, snapshots).run("send both emails")
    assert original.answer == "first email sent | second email sent | outbox: 2 emails"
    state = RunState.from_json(snapshots[0])
    assert state.status == "running" and sorted(c.name for c in state.in_flight) == ["again", "slow"]

    # The state a kill would have left, in a fresh store, resumed by a fresh agent (a new process would do the same).
    fresh = tmp_path / "b"
    DirectoryStore(fresh).save(state)
    second = Counter()
    resumed = _snapshot_agent(fresh, second, None).resume(state.run_id)
    assert second == Counter({"again": 1})  # fast finished (its result is saved), slow may have: neither runs
    reply = state.trajectory.messages[-1]
    got = observations(resumed)
    assert [got[c.id].content for c in reply.tool_calls] == ["first email sent", INTERRUPTED, "outbox: 2 emails"]
    assert got[reply.tool_calls[1].id].is_error
    assert resumed.answer == f"first email sent | {INTERRUPTED} | outbox: 2 emails"
    assert resumed.trajectory.id == original.trajectory.id and saved(fresh).status == "finished"


def test_a_run_whose_process_failed_resumes_from_its_last_step_and_a_finished_one_returns_its_result(
        tmp_path) -> None:
    store = tmp_path / "runs"
    ran: list[int] = []

    @tool
    def step(i: int) -> str:
        """Do step i."""
        ran.append(i)
        return f"step {i} done"

    def model(fail_at: int | None):
        asked = []

        def reply(messages, tools):
            asked.append(len(messages))
            done = sum(1 for m in messages if m.role == "tool")
            if done == fail_at:
                raise ConnectionError("the model server went away")
            return call("step", i=done) if done < 4 else f"all {done} steps done"

        return FunctionModel(reply), asked

    broken, _ = model(fail_at=2)
    with pytest.raises(ConnectionError):
        Agent(broken, tools=[step], store=store).run("four steps")
    state = saved(store)
    assert state.status == "running" and len(state.trajectory.turns) == 2 and ran == [0, 1]

    working, asked = model(fail_at=None)
    agent = Agent(working, tools=[step], store=store)
    result = agent.resume(state.run_id)  # no decisions: the run was not paused
    assert result.answer == "all 4 steps done" and ran == [0, 1, 2, 3]  # steps 0 and 1 were not run again
    assert len(result.trajectory.turns) == 5 and saved(store).status == "finished"

    calls_before = len(asked)
    again = agent.resume(state.run_id)
    assert again.answer == "all 4 steps done" and again.trajectory.id == state.run_id
    assert len(asked) == calls_before and ran == [0, 1, 2, 3]  # nothing asked, nothing run


def test_a_resumed_run_keeps_what_the_loop_remembered_between_steps(tmp_path) -> None:
    store = tmp_path / "runs"

    @tool(final=True)
    def submit(answer: str) -> str:
        """Submit the final answer."""
        return answer

    def reply_in_text(messages, tools):
        if any(m.role == "user" and "call submit now" in m.content for m in messages):
            raise ConnectionError("gone")  # the process dies at the reply after the reminder
        return "42"

    with pytest.raises(ConnectionError):
        Agent(FunctionModel(reply_in_text), tools=[submit], store=store).run("the answer?")
    model = FunctionModel(lambda messages, tools: call("submit", answer="42"))
    result = Agent(model, tools=[submit], store=store).resume(saved(store).run_id)
    assert result.answer == "42"
    # The reminder made the next reply a forced call of submit; the resumed run still forces it.
    assert model.settings[0].tool_choice == "submit"


def deleting(deleted: list[str]):
    """A `delete` tool that needs approval and records the paths it deleted in `deleted`."""

    @tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    return delete


def test_a_paused_durable_run_is_resumed_by_id_with_its_decisions(tmp_path) -> None:
    store = tmp_path / "runs"
    deleted: list[str] = []
    delete = deleting(deleted)

    agent = Agent(ScriptedModel([call("delete", path="old.log"), "deleted"]), tools=[delete], store=store)
    paused = agent.run("clean up")
    state = saved(store)
    assert state.status == "paused" and [c.id for c in state.pending] == [paused.pending[0].id]
    with pytest.raises(ValueError, match="no decision for pending call"):
        agent.resume(paused.trajectory.id)
    done = agent.resume(paused.trajectory.id, {paused.pending[0].id: approve()})
    assert done.answer == "deleted" and deleted == ["old.log"] and saved(store).status == "finished"


def test_an_approved_reply_whose_process_died_runs_its_calls_with_the_recorded_decisions(tmp_path) -> None:
    store = tmp_path / "runs"
    deleted: list[str] = []
    delete = deleting(deleted)

    reply = calls(("delete", {"path": "a.log"}), ("delete", {"path": "b.log"}))
    agent = Agent(ScriptedModel([reply]), tools=[delete], store=store)
    paused = agent.run("clean up")
    a, b = (c.id for c in reply.tool_calls)
    # The process resuming with the decisions dies before the calls start: the state then says "running",
    # the decisions are in the trajectory.
    stream = agent.resume_stream(paused.state, {a: approve(), b: False})
    assert isinstance(next(stream), PhaseStarted)
    assert isinstance(next(stream), ToolStarted)  # the loop has saved the run; no call has started yet
    stream.close()
    state = saved(store)
    assert state.status == "running" and not deleted and len(state.trajectory.approvals) == 2

    resumed = Agent(ScriptedModel(["done"]), tools=[delete], store=store).resume(state.run_id)
    assert resumed.answer == "done" and deleted == ["a.log"]
    assert observations(resumed)[b].content.startswith("The user denied this call")


def test_a_state_written_before_durable_runs_still_loads_as_a_paused_run(tmp_path) -> None:
    @tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    agent = Agent(ScriptedModel([call("delete", path="x"), "ok"]), tools=[delete])
    paused = agent.run("clean up")
    data = json.loads(paused.state.to_json())
    for key in ("status", "in_flight", "finished", "loop", "agent", "updated_at"):
        data.pop(key)
    data["schema_version"] = 1
    old = RunState.from_json(json.dumps(data))
    assert old.status == "paused" and old.schema_version == 1
    assert agent.resume(json.dumps(data), {paused.pending[0].id: True}).answer == "ok"


def test_typed_output_of_a_finished_run_is_read_back(tmp_path) -> None:
    agent = Agent(ScriptedModel([call("final_result", result=42)]), output_type=int, store=tmp_path)
    result = agent.run("the answer?")
    assert result.output == 42
    again = agent.resume(result.trajectory.id)
    assert again.output == 42 and again.answer == "42"


def test_the_state_records_how_the_agent_was_built(tmp_path) -> None:
    @tool
    def local_tool() -> str:
        """A tool made in a function."""
        return "x"

    Agent(ScriptedModel(["hi"]), tools=[calculator, local_tool], max_steps=7, store=tmp_path).run("hello")
    record = saved(tmp_path).agent
    assert record is not None and record.model is None and record.max_steps == 7  # a Model object has no string
    assert record.tools == {"calculator": "agentkit.tools.builtin:calculator", "local_tool": None}


def test_stores_accept_directories_file_urls_and_store_objects_and_refuse_other_urls(tmp_path) -> None:
    assert isinstance(open_store(tmp_path), DirectoryStore)
    assert open_store(f"file://{tmp_path}").path == tmp_path  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="no run store for s3:// URLs"):
        open_store("s3://bucket/runs")
    with pytest.raises(ValueError, match="not a run id"):
        DirectoryStore(tmp_path).file("../escape")
    with pytest.raises(UnknownRunError):
        DirectoryStore(tmp_path).load("traj_missing")

    class MemoryStore:
        def __init__(self) -> None:
            self.states: dict[str, str] = {}
            self.lock = threading.Lock()

        def save(self, state: RunState) -> None:
            with self.lock:
                self.states[state.run_id] = state.to_json()

        def load(self, run_id: str) -> RunState:
            return RunState.from_json(self.states[run_id])

        def run_ids(self) -> list[str]:
            return list(self.states)

    memory = MemoryStore()
    assert isinstance(memory, RunStore) and open_store(memory) is memory
    result = Agent(ScriptedModel(["hi"]), store=memory).run("hello")
    assert memory.load(result.trajectory.id).status == "finished"


def test_a_run_id_needs_an_agent_with_a_store() -> None:
    with pytest.raises(ValueError, match="no store"):
        Agent(ScriptedModel(["hi"])).resume("traj_0123456789ab")


def test_a_killed_save_leaves_the_previous_state_and_its_temporary_file_is_swept(tmp_path) -> None:
    result = Agent(ScriptedModel(["hi"]), store=tmp_path).run("hello")
    run_id = result.trajectory.id
    (tmp_path / f".{run_id}.999.1.tmp").write_text('{"kind": "agentkit.run_st')  # a writer killed mid-write
    store = DirectoryStore(tmp_path)
    assert store.run_ids() == [run_id] and store.load(run_id).status == "finished"
    store.save(store.load(run_id))
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{run_id}.json"]


def test_a_call_past_its_time_limit_that_returns_later_does_not_touch_the_saved_run(tmp_path) -> None:
    @tool(timeout_s=0.2)
    def stuck() -> str:
        """Take too long."""
        time.sleep(0.6)
        return "late"

    result = Agent(ScriptedModel([call("stuck"), "gave up"]), tools=[stuck], store=tmp_path).run("try it")
    assert result.answer == "gave up"
    [observation] = observations(result).values()
    assert observation.content == "Tool stuck timed out after 0.2 s." and observation.is_error
    time.sleep(0.7)  # the tool's thread returns now, after the run finished
    state = saved(tmp_path)
    assert state.status == "finished" and not state.finished and not state.in_flight


def test_a_run_resumed_mid_reply_asks_its_next_call_with_the_settings_the_unkilled_run_would(tmp_path) -> None:
    snapshots: list[bytes] = []

    @tool(final=True)
    def submit(answer: str) -> str:
        """Submit the final answer."""
        return answer

    @tool
    def note(text: str) -> str:
        """Write a note."""
        if not snapshots:
            snapshots.append(next(tmp_path.joinpath("a").glob("*.json")).read_bytes())  # a kill here
        return "noted"

    def model(messages, tools):
        if not any(m.role == "user" and "call submit now" in m.content for m in messages):
            return "42"  # a reply in text: reminded to call submit, and the next reply is forced to
        return call("note", text="x") if not any(m.role == "tool" for m in messages) else call("submit", answer="42")

    first = FunctionModel(model)
    Agent(first, tools=[submit, note], store=tmp_path / "a").run("the answer?")
    # The unkilled run: forced to submit after the reminder, then free again after the reply that called note.
    assert [s.tool_choice for s in first.settings] == [None, "submit", None]

    state = RunState.from_json(snapshots[0])
    assert [c.name for c in state.in_flight] == ["note"]
    DirectoryStore(tmp_path / "b").save(state)
    second = FunctionModel(model)
    assert Agent(second, tools=[submit, note], store=tmp_path / "b").resume(state.run_id).answer == "42"
    assert [s.tool_choice for s in second.settings] == [None]
