"""The one message type shared by every part of agentkit, and the small types around it."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

Role = Literal["system", "user", "assistant", "tool"]


JSON_SCALARS = frozenset({str, int, float, bool, type(None)})
"""The types of a JSON scalar as Python reads them (a flat argument's value is one of these)."""
_PLAIN = JSON_SCALARS - {str}


def clean_text(value: Any) -> Any:
    """`value` with every lone surrogate (U+D800-U+DFFF, which UTF-8 cannot encode: JSON logs and the
    terminal would fail on it) replaced by U+FFFD, inside strings, lists, tuples and dict keys/values;
    anything else is returned as is. `value` itself comes back when nothing in it needed replacing (so
    `clean_text(x) is x` says it was clean). Applied where text enters: model text, parsed tool arguments,
    tool outputs, streamed deltas, and every model reply at `agentkit.models.boundary`."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:  # a surrogate pair becomes its character, a lone one U+FFFD
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if type(value) is dict and all(type(k) is str and k.isascii() and (type(v) in _PLAIN or (type(v) is str
                                                                       and v.isascii())) for k, v in value.items()):
        return value  # flat and ASCII: the common arguments
    if isinstance(value, dict):
        items = [(clean_text(k), clean_text(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        cleaned = [clean_text(v) for v in value]
        if all(a is b for a, b in zip(cleaned, value, strict=True)):
            return value
        return cleaned if isinstance(value, list) else tuple(cleaned)
    return value


def new_id(prefix: str = "call") -> str:
    """A short random id, e.g. for tool calls and trajectories."""
    return f"{prefix}_{os.urandom(6).hex()}"  # from os.urandom: seeding `random` (training does) cannot repeat ids


class ToolCall(BaseModel):
    """A model's request to call one tool. `arguments` is the parsed JSON object."""

    id: str = Field(default_factory=new_id)
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    _clean = field_validator("id", "name", "arguments")(lambda value: clean_text(value))


class Message(BaseModel):
    """One chat message.

    An assistant message may carry `tool_calls`; a tool message answers one call through
    `tool_call_id` and says in `is_error` whether the call failed. `parse_error` is set on an
    assistant message whose text looked like a tool call but could not be parsed.
    """

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    parse_error: str | None = None

    @model_validator(mode="after")
    def _clean(self) -> Message:
        # Runs again for a message already built when it is put in another model (a turn): so it is cheap, and
        # it takes a message built without validation as it is (the model boundary repairs those).
        content, name, error, call_id = self.content, self.name, self.parse_error, self.tool_call_id
        if not (type(content) is str and content.isascii()
                and (name is None or (type(name) is str and name.isascii()))
                and (error is None or (type(error) is str and error.isascii()))
                and (call_id is None or (type(call_id) is str and call_id.isascii()))):
            self.content, self.name = clean_text(self.content), clean_text(name)
            self.parse_error, self.tool_call_id = clean_text(error), clean_text(call_id)
        return self

    @classmethod
    def system(cls, content: str) -> Message:
        """A system message."""
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str = "", tool_calls: list[ToolCall] | None = None) -> Message:
        """An assistant message: text, tool calls, or both."""
        return cls(role="assistant", content=content, tool_calls=tool_calls or [])

    @classmethod
    def tool(cls, call: ToolCall, content: str, *, is_error: bool = False) -> Message:
        """The observation of `call`: what the tool returned (or its error)."""
        return cls(role="tool", content=content, tool_call_id=call.id, name=call.name, is_error=is_error)


class Usage(BaseModel):
    """Token counts of one model call, or summed over a run, and their cost in US dollars when the
    model's price is known (`agentkit.models.cost`; None: unknown)."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cost_usd: float | None = None

    def __add__(self, other: Usage) -> Usage:
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            calls=self.calls + other.calls,
            cost_usd=sum(costs) if costs else None,
        )
