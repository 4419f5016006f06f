"""Repeated calls: a reply that only asks again what this run already answered, or what already failed.

Models loop: given a tool's result, a model may call the same tool with the same arguments again, step
after step, until the step limit. The loop keeps the first result of every successful call (keyed by the
tool's name and its arguments) and, when a reply's calls are all repeats, does not run them again: each
gets its earlier result back. When the agent has tools that finish a run, the next reply must call one of
them. Without one, the model is asked to answer or go on to the request's next step; if it repeats again, the
next reply is asked with no tools offered (`tool_choice="none"`), on the run without its repeated replies
(a model shown them tends to copy them), so it answers in text from the results it has. When the run cannot go on (a
finishing tool was forced, the reply without tools repeated anyway, or the step limit is reached), it ends
with stop_reason "repeated_call" and the repeated calls' results as its answer, one per line (the model has
made clear that these results are what it has); so does an empty reply without tools, or one that mentions
nothing of the results (`uses_results`). An agent whose settings demand a call (`tool_choice` "required" or a
tool's name) is not asked for text: its second repeat in a row ends the run.

A call that failed may be tried again (the failure may have been transient). Once the same call has failed
twice with the same error, though, a third try is a loop too (arguments a tool rejects, a query the
database refuses): it is not run, it gets the error back with a request to change the call, and it counts
as a repeat like the above (a run that ends on it has no answer).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from agentkit.messages import JSON_SCALARS, Message, ToolCall

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
NOT_RUN = "Not run: "
"""How an observation of a call the loop did not run begins (a refused repeat, a reply a guard declined)."""
REPEATED_FAILURE = (
    NOT_RUN + "this exact call of {name} has already failed {times} times with the same error:\n{error}\n"
    "It would fail the same way again. Change its arguments or call another tool{finish}."
)
FAILURES_BEFORE_REFUSAL = 2
"""Failures of one call (same arguments) with the same error, after which that call is not run again."""


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)  # made once: dumps() makes one a call


def call_key(call: ToolCall) -> str:
    """A call's identity: its tool's name and its arguments in a canonical form (the same for the same
    arguments in any order, different for different values or types): flat arguments as the `repr` of
    their sorted items, any others as canonical JSON (the two forms begin differently, `[` and `{`)."""
    arguments = call.arguments
    if all(type(v) in JSON_SCALARS for v in arguments.values()):
        return call.name + repr(sorted(arguments.items()))
    return call.name + _CANONICAL.encode(arguments)


class CallResults:
    """The first successful result of each distinct call of a run, and how often each failed call failed the
    same way, read from its messages as they grow."""

    def __init__(self) -> None:
        self._results: dict[str, str] = {}
        self._failures: dict[str, tuple[str, int]] = {}  # call -> (its last error, failures with that error)
        self._calls: dict[str, ToolCall] = {}
        self._keys: dict[str, str] = {}  # call id -> key, of the calls `repeats` looked at and the run answers next
        self._seen = 0  # messages read so far

    def update(self, messages: Sequence[Message]) -> None:
        """Read the messages appended since the last update."""
        for message in messages[self._seen:]:
            if message.role == "assistant":
                for call in message.tool_calls:
                    self._calls[call.id] = call
            elif message.role == "tool" and message.tool_call_id in self._calls:
                key = self._keys.pop(message.tool_call_id, None) or call_key(self._calls[message.tool_call_id])
                if not message.is_error:
                    self._results.setdefault(key, message.content)
                    self._failures.pop(key, None)
                elif not message.content.startswith(NOT_RUN):  # not run: not another failure
                    error, times = self._failures.get(key, ("", 0))
                    self._failures[key] = (message.content, times + 1 if error == message.content else 1)
        self._seen = len(messages)

    def texts(self) -> list[str]:
        """Every distinct successful result of the run so far."""
        return list(self._results.values())

    def earlier(self, call: ToolCall) -> str | None:
        """The first successful result of a call like `call`, if there was one."""
        return self._results.get(call_key(call))

    def repeats(self, reply: Message, finish: Sequence[str] = ()) -> list[Message] | None:
        """The observations that answer `reply` without running it when every one of its calls is a repeat
        (of a successful call, or of one that failed `FAILURES_BEFORE_REFUSAL` times with the same error);
        None when any call is new (then the reply runs as usual). `finish` names the tools that end a run
        (`final=True`): the observation then points at them instead of asking for text."""
        if not reply.tool_calls:
            return None
        out = []
        for call in reply.tool_calls:
            key = self._keys[call.id] = call_key(call)
            others = [name for name in finish if name != call.name]
            if (result := self._results.get(key)) is not None:
                text = (REPEATED_CALL_FINISH.format(name=call.name, result=result, finish=" or ".join(others))
                        if others else REPEATED_CALL.format(name=call.name, result=result))
                out.append(Message.tool(call, text))
                continue
            error, times = self._failures.get(key, ("", 0))
            if times < FAILURES_BEFORE_REFUSAL:
                return None
            then = f", or call {' or '.join(others)} with the best you have found" if others else ""
            out.append(Message.tool(call, REPEATED_FAILURE.format(name=call.name, times=times, error=error,
                                                                  finish=then), is_error=True))
        return out


_SALIENT = re.compile(r"[^\W_]*\d[^\W_]*|[^\W\d_]{3,}")  # numbers (and words with digits), words of 3+ letters
_THOUSANDS = re.compile(r"(?<=\d)[,_](?=\d{3})")


def uses_results(answer: str, results: Sequence[str]) -> bool:
    """Whether `answer` mentions something of `results` (a number or a word of three letters or more, case
    and thousands separators aside); True when there are no results to use. A model made to answer after a
    loop may reply with a pleasantry ("Great! Thank you for providing the response."): such an answer is
    replaced by the results themselves."""
    words = {w.lower() for r in results for w in _SALIENT.findall(_THOUSANDS.sub("", r))}
    text = _THOUSANDS.sub("", answer).lower()
    return not words or any(w in text for w in words)
