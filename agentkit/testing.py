"""Test doubles for the LLM's choices: state what the model says, assert on what the machinery does.

    from agentkit.testing import ScriptedModel, call
    model = ScriptedModel([call("add", a=2, b=40), "42"])
    assert Agent(model, tools=[add]).run("2 + 40?").answer == "42"
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from agentkit.messages import Message, ToolCall, Usage
from agentkit.models.protocol import GenerationSettings, ModelResponse, StreamItem, TextDelta, ToolSpecs
from agentkit.tools.text_calls import parse_tool_calls

ScriptItem = Message | str | Callable[[Sequence[Message]], "Message | str"]


def call(name: str, /, **arguments: Any) -> Message:
    """An assistant message calling one tool."""
    return Message.assistant(tool_calls=[ToolCall(name=name, arguments=arguments)])


def calls(*items: tuple[str, dict[str, Any]]) -> Message:
    """An assistant message calling several tools at once: calls(("add", {...}), ("now", {}))."""
    return Message.assistant(tool_calls=[ToolCall(name=n, arguments=a) for n, a in items])


class ScriptExhausted(RuntimeError):
    """The scripted model was asked for more replies than it was given."""


class ScriptedModel:
    """A model that replies with the given messages, in order.

    Items may be `Message`s, plain strings (the final answer, or, with `text_tools=True`, raw text
    parsed by the text tool-call protocol as from a model without native tool calling), or callables
    that receive the messages and return either. `requests` keeps every list of messages received.
    """

    def __init__(self, script: Sequence[ScriptItem], *, name: str = "scripted", text_tools: bool = False,
                 repeat_last: bool = False) -> None:
        self.script = list(script)
        self.name = name
        self.text_tools = text_tools
        self.repeat_last = repeat_last
        self._seen: list[tuple[Sequence[Message], int]] = []
        self._next = 0
        self.settings: list[GenerationSettings | None] = []
        """The settings of every request, in order."""

    @property
    def requests(self) -> list[list[Message]]:
        """The messages of every request, as they were when sent (the loop only appends)."""
        return [list(msgs[:n]) for msgs, n in self._seen]

    @classmethod
    def from_file(cls, path: str) -> ScriptedModel:
        """Load a script from JSON: a list of strings (replies) and {"tool": NAME, "arguments": {...}}
        objects (tool calls); a list of such objects is one reply calling several tools."""
        import json

        def item(x: Any) -> Message | str:
            if isinstance(x, str):
                return x
            group = x if isinstance(x, list) else [x]
            return Message.assistant(tool_calls=[ToolCall(name=c["tool"], arguments=c.get("arguments", {}))
                                                 for c in group])

        with open(path) as f:
            return cls([item(x) for x in json.load(f)], name=f"script:{path}")

    def generate(
        self, messages: Sequence[Message], tools: ToolSpecs = (), settings: GenerationSettings | None = None
    ) -> ModelResponse:
        """The next scripted reply (raises `ScriptExhausted` when the script has run out)."""
        self._seen.append((messages, len(messages)))
        self.settings.append(settings)
        if self._next >= len(self.script):
            if not (self.repeat_last and self.script):
                raise ScriptExhausted(f"scripted model has no reply #{self._next + 1} ({len(self.script)} given)")
            item = self.script[-1]
        else:
            item = self.script[self._next]
        self._next += 1
        if callable(item) and not isinstance(item, Message):
            item = item(messages)
        message = self._to_message(item, tools)
        return ModelResponse(message=message, usage=Usage(input_tokens=len(messages), output_tokens=1, calls=1))

    def stream(
        self, messages: Sequence[Message], tools: ToolSpecs = (), settings: GenerationSettings | None = None
    ) -> Iterator[StreamItem]:
        """The next scripted reply, its text streamed in pieces of 8 characters."""
        response = self.generate(messages, tools, settings)
        text = response.message.content
        for i in range(0, len(text), 8):
            yield TextDelta(text[i : i + 8])
        yield response

    def _to_message(self, item: Message | str, tools: Sequence[dict[str, Any]]) -> Message:
        if isinstance(item, Message):
            return item
        if not self.text_tools:
            return Message.assistant(item)
        names = {spec.get("function", spec)["name"] for spec in tools}
        parsed = parse_tool_calls(item, names)
        message = Message.assistant(item if parsed.error else parsed.content, parsed.calls)
        message.parse_error = parsed.error
        return message


class FunctionModel(ScriptedModel):
    """A model whose every reply comes from `fn(messages, tools)`."""

    def __init__(self, fn: Callable[[Sequence[Message], Sequence[dict[str, Any]]], Message | str], *,
                 name: str = "function", text_tools: bool = False) -> None:
        super().__init__([], name=name, text_tools=text_tools)
        self.fn = fn

    def generate(
        self, messages: Sequence[Message], tools: ToolSpecs = (), settings: GenerationSettings | None = None
    ) -> ModelResponse:
        """The reply the function gives for these messages and tools (it may read `self.settings[-1]`)."""
        self._seen.append((messages, len(messages)))
        self.settings.append(settings)
        message = self._to_message(self.fn(messages, tools), tools)
        return ModelResponse(message=message, usage=Usage(input_tokens=len(messages), output_tokens=1, calls=1))
