"""A tool-use environment from a JSON task file, scored by AST match of the calls (BFCL-style).

Each task gives a request, the functions the model may call (JSON schema, OpenAI or BFCL style) and
the expected calls. Calls are not executed: each is recorded and answered with a short observation (or
a canned `responses[name]`). The score compares the calls the agent made with the expected ones:
function names must match, every argument must be one of the acceptable values, required arguments
must be present, no unexpected call may be made; parallel calls match in any order.

Task file: a JSON list or JSONL, one object per task:

    {"id": "weather_0",
     "question": "What's the weather in Paris in celsius?",        # or BFCL's [[{"role": "user", ...}]]
     "function": [{"name": "get_weather", "description": "...",
                   "parameters": {"type": "dict", "properties": {...}, "required": ["city"]}}],
     "ground_truth": [{"get_weather": {"city": ["Paris"], "unit": ["celsius", ""]}}]}

`ground_truth` is BFCL's possible-answer form (a list of acceptable values per argument; "" marks an
optional one); `expected: [{"name": ..., "arguments": {...}}]` with exact values works too. BFCL keeps
answers in a separate file: pass it as `answers=` and they are joined by id.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentkit.environments.base import StepResult, Task
from agentkit.messages import Message, ToolCall
from agentkit.tools import Tool
from agentkit.trajectory import Trajectory

SAMPLE_TASKS = Path(__file__).with_name("tooluse_sample.jsonl")

_BFCL_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None, "int": "integer",
               "str": "string", "bool": "boolean", "list": "array"}
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list, tuple), "object": (dict,),
}
_PYDANTIC_TYPE_ERRORS = {"string": "string_type", "integer": "int_type", "number": "float_type",
                         "boolean": "bool_type", "array": "list_type", "object": "dict_type"}

RECORDED = "Call to {name} recorded. If the request needs no further calls, reply briefly that you are done."


class ToolUseTaskError(ValueError):
    """A task file entry is malformed."""


def tool_name(name: str) -> str:
    """A function name as a tool name: characters other than letters, digits, _ and - become _."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def json_schema(schema: Any) -> Any:
    """Turn a BFCL parameter schema ("dict", "float", "tuple", "any") into standard JSON schema."""
    if isinstance(schema, list):
        return [json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str) and value in _BFCL_TYPES:
            mapped = _BFCL_TYPES[value]
            if mapped is not None:
                out["type"] = mapped
        elif key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {k: json_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf"):
            out[key] = json_schema(value)
        else:
            out[key] = value
    return out


class SchemaTool(Tool):
    """A tool described by a JSON schema instead of a Python signature; calls go to `handler(name, args)`.

    Validation checks required and unknown arguments and top-level JSON types; a failing call comes back
    to the model as an observation like any other invalid call.
    """

    def __init__(self, spec: dict[str, Any], handler: Any, *, read_only: bool = False) -> None:
        fn = spec.get("function", spec)
        self.name = tool_name(str(fn["name"]))
        self.description = str(fn.get("description", ""))
        self.parameters: dict[str, Any] = json_schema(fn.get("parameters") or {"type": "object", "properties": {}})
        self.parameters.setdefault("type", "object")
        self.parameters.setdefault("properties", {})
        self.read_only, self.phase, self.final = read_only, None, False
        self.timeout_s, self.max_output_chars, self.is_async = 10.0, 4000, False
        self.fn = lambda **arguments: handler(self.name, arguments)
        self._spec = {"type": "function",
                      "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check arguments against the tool's JSON schema; returns them or raises with what is wrong."""
        props: dict[str, Any] = self.parameters.get("properties", {})
        errors: list[Any] = []
        for name in self.parameters.get("required", []):
            if name not in arguments:
                errors.append({"type": "missing", "loc": (name,), "input": arguments})
        for name, value in arguments.items():
            if name not in props:
                errors.append({"type": "extra_forbidden", "loc": (name,), "input": value})
                continue
            expected = props[name].get("type") if isinstance(props[name], dict) else None
            if isinstance(expected, str) and expected in _JSON_TYPES and not _is_type(value, expected):
                errors.append({"type": _PYDANTIC_TYPE_ERRORS[expected], "loc": (name,), "input": value})
        if errors:
            raise ValidationError.from_exception_data(f"{self.name} arguments", errors)
        return dict(arguments)


def _is_type(value: Any, json_type: str) -> bool:
    if isinstance(value, bool) and json_type in ("integer", "number"):
        return False
    return isinstance(value, _JSON_TYPES[json_type])


# -- AST match ------------------------------------------------------------------------------------

_STRIP = re.compile(r"[ ,./\-_*^]")


def _norm_str(text: str) -> str:
    return _STRIP.sub("", text).lower().replace("'", '"')


def value_equal(got: Any, want: Any) -> bool:
    """BFCL-style equality: strings ignore case, spaces and light punctuation; ints count as floats."""
    if type(got) is type(want) and got == want:
        return True
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got == want
    if isinstance(want, int | float):
        return isinstance(got, int | float) and float(got) == float(want)
    if isinstance(want, str):
        return isinstance(got, str) and _norm_str(got) == _norm_str(want)
    if isinstance(want, list | tuple):
        return (isinstance(got, list | tuple) and len(got) == len(want)
                and all(value_equal(g, w) for g, w in zip(got, want, strict=True)))
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return False
        for key, acceptable in want.items():
            options = acceptable if isinstance(acceptable, list) else [acceptable]
            if key not in got:
                if "" not in options:
                    return False
            elif not any(value_equal(got[key], o) for o in options if o != "" or got[key] == ""):
                return False
        return set(got) <= set(want)
    return bool(got == want)


def call_matches(name: str, arguments: dict[str, Any], expected_name: str, accepted: dict[str, list[Any]]) -> bool:
    """Whether one call matches one expected call (BFCL possible-answer form for the arguments)."""
    if tool_name(name) != tool_name(expected_name):
        return False
    for arg, value in arguments.items():
        options = accepted.get(arg)
        if options is None or not any(value_equal(value, o) for o in options if o != "" or value == ""):
            return False
    return all(arg in arguments or "" in options for arg, options in accepted.items())


def match_calls(made: Sequence[tuple[str, dict[str, Any]]], expected: Sequence[dict[str, dict[str, list[Any]]]]
                ) -> int:
    """The most expected calls that distinct made calls can match (a maximum bipartite matching)."""
    pairs = [(next(iter(e)), next(iter(e.values()))) for e in expected]
    owner: dict[int, int] = {}  # made index -> expected index

    def augment(i: int, seen: set[int]) -> bool:
        for j, (name, args) in enumerate(made):
            if j in seen or not call_matches(name, args, *pairs[i]):
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    return sum(augment(i, set()) for i in range(len(pairs)))


def calls_in(trajectory: Trajectory) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls of the main conversation (planner probes are not part of it)."""
    return [(c.name, c.arguments) for m in trajectory.messages if m.role == "assistant" for c in m.tool_calls]


# -- the environment ------------------------------------------------------------------------------


def _question(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        flat: list[Any] = []
        for item in raw:
            flat.extend(item if isinstance(item, list) else [item])
        texts = [m.get("content", "") for m in flat if isinstance(m, dict) and m.get("role", "user") == "user"]
        return "\n".join(t for t in texts if t)
    raise ToolUseTaskError(f"question must be text or a list of messages, not {type(raw).__name__}")


def _expected(entry: dict[str, Any]) -> list[dict[str, dict[str, list[Any]]]]:
    if "ground_truth" in entry:
        truth = entry["ground_truth"]
        truth = [truth] if isinstance(truth, dict) else truth
        out = []
        for item in truth:
            if not isinstance(item, dict) or len(item) != 1:
                raise ToolUseTaskError(
                    f"task {entry.get('id')!r}: each ground_truth item is {{name: {{arg: [values]}}}}")
            name, args = next(iter(item.items()))
            out.append({name: {k: v if isinstance(v, list) else [v] for k, v in (args or {}).items()}})
        return out
    if "expected" in entry:
        return [{c["name"]: {k: [v] for k, v in c.get("arguments", {}).items()}} for c in entry["expected"]]
    raise ToolUseTaskError(f"task {entry.get('id')!r} has neither ground_truth nor expected calls")


def _read_entries(path: Path) -> list[dict[str, Any]]:
    text = path.read_text()
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except ValueError:
        out = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError as exc:
                    raise ToolUseTaskError(f"{path}:{lineno}: not JSON ({exc})") from exc
        return out


class ToolUseEpisode:
    """One attempt at a tool-use task: each call is a step; the score is the AST match."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.observation = ""
        self.done = False
        self.calls: list[ToolCall] = []
        read_only = set(task.data.get("read_only", []))
        self._tools = [SchemaTool(spec, self._handle, read_only=tool_name(spec.get("function", spec)["name"])
                                  in {tool_name(n) for n in read_only})
                       for spec in task.data["functions"]]

    @property
    def tools(self) -> list[Tool]:
        """The task's tools, built from their JSON schemas."""
        return list(self._tools)

    def _handle(self, name: str, arguments: dict[str, Any]) -> str:
        return self.step(ToolCall(name=name, arguments=arguments)).observation

    def step(self, call: ToolCall) -> StepResult:
        """Record the call and answer with the task's scripted response (the calls made are what is scored)."""
        self.calls.append(call)
        responses = self.task.data.get("responses", {})
        text = (responses.get(call.name) or responses.get(self._original_name(call.name))
                or RECORDED.format(name=call.name))
        return StepResult(observation=str(text))

    def _original_name(self, name: str) -> str:
        return next((f["name"] for f in self.task.data["functions"] if tool_name(f.get("function", f)["name"]) == name),
                    name)

    def score(self, trajectory: Trajectory) -> dict[str, float]:
        """How well the calls made match the expected calls."""
        return score_calls(calls_in(trajectory), self.task.data["expected"])

    def close(self) -> None:
        """Mark the episode done (nothing else to release)."""
        self.done = True


def score_calls(made: Sequence[tuple[str, dict[str, Any]]], expected: Sequence[dict[str, dict[str, list[Any]]]]
                ) -> dict[str, float]:
    """success = every expected call matched and no other call made; matched = fraction of expected matched."""
    matched = match_calls(made, expected)
    success = float(matched == len(expected) and len(made) == len(expected))
    fraction = matched / len(expected) if expected else float(not made)
    return {"reward": success, "success": success, "matched": fraction}


class ToolUseEnvironment:
    """Tasks from a JSON/JSONL file of requests, function schemas and expected calls."""

    def __init__(self, tasks: Sequence[Task], name: str = "tooluse") -> None:
        if not tasks:
            raise ToolUseTaskError("a tool-use environment needs at least one task")
        self.name = name
        self._tasks = list(tasks)

    @classmethod
    def from_file(cls, path: str | Path, answers: str | Path | None = None) -> ToolUseEnvironment:
        """Load tasks (and, BFCL-style, a separate possible-answer file joined by id)."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"task file {path} does not exist")
        entries = _read_entries(path)
        if answers is not None:
            by_id = {a["id"]: a for a in _read_entries(Path(answers))}
            entries = [{**e, **{k: v for k, v in by_id.get(e.get("id"), {}).items() if k != "id"}} for e in entries]
        return cls([cls.task_from_entry(e, i) for i, e in enumerate(entries)], name=f"tooluse:{path.stem}")

    @classmethod
    def sample(cls) -> ToolUseEnvironment:
        """The small task set shipped with agentkit."""
        return cls.from_file(SAMPLE_TASKS)

    @staticmethod
    def task_from_entry(entry: dict[str, Any], index: int = 0) -> Task:
        """A `Task` from one entry of the data set."""
        if not isinstance(entry, dict):
            raise ToolUseTaskError(f"task #{index} is not a JSON object")
        functions = entry.get("function", entry.get("functions", entry.get("tools")))
        if isinstance(functions, dict):
            functions = [functions]
        if not functions or not all(isinstance(f, dict) and "name" in f.get("function", f) for f in functions):
            raise ToolUseTaskError(f"task {entry.get('id', index)!r}: 'function' must list schemas with a name")
        data = {"functions": functions, "expected": _expected(entry),
                "responses": entry.get("responses", {}), "read_only": entry.get("read_only", [])}
        return Task(id=str(entry.get("id", f"task_{index}")), prompt=_question(entry.get("question", "")), data=data)

    def identity(self) -> str:
        """A hash of every task's function specs, as a stable name."""
        specs = json.dumps([t.data["functions"] for t in self._tasks], sort_keys=True)
        return f"{self.name}:{hashlib.sha256(specs.encode()).hexdigest()[:12]}"

    def tasks(self) -> list[Task]:
        """The data set's tasks."""
        return list(self._tasks)

    def reset(self, task: Task) -> ToolUseEpisode:
        """Start an episode of `task`."""
        return ToolUseEpisode(task)

    def oracle_script(self, task: Task) -> list[Message | str]:
        """The replies of a perfect policy: the expected calls (first acceptable values), then 'done'."""
        calls = []
        for item in task.data["expected"]:
            name, accepted = next(iter(item.items()))
            args = {k: next(v for v in options if v != "") for k, options in accepted.items()
                    if any(v != "" for v in options)}
            calls.append(ToolCall(name=tool_name(name), arguments=args))
        return [Message.assistant(tool_calls=calls), "done"] if calls else ["No function applies to this request."]
