"""A second look at a chat turn answered in text: the same request, shown only the earlier turns that called tools.

In a long chat a small model follows the pattern of its own earlier replies: once one request was answered
from nothing, the next ones that need a tool are answered from nothing too, while the same request in a fresh
chat gets its call. With `Agent(second_look=True)`, the first reply of a run that has earlier turns, when it
answers in text with tools offered, is followed by one more model call on `lookup_view` of the prompt: the
system message, the earlier turns in which a tool was called (whole: request, calls, results, answer) and the
request. When that reply calls a tool, its calls go on in the real conversation; else the first answer stands.
Both replies are recorded on the trajectory (the one not kept as a turn of context `SECOND_LOOK` or
`FIRST_LOOK`, with the messages it saw).
"""

from __future__ import annotations

from collections.abc import Sequence

from agentkit.messages import Message

SECOND_LOOK = "second_look"
"""The context of a second look's reply that was not kept (it answered in text too)."""
FIRST_LOOK = "first_look"
"""The context of a first reply replaced by its second look's calls."""


def lookup_view(prompt: Sequence[Message]) -> list[Message] | None:
    """The messages a second look sees: `prompt`'s system message, its earlier turns that called a tool, and its
    last message, the user's request. None when `prompt` does not end with a request after earlier turns, or
    when no earlier turn is left out (the view would be the prompt itself)."""
    if len(prompt) < 3 or prompt[-1].role != "user":
        return None
    head = [m for m in prompt[:1] if m.role == "system"]
    turns: list[list[Message]] = []
    for message in prompt[len(head):-1]:
        if message.role == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    kept = [m for turn in turns if any(m.role == "assistant" and m.tool_calls for m in turn) for m in turn]
    if len(kept) == len(prompt) - len(head) - 1:
        return None
    return [*head, *kept, prompt[-1]]
