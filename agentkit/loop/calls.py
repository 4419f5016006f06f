"""Running one reply's calls for the act loop: approved ones run (agents' first, one by one, then the others in
parallel), denied ones get their denial, a call that waits for another's result is not run
(`agentkit.loop.grounding`), a typed output's `final_result` call is checked, and what the calls
mean for the loop comes back as a `CallsEnded`.

    calls = ReplyCalls(tools, runner, checkpoints, output)
    ended = yield from calls.run(reply, decisions, run, hooks, trace, streaming)   # inside the loop's generator
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentkit.events import Event, ToolFinished, ToolStarted
from agentkit.loop.output import FINAL_RESULT_TOOL, OutputSpec
from agentkit.messages import Message, ToolCall
from agentkit.results import RunResult
from agentkit.runs.approval import Decision, denial_message
from agentkit.runs.delegation import AgentTool, decided_earlier, run_with_agents
from agentkit.runs.durable import Checkpoints
from agentkit.runs.handoffs import HandoffTool
from agentkit.tools import Tool, ToolOutcome, ToolRunner
from agentkit.trajectory import Trajectory

if TYPE_CHECKING:
    from agentkit.loop.extensions import RunContext
    from agentkit.loop.hooks import Hooks
    from agentkit.loop.state import LoopState
    from agentkit.tracing import RunSpans

APPROVED = Decision(True)
"""The decision on a call that needed none: it runs."""


@dataclass
class CallsEnded:
    """What running one reply's calls means for the loop."""

    typed: list[Any] = field(default_factory=list)  # accepted `final_result` values
    typed_rejected: bool = False
    final_output: str | None = None  # the output of a `final=True` tool
    pending: list[ToolCall] = field(default_factory=list)  # calls an agent called as a tool waits on
    handoff: RunResult | None = None  # the run of the agent the conversation was handed to

    def apply(self, state: LoopState, output: OutputSpec | None, output_retries: int) -> None:
        """What the calls mean for the run: a typed output, a `final=True` tool's output or a handoff ends it, an
        agent call waiting for approval pauses it; a rejected typed output counts against `output_retries`."""
        if self.pending:
            state.pending, state.stop_reason = self.pending, "paused"
        elif self.handoff is not None:  # the answer, output and end are those of the agent handed to
            handed = self.handoff
            state.answer, state.output, state.stop_reason = handed.answer, handed.output, handed.stop_reason
        elif self.typed and output is not None:
            state.output = self.typed[0]
            state.answer, state.stop_reason = output.dump(state.output), "final"
        elif self.final_output is not None:
            state.answer, state.stop_reason = self.final_output, "final"
            state.output = state.answer if output is None else None
        elif self.typed_rejected:
            state.reject_output(output_retries)


class ReplyCalls:
    """How an agent runs a reply's calls: its tools, the runner of their threads, the checkpoints of its durable
    runs (through which each result is saved), its typed output, if any, and whether a later call of a reply
    with a number found nowhere waits (`wait_for_results`)."""

    def __init__(self, tools: Mapping[str, Tool], runner: ToolRunner, checkpoints: Checkpoints,
                 output: OutputSpec | None, wait_for_results: bool = False) -> None:
        self.tools, self.runner, self.checkpoints, self.output = tools, runner, checkpoints, output
        self.wait_for_results = wait_for_results
        self.final_name = FINAL_RESULT_TOOL if output is not None else None
        self.delegates = frozenset(n for n, t in tools.items() if isinstance(t, AgentTool))

    def run(self, reply: Message, decisions: Mapping[str, Decision], run: RunContext, hooks: Hooks,
            trace: RunSpans | None, streaming: bool = False) -> Generator[Event, None, CallsEnded | None]:
        """Run a reply's calls (not denied ones, nor ones that wait for another's result), append the
        observations in the reply's order (a failed call's with what `advise` hooks add); says what ends the
        run or counts as a typed-output attempt (None: nothing, the loop goes on). Calls of agents run
        first, one by one (`agentkit.runs.delegation`); one that pauses for approval pauses the run before
        any other call of the reply has run."""
        trajectory = run.trajectory
        calls = reply.tool_calls
        final = self.final_name
        if decisions and self.delegates:  # resumed after an agent call paused: the reply's decisions still stand
            decisions = {**decided_earlier(trajectory, calls), **decisions}
        waiting = (run.grounding.waiting(reply, trajectory.messages)
                   if self.wait_for_results and not decisions else {})  # a decided reply runs as decided
        plain = not decisions and final is None and not waiting  # every call runs
        to_run = calls if plain else [c for c in calls if c.name != final and c.id not in waiting and
                                      (not decisions or decisions.get(c.id, APPROVED).approved)]
        for call in calls:
            yield ToolStarted(call)
        spans = [trace.start_tool_call(c, self._description(c.name)) for c in to_run] if trace else None
        if self.delegates and any(c.name in self.delegates for c in to_run):
            ran = yield from run_with_agents(self.tools, to_run, decisions, trajectory, self.plain_runner(trajectory),
                                             streaming=streaming, logprobs=run.settings.logprobs,
                                             checkpoint=self.checkpoints.get(trajectory))
            if ran.pending:
                for span, start in spans or ():
                    trace.end_tool_call(span, start, ToolOutcome("paused: an agent waits for approval"))  # type: ignore[union-attr]
                return CallsEnded(pending=ran.pending)
            outcomes = ran.outcomes
        else:
            outcomes = self.plain_runner(trajectory)(to_run)  # a durable run saves each result
        if spans is not None:
            for (span, start), outcome in zip(spans, outcomes, strict=True):
                trace.end_tool_call(span, start, outcome)  # type: ignore[union-attr]
        ended: CallsEnded | None = None
        k = 0  # the next of `outcomes`, which follow `to_run`, a subsequence of `calls`
        for call in calls:
            duration = 0.0
            if call.name == final:
                observation, value = self.typed_call(call, trajectory)
                ended = ended or CallsEnded()
                if observation.is_error:
                    ended.typed_rejected = True
                else:
                    ended.typed.append(value)
            elif call.id in waiting:
                observation = Message.tool(call, waiting[call.id], is_error=True)
            elif plain or decisions.get(call.id, APPROVED).approved:
                outcome = outcomes[k]
                k += 1
                content = outcome.content
                if outcome.is_error:
                    content = hooks.advise(run, call, content)
                observation = Message.tool(call, content, is_error=outcome.is_error)
                duration = outcome.duration_s
                tool = self.tools.get(call.name)
                if tool is not None and tool.final and not outcome.is_error:
                    ended = ended or CallsEnded()
                    ended.final_output = outcome.content
                elif isinstance(tool, HandoffTool) and isinstance(outcome.value, RunResult):
                    ended = ended or CallsEnded()
                    ended.handoff = outcome.value
            else:
                observation = denial_message(call, decisions[call.id].reason)
            trajectory.messages.append(observation)
            yield ToolFinished(call, observation, duration)
        return ended

    def plain_runner(self, trajectory: Trajectory) -> Callable[[Sequence[ToolCall]], list[ToolOutcome]]:
        """What runs a reply's calls that are not agents' (through a durable run's checkpoint)."""

        def run(batch: Sequence[ToolCall]) -> list[ToolOutcome]:
            runner = self.checkpoints.runner(trajectory, batch, self.runner)
            return runner.run_many([(self.tools.get(c.name), c.name, c.arguments) for c in batch])

        return run

    def typed_call(self, call: ToolCall, trajectory: Trajectory) -> tuple[Message, Any]:
        """Check a `final_result` call: the observation for the model, and the typed value if it passed."""
        assert self.output is not None
        passed, value, error = self.output.check_call(call.arguments, trajectory)
        return (Message.tool(call, "Final result accepted."), value) if passed else \
            (Message.tool(call, error, is_error=True), None)

    def _description(self, name: str) -> str | None:
        tool = self.tools.get(name)
        return tool.description if tool is not None else None
