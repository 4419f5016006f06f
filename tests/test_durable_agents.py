"""Durable runs with agent calls (issue 43): an agent call of a durable run is saved in flight and with its
observation like any call, and its child run is durable too, in the same store under its own id; resuming the
run continues the child from its last save, so a kill at any moment runs no finished call (inner or outer) twice.

Each test copies the store at one moment of an unkilled run (what a kill then would leave), resumes from the
copy in a fresh store with freshly built agents, and counts what ran."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from agentkit import Agent, tool
from agentkit.runs.approval import RunState, approve
from agentkit.runs.durable import INTERRUPTED, Checkpoint
from agentkit.testing import FunctionModel, ScriptedModel, call
from agentkit.trajectory import Trajectory


def copy_of(store: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in store.glob("*.json")}


def states(files: dict[str, bytes]) -> dict[str, RunState]:
    return {name: RunState.from_json(data) for name, data in files.items()}


def outer_state(files: dict[str, bytes]) -> RunState:
    [state] = [s for s in states(files).values() if s.trajectory.parent_id is None]
    return state


def restore(files: dict[str, bytes], store: Path) -> None:
    store.mkdir(parents=True)
    for name, data in files.items():
        (store / name).write_bytes(data)


def build(store: Path | None, counts: Counter[str], on_slow: Callable[[], None] | None = None, *,
          approval: bool = False) -> Agent:
    """A durable `boss` agent whose one call asks the agent `clerk` to do a job; the clerk sends an email (`send`,
    not safe to repeat), then archives it (`archive`, slow, not safe to repeat), then reports what its tools said.
    `counts` counts tool runs and model calls; `on_slow` runs inside `archive`, which needs approval with
    `approval`."""

    @tool
    def send(to: str) -> str:
        """Send the email."""
        counts["send"] += 1
        return f"sent to {to}"

    @tool(requires_approval=approval)
    def archive() -> str:
        """Archive the email."""
        counts["archive"] += 1
        if on_slow is not None:
            on_slow()
        return "archived"

    def clerk_model(messages, tools):
        counts["clerk model"] += 1
        seen = [m.content for m in messages if m.role == "tool"]
        if not seen:
            return call("send", to="ana")
        if len(seen) == 1:
            return call("archive")
        return " | ".join(seen)

    def boss_model(messages, tools):
        counts["boss model"] += 1
        seen = [m.content for m in messages if m.role == "tool"]
        return call("clerk", request="email ana") if not seen else f"clerk says: {seen[-1]}"

    clerk = Agent(FunctionModel(clerk_model), tools=[send, archive], name="clerk")
    return Agent(FunctionModel(boss_model), tools=[clerk.as_tool("clerk", "Send and archive emails.")], name="boss",
                 store=store)


def test_a_run_killed_inside_an_agent_call_continues_the_child_from_its_last_save(tmp_path) -> None:
    first: Counter[str] = Counter()
    snapshots: list[dict[str, bytes]] = []
    original = build(tmp_path / "a", first, on_slow=lambda: snapshots.append(copy_of(tmp_path / "a"))).run("job")
    assert original.answer == "clerk says: sent to ana | archived"

    # The kill's moment: the boss's call in flight, the clerk's `send` done and its `archive` in flight.
    files = snapshots[0]
    boss = outer_state(files)
    assert boss.status == "running" and [c.name for c in boss.in_flight] == ["clerk"]
    [placeholder] = boss.trajectory.children
    clerk_saved = states(files)[f"{placeholder.id}.json"]
    assert clerk_saved.status == "running" and [c.name for c in clerk_saved.in_flight] == ["archive"]

    restore(files, tmp_path / "b")
    second: Counter[str] = Counter()
    resumed = build(tmp_path / "b", second).resume(boss.run_id)
    # Nothing finished ran again; `archive` may have completed, so the clerk is told and decides.
    assert second["send"] == 0 and second["archive"] == 0
    assert second["boss model"] == 1 and second["clerk model"] == 1  # each asked only what came after the kill
    assert resumed.answer == f"clerk says: sent to ana | {INTERRUPTED}"
    [child] = resumed.trajectory.children
    assert child.id == placeholder.id and child.stop_reason == "final"
    assert [m.content for m in child.messages if m.role == "tool"] == ["sent to ana", INTERRUPTED]
    assert resumed.usage.calls == 5  # boss twice, clerk twice before the kill and once after: each counted once
    after = states(copy_of(tmp_path / "b"))
    assert {s.status for s in after.values()} == {"finished"} and len(after) == 2


def test_an_agent_call_continued_after_approval_stays_durable(tmp_path) -> None:
    store = tmp_path / "a"
    snapshots: list[dict[str, bytes]] = []
    first: Counter[str] = Counter()
    boss = build(store, first, on_slow=lambda: snapshots.append(copy_of(store)), approval=True)
    paused = boss.run("job")
    assert paused.stop_reason == "paused" and [c.name for c in paused.pending] == ["archive"]
    assert {s.status for s in states(copy_of(store)).values()} == {"paused"}  # the boss's state and the clerk's
    done = boss.resume(paused.trajectory.id, {paused.pending[0].id: approve()})
    assert done.answer == "clerk says: sent to ana | archived" and first["send"] == first["archive"] == 1

    # Killed while the approved `archive` ran: resumed by id, no decision needed, nothing finished runs again.
    restore(snapshots[0], tmp_path / "b")
    second: Counter[str] = Counter()
    resumed = build(tmp_path / "b", second, approval=True).resume(paused.trajectory.id)
    assert second["send"] == second["archive"] == 0
    assert resumed.answer == f"clerk says: sent to ana | {INTERRUPTED}"


def kill_at(monkeypatch, method: str, store: Path, *, after: bool) -> list[dict[str, bytes]]:
    """Copy `store` when `Checkpoint.<method>` (begin or end) is called, before or after it saves."""
    snapshots: list[dict[str, bytes]] = []
    real = getattr(Checkpoint, method)

    def spy(self, *args):
        if not after:
            snapshots.append(copy_of(store))
        real(self, *args)
        if after:
            snapshots.append(copy_of(store))

    monkeypatch.setattr(Checkpoint, method, spy)
    return snapshots


def test_a_child_that_finished_before_its_caller_saved_is_not_run_again(tmp_path, monkeypatch) -> None:
    snapshots = kill_at(monkeypatch, "end", tmp_path / "a", after=False)
    build(tmp_path / "a", Counter()).run("job")
    monkeypatch.undo()
    files = snapshots[0]
    assert outer_state(files).in_flight and {s.status for s in states(files).values()} == {"running", "finished"}

    restore(files, tmp_path / "b")
    second: Counter[str] = Counter()
    resumed = build(tmp_path / "b", second).resume(outer_state(files).run_id)
    assert second == Counter({"boss model": 1})  # the clerk's saved result is the call's: no clerk step, no tool
    assert resumed.answer == "clerk says: sent to ana | archived"


def test_a_child_that_had_not_saved_yet_starts_and_its_tools_run_once(tmp_path, monkeypatch) -> None:
    snapshots = kill_at(monkeypatch, "begin", tmp_path / "a", after=True)
    build(tmp_path / "a", Counter()).run("job")
    monkeypatch.undo()
    files = snapshots[0]
    assert len(files) == 1 and outer_state(files).in_flight  # only the boss's state: the clerk had not started

    restore(files, tmp_path / "b")
    second: Counter[str] = Counter()
    resumed = build(tmp_path / "b", second).resume(outer_state(files).run_id)
    assert second == Counter({"boss model": 1, "clerk model": 3, "send": 1, "archive": 1})
    assert resumed.answer == "clerk says: sent to ana | archived" and len(resumed.trajectory.children) == 1


def test_without_a_store_to_ask_an_interrupted_agent_call_is_reported_not_rerun(tmp_path) -> None:
    snapshots: list[dict[str, bytes]] = []
    build(tmp_path / "a", Counter(), on_slow=lambda: snapshots.append(copy_of(tmp_path / "a"))).run("job")
    second: Counter[str] = Counter()
    # Resumed from the state's JSON by an agent without a store: the clerk's progress cannot be read.
    resumed = build(None, second).resume(outer_state(snapshots[0]).model_dump_json())
    assert second == Counter({"boss model": 1})
    assert resumed.answer == f"clerk says: {INTERRUPTED}"


def test_a_child_run_is_resumed_through_its_caller(tmp_path) -> None:
    snapshots: list[dict[str, bytes]] = []
    build(tmp_path / "a", Counter(), on_slow=lambda: snapshots.append(copy_of(tmp_path / "a"))).run("job")
    restore(snapshots[0], tmp_path / "b")
    boss = outer_state(snapshots[0])
    [child] = boss.trajectory.children
    with pytest.raises(ValueError, match=f"agent call of run {boss.run_id}"):
        build(tmp_path / "b", Counter()).resume(child.id)


class Refund(BaseModel):
    amount: int
    reason: str


def test_a_handoff_whose_result_was_saved_keeps_its_typed_output_on_resume(tmp_path, monkeypatch) -> None:
    def agents(store: Path) -> tuple[Agent, Counter[str]]:
        counts: Counter[str] = Counter()

        def refunds_model(messages, tools):
            counts["refunds model"] += 1
            return call("final_result", amount=12, reason="charged twice")

        refunds = Agent(FunctionModel(refunds_model), name="refunds", output_type=Refund)
        return Agent(ScriptedModel([call("transfer_to_refunds")]), name="triage", handoffs=[refunds],
                     store=store), counts

    snapshots = kill_at(monkeypatch, "end", tmp_path / "a", after=True)
    triage, _ = agents(tmp_path / "a")
    original = triage.run("I was charged twice")
    monkeypatch.undo()
    assert original.output == Refund(amount=12, reason="charged twice")
    files = snapshots[-1]  # the transfer's result saved, the run not yet finished
    assert outer_state(files).status == "running" and outer_state(files).finished

    restore(files, tmp_path / "b")
    again, counts = agents(tmp_path / "b")
    resumed = again.resume(outer_state(files).run_id)
    assert counts["refunds model"] == 0
    assert resumed.output == Refund(amount=12, reason="charged twice") and resumed.answer == original.answer
    assert isinstance(resumed.trajectory.children[0], Trajectory)
