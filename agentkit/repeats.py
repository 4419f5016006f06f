"""Repeated calls: a reply that only asks again what this run already answered.

Small models loop: given a tool's result they call the same tool with the same arguments again, step
after step, until the step limit. The loop keeps the first result of every successful call (keyed by the
tool's name and its arguments) and, when a reply's calls are all repeats, does not run them again: each
gets its earlier result back with a request to answer or to go on to the request's next step (or, when
the agent has tools that finish a run, to call one of them). If the very next reply repeats again, the run ends
with stop_reason "repeated_call" and the repeated calls' results as its answer, one per line (the model has
made clear that these results are what it has). A call that failed is not kept: trying it again is legitimate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentkit.messages import Message, ToolCall

REPEATED_CALL = (
    "You already called {name} with these arguments; its result was:\n{result}\n"
    "Do not call it again. If this result is all the request needs, answer it now; if the request asks for "
    "more (a next step, another item), call the tool for that instead."
)
REPEATED_CALL_FINISH = (
    "You already called {name} with these arguments; its result was:\n{result}\n"
    "Do not call it again. If this result answers the request, call {finish} now to finish; "
    "otherwise call a different tool or change the arguments."
)


def call_key(call: ToolCall) -> str:
    """A call's identity: its tool's name and its arguments, in canonical JSON."""
    return call.name + json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)


class CallResults:
    """The first successful result of each distinct call of a run, read from its messages as they grow."""

    def __init__(self) -> None:
        self._results: dict[str, str] = {}
        self._calls: dict[str, ToolCall] = {}
        self._seen = 0  # messages read so far

    def update(self, messages: Sequence[Message]) -> None:
        """Read the messages appended since the last update."""
        for message in messages[self._seen:]:
            if message.role == "assistant":
                for call in message.tool_calls:
                    self._calls[call.id] = call
            elif message.role == "tool" and not message.is_error and message.tool_call_id in self._calls:
                self._results.setdefault(call_key(self._calls[message.tool_call_id]), message.content)
        self._seen = len(messages)

    def earlier(self, call: ToolCall) -> str | None:
        """The first successful result of a call like `call`, if there was one."""
        return self._results.get(call_key(call))

    def repeats(self, reply: Message, finish: Sequence[str] = ()) -> list[Message] | None:
        """The observations that answer `reply` from earlier results when every one of its calls is a
        repeat; None when any call is new (then the reply runs as usual). `finish` names the tools that
        end a run (`final=True`): the observation then points at them instead of asking for text."""
        earlier = [self._results.get(call_key(c)) for c in reply.tool_calls]
        if not reply.tool_calls or any(r is None for r in earlier):
            return None
        out = []
        for call, result in zip(reply.tool_calls, earlier, strict=True):
            others = [name for name in finish if name != call.name]
            text = (REPEATED_CALL_FINISH.format(name=call.name, result=result, finish=" or ".join(others)) if others
                    else REPEATED_CALL.format(name=call.name, result=result))
            out.append(Message.tool(call, text))
        return out
