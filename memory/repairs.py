"""Repairs: how a call that failed was put right, shown when a call fails the same way again.

A model given an error may send the same call again: the SQL the database refused comes back unchanged
until the step limit. Text shown right after the error is what such a model reads, and it copies well.
So the loop keeps, from the agent's own
runs on train tasks, each failed call next to a call that worked for the same task (the task's reference
call when the environment ships one, e.g. the gold SQL; else the call that succeeded later in a run that
solved the task), filed under the error's kind (the message with its names and quoted parts taken out:
"no such column: …", "misuse of aggregate: …"). Attached to an agent (an `Extension` with an
`advise` hook), a call that fails gets, after its error, the nearest repair of the same kind (by the words of
the task and of the call): the earlier task, the call that failed and the one that worked.

It acts only on a call that has already failed, so a run that goes well is never touched; and what it
shows is one worked pair, not a rule. Kinds of error are not particular to one database or tool set, so
repairs learned on one can act on another. Opt-in, not a default method of `agentkit learn`. Why:
docs/decisions.md#repairs

Learned by `agentkit learn --method repairs`, saved as repairs.json in the learn run's folder, attached with
that folder (`agentkit chat/eval --memory DIR`, `agentkit.memory.load_memory`) or
`Agent(..., extensions=[Repairs.load(f)])`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentkit.files import read_artefact, write_artefact
from agentkit.loop.extensions import RunContext
from agentkit.loop.repeats import NOT_RUN
from agentkit.messages import ToolCall
from agentkit.ranking import content_words, overlap
from agentkit.results import succeeded
from agentkit.trajectory import Trajectory

KIND = "agentkit.repairs"  # the saved file's format tag (kept: files written before stay readable)
VERSION = 1
ReferenceCalls = Callable[[str], Sequence[ToolCall]]
"""A task id -> the calls a correct run of that task makes (none when unknown)."""

_RAISED = re.compile(r"^Tool \S+ raised ")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_TAIL = re.compile(r":\s*\S+$")


def error_kind(error: str) -> str:
    """What kind of error a tool's error message says, with the particulars taken out: the first line,
    without the "Tool X raised" opening, its quoted parts and a one-word tail after the last colon."""
    line = _RAISED.sub("", error.strip().splitlines()[0] if error.strip() else "")
    line = _QUOTED.sub("…", line)
    return _TAIL.sub(": …", line).strip()


def _show(call_name: str, arguments: Mapping[str, Any]) -> str:
    if len(arguments) == 1:
        (value,) = arguments.values()
        return f"{call_name}: {value}" if isinstance(value, str) else f"{call_name} {json.dumps(arguments)}"
    return f"{call_name} {json.dumps(arguments, ensure_ascii=False)}"


@dataclass(frozen=True)
class Repair:
    """One failed call and a call that worked for the same task."""

    kind: str  # error_kind of the failure
    task: str  # the task's text
    task_id: str
    tool: str
    failed: dict[str, Any]
    error: str  # the error's first line, as the tool gave it
    fixed_tool: str
    fixed: dict[str, Any]
    source: str  # "reference" (the environment's) or "run" (a later call of a run that succeeded)

    def render(self) -> str:
        """The repair as the failing call is shown it."""
        return (f"An earlier task hit the same error and was fixed.\nTask: {self.task}\n"
                f"Failed: {_show(self.tool, self.failed)}\nWorked: {_show(self.fixed_tool, self.fixed)}\n"
                "Fix your call the same way.")


def _fix_from_reference(call: ToolCall, reference: Sequence[ToolCall]) -> ToolCall | None:
    """The reference call of the same tool, else one that takes the same arguments."""
    same = [c for c in reference if c.name == call.name]
    alike = [c for c in reference if set(c.arguments) == set(call.arguments)]
    found = same or alike
    return found[-1] if found else None


def repairs_of(trajectory: Trajectory, reference: Sequence[ToolCall] = (), *,
               success: Callable[[Trajectory], bool] = succeeded) -> list[Repair]:
    """The repairs one run holds: each failed call (not a refused repeat) paired with the task's reference
    call, or, in a run that succeeded, with the next call of the same tool that worked; one per kind."""
    calls: dict[str, ToolCall] = {}
    failures: list[tuple[ToolCall, str]] = []
    worked: list[ToolCall] = []
    for message in trajectory.messages:
        if message.role == "assistant":
            calls.update((c.id, c) for c in message.tool_calls)
        elif message.role == "tool" and (call := calls.get(message.tool_call_id or "")) is not None:
            if not message.is_error:
                worked.append(call)
            elif not message.content.startswith(NOT_RUN):
                failures.append((call, message.content))
    won = success(trajectory)
    out: dict[str, Repair] = {}
    for call, error in failures:
        kind = error_kind(error)
        if kind in out:
            continue
        fix, source = _fix_from_reference(call, reference), "reference"
        if fix is None and won:
            later = [c for c in worked if c.name == call.name]
            fix, source = (later[-1] if later else None), "run"
        if fix is None or fix.arguments == call.arguments:
            continue
        out[kind] = Repair(kind, trajectory.task, trajectory.task_id or "", call.name, dict(call.arguments),
                           error.strip().splitlines()[0], fix.name, dict(fix.arguments), source)
    return list(out.values())


class Repairs:
    """Learned repairs, shown after a call that fails (see the module docstring).

    Args:
        items: the repairs, as `fit` or `load` give them.
    """

    name = "repairs"

    def __init__(self, items: Iterable[Repair] = ()) -> None:
        self.items = list(items)
        # the words each repair is found by (its task's, its failed call's), read once, not per failed call
        self._words = [(content_words(r.task), content_words(json.dumps(r.failed, ensure_ascii=False)))
                       for r in self.items]

    @classmethod
    def fit(cls, trajectories: Iterable[Trajectory], reference: ReferenceCalls | None = None, *,
            success: Callable[[Trajectory], bool] = succeeded) -> Repairs:
        """Repairs from scored runs (one per task and kind of error); `reference` gives a task's correct calls
        when the environment has them (`reference_calls`)."""
        found: dict[tuple[str, str], Repair] = {}
        for trajectory in trajectories:
            ref = reference(trajectory.task_id) if reference is not None and trajectory.task_id else ()
            for repair in repairs_of(trajectory, ref, success=success):
                found.setdefault((repair.task_id or repair.task, repair.kind), repair)
        return cls(found.values())

    def nearest(self, task: str, call: ToolCall, error: str) -> Repair | None:
        """The repair of the same kind of error whose task and call read most like these (not from this task)."""
        kind = error_kind(error)
        task_words, call_words = content_words(task), content_words(json.dumps(call.arguments, ensure_ascii=False))
        scored = [(overlap(task_words, tw) + overlap(call_words, cw), i, r)
                  for i, (r, (tw, cw)) in enumerate(zip(self.items, self._words, strict=True))
                  if r.kind == kind and r.task != task]
        return max(scored, key=lambda s: (s[0], -s[1]))[2] if scored else None

    # -- files --------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the repairs as JSON (atomically)."""
        return write_artefact(path, KIND, {"version": VERSION, "repairs": [asdict(r) for r in self.items]})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Repairs:
        """Read repairs saved by `save`; a missing or malformed file is a clear error."""
        data = read_artefact(path, KIND, "repairs file", "agentkit.memory.repairs.Repairs.save", "repairs")
        try:
            return cls(Repair(**item) for item in data["repairs"])
        except TypeError as exc:
            raise ValueError(f"{path} holds a malformed repair: {exc}") from exc

    # -- the Extension protocol and its advise hook ---------------------------------------------------
    def before_run(self, run: RunContext) -> None:
        """Nothing before the run: repairs act on failed calls."""

    def after_run(self, run: RunContext) -> None:
        """Nothing after it: repairs are learned by `fit`, not run by run."""

    def advise(self, run: RunContext, call: ToolCall, error: str) -> str | None:
        """The nearest repair of this kind of error, rendered; recorded on the trajectory."""
        repair = self.nearest(run.task, call, error)
        if repair is None:
            return None
        shown = list(run.trajectory.extras.get(self.name, {}).get("shown", []))
        run.record(self.name, {"shown": [*shown, {"kind": repair.kind, "task_id": repair.task_id}]})
        return repair.render()

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        return f"Repairs({len(self.items)} repairs, {len({r.kind for r in self.items})} kinds)"
