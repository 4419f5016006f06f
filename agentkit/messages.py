"""The one message type shared by every part of agentkit, and the small types around it."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["system", "user", "assistant", "tool"]


def new_id(prefix: str = "call") -> str:
    """A short random id, e.g. for tool calls and trajectories."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


class ToolCall(BaseModel):
    """A model's request to call one tool. `arguments` is the parsed JSON object."""

    id: str = Field(default_factory=new_id)
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


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
    """Token counts of one model call, or summed over a run."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            calls=self.calls + other.calls,
        )
