"""Handoffs: an agent hands the conversation to another, which continues it and answers.

    billing = Agent(model, tools=[invoice], name="billing", instructions="You answer billing questions.")
    refunds = Agent(model, tools=[refund], name="refunds")
    triage = Agent(model, name="triage", handoffs=[billing, handoff(refunds, input_filter=drop_tool_calls)])
    triage.run("I was charged twice").answer      # the answer of the agent that finished the conversation

Each handoff is a tool without arguments, `transfer_to_<name>` by default. When the model calls it, the target
agent takes over: it sees its own system prompt and the conversation so far as the handoff's `input_filter`
returns it (all of it by default), answers, and its answer and typed output are the run's; the transfer call's
observation is that answer. The run that handed over stops there (a handoff ends it like a finishing tool,
though an agent with handoffs may still answer in text itself).

What the target sees, exactly: the filtered conversation up to its last user message (the request it answers),
and what was done after that message (the calls of the agent that handed over and their results, or its text)
as a section of its system prompt, "Before the hand-over", so the conversation it continues stays well formed.

The target's run is a child trajectory of the run that handed over (`relation="handoff"`, see
`agentkit.trajectory.Trajectory.children`) with its own turns and token ids, so the record says who spoke when:
the parent's turns up to the transfer call, then the child's. As for an agent called as a tool
(`agentkit.runs.delegation`), its events stream as `InnerEvent`s and calls of it that need approval pause the run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from agentkit.messages import Message, ToolCall
from agentkit.runs.delegation import AgentTool, ChildRun, Delegate, child_trajectory
from agentkit.tools import DEFAULT_MAX_OUTPUT_CHARS, Tool
from agentkit.trajectory import Trajectory

InputFilter = Callable[[Sequence[Message]], list[Message]]
"""What the target of a handoff sees of the conversation: given its messages so far (without the system
message, up to the reply that hands over), the messages to pass on."""

BEFORE_HANDOVER = "Before the hand-over"
"""The title of the system-prompt section with what was done after the user's last message."""


def keep_all(messages: Sequence[Message]) -> list[Message]:
    """Pass the whole conversation on, calls and results included (the default)."""
    return list(messages)


def drop_tool_calls(messages: Sequence[Message]) -> list[Message]:
    """Pass on the user's messages and the assistants' text; leave out tool calls and their results."""
    out: list[Message] = []
    for m in messages:
        if m.role == "tool":
            continue
        if m.role == "assistant" and m.tool_calls:
            if m.content.strip():
                out.append(Message.assistant(m.content))
            continue
        out.append(m)
    return out


@dataclass(frozen=True)
class Handoff:
    """A handoff to `agent`: the tool the model calls for it, and what the agent sees of the conversation."""

    agent: Delegate
    tool_name: str
    description: str
    input_filter: InputFilter = keep_all


def handoff(agent: Delegate, *, tool_name: str | None = None, description: str | None = None,
            input_filter: InputFilter = keep_all) -> Handoff:
    """A handoff to `agent`, for `Agent(handoffs=[...])` (a bare agent there is `handoff(agent)`).

    Args:
        agent: the agent that takes over (its `name` names the tool).
        tool_name: the tool's name; default `transfer_to_<agent name>`.
        description: what the tool tells the model; by default it names the agent.
        input_filter: what the agent sees of the conversation: `keep_all` (default), `drop_tool_calls`, or a
            function of the messages.
    """
    slug = re.sub(r"[^0-9a-zA-Z_]+", "_", agent.name).strip("_").lower() or "agent"
    return Handoff(agent, tool_name or f"transfer_to_{slug}",
                   description or f"Hand the conversation over to the {agent.name} agent, which continues it and "
                                  "answers the user.", input_filter)


class HandoffTool(AgentTool):
    """The tool of one handoff (no arguments); made by `Agent(handoffs=...)`."""

    relation: ClassVar[Literal["tool", "handoff"]] = "handoff"

    def __init__(self, spec: Handoff) -> None:
        def transfer() -> str:
            raise RuntimeError("a hand-over happens only inside an agentkit Agent's run")

        Tool.__init__(self, transfer, name=spec.tool_name, description=spec.description, timeout_s=None,
                      max_output_chars=DEFAULT_MAX_OUTPUT_CHARS)
        self.agent = spec.agent
        self.input_type = None
        self.handoff = spec

    def start(self, trajectory: Trajectory, call: ToolCall, arguments: Mapping[str, object]) -> ChildRun:
        """The target's run: the filtered conversation of `trajectory` before the reply with `call`."""
        seen = self.handoff.input_filter(trajectory.messages[1:-1])
        last_user = max((i for i, m in enumerate(seen) if m.role == "user"), default=None)
        if last_user is None:
            task, history, after = trajectory.task, [], seen
        else:
            task, history, after = seen[last_user].content, seen[:last_user], seen[last_user + 1:]
        child = child_trajectory(self.agent, task, trajectory, call, "handoff", task_id=trajectory.task_id)
        context = {BEFORE_HANDOVER: _before_handover(after)} if after else {}
        return ChildRun(child, history=list(history), context=context)


def as_handoffs(items: Sequence[Delegate | Handoff]) -> list[HandoffTool]:
    """The tools of `Agent(handoffs=...)`: agents and `handoff(...)` specs."""
    return [HandoffTool(item if isinstance(item, Handoff) else handoff(item)) for item in items]


def _before_handover(messages: Sequence[Message]) -> str:
    """What was done after the user's last message, as text for the target's system prompt."""
    lines = ["The conversation was handed over to you. After the user's last message, before the hand-over:"]
    for m in messages:
        if m.role == "assistant":
            if m.content.strip():
                lines.append(f"- the assistant said: {m.content.strip()}")
            lines += [f"- the assistant called {c.name}({json.dumps(c.arguments, ensure_ascii=False)})"
                      for c in m.tool_calls]
        elif m.role == "tool":
            lines.append(f"- {m.name or 'a tool'} returned{' an error' if m.is_error else ''}: {m.content.strip()}")
        else:
            lines.append(f"- {m.role}: {m.content.strip()}")
    return "\n".join(lines)
