"""`LoopState`: everything the act loop carries from one step to the next, in one record.

The loop (`Agent._loop`) and its recovery policy (`agentkit.loop.recovery.Recovery`) read and write it; nothing
else does. A run resumed after approval starts a fresh one from its trajectory (steps and rejected typed
outputs are counted from it; the rest starts empty).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentkit.loop.repeats import CallResults
from agentkit.messages import ToolCall
from agentkit.models.protocol import GenerationSettings
from agentkit.trajectory import Trajectory


@dataclass(slots=True)
class LoopState:
    """The act loop's state between steps."""

    settings: GenerationSettings
    """The next model call's settings: the agent's, or ones that make the reply finish (`Recovery.finishing`)."""
    steps: int = 0
    """Model calls of the main conversation so far."""
    rejected: int = 0
    """Typed outputs sent back to the model as invalid."""
    stop_reason: str | None = None
    """How the run stops, once a step has decided ("final", "paused", ...); None while it goes on."""
    answer: str | None = None
    output: Any = None
    pending: list[ToolCall] = field(default_factory=list)
    """The calls that wait for approval (stop_reason "paused")."""
    results: CallResults = field(default_factory=CallResults)
    """The run's call results, to answer repeated calls from (see `agentkit.loop.repeats`)."""
    repeating: bool = False
    """The last reply with calls only repeated earlier ones."""
    repeated_results: str = ""
    """The results of the last repeated calls, one per line."""
    last_parse_error: str | None = None
    """The last reply's unreadable call, if it was one."""
    told_to_finish: bool = False
    """A reply in text was reminded to call the finishing tool."""
    questioned: bool = False
    """A reply in text was sent back for values the conversation never wrote (`Recovery.questioned`)."""
    loops: set[int] = field(default_factory=set)
    """Indexes of the messages of repeated, unreadable or declined replies and of what they got back."""

    @classmethod
    def of(cls, trajectory: Trajectory, settings: GenerationSettings) -> LoopState:
        """The state to start (or resume) a run's loop on `trajectory` with the agent's `settings`."""
        return cls(settings=settings, steps=sum(1 for t in trajectory.turns if t.context == "main"),
                   rejected=sum(1 for c in trajectory.output_checks if not c.passed))

    def reject_output(self, retries: int) -> None:
        """Count a typed output sent back to the model; past `retries` the run stops with "invalid_output"."""
        self.rejected += 1
        if self.rejected > retries:
            self.stop_reason = "invalid_output"
