"""Events an agent run yields as it goes, for the CLI to stream and the SDK to observe."""

from __future__ import annotations

from dataclasses import dataclass

from agentkit.messages import Message, ToolCall
from agentkit.results import RunResult
from agentkit.trajectory import Turn


@dataclass(frozen=True)
class PhaseStarted:
    """The run entered a phase (explore, map, query, act, ...)."""

    phase: str


@dataclass(frozen=True)
class ModelText:
    """A piece of model text, streamed as it is generated."""

    text: str
    phase: str


@dataclass(frozen=True)
class ModelTurn:
    """A model call finished; `turn` is what the trajectory recorded."""

    turn: Turn


@dataclass(frozen=True)
class ToolStarted:
    """A tool call is about to run."""

    call: ToolCall


@dataclass(frozen=True)
class ToolFinished:
    """A tool call returned; `result` is the observation shown to the model."""

    call: ToolCall
    result: Message
    duration_s: float


@dataclass(frozen=True)
class ContextAdded:
    """An extension or planner put text into the agent's context (a skill, notes, a map)."""

    source: str
    title: str
    text: str


@dataclass(frozen=True)
class RunPaused:
    """The run stopped before calls that need approval; `result.pending` lists them and `result.state`
    resumes the run (`Agent.resume_stream`). `RunFinished` with the same result follows."""

    result: RunResult


@dataclass(frozen=True)
class RunFinished:
    """The run ended; `result` holds the answer and the trajectory."""

    result: RunResult


@dataclass(frozen=True)
class InnerEvent:
    """An event of a run this run started: an agent called as a tool (`Agent.as_tool`) or the agent the
    conversation was handed to (`Agent(handoffs=...)`).

    `agent` names that agent, `call_id` is this run's call that started it, and `event` is the inner run's event
    as its own stream would yield it (its `RunFinished` included; an `InnerEvent` again for a run it started).
    """

    agent: str
    call_id: str
    event: Event


Event = (PhaseStarted | ModelText | ModelTurn | ToolStarted | ToolFinished | ContextAdded | RunPaused | RunFinished
         | InnerEvent)
