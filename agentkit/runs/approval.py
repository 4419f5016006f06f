"""Tool approval: runs that pause before sensitive calls and resume once a person has decided.

A tool asks for approval with `@tool(requires_approval=True)` (or a function of the call's
arguments); an agent may add its own policy, `Agent(approval=lambda tool, args: ...)`. A call needs
approval when either says so. When a model reply contains such a call, the run stops before running
any call of that reply: `result.stop_reason == "paused"` and `result.pending` lists the calls
waiting for a decision. `result.state` is a `RunState`, plain JSON, that `agent.resume(state,
decisions)` continues, in this process or another one (with an agent built the same way):

    result = agent.run("delete the old logs")
    if result.stop_reason == "paused":
        text = result.state.to_json()                       # store it, send it for review, ...
        decisions = {c.id: approve() for c in result.pending}
        result = agent.resume(RunState.from_json(text), decisions)

The other calls of the paused reply (those needing no approval) run on resume, together with the
approved ones, in the reply's order, so the model's observations keep the order of its calls. A
denied call is not run; the model sees "The user denied this call" (with the reason, if given) as
its observation. Every decision is recorded in `trajectory.approvals`.

The same `RunState` is what a durable run (`Agent(store=DIR)`, `agentkit.runs.durable`) checkpoints after every
step: `status` says whether the run is running, paused or finished, `in_flight` and `finished` which calls of
the reply being run had started and which had returned when it was saved.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from agentkit.messages import Message, ToolCall
from agentkit.trajectory import ApprovalRecord, Trajectory

if TYPE_CHECKING:
    from agentkit.tools import Tool

STATE_SCHEMA_VERSION = 2  # 2: status, in_flight, finished, loop, agent, updated_at (durable runs)

ApprovalPolicy = Callable[["Tool", dict[str, Any]], bool]
"""An agent-level policy: given the tool and the call's arguments, does the call need approval?"""


@dataclass(frozen=True)
class Decision:
    """A decision on one pending call: approve it, or deny it (the reason is shown to the model)."""

    approved: bool
    reason: str | None = None


def approve() -> Decision:
    """Let the call run."""
    return Decision(True)


def deny(reason: str | None = None) -> Decision:
    """Do not run the call; the model is told it was denied, and why if `reason` is given."""
    return Decision(False, reason)


Decisions = Mapping[str, Decision | bool]
"""Decisions by tool-call id; True and False stand for approve() and deny()."""


def needs_approval(tool: Tool | None, arguments: dict[str, Any], policy: ApprovalPolicy | None) -> bool:
    """Whether a call must wait for a decision. A rule or policy that raises counts as "yes" (the safe
    side); calls of unknown tools never wait (they fail with an observation anyway)."""
    if tool is None:
        return False
    try:
        rule = tool.requires_approval
        if rule is True or (callable(rule) and rule(arguments)):
            return True
        return bool(policy is not None and policy(tool, arguments))
    except Exception:
        return True


def denial_message(call: ToolCall, reason: str | None) -> Message:
    """The observation the model gets for a denied call."""
    text = "The user denied this call." + (f" Reason: {reason}" if reason else "")
    return Message.tool(call, text, is_error=True)


RunStatus = Literal["running", "paused", "finished"]
"""Where a run stands: going on (or stopped by a crash, to be resumed), waiting for approval, or done."""


class LoopRecord(BaseModel):
    """What the act loop remembers between steps beyond the trajectory (`agentkit.loop.state.LoopState`'s
    recovery fields), saved so that a resumed run goes on as the uninterrupted one would."""

    tool_choice: str | None = None
    """The next model call's `tool_choice` (a finishing call may be demanded)."""
    told_to_finish: bool = False
    repeating: bool = False
    repeated_results: str = ""
    last_parse_error: str | None = None
    loops: list[int] = Field(default_factory=list)


class AgentRecord(BaseModel):
    """How the run's agent was built, as far as it can be rebuilt from a record: the model string it was given
    (None for a `Model` object) and, per tool, the `module:qualname` it imports from (None when it cannot be
    imported, e.g. a tool defined in a function or a script)."""

    model: str | None = None
    tools: dict[str, str | None] = Field(default_factory=dict)
    max_steps: int = 20


class RunState(BaseModel):
    """A run, serialisable as JSON: its trajectory so far and the calls waiting for a decision (a paused run);
    for a durable run also its status and the calls of the reply being run (see `agentkit.runs.durable`).

    States written before schema version 2 are paused runs and read as such."""

    kind: Literal["agentkit.run_state"] = "agentkit.run_state"
    schema_version: int = STATE_SCHEMA_VERSION
    trajectory: Trajectory
    pending: list[ToolCall]
    status: RunStatus = "paused"
    in_flight: list[ToolCall] = Field(default_factory=list)
    """Calls handed to their tools that had not returned when the state was saved: they may or may not have
    completed."""
    finished: list[Message] = Field(default_factory=list)
    """The observations of the calls of the reply being run that had returned when the state was saved."""
    loop: LoopRecord | None = None
    agent: AgentRecord | None = None
    updated_at: float = 0.0
    """When the state was saved (seconds since the epoch; 0: not recorded)."""

    @property
    def run_id(self) -> str:
        """The run's id: its trajectory's id."""
        return self.trajectory.id

    def to_json(self) -> str:
        """The state as one JSON document."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> RunState:
        """Read a state written by `to_json`; raises ValueError saying what is wrong with it."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a run state: invalid JSON ({exc})") from None
        if not isinstance(data, dict) or data.get("kind") != "agentkit.run_state":
            raise ValueError("not a run state: expected the JSON written by RunState.to_json()")
        version = data.get("schema_version")
        if isinstance(version, int) and version > STATE_SCHEMA_VERSION:
            raise ValueError(f"run state has schema version {version}; this agentkit reads up to "
                             f"{STATE_SCHEMA_VERSION}. Upgrade agentkit to resume it.")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ValueError(f"not a valid run state: {exc}") from None

    def check(self) -> None:
        """Raise ValueError unless this is a paused run whose pending calls are the last reply's."""
        t = self.trajectory
        if t.stop_reason != "paused":
            raise ValueError(f"the run is not paused (it stopped by {t.stop_reason!r}); only a paused run resumes")
        last = t.messages[-1] if t.messages else None
        if last is None or last.role != "assistant" or not last.tool_calls:
            raise ValueError("run state is damaged: its last message is not the reply with the pending calls")
        waiting = waiting_call_ids(t)
        if not self.pending or any(c.id not in waiting for c in self.pending):
            raise ValueError("run state is damaged: the pending calls are not those of the last reply")


def waiting_call_ids(trajectory: Trajectory) -> set[str]:
    """The ids of the calls a paused run may wait on: those of its last reply, and those a paused child run
    started by one of them waits on (an agent called as a tool whose own call needs approval)."""
    last = trajectory.messages[-1] if trajectory.messages else None
    if last is None or last.role != "assistant":
        return set()
    reply = {c.id for c in last.tool_calls}
    ids = set(reply)
    for child in trajectory.children:
        if child.parent_call_id in reply and child.stop_reason == "paused":
            ids |= waiting_call_ids(child)
    return ids


def resolve_decisions(state: RunState, decisions: Decisions) -> dict[str, Decision]:
    """Check that every pending call has exactly one decision and nothing else does; normalise bools."""
    pending = {c.id for c in state.pending}
    unknown = sorted(set(decisions) - pending)
    if unknown:
        raise ValueError(f"decisions for calls that are not pending: {', '.join(unknown)}; "
                         f"pending: {', '.join(sorted(pending))}")
    missing = [c for c in state.pending if c.id not in decisions]
    if missing:
        raise ValueError("no decision for pending call(s): "
                         + ", ".join(f"{c.id} ({c.name})" for c in missing))
    out: dict[str, Decision] = {}
    for call_id, d in decisions.items():
        if isinstance(d, bool):
            d = Decision(d)
        elif not isinstance(d, Decision):
            raise TypeError(f"decision for {call_id} must be approve(), deny(reason) or a bool, not {type(d).__name__}")
        out[call_id] = d
    return out


def record_decisions(trajectory: Trajectory, pending: list[ToolCall], decisions: dict[str, Decision]) -> None:
    """Append each decision to the trajectory, naming the turn whose reply made the call."""
    turn = len(trajectory.turns) - 1
    for call in pending:
        d = decisions[call.id]
        trajectory.approvals.append(ApprovalRecord(call_id=call.id, tool=call.name, arguments=call.arguments,
                                                   approved=d.approved, reason=d.reason, turn=turn))


def policy_from_spec(spec: str) -> ApprovalPolicy | None:
    """A policy from a command-line word: "none", "all", "writes" (tools not marked read-only), or
    comma-separated tool names."""
    words = [w.strip() for w in spec.split(",") if w.strip()]
    if not words or words == ["none"]:
        return None
    if words == ["all"]:
        return lambda tool, args: True
    if words == ["writes"]:
        return lambda tool, args: not tool.read_only
    if {"none", "all", "writes"} & set(words):
        raise ValueError(f"approval policy {spec!r}: use none, all, writes, or a list of tool names")
    names = frozenset(words)
    return lambda tool, args: tool.name in names
