"""Agents as tools: `agent.as_tool(name, description)` is a tool another agent can call.

    explorer = Agent(model, tools=[list_tables, describe_table], name="explorer")
    answerer = Agent(model, tools=[explorer.as_tool("explore", "Find the tables a question needs."), run_query])

Called by an agentkit `Agent`, the tool is run by the calling agent's loop itself (not on the tool runner), so
that the inner run is part of the outer one:

- **events**: every event of the inner run streams through the outer run as an
  `InnerEvent(agent, call_id, event)`, as it happens;
- **record**: the inner run is a child trajectory of the outer one (`Trajectory.children`, with `parent_id` and
  `parent_call_id`), with its own turns and token ids; it is logged with the outer run (in the outer agent's
  `log`), and its usage and cost are added to the outer run's; when the outer run asks for log-probs (a logged
  or trained run), so does the inner one, on a model that returns token ids (vLLM), so it is training data too;
- **answer**: the observation is the inner run's answer (its typed output as JSON when the inner agent has an
  `output_type`), cut to the tool's `max_output_chars`; a run that stops without an answer, raises, or passes
  `timeout_s` is an error observation the outer model can act on;
- **approvals**: when a call of the inner run needs approval, the outer run pauses with the inner calls as its
  pending calls; `resume` with a decision for each continues the inner run where it stopped;
- **order**: the agent calls of one reply run one after another, before the reply's other calls (which run in
  parallel, as always).

`timeout_s` is a hard limit: the inner run goes on a worker thread and the outer run stops waiting when it has
passed; the inner run itself is stopped at its next event. Without a limit the inner run runs in the caller's
thread. Called directly (outside an agent's loop, or by another framework), the tool runs the inner agent to the
end and returns its answer (its typed output); a pause for approval is an error there.
"""

from __future__ import annotations

import copy
import queue
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel

from agentkit.events import Event, InnerEvent, RunFinished
from agentkit.messages import Message, ToolCall, Usage
from agentkit.results import RunResult
from agentkit.runs.approval import Decision, RunState, resolve_decisions, waiting_call_ids
from agentkit.runs.durable import INTERRUPTED, Checkpoint, RunStore, UnknownRunError, rerunnable, result_of
from agentkit.tools import (
    DEFAULT_MAX_OUTPUT_CHARS,
    MAX_CALLS_PER_REPLY,
    Tool,
    ToolDefinitionError,
    ToolOutcome,
    ToolRunner,
    describe_exception,
    render_output,
)
from agentkit.trajectory import Trajectory

if TYPE_CHECKING:
    from agentkit.loop.extensions import Planner
    from agentkit.loop.output import OutputSpec
    from agentkit.models.protocol import Model
    from agentkit.results import RewardFn


class Delegate(Protocol):
    """What a child run needs of the agent that runs it; an `agentkit.Agent` is one."""

    name: str
    model: Model
    planner: Planner
    tools: dict[str, Tool]
    output_type: Any
    _output: OutputSpec | None

    def run(self, task: str, **options: Any) -> RunResult:
        """Run one task to the end."""
        ...

    def _execute(self, trajectory: Trajectory, *, streaming: bool, reward_fn: RewardFn | None,
                 history: Sequence[Message] = (), context: Mapping[str, str] | None = None,
                 resume: tuple[list[ToolCall], dict[str, Decision]] | None = None,
                 saved: RunState | None = None, store: RunStore | None = None) -> Generator[Event, None, None]:
        ...


@dataclass
class ChildRun:
    """How a child run starts: its trajectory (its task included), the conversation before the task, and
    titled sections for its system prompt."""

    trajectory: Trajectory
    history: list[Message] = field(default_factory=list)
    context: dict[str, str] = field(default_factory=dict)


class AgentTool(Tool):
    """A tool that runs an agent (see the module docstring); made by `Agent.as_tool`.

    The tool takes one argument, `request` (the text the inner agent gets as its task), or the fields of
    `input_type`, a pydantic model (the inner agent gets them as JSON). It is read-only when every tool of the
    inner agent is.
    """

    relation: ClassVar[Literal["tool", "handoff"]] = "tool"

    def __init__(self, agent: Delegate, name: str, description: str, *, timeout_s: float | None = None,
                 input_type: type[BaseModel] | None = None,
                 max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> None:
        if input_type is not None and not (isinstance(input_type, type) and issubclass(input_type, BaseModel)):
            raise ToolDefinitionError(f"tool {name!r}: input_type must be a pydantic model class")
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError(f"tool {name!r}: timeout_s must be positive (None: no limit)")
        self.agent = agent
        self.input_type = input_type

        def run(request: str) -> Any:
            return self._run_alone(self.task({"request": request}))

        def run_fields(**fields: Any) -> Any:
            return self._run_alone(self.task(fields))

        read_only = all(t.read_only for t in agent.tools.values())
        if input_type is None:
            super().__init__(run, name=name, description=description, read_only=read_only, timeout_s=timeout_s,
                             max_output_chars=max_output_chars)
        else:
            super().__init__(run_fields, name=name, description=description, read_only=read_only,
                             timeout_s=timeout_s, max_output_chars=max_output_chars, parameters={})
            self.args_model, self.parameters = input_type, None  # validated (and described) by the model class

    def task(self, arguments: Mapping[str, Any]) -> str:
        """The inner agent's task for validated arguments: the request, or the input's fields as JSON."""
        if self.input_type is None:
            return str(arguments["request"])
        return self.input_type.model_validate(dict(arguments)).model_dump_json()

    def start(self, trajectory: Trajectory, call: ToolCall, arguments: Mapping[str, Any]) -> ChildRun:
        """The child run that `call` (of the run `trajectory`, with validated `arguments`) starts."""
        return ChildRun(child_trajectory(self.agent, self.task(arguments), trajectory, call, self.relation))

    def _run_alone(self, task: str) -> Any:
        """The tool called outside an agent's loop: run the agent to the end; its output, or raise."""
        result = self.agent.run(task)
        if result.stop_reason == "paused":
            raise RuntimeError(f"agent {self.agent.name} paused for approval of "
                               f"{', '.join(c.name for c in result.pending)}; call it from an agentkit Agent "
                               "to surface approvals")
        if result.answer is None:
            raise RuntimeError(f"agent {self.agent.name} stopped without an answer ({result.stop_reason})")
        return result.output if self.agent.output_type is not None else result.answer


def child_trajectory(agent: Delegate, task: str, parent: Trajectory, call: ToolCall,
                     relation: Literal["tool", "handoff"], task_id: str | None = None) -> Trajectory:
    """A new trajectory for `agent`'s run on `task`, started by `call` of the run `parent`."""
    return Trajectory(task=task, task_id=task_id, model=getattr(agent.model, "name", type(agent.model).__name__),
                      planner=agent.planner.name, agent=agent.name, parent_id=parent.id, parent_call_id=call.id,
                      relation=relation)


@dataclass
class AgentCalls:
    """What running a reply's calls with agent calls among them gave: the outcomes in the calls' order, or, when
    an agent's run paused, the calls it waits on (`pending`; the reply's other calls have not run then)."""

    outcomes: list[ToolOutcome] = field(default_factory=list)
    pending: list[ToolCall] = field(default_factory=list)


def run_with_agents(tools: Mapping[str, Tool], calls: Sequence[ToolCall], decisions: Mapping[str, Decision],
                    trajectory: Trajectory, run_plain: Callable[[Sequence[ToolCall]], list[ToolOutcome]], *,
                    streaming: bool, logprobs: bool = False,
                    checkpoint: Checkpoint | None = None) -> Generator[Event, None, AgentCalls]:
    """Run `calls` (those of one reply that are to run, in its order) of the run `trajectory`: the agent calls one
    after another, their events streamed as `InnerEvent`s, then the others by `run_plain` (in parallel). A run
    resumed after approval continues the agent run that paused (`decisions` decide its calls) and takes the
    results of those that had finished. Only the first hand-over of a reply happens. `logprobs`: the run asks for
    log-probs, and so do the agent runs it starts. A durable run's `checkpoint` records each agent call as any
    call (see `run_agent_call`)."""
    outcomes: list[ToolOutcome | None] = [None] * len(calls)
    handed_to: str | None = None
    children = _children_of_reply(trajectory, {c.id for c in calls}) if decisions or checkpoint else {}
    for i, call in enumerate(calls):
        tool = tools.get(call.name)
        if not isinstance(tool, AgentTool):
            continue
        if tool.relation == "handoff" and handed_to is not None:
            outcomes[i] = ToolOutcome(f"Not handed over: this reply already handed the conversation to "
                                      f"{handed_to}.", is_error=True)
            continue
        done = yield from run_agent_call(tool, call, trajectory, decisions, children.get(call.id),
                                         streaming=streaming, logprobs=logprobs, checkpoint=checkpoint)
        if isinstance(done, list):
            return AgentCalls(pending=done)
        outcomes[i] = done
        if tool.relation == "handoff" and done.value is not None:
            handed_to = tool.agent.name
    rest = [i for i, outcome in enumerate(outcomes) if outcome is None]
    ran = run_plain([calls[i] for i in rest]) if rest else []
    for i, outcome in zip(rest, ran, strict=True):
        outcomes[i] = outcome
    return AgentCalls(outcomes=[o for o in outcomes if o is not None])


def run_agent_call(tool: AgentTool, call: ToolCall, trajectory: Trajectory, decisions: Mapping[str, Decision],
                   earlier: Trajectory | None = None, *, streaming: bool, logprobs: bool = False,
                   checkpoint: Checkpoint | None = None) -> Generator[Event, None, ToolOutcome | list[ToolCall]]:
    """Run one agent call of the run `trajectory` as its child run (or continue `earlier`, the run the call
    started before the reply paused); the outcome for the model (its `value` the child's `RunResult`, None when
    the run failed or passed its time limit), or the calls the child waits on. `logprobs`: the calling run asks for
    log-probs, so the child run does too (`_recording`).

    In a durable run (`checkpoint`) the call is saved in flight before it starts and with its observation when it
    returns, and the child run is durable too, in the same store under its own id (its trajectory's). A resumed
    run takes a saved observation as the call's result; a call that was in flight continues its child run from
    the child's last save (its finished calls are not run again, see `agentkit.runs.durable`), takes the child's
    result if it had finished, or starts it when it had not saved yet (nothing of it has run then)."""
    if checkpoint is not None:
        if (saved := checkpoint.finished.get(call.id)) is not None:  # it returned before the process died
            value = result_of(earlier, tool.agent._output) if earlier is not None else None
            return ToolOutcome(saved.content, is_error=saved.is_error, value=value)
        if call.id in checkpoint.interrupted:
            resumed = _saved_child(checkpoint, earlier)
            if isinstance(resumed, RunState) and resumed.status != "running":  # it ended, its caller had not saved
                attach(trajectory, resumed.trajectory)
                if resumed.status == "paused":
                    return resumed.pending
                done: ToolOutcome | list[ToolCall] = _outcome(tool, result_of(resumed.trajectory,
                                                                              tool.agent._output), 0.0)
            elif resumed == "unknown" and not rerunnable(tool, call.arguments):
                done = ToolOutcome(INTERRUPTED, is_error=True)
            else:
                done = yield from _run_child(tool, call, trajectory, decisions, None, streaming=streaming,
                                             logprobs=logprobs, checkpoint=checkpoint,
                                             saved=resumed if isinstance(resumed, RunState) else None)
            if isinstance(done, ToolOutcome):
                checkpoint.end(call, done)
            return done
    done = yield from _run_child(tool, call, trajectory, decisions, earlier, streaming=streaming, logprobs=logprobs,
                                 checkpoint=checkpoint)
    if checkpoint is not None and isinstance(done, ToolOutcome):
        checkpoint.end(call, done)
    return done


def _saved_child(checkpoint: Checkpoint, child: Trajectory | None) -> RunState | Literal["none", "unknown"]:
    """What the store says of an interrupted agent call's child run (`child`, as its caller last saved it): its
    last state; "none" when it never saved (so nothing of it ran); "unknown" when there is no store to ask, or its
    state cannot be read."""
    if checkpoint.store is None or child is None:
        return "unknown" if checkpoint.store is None else "none"
    try:
        return checkpoint.store.load(child.id)
    except UnknownRunError:
        return "none"
    except ValueError:
        return "unknown"


def _run_child(tool: AgentTool, call: ToolCall, trajectory: Trajectory, decisions: Mapping[str, Decision],
               earlier: Trajectory | None, *, streaming: bool, logprobs: bool, checkpoint: Checkpoint | None,
               saved: RunState | None = None) -> Generator[Event, None, ToolOutcome | list[ToolCall]]:
    """Run (start, continue after approval, or resume from `saved`) the child run of an agent call."""
    start = time.perf_counter()
    agent = _recording(tool.agent) if logprobs else tool.agent
    store = checkpoint.store if checkpoint is not None else None
    if earlier is not None and earlier.stop_reason in ("timeout", "error"):  # it failed before the reply paused
        return ToolOutcome(f"Agent {tool.agent.name} did not answer ({earlier.stop_reason}).", is_error=True)
    if earlier is not None and earlier.stop_reason != "paused":  # it answered before another call paused the reply
        return _outcome(tool, result_of(earlier, tool.agent._output), 0.0)
    if saved is not None:  # its process died while it ran: on from its last save
        child = saved.trajectory.model_copy(deep=True)
        events = agent._execute(child, streaming=streaming, reward_fn=None, saved=saved, store=store)
    elif earlier is not None:  # it paused: continue it with the decisions on the calls it waits on
        waiting = waiting_call_ids(earlier)
        pending = [c for c in _calls_of(earlier) if c.id in waiting and c.id in decisions]
        state = RunState(trajectory=earlier, pending=pending)
        state.check()
        chosen = resolve_decisions(state, {c.id: decisions[c.id] for c in pending})
        child = earlier.model_copy(deep=True)
        events = agent._execute(child, streaming=streaming, reward_fn=None, resume=(pending, chosen), store=store)
    else:
        prepared = ToolRunner._prepare(tool, call.name, call.arguments)
        if isinstance(prepared, ToolOutcome):  # invalid arguments: the model is told, nothing runs
            return prepared
        begun = tool.start(trajectory, call, prepared[1])
        child = begun.trajectory
        if checkpoint is not None:  # the caller's save names the child run, to find it by on resume
            attach(trajectory, child.model_copy(deep=True))
        events = agent._execute(child, streaming=streaming, reward_fn=None, history=begun.history,
                                context=begun.context, store=store)
    if checkpoint is not None:
        checkpoint.begin(call)
    finished: list[RunResult] = []

    def wrapped() -> Generator[Event, None, None]:
        for event in events:
            if isinstance(event, RunFinished):
                finished.append(event.result)
            yield InnerEvent(tool.agent.name, call.id, event)

    try:
        if tool.timeout_s is None:
            yield from wrapped()
        elif not (yield from _on_worker(wrapped(), tool.timeout_s)):
            attach(trajectory, _snapshot(child, "timeout"))
            return ToolOutcome(f"Agent {tool.agent.name} did not answer within {tool.timeout_s:g} s.", is_error=True,
                               duration_s=time.perf_counter() - start)
    except Exception as exc:  # the model can act on a failed agent as on a failed tool
        attach(trajectory, _snapshot(child, "error"))
        return ToolOutcome(f"Agent {tool.agent.name} raised {describe_exception(exc)}", is_error=True,
                           duration_s=time.perf_counter() - start)
    result = finished[-1]
    attach(trajectory, result.trajectory)
    if result.stop_reason == "paused":
        return result.pending
    return _outcome(tool, result, time.perf_counter() - start)


def _recording(agent: Delegate) -> Delegate:
    """The agent that runs a child of a run that asks for log-probs: itself, or, when its model returns token ids
    (vLLM) and its settings do not ask for them, a copy that does (its run is logged with its caller's, as
    training data: without token ids `credit_nested` could not train it), as `Agent` does for a logged run."""
    settings = getattr(agent, "settings", None)
    if settings is None or settings.logprobs or not getattr(agent.model, "token_ids", False):
        return agent
    other = copy.copy(agent)
    other.settings = replace(settings, logprobs=True)  # type: ignore[attr-defined]
    return other


def _outcome(tool: AgentTool, result: RunResult, duration_s: float) -> ToolOutcome:
    if result.answer is None:
        return ToolOutcome(f"Agent {tool.agent.name} stopped without an answer ({result.stop_reason}).",
                           is_error=True, duration_s=duration_s, value=result)
    return ToolOutcome(render_output(result.answer, tool.max_output_chars), duration_s=duration_s, value=result)


def attach(parent: Trajectory, child: Trajectory) -> None:
    """Put `child` among `parent`'s children (in place of an earlier state of the same run, which is among the
    last: those of the reply being run) and count its usage in the parent's."""
    children = parent.children
    for i in range(len(children) - 1, max(-1, len(children) - 1 - MAX_CALLS_PER_REPLY), -1):
        if children[i].parent_call_id == child.parent_call_id:
            parent.usage = _less(parent.usage + child.usage, children[i].usage)
            children[i] = child
            return
    children.append(child)
    parent.usage = parent.usage + child.usage


def _less(usage: Usage, part: Usage) -> Usage:
    """`usage` without `part` (counted in it before)."""
    cost = None if usage.cost_usd is None else usage.cost_usd - (part.cost_usd or 0.0)
    return Usage(input_tokens=usage.input_tokens - part.input_tokens, output_tokens=usage.output_tokens
                 - part.output_tokens, calls=usage.calls - part.calls, cost_usd=cost)


def _children_of_reply(trajectory: Trajectory, call_ids: set[str]) -> dict[str, Trajectory]:
    """The child runs the calls `call_ids` of the reply being run started (the last children), by call id."""
    found: dict[str, Trajectory] = {}
    for child in reversed(trajectory.children):
        if child.parent_call_id not in call_ids:
            break
        found.setdefault(child.parent_call_id, child)
    return found


def decided_earlier(trajectory: Trajectory, calls: Sequence[ToolCall]) -> dict[str, Decision]:
    """The decisions already recorded for `calls` (a reply resumed a second time, after one of its agent calls
    paused, keeps what was decided on its own calls the first time)."""
    ids = {c.id for c in calls}
    return {a.call_id: Decision(a.approved, a.reason) for a in trajectory.approvals if a.call_id in ids}


def _calls_of(trajectory: Trajectory) -> list[ToolCall]:
    """The calls a paused run may wait on (see `waiting_call_ids`), as calls."""
    last = trajectory.messages[-1] if trajectory.messages else None
    if last is None or last.role != "assistant":
        return []
    calls = list(last.tool_calls)
    for child in trajectory.children:
        if child.stop_reason == "paused":
            calls += _calls_of(child)
    return calls


def _snapshot(child: Trajectory, stop_reason: str) -> Trajectory:
    """A copy of a child run that did not finish, stopped by `stop_reason` (it may still be going on in its
    thread: a copy that meets a change is made again)."""
    for _ in range(3):
        try:
            copy = child.model_copy(deep=True)
            break
        except RuntimeError:  # changed while copied
            continue
    else:
        copy = child.model_copy()
    copy.stop_reason = stop_reason
    return copy


class _Raised:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_END = object()


def _on_worker(events: Generator[Event, None, None], timeout_s: float) -> Generator[Event, None, bool]:
    """Yield `events`, produced on a worker thread, until they end (True) or `timeout_s` has passed (False: the
    producer is stopped at its next event). What the producer raises is raised here."""
    items: queue.SimpleQueue[Any] = queue.SimpleQueue()
    stop = threading.Event()

    def work() -> None:
        try:
            for event in events:
                items.put(event)
                if stop.is_set():
                    events.close()
                    break
        except BaseException as exc:  # handed to the consumer
            items.put(_Raised(exc))
        finally:
            items.put(_END)

    threading.Thread(target=work, name="agentkit-agent", daemon=True).start()
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                item = items.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return False
            if item is _END:
                return True
            if isinstance(item, _Raised):
                raise item.exc
            yield item
    finally:
        stop.set()
