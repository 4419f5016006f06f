"""The small protocol that skill libraries, mistake notebooks, learned limits and planners plug into.

Before a run an extension may add context and may call the model (each call is a recorded turn with
its own phase label); after the run, when the outcome is known, it may learn from the trajectory.
Between the two, an extension may define any of four optional hooks, which the loop calls at fixed points
(see `Extension`; `agentkit.loop.hooks` gathers them once per run): `review` a reply's calls before they run,
`check` a finishing call, `advise` on a failed call, `choose` among sampled runs.
The core knows this protocol, not the implementations (they live in agentkit.skills, agentkit.memory).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentkit.events import ContextAdded, Event, ModelTurn, PhaseStarted
from agentkit.loop.grounding import Grounding
from agentkit.messages import Message
from agentkit.models.protocol import GenerationSettings, Model, ModelResponse
from agentkit.records import RECORD_KEYS, TOOLS_OFFERED, R, RecordKey, ToolsOffered
from agentkit.tools import Tool
from agentkit.trajectory import Trajectory

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
    opening: Message | None = None
    """A first reply a planner wrote for the model (see `open_with`), or None."""
    grounding: Grounding = field(default_factory=Grounding, repr=False)
    """What the conversation has written so far, for the loop's check of calls (`agentkit.loop.grounding`)."""

    def open_with(self, reply: Message) -> None:
        """Start the act loop from `reply`, an assistant message calling read-only tools: it is put into the
        conversation and its calls run before the model is first asked (a call of the finishing tool ends the
        run there). A planner that drafts an answer in its own model call (recorded as its own turn) uses it
        to hand the draft to the loop. Raises ValueError for a reply without calls or a call of a tool that
        is unknown or not read-only."""
        if not reply.tool_calls:
            raise ValueError("an opening reply must call a tool")
        for call in reply.tool_calls:
            tool = self.tools.get(call.name)
            if tool is None or not tool.read_only:
                raise ValueError(f"an opening reply may only call read-only tools of the agent, not {call.name!r}")
        self.opening = reply

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

    An extension may also define any of these hooks; the loop calls those an extension has, in the order
    the extensions were attached:

    - `review(run, reply) -> str | None`: before a reply's calls run. None lets them run; a reason declines
      the whole reply: none of its calls run, each gets "Not run: <reason>" back, and the next reply must
      call the agent's finishing tool when it has one. A reply that calls a finishing tool is not reviewed;
      the first extension that declines decides (learned `Pacing` is one).
    - `check(run, call) -> ToolCall | None`: before a call of a finishing tool runs. None runs `call` as it
      is; a call (with `call`'s id) runs instead. The trajectory keeps the model's own call (a check records
      what it changed with `run.record`); the first extension that fixes a call decides (learned
      `ShapeChecks`).
    - `advise(run, call, error) -> str | None`: after a call failed: text appended to the error the call
      gets back; every extension's text is added (learned `Repairs`).
    - `choose(results) -> int`: with `Agent(samples=n)`, the index of the run `run` returns among the
      samples; the first extension that has it decides, else the majority answer (the mistake notebook
      steers away from known anti-patterns).
    """

    name: str

    def before_run(self, run: RunContext) -> None:
        """Before the loop: may add context and call the model (each call a recorded turn)."""
        ...

    def after_run(self, run: RunContext) -> None:
        """After the loop, with the outcome known: may learn from the trajectory."""
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
