"""The small protocol that skill libraries, mistake notebooks and planners plug into.

Before a run an extension may add context and may call the model (each call is a recorded turn with
its own phase label); after the run, when the outcome is known, it may learn from the trajectory.
An extension that is also a `Guard` reviews each reply's tool calls before they run and may decline them
(learned pacing, `agentkit.pacing`, is one); one that is an `Advisor` may add to what a failed call gets
back (learned repairs, `agentkit.repairs`); one that is a `Check` may fix a call of a finishing tool before it
runs (learned SQL shape checks, `agentkit.sql.shape`).
The core knows this protocol, not the implementations (they live in agentkit.skills, agentkit.memory).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentkit.events import ContextAdded, Event, ModelTurn, PhaseStarted
from agentkit.messages import Message, ToolCall
from agentkit.models.protocol import GenerationSettings, Model, ModelResponse
from agentkit.records import RECORD_KEYS, TOOLS_OFFERED, R, RecordKey, ToolsOffered
from agentkit.trajectory import Trajectory

if TYPE_CHECKING:
    from agentkit.agent import RunResult
    from agentkit.tools import Tool

CallHook = Callable[[Model, list[Message], Sequence[dict[str, Any]], GenerationSettings], ModelResponse]
"""How a run's model calls are made (the agent passes its own, which retries transient errors)."""


_FRAMEWORK_KEYS = frozenset(k.name for k in RECORD_KEYS)


@dataclass
class ContextSection:
    """A titled piece of text placed in the system prompt."""

    source: str
    title: str
    text: str

    def render(self) -> str:
        """The section as Markdown: a level-2 heading and the text."""
        return f"## {self.title}\n{self.text.strip()}"


@dataclass
class RunContext:
    """What an extension or planner sees of a run in progress."""

    task: str
    model: Model
    tools: dict[str, Tool]
    trajectory: Trajectory
    settings: GenerationSettings
    sections: list[ContextSection] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    call_hook: CallHook | None = None
    offered: list[str] | None = None
    """The tools the model is shown in this run (None: all); see `offer`."""

    def add_context(self, source: str, title: str, text: str) -> None:
        """Put a titled section into the system prompt of the run."""
        self.sections.append(ContextSection(source, title, text))
        self.events.append(ContextAdded(source, title, text))

    def offer(self, names: Sequence[str], scores: Mapping[str, float] | None = None) -> None:
        """Show the model only these of the agent's tools in this run, in this order (tool selection);
        recorded on the trajectory (`records.TOOLS_OFFERED`, with the selector's `scores` if given).
        Tools that finish a run and a typed output's tool stay offered; a call to a tool not shown still runs."""
        unknown = [n for n in names if n not in self.tools]
        if unknown:
            raise ValueError(f"cannot offer unknown tools {unknown}; the agent has {sorted(self.tools)}")
        self.offered = list(dict.fromkeys(names))
        self.trajectory.records.set(TOOLS_OFFERED, ToolsOffered(offered=self.offered, scores=dict(scores or {})))

    def call_model(
        self,
        messages: list[Message],
        *,
        phase: str,
        context: str | None = None,
        tools: Sequence[dict[str, Any]] = (),
        settings: GenerationSettings | None = None,
    ) -> Message:
        """Ask the model outside the main conversation; the call is recorded as a turn labelled `phase`."""
        self.events.append(PhaseStarted(phase))
        settings = settings or self.settings
        start = time.perf_counter()
        if self.call_hook is not None:
            response = self.call_hook(self.model, messages, tools, settings)
        else:
            response = self.model.generate(messages, tools, settings)
        turn = self.trajectory.add_turn(
            response.message,
            phase=phase,
            context=context or phase,
            input=messages,
            tokens=response.tokens,
            usage=response.usage,
            duration_s=time.perf_counter() - start,
        )
        self.events.append(ModelTurn(turn))
        return response.message

    def record(self, key: RecordKey[R] | str, value: Any) -> None:
        """Store data about the run on its trajectory (what was retrieved, chosen, ...).

        The framework's records go under their `RecordKey` (`run.record(SKILLS, SkillsRecord(...))`,
        validated by type); another extension's own record under its own name, as JSON-able data.
        """
        if isinstance(key, RecordKey):
            self.trajectory.records.set(key, value)
            return
        if key in _FRAMEWORK_KEYS:
            raise ValueError(f"{key!r} is a framework record: write it with agentkit.records.{key.upper()}")
        self.trajectory.extras[key] = value

    def drain_events(self) -> list[Event]:
        """The events added since the last drain (the agent yields them), leaving none behind."""
        out, self.events = self.events, []
        return out


@runtime_checkable
class Extension(Protocol):
    """Plugs into every run: `before_run` may add context, `after_run` may learn from the outcome.

    An extension may also be a `Chooser` (define `choose`) to pick among the runs of
    `Agent(..., samples=n)` (test-time scaling).
    """

    name: str

    def before_run(self, run: RunContext) -> None:
        """Before the loop: may add context and call the model (each call a recorded turn)."""
        ...

    def after_run(self, run: RunContext) -> None:
        """After the loop, with the outcome known: may learn from the trajectory."""
        ...


@runtime_checkable
class Chooser(Protocol):
    """Picks one of the runs of `Agent(..., samples=n)` (the mistake notebook steers away from known
    anti-patterns); the first extension that is a `Chooser` decides."""

    def choose(self, results: Sequence[RunResult]) -> int:
        """The index of the preferred run in `results`."""
        ...


@runtime_checkable
class Guard(Protocol):
    """Reviews each reply's tool calls before they run (learned pacing is one); the first guard that
    declines a reply decides."""

    def review(self, run: RunContext, reply: Message) -> str | None:
        """None lets the calls run; a reason declines the whole reply: none of its calls run, each gets
        "Not run: <reason>" back, and the next reply must call the agent's finishing tool when it has one."""
        ...


@runtime_checkable
class Check(Protocol):
    """Looks at a call of a finishing tool before it runs and may fix it (a guard never declines one); the
    first check that fixes a call decides."""

    def check(self, run: RunContext, call: ToolCall) -> ToolCall | None:
        """None runs `call` as it is; a call (with `call`'s id) runs instead. The trajectory keeps the model's
        own call: a check records what it changed (`run.record`)."""
        ...


@runtime_checkable
class Advisor(Protocol):
    """Adds to what a failed tool call gets back (learned repairs are one); every advisor's text is added."""

    def advise(self, run: RunContext, call: ToolCall, error: str) -> str | None:
        """Text to append to the error `call` got back, or None."""
        ...


@runtime_checkable
class Planner(Protocol):
    """Decides what happens before the act loop (react: nothing; map-then-act: explore and map)."""

    name: str

    def prepare(self, run: RunContext) -> None:
        """Before the act loop: explore, map, add context (or nothing)."""
        ...


class ReactPlanner:
    """Plain ReAct: no planning before the loop."""

    name = "react"

    def prepare(self, run: RunContext) -> None:
        """Nothing: ReAct plans inside the loop."""
        return None


class Instructions:
    """The simplest extension: adds fixed text to every run and counts the runs it has seen."""

    def __init__(self, text: str, title: str = "Instructions", name: str = "instructions") -> None:
        self.text, self.title, self.name = text, title, name
        self.seen: list[str] = []

    def before_run(self, run: RunContext) -> None:
        """Add the text to the system prompt and record that it was shown."""
        run.add_context(self.name, self.title, self.text)
        run.record(self.name, {"shown": True})

    def after_run(self, run: RunContext) -> None:
        """Count the run."""
        self.seen.append(run.trajectory.id)
