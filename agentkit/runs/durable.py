"""Durable runs: a run checkpointed as it goes survives the death of its process.

`Agent(..., store=DIR)` saves each run's `RunState` (the JSON of `agentkit.runs.approval`, under the run's id, its
trajectory's id) to a `RunStore`, atomically (`DirectoryStore`: a temporary file, fsync, rename):

- before every model call: the run so far, with `status` "running";
- before a reply's calls run: the calls handed to their tools, as `in_flight`;
- as each call returns: its observation, in `finished` (it is no longer in flight);
- when the run pauses for approval ("paused") and when it ends ("finished", after it is scored and logged).

An agent called as a tool (`agentkit.runs.delegation`, handoffs too) is a call like any other here: saved in flight
before it starts and with its observation when it returns; its own run is durable as well, in the same store
under its id (`Trajectory.parent_id` names the caller's run). Resuming the caller continues an agent call that
was in flight from that run's last save, so no call of it that finished runs again either; one that had not
saved yet starts again (nothing of it ran). A run of an agent call is resumed through its caller's run only.

`agent.resume(run_id)` continues a run from its last state in a fresh process, with an agent built the same way:

- a call whose observation was saved is not run again: the saved observation is its result;
- a call that was in flight may or may not have completed, so it is not run again: the model gets
  `INTERRUPTED` as its observation, an error, and decides what to do (check, or call again). A call of an
  `idempotent=True` or `read_only=True` tool is run again instead, as is one that cannot have run (an unknown
  tool, arguments that fail validation);
- calls of the last reply that had not started run as usual, and the loop goes on with what it remembered
  between steps (`LoopRecord`);
- a finished run is not run again: resuming it returns its result.

A model call in progress at the crash is made again (model calls have no effects; its tokens are spent twice).
One process at a time may run a given run id. A run is durable from its first save, made once its prompt is
built (after the extensions' `before_run` and the planner), before the act loop's first model call. The store
is trusted like code: `agentkit runs resume` imports the modules the run's tools came from (`AgentRecord`).
"""

from __future__ import annotations

import copy
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import ValidationError

from agentkit.events import Event, RunFinished
from agentkit.loop.repeats import NOT_RUN
from agentkit.messages import Message, ToolCall
from agentkit.results import RunResult
from agentkit.runs.approval import AgentRecord, Decision, LoopRecord, RunState, RunStatus
from agentkit.tools import Tool, ToolOutcome, failure_text, render_output
from agentkit.tools.limits import ToolTimeout
from agentkit.trajectory import Trajectory

if TYPE_CHECKING:
    from agentkit.loop.output import OutputSpec
    from agentkit.loop.state import LoopState

log = logging.getLogger(__name__)

INTERRUPTED = (NOT_RUN + "this call was started before the run was interrupted (its process stopped), and it is "
               "not known whether it completed, so it was not run again. Check whether it took effect before "
               "calling it again.")
"""The observation of a call that was in flight when its run's process died (a tool neither idempotent nor
read-only). It begins with `agentkit.loop.repeats.NOT_RUN`: calling it again is not a repeat of a failed call."""

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


class UnknownRunError(LookupError):
    """The store holds no run of that id."""


@runtime_checkable
class RunStore(Protocol):
    """Where durable runs' states are kept, by run id. `DirectoryStore` keeps them as files; anything with these
    three methods (a database, an object store) can be passed as `Agent(store=...)`. `save` must be atomic: a
    reader sees the previous state or the new one, never a mix."""

    def save(self, state: RunState) -> None:
        """Store `state` under `state.run_id`, replacing the one there."""

    def load(self, run_id: str) -> RunState:
        """The last state saved under `run_id`; raises `UnknownRunError` when there is none."""

    def run_ids(self) -> list[str]:
        """The ids of the runs stored, latest saved first."""


class DirectoryStore:
    """A `RunStore` in a directory: one `RUN_ID.json` file per run, each save written to a temporary file,
    fsync'd and renamed over the old one (then the directory fsync'd), so a kill at any moment leaves the
    previous state or the new one."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._swept: set[str] = set()

    def __repr__(self) -> str:
        return f"DirectoryStore({str(self.path)!r})"

    def file(self, run_id: str) -> Path:
        """The file of `run_id` (raises ValueError for an id that is not a plain file name)."""
        if not _RUN_ID.fullmatch(run_id):
            raise ValueError(f"not a run id: {run_id!r} (letters, digits, '_', '.', '-')")
        return self.path / f"{run_id}.json"

    def save(self, state: RunState) -> None:
        """Write `state` atomically (see the class docstring)."""
        target = self.file(state.run_id)
        self.path.mkdir(parents=True, exist_ok=True)
        if state.run_id not in self._swept:  # temporaries of earlier writers of this run, killed mid-save
            self._swept.add(state.run_id)
            for stale in self.path.glob(f".{state.run_id}.*.tmp"):
                stale.unlink(missing_ok=True)
        tmp = self.path / f".{state.run_id}.{os.getpid()}.{threading.get_ident()}.tmp"
        data = state.model_dump_json().encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        directory = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def load(self, run_id: str) -> RunState:
        """The run's last state; `UnknownRunError` when the directory has none, ValueError when it is not a
        readable run state."""
        path = self.file(run_id)
        try:
            text = path.read_bytes()
        except FileNotFoundError:
            raise UnknownRunError(f"no run {run_id} in {self.path}") from None
        try:
            return RunState.from_json(text)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def run_ids(self) -> list[str]:
        """The runs in the directory, latest saved first."""
        if not self.path.is_dir():
            return []
        files = [(p.stat().st_mtime, p.stem) for p in self.path.glob("*.json")
                 if not p.name.startswith(".") and _RUN_ID.fullmatch(p.stem)]
        return [run_id for _, run_id in sorted(files, reverse=True)]


StoreLike = RunStore | str | os.PathLike[str]
"""What `Agent(store=...)` takes: a `RunStore`, or a directory (a path, or a `file://` URL)."""


def open_store(store: StoreLike | None) -> RunStore | None:
    """The `RunStore` for `store`: a directory path or `file://` URL becomes a `DirectoryStore`; a `RunStore` is
    used as it is. Raises ValueError for a URL of another scheme (pass a `RunStore` for it)."""
    if store is None or isinstance(store, RunStore):
        return store
    text = os.fspath(store)
    scheme, sep, rest = text.partition("://")
    if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
        if scheme.lower() != "file":
            raise ValueError(f"no run store for {scheme}:// URLs: pass a directory, or an object with the methods "
                             "of agentkit.runs.durable.RunStore")
        text = rest
    return DirectoryStore(text)


@dataclass(frozen=True)
class RunSummary:
    """One line about a stored run, for listings."""

    run_id: str
    status: RunStatus
    task: str
    model: str
    steps: int
    in_flight: int
    answer: str | None
    stop_reason: str
    updated_at: float
    parent: str | None = None
    """The run whose agent call this run is (None: a run of its own)."""

    @classmethod
    def of(cls, state: RunState) -> RunSummary:
        """The summary of `state`."""
        t = state.trajectory
        return cls(run_id=state.run_id, status=state.status, task=t.task, model=t.model,
                   steps=sum(1 for turn in t.turns if turn.context == "main"), in_flight=len(state.in_flight),
                   answer=t.answer, stop_reason=t.stop_reason, updated_at=state.updated_at, parent=t.parent_id)


def summaries(store: RunStore) -> Iterator[RunSummary | tuple[str, str]]:
    """A summary of each stored run, latest first; `(run_id, error)` for one that cannot be read."""
    for run_id in store.run_ids():
        try:
            yield RunSummary.of(store.load(run_id))
        except (ValueError, UnknownRunError) as exc:
            yield run_id, str(exc)


# -- resuming -----------------------------------------------------------------------------------------


def state_of(state: RunState | RunResult | str | bytes, store: RunStore | None) -> RunState:
    """The `RunState` that `Agent.resume` was given: a state, a paused `RunResult`, a state's JSON, or the id of
    a run in `store`."""
    if isinstance(state, RunResult):
        return state.state
    if isinstance(state, RunState):
        return state
    if state.lstrip()[:1] in ("{", b"{"):
        return RunState.from_json(state)
    run_id = state.decode() if isinstance(state, bytes) else state
    if store is None:
        raise ValueError(f"{run_id[:80]!r} is not a run state's JSON, and this agent has no store to find a run of "
                         "that id in: build it with Agent(..., store=DIR)")
    return store.load(run_id)


def check_running(state: RunState) -> None:
    """Raise ValueError unless `state` is a running run whose in-flight and finished calls are its last reply's."""
    if state.status != "running":
        raise ValueError(f"the run is {state.status}, not running")
    messages = state.trajectory.messages
    if not messages:
        raise ValueError("run state is damaged: it has no messages")
    if state.in_flight or state.finished:
        last = messages[-1]
        ids = {c.id for c in last.tool_calls} if last.role == "assistant" else set()
        if any(c.id not in ids for c in state.in_flight) or any(m.tool_call_id not in ids for m in state.finished):
            raise ValueError("run state is damaged: its calls in flight are not those of its last reply")


def unanswered_reply(state: RunState) -> dict[str, Decision] | None:
    """For a running state whose last message is a reply with calls and no observations yet: the approval
    decisions on that reply's calls (empty when none needed one), with which its calls run on resume. None
    when the run resumes by asking the model."""
    last = state.trajectory.messages[-1]
    if last.role != "assistant" or not last.tool_calls:
        return None
    ids = {c.id for c in last.tool_calls}
    return {a.call_id: Decision(a.approved, a.reason) for a in state.trajectory.approvals if a.call_id in ids}


def result_of(trajectory: Trajectory, output: OutputSpec | None) -> RunResult:
    """The result of a run that ended, from its trajectory; the typed output is read back from the answer (None
    when it no longer validates)."""
    t = trajectory
    value: Any = t.answer
    if output is not None and t.answer is not None and not output.accepts_text:
        try:
            value = output.adapter.validate_json(t.answer)
        except ValidationError:
            value = None
    return RunResult(t.answer, t, output=value)


def replay(result: RunResult) -> Generator[Event, None, None]:
    """The events of resuming a finished run: its result, nothing run."""
    yield RunFinished(result)


def rerunnable(tool: Tool | None, arguments: Mapping[str, Any]) -> bool:
    """Whether a call that may have been in flight runs again on resume: its tool is idempotent or read-only,
    or the call cannot have run (an unknown tool, arguments that fail validation)."""
    if tool is None or tool.idempotent or tool.read_only:
        return True
    try:
        tool.validate(dict(arguments))
    except ValidationError:
        return True
    return False


# -- how the agent was built ---------------------------------------------------------------------------


def import_path(tool: Tool) -> str | None:
    """`module:qualname` that imports `tool` (or the function it wraps, with the defaults of `Tool`), or None
    when none does (a tool made in a function, in a script run as `__main__`, or with options on a copy)."""
    fn = tool.fn
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<locals>" in qualname or not _importable(module):
        return None
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is tool or (found is fn and tool.name == getattr(fn, "__name__", None)):
        return f"{module}:{qualname}"
    return None


def _importable(name: str) -> bool:
    """Whether the loaded module `name` would import by that name elsewhere: its file is named as the name ends
    (not a file loaded under a made-up name)."""
    file = getattr(sys.modules.get(name), "__file__", None)
    if file is None:
        return False
    path = Path(file).with_suffix("")
    return (path.parent.name if path.name == "__init__" else path.name) == name.rpartition(".")[2]


def agent_record(model: str | None, tools: Mapping[str, Tool], max_steps: int) -> AgentRecord:
    """What can be rebuilt of an agent from its model string and its tools' import paths."""
    return AgentRecord(model=model, tools={name: import_path(t) for name, t in tools.items()}, max_steps=max_steps)


# -- checkpoints ---------------------------------------------------------------------------------------


class CallRunner(Protocol):
    """What runs a reply's calls: `agentkit.tools.ToolRunner`, or a durable run's batch of them."""

    def run_many(self, calls: list[tuple[Tool | None, str, dict[str, Any]]]) -> list[ToolOutcome]:
        """Run (tool, name, arguments) triples; one outcome each, in order."""


class Checkpoint:
    """One durable run's checkpointing: what it saves when (see the module docstring), and on resume the calls
    it must not run again. Made by `Checkpoints.open`; saves nothing without a store (a state resumed from JSON
    by an agent without one still keeps its calls from running twice)."""

    def __init__(self, store: RunStore | None, trajectory: Trajectory, agent: AgentRecord | None,
                 saved: RunState | None = None) -> None:
        self.store, self.trajectory, self.agent = store, trajectory, agent
        self.in_flight: dict[str, ToolCall] = {c.id: c for c in saved.in_flight} if saved else {}
        self.finished: dict[str, Message] = {m.tool_call_id: m for m in saved.finished
                                             if m.tool_call_id is not None} if saved else {}
        self.interrupted: set[str] = set(self.in_flight)
        """Calls in flight when the process that ran them died."""
        self.loop: LoopRecord | None = saved.loop if saved else None
        """What the loop remembered when the run was saved (a resumed run's, until its loop has started)."""
        self._state: LoopState | None = None  # the loop's state, read at each save
        self._open: set[str] = set()  # calls now running whose results are still recorded
        self._lock = threading.Lock()
        self._failed: OSError | None = None  # a save from a tool's thread that failed, raised at the next one

    def _save(self, status: RunStatus, pending: Sequence[ToolCall] = ()) -> None:
        if self.store is None:
            return
        if self._failed is not None:
            failed, self._failed = self._failed, None
            raise failed
        if self._state is not None:
            state = self._state
            self.loop = LoopRecord(tool_choice=state.settings.tool_choice, told_to_finish=state.told_to_finish,
                                   repeating=state.repeating, repeated_results=state.repeated_results,
                                   last_parse_error=state.last_parse_error, loops=sorted(state.loops))
        self.store.save(RunState(trajectory=self.trajectory, pending=list(pending), status=status,
                                 in_flight=list(self.in_flight.values()), finished=list(self.finished.values()),
                                 loop=self.loop, agent=self.agent, updated_at=time.time()))

    def restore(self, state: LoopState) -> None:
        """Give a resumed run's loop state what the loop remembered when the run was saved."""
        if self.loop is not None:
            r = self.loop
            state.settings = replace(state.settings, tool_choice=r.tool_choice)
            state.told_to_finish, state.repeating, state.repeated_results = r.told_to_finish, r.repeating, \
                r.repeated_results
            state.last_parse_error, state.loops = r.last_parse_error, set(r.loops)

    def step(self, state: LoopState, *, calls_pending: bool) -> None:
        """Save the run before a step. `calls_pending`: the step runs the calls of the last reply (a resumed
        run's), whose records are kept; otherwise nothing is in flight."""
        with self._lock:
            if not calls_pending:
                self.in_flight.clear()
                self.finished.clear()
                self.interrupted.clear()
            self._state = state
            self._save("running")

    def paused(self, pending: Sequence[ToolCall]) -> None:
        """Save the run as paused for approval of `pending`."""
        with self._lock:
            self.in_flight.clear()
            self.finished.clear()
            self._save("paused", pending)

    def done(self) -> None:
        """Save the run as finished."""
        with self._lock:
            self.in_flight.clear()
            self.finished.clear()
            self._save("finished")

    def run_calls(self, inner: CallRunner, to_run: Sequence[ToolCall],
                  calls: list[tuple[Tool | None, str, dict[str, Any]]]) -> list[ToolOutcome]:
        """Run a reply's calls through `inner` (the triples of `to_run`, in order): a call with a saved result
        gets it back, one interrupted in flight gets `INTERRUPTED` unless it may run again (`rerunnable`); the
        others are saved as in flight before they start and saved with their observation as each returns."""
        if len(to_run) != len(calls):
            raise ValueError(f"{len(calls)} calls to run for {len(to_run)} tool calls")
        outcomes: dict[int, ToolOutcome] = {}
        run: list[int] = []
        for i, (call, (t, _, arguments)) in enumerate(zip(to_run, calls, strict=True)):
            if (saved := self.finished.get(call.id)) is not None:
                outcomes[i] = ToolOutcome(saved.content, is_error=saved.is_error)
            elif call.id in self.interrupted and not rerunnable(t, arguments):
                outcomes[i] = ToolOutcome(INTERRUPTED, is_error=True)
            else:
                run.append(i)
        with self._lock:
            for i in run:
                self.in_flight[to_run[i].id] = to_run[i]
                self._open.add(to_run[i].id)
            self._save("running")
        try:
            ran = inner.run_many([(self._recording(calls[i][0], to_run[i]), calls[i][1], calls[i][2]) for i in run])
        finally:
            with self._lock:
                self._open.clear()  # a tool still running past its time limit records nothing more
        outcomes.update(zip(run, ran, strict=True))
        return [outcomes[i] for i in range(len(to_run))]

    def begin(self, call: ToolCall) -> None:
        """Save `call` (an agent call, run by the loop itself) as in flight before it starts."""
        with self._lock:
            self.in_flight[call.id] = call
            self._save("running")

    def end(self, call: ToolCall, outcome: ToolOutcome) -> None:
        """Save the observation of `call` (an agent call, begun with `begin`) now that it has returned."""
        with self._lock:
            self.in_flight.pop(call.id, None)
            self.interrupted.discard(call.id)
            self.finished[call.id] = Message.tool(call, outcome.content, is_error=outcome.is_error)
            self._save("running")

    def _recording(self, tool: Tool | None, call: ToolCall) -> Tool | None:
        """A copy of `tool` whose function saves the call's observation when it returns or raises."""
        if tool is None:
            return None
        fn, limit, name = tool.fn, tool.max_output_chars, tool.name
        recording = copy.copy(tool)

        def returned(value: Any) -> Any:
            self._record(call, render_output(value, limit), False)
            return value

        def raised(exc: BaseException) -> None:
            if not isinstance(exc, ToolTimeout):  # a call past its limit is saved like one on a worker thread
                self._record(call, failure_text(name, exc), True)

        if tool.is_async:
            async def run_async(**kwargs: Any) -> Any:
                try:
                    value = await fn(**kwargs)
                except BaseException as exc:
                    raised(exc)
                    raise
                return returned(value)

            recording.fn = run_async
        else:
            def run(**kwargs: Any) -> Any:
                try:
                    value = fn(**kwargs)
                except BaseException as exc:
                    raised(exc)
                    raise
                return returned(value)

            recording.fn = run
        return recording

    def _record(self, call: ToolCall, content: str, is_error: bool) -> None:
        """Save a call's observation (from the tool's thread) while its reply's calls are running."""
        with self._lock:
            if call.id not in self._open:
                return
            self._open.discard(call.id)
            self.in_flight.pop(call.id, None)
            self.finished[call.id] = Message.tool(call, content, is_error=is_error)
            try:
                self._save("running")
            except OSError as exc:  # the run's thread raises it at its next save
                log.warning("could not save the result of %s (%s): %s", call.name, call.id, exc)
                self._failed = exc


class _Batch:
    """A reply's calls, run through a durable run's checkpoint (`Checkpoint.run_calls`)."""

    def __init__(self, checkpoint: Checkpoint, to_run: Sequence[ToolCall], inner: CallRunner) -> None:
        self.checkpoint, self.to_run, self.inner = checkpoint, to_run, inner

    def run_many(self, calls: list[tuple[Tool | None, str, dict[str, Any]]]) -> list[ToolOutcome]:
        return self.checkpoint.run_calls(self.inner, self.to_run, calls)


class Checkpoints:
    """An agent's durable runs in progress, by trajectory, and the model string it was built with."""

    def __init__(self, model: object) -> None:
        self.model = model if isinstance(model, str) else None
        self._active: dict[int, Checkpoint] = {}

    def open(self, store: RunStore | None, trajectory: Trajectory, tools: Mapping[str, Tool], max_steps: int,
             saved: RunState | None = None) -> Checkpoint | None:
        """The checkpoint of a run starting (or resuming from `saved`) on `trajectory`; None when the agent has
        no store and nothing was saved."""
        if store is None and saved is None:
            return None
        checkpoint = Checkpoint(store, trajectory, agent_record(self.model, tools, max_steps), saved)
        self._active[id(trajectory)] = checkpoint
        return checkpoint

    def get(self, trajectory: Trajectory) -> Checkpoint | None:
        """The checkpoint of the durable run on `trajectory` (None: the run is not durable)."""
        return self._active.get(id(trajectory))

    def close(self, trajectory: Trajectory) -> None:
        """The run on `trajectory` has ended (finished, paused, failed or closed)."""
        self._active.pop(id(trajectory), None)

    def runner(self, trajectory: Trajectory, to_run: Sequence[ToolCall], inner: CallRunner) -> CallRunner:
        """What runs the calls `to_run` of the run on `trajectory`: `inner`, through the run's checkpoint when
        it is durable."""
        checkpoint = self._active.get(id(trajectory))
        return inner if checkpoint is None else _Batch(checkpoint, to_run, inner)
