"""Map-then-act planning: explore the environment, map the task, then act.

`Agent(..., planner="map-then-act")` runs three stages, each as model turns with its own phase label:

1. **explore** — task-agnostic probing with read-only tools only; the priors it yields are cached per
   environment identity (in memory and under `$AGENTKIT_HOME/explore/`) and reused by later tasks.
2. **map** — a typed `CognitiveMap` of the task (entities, affordances, constraints, unknowns,
   sub-goals); the model may probe read-only tools to resolve unknowns; it stops when none remain
   or the budget is spent.
3. **act** — the agent's normal loop, with priors and map in the system prompt.

Side-effecting tools are refused during exploration and mapping (the model sees why). Model output
that is not a readable map never crashes a run: the map falls back to an empty one and the failure is
recorded on the trajectory (`agentkit.records.MAP_ERROR`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agentkit.files import atomic_write
from agentkit.home import agentkit_home
from agentkit.loop.cognitive_map import Affordance, CognitiveMap, Entity, SubGoal
from agentkit.loop.extensions import ReactPlanner, RunContext
from agentkit.messages import Message
from agentkit.records import EXPLORE, MAP, MAP_ERROR, MAP_PROBES, ExploreRecord, MapError, MapProbes
from agentkit.tools import Tool, ToolRunner
from agentkit.trajectory import Trajectory

__all__ = [
    "Affordance",
    "CognitiveMap",
    "Entity",
    "ExplorationCache",
    "MapThenActPlanner",
    "ReactPlanner",
    "SubGoal",
    "environment_identity",
    "map_of",
]

# -- prompts (data, not code) ---------------------------------------------------------------------

EXPLORE_SYSTEM = """You are exploring an environment before any task is given.
Use ONLY the read-only tools to learn what exists and how it behaves: list things, look around, try
cheap observations. Do not try to solve any task. When you have learned enough, reply WITHOUT a tool
call: a short bulleted list of general facts about this environment that will help with any future
task (what exists, how things are named, which tool reveals what, pitfalls)."""

EXPLORE_START = "Explore the environment now."

EXPLORE_SUMMARY = (
    "Stop exploring now. Reply without any tool call: the general facts you learned about this environment, "
    "as a short bulleted list."
)

MAP_SYSTEM = """Before acting on a task, build a cognitive map of it. Reply with ONE JSON object and nothing else:
{"entities": [{"name": "...", "kind": "...", "notes": "..."}],
 "affordances": [{"tool": "TOOL_NAME", "applies_to": "ENTITY", "effect": "..."}],
 "constraints": ["..."],
 "unknowns": ["..."],
 "subgoals": [{"goal": "...", "tool": "TOOL_NAME"}]}
entities: the things the task involves. affordances: which tool applies to what. constraints: rules the
result must respect. unknowns: facts you still need (leave empty when none). subgoals: the ordered steps
that finish the task. If something is unknown you may first call a read-only tool to find out, then reply
with the map. Do not solve the task yet."""

MAP_TOOLS_HEADER = "Tools of this environment:"

MAP_PRIORS_HEADER = "What exploration found out about this environment:"

MAP_UNKNOWNS = (
    "These unknowns remain: {unknowns}. Resolve them with the read-only tools, or reply with the final map "
    "as one JSON object."
)

MAP_RETRY = "That was not a readable map ({error}). Reply with the map as one JSON object."

REFUSED = (
    "Refused: {name} has side effects or ends the task, and the {stage} stage may only use read-only "
    "tools ({allowed}). It can be used once the task is being carried out."
)

UNKNOWN_TOOL = "Unknown tool {name!r}; the read-only tools are: {allowed}."

PRIORS_TITLE = "Environment priors (from exploration)"

MAP_TITLE = "Cognitive map of this task"

MAP_USE = "Follow the sub-goals in order, use the tools the affordances name, respect the constraints."


def map_of(trajectory: Trajectory) -> CognitiveMap | None:
    """The cognitive map a map-then-act run recorded (`agentkit.records.MAP`; None if it has none);
    `agentkit chat`'s `/map` shows `map_of(last_trajectory).render()`."""
    return trajectory.records.get(MAP)


# -- the exploration cache ------------------------------------------------------------------------


def environment_identity(tools: Sequence[Tool], environment: Any = None) -> str:
    """Name an environment for the exploration cache.

    An explicit `environment` (a string, or an object with `identity()`) wins; otherwise the identity
    is a hash of the read-only tools' names and specs (the environment is what they can observe).
    """
    if environment is not None:
        if isinstance(environment, str):
            return environment
        ident = getattr(environment, "identity", None)
        if callable(ident):
            return str(ident())
        raise TypeError(f"environment must be a string or have identity(), not {type(environment).__name__}")
    specs = sorted((t.name, json.dumps(t.spec(), sort_keys=True)) for t in tools if t.read_only)
    digest = hashlib.sha256(json.dumps(specs).encode()).hexdigest()[:16]
    return f"tools:{digest}"


class ExplorationCache:
    """Priors from global exploration, one JSON file per environment identity, shared by processes.

    `exclusive(identity)` holds a file lock so concurrent runs on a new environment explore it once.
    """

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else agentkit_home() / "explore"

    def _path(self, identity: str) -> Path:
        return self.root / f"{hashlib.sha256(identity.encode()).hexdigest()[:24]}.json"

    def get(self, identity: str) -> dict[str, Any] | None:
        """The stored record for `identity`, or None (an unreadable file counts as missing)."""
        path = self._path(identity)
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) and record.get("identity") == identity else None

    def put(self, identity: str, record: dict[str, Any]) -> Path:
        """Store a record atomically (write to a temporary file, then rename)."""
        path = self._path(identity)
        atomic_write(path, json.dumps({**record, "identity": identity}, ensure_ascii=False, indent=1), durable=False)
        return path

    def clear(self, identity: str) -> None:
        """Forget an environment's priors (the next run explores again)."""
        self._path(identity).unlink(missing_ok=True)

    @contextlib.contextmanager
    def exclusive(self, identity: str) -> Iterator[None]:
        """Hold the environment's lock, so that only one process explores it at a time."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self._path(identity).with_suffix(".lock"), "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


# -- the planner ----------------------------------------------------------------------------------


class MapThenActPlanner:
    """Explore (cached per environment), map the task, then let the agent act with both in context.

    Args:
        environment: names the environment for the cache (a string or an object with `identity()`);
            default: a hash of the read-only tools.
        explore_steps: most exploration turns that call tools (a closing summary turn follows).
        map_steps: most mapping turns (probes and map drafts together).
        cache: where priors persist; `False` keeps them in memory only for this planner.
        refresh: explore again even if priors are cached.
        max_observation_chars: observations longer than this are cut in the explore/map prompts.
    """

    name = "map-then-act"

    def __init__(
        self,
        environment: Any = None,
        *,
        explore_steps: int = 4,
        map_steps: int = 3,
        cache: ExplorationCache | str | Path | bool | None = None,
        refresh: bool = False,
        max_observation_chars: int = 1500,
    ) -> None:
        if explore_steps < 0 or map_steps < 1:
            raise ValueError("explore_steps must be >= 0 and map_steps >= 1")
        self.environment = environment
        self.explore_steps = explore_steps
        self.map_steps = map_steps
        if cache is False:
            self.cache: ExplorationCache | None = None
        elif isinstance(cache, ExplorationCache):
            self.cache = cache
        else:
            self.cache = ExplorationCache(None if cache in (None, True) else cache)  # type: ignore[arg-type]
        self.refresh = refresh
        self.max_observation_chars = max_observation_chars
        self._memory: dict[str, dict[str, Any]] = {}

    # -- stage driver -----------------------------------------------------------------------------
    def prepare(self, run: RunContext) -> None:
        # Probes may only observe: read-only tools, and none that would end the run with an answer.
        """Explore (or reuse cached priors), build the task's map, and put both into context."""
        read_only = {name: t for name, t in run.tools.items() if t.read_only and not t.final}
        runner = ToolRunner(max_workers=2)
        try:
            priors = self._explore(run, read_only, runner)
            cmap = self._map(run, read_only, runner, priors)
        finally:
            runner.close()
        if priors:
            run.add_context(self.name, PRIORS_TITLE, priors)
        if not cmap.is_empty:
            run.add_context(self.name, MAP_TITLE, f"{cmap.render()}\n\n{MAP_USE}")
        run.record(MAP, cmap)

    # -- stage 1: global exploration --------------------------------------------------------------
    def _explore(self, run: RunContext, read_only: dict[str, Tool], runner: ToolRunner) -> str:
        identity = environment_identity(list(run.tools.values()), self.environment)
        if not read_only or self.explore_steps == 0:
            skipped = "no read-only tools" if not read_only else "budget 0"
            run.record(EXPLORE, ExploreRecord(identity=identity, skipped=skipped))
            return ""
        fresh = self.refresh and identity not in self._memory  # refresh once per planner, then reuse
        record = None if fresh else self._lookup(identity)
        if record is None:
            lock = self.cache.exclusive(identity) if self.cache else contextlib.nullcontext()
            with lock:
                fresh = self.refresh and identity not in self._memory
                record = None if fresh else self._lookup(identity)  # explored meanwhile?
                if record is None:
                    record = self._run_exploration(run, read_only, runner)
                    self._memory[identity] = record
                    if self.cache is not None:
                        self.cache.put(identity, record)
                    run.record(EXPLORE, ExploreRecord(identity=identity, cached=False, calls=record["calls"]))
                    return str(record["priors"])
        run.record(EXPLORE, ExploreRecord(identity=identity, cached=True, calls=record.get("calls", [])))
        return str(record.get("priors", ""))

    def _lookup(self, identity: str) -> dict[str, Any] | None:
        if identity in self._memory:
            return self._memory[identity]
        record = self.cache.get(identity) if self.cache is not None else None
        if record is not None:
            self._memory[identity] = record
        return record

    def _run_exploration(self, run: RunContext, read_only: dict[str, Tool], runner: ToolRunner) -> dict[str, Any]:
        specs = [t.spec() for t in read_only.values()]
        messages = [Message.system(EXPLORE_SYSTEM), Message.user(EXPLORE_START)]
        calls: list[dict[str, Any]] = []
        summary = ""
        for _ in range(self.explore_steps):
            reply = run.call_model(list(messages), phase="explore", tools=specs)
            messages.append(reply)
            if not reply.tool_calls:
                if reply.parse_error:
                    messages.append(Message.user(f"Your tool call could not be parsed: {reply.parse_error}"))
                    continue
                summary = reply.content.strip()
                break
            messages.extend(self._probe(reply, read_only, set(run.tools), runner, "explore", calls))
        else:
            messages.append(Message.user(EXPLORE_SUMMARY))
            reply = run.call_model(list(messages), phase="explore", tools=())
            summary = reply.content.strip() if not reply.tool_calls else ""
        if not summary:  # the model gave no summary: keep what it saw, which is still a prior
            summary = "\n".join(f"- {c['tool']}({_args_text(c['arguments'])}): {c['observation'][:300]}"
                                for c in calls if not c["refused"])
        return {"priors": _tidy(summary, self.max_observation_chars), "raw_summary": summary, "calls": calls,
                "created_at": time.time(),
                "model": getattr(run.model, "name", type(run.model).__name__)}

    # -- stage 2: task-specific mapping ------------------------------------------------------------
    def _map(self, run: RunContext, read_only: dict[str, Tool], runner: ToolRunner, priors: str) -> CognitiveMap:
        tool_lines = [f"- {t.name} ({'read-only, may be called now' if t.name in read_only else 'only while acting'})"
                      f": {t.description}" for t in run.tools.values()]
        system = MAP_SYSTEM
        if tool_lines:
            system += "\n\n" + MAP_TOOLS_HEADER + "\n" + "\n".join(tool_lines)
        if priors:
            system += "\n\n" + MAP_PRIORS_HEADER + "\n" + priors
        messages = [Message.system(system), Message.user(run.task)]
        specs = [t.spec() for t in read_only.values()]
        calls: list[dict[str, Any]] = []
        cmap = CognitiveMap(task=run.task)
        error: str | None = "the model wrote no map"
        for step in range(self.map_steps):
            last = step == self.map_steps - 1
            reply = run.call_model(list(messages), phase="map", tools=() if last else specs)
            messages.append(reply)
            if reply.tool_calls:
                messages.extend(self._probe(reply, read_only, set(run.tools), runner, "map", calls))
                error = "the map budget ran out during probing"
                continue
            draft, draft_error = CognitiveMap.parse(reply.content, run.task)
            if draft_error is not None:
                error = draft_error
                messages.append(Message.user(MAP_RETRY.format(error=draft_error)))
                continue
            cmap, error = draft, None
            if not cmap.unknowns:  # nothing left to find out: stop early
                break
            messages.append(Message.user(MAP_UNKNOWNS.format(unknowns="; ".join(cmap.unknowns))))
        if error is not None:
            run.record(MAP_ERROR, MapError(error))
        run.record(MAP_PROBES, MapProbes(calls))
        return cmap

    # -- read-only tool calls made by the planner --------------------------------------------------
    def _probe(self, reply: Message, read_only: dict[str, Tool], known: set[str], runner: ToolRunner, stage: str,
               calls: list[dict[str, Any]]) -> list[Message]:
        """Run the read-only calls of `reply`; refuse the others. Returns one tool message per call."""
        allowed = ", ".join(read_only) or "none"
        out: list[Message] = []
        runnable = [c for c in reply.tool_calls if c.name in read_only]
        outcomes = iter(runner.run_many([(read_only[c.name], c.name, c.arguments) for c in runnable]))
        for call in reply.tool_calls:
            refused = call.name not in read_only
            if refused:
                template = REFUSED if call.name in known else UNKNOWN_TOOL
                text, is_error = template.format(name=call.name, stage=stage, allowed=allowed), True
            else:
                outcome = next(outcomes)
                text, is_error = outcome.content, outcome.is_error
            if len(text) > self.max_observation_chars:
                text = text[: self.max_observation_chars] + "\n[cut]"
            calls.append({"tool": call.name, "arguments": call.arguments, "observation": text,
                          "is_error": is_error, "refused": refused})
            out.append(Message.tool(call, text, is_error=is_error))
        return out

    def __repr__(self) -> str:
        return f"MapThenActPlanner(environment={self.environment!r}, explore_steps={self.explore_steps}, " \
               f"map_steps={self.map_steps})"


def _tidy(text: str, limit: int) -> str:
    """Drop repeated lines (a model that loops repeats them) and cut to `limit` characters."""
    seen: set[str] = set()
    lines = []
    for line in text.splitlines():
        key = line.strip().lower()
        if key and key in seen:
            continue
        seen.add(key)
        lines.append(line)
    tidy = "\n".join(lines).strip()
    return tidy if len(tidy) <= limit else tidy[:limit].rstrip() + " [cut]"


def _args_text(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in arguments.items())

