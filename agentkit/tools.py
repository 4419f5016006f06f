"""`@tool`: a typed, documented Python function becomes a tool with a JSON schema.

The signature and the docstring are the single source of the schema. Arguments are validated by
pydantic before the call; failures, exceptions, time-outs and over-long outputs come back as
`ToolOutcome`s with `is_error=True` that the agent shows to the model as observations.
"""

from __future__ import annotations

import inspect
import json
import queue
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

DEFAULT_TIMEOUT_S = 60.0
ApprovalRule = bool | Callable[[dict[str, Any]], bool]
"""Whether a call needs a person's approval: always (True), never (False), or decided from its arguments."""
DEFAULT_MAX_OUTPUT_CHARS = 8000


class ToolDefinitionError(TypeError):
    """A function cannot become a tool (missing docstring, untyped parameter, ...)."""


@dataclass
class ToolOutcome:
    """What one tool call produced, as text for the model."""

    content: str
    is_error: bool = False
    duration_s: float = 0.0
    value: Any = None


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_SECTION_HEADER = re.compile(r"^\s*(Returns|Raises|Yields|Examples?|Notes?)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {argument: description})."""
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    for line in lines:
        if _ARGS_HEADER.match(line):
            section, current = "args", None
            continue
        if _SECTION_HEADER.match(line):
            section, current = "other", None
            continue
        if section == "summary":
            summary.append(line)
        elif section == "args":
            m = _ARG_LINE.match(line)
            if m and (not line.startswith(" " * 8) or current is None):
                current = m.group(1).lstrip("*")
                args[current] = m.group(3).strip()
            elif current and line.strip():
                args[current] = f"{args[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), args


class Tool:
    """A callable tool: name, description, argument model, and how to run it safely."""

    requires_approval: ApprovalRule = False  # also for subclasses that build themselves without __init__

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        read_only: bool = False,
        phase: str | None = None,
        final: bool = False,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        requires_approval: ApprovalRule = False,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        doc = inspect.getdoc(fn)
        if not doc and not description:
            raise ToolDefinitionError(
                f"tool {self.name!r} has no docstring: write one saying what the tool does "
                "(and an Args: section for its parameters), or pass description=..."
            )
        summary, arg_docs = parse_docstring(doc or "")
        self.description = description or summary
        self.read_only = read_only
        self.phase = phase
        self.final = final
        self.timeout_s = timeout_s
        self.max_output_chars = max_output_chars
        self.requires_approval = requires_approval
        self.is_async = inspect.iscoroutinefunction(fn)
        self.args_model = _arguments_model(fn, self.name, arg_docs)
        self._spec: dict[str, Any] | None = None

    def spec(self) -> dict[str, Any]:
        """The OpenAI-style function spec: {"type": "function", "function": {name, description, parameters}}."""
        if self._spec is None:
            params = self.args_model.model_json_schema()
            params.pop("title", None)
            for prop in params.get("properties", {}).values():
                prop.pop("title", None)
            self._spec = {
                "type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": params},
            }
        return self._spec

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments, or raise pydantic's ValidationError."""
        parsed = self.args_model.model_validate(arguments)
        return {k: getattr(parsed, k) for k in type(parsed).model_fields}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


def _arguments_model(fn: Callable[..., Any], name: str, arg_docs: dict[str, str]) -> type[BaseModel]:
    try:
        hints = get_type_hints(fn)
    except Exception as exc:  # unresolvable forward references
        raise ToolDefinitionError(f"tool {name!r}: cannot resolve type hints: {exc}") from exc
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"tool {name!r}: *args/**kwargs cannot be described to a model")
        if param.name not in hints:
            raise ToolDefinitionError(f"tool {name!r}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], Field(default, description=arg_docs.get(param.name)))
    model_name = "".join(part.title() for part in name.split("_")) + "Arguments"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    phase: str | None = None,
    final: bool = False,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    requires_approval: ApprovalRule = False,
) -> Any:
    """Make a tool from a typed function with a docstring; usable bare (`@tool`) or with options.

    `read_only` marks tools safe for exploration; `phase` labels the model turn that calls it in the
    trajectory; `final=True` ends the run with the tool's output as the answer; `requires_approval`
    (True, or a function of the call's arguments) pauses the run before the call until a person decides
    (`agentkit.approval`).
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(
            f,
            name=name,
            description=description,
            read_only=read_only,
            phase=phase,
            final=final,
            timeout_s=timeout_s,
            max_output_chars=max_output_chars,
            requires_approval=requires_approval,
        )

    return wrap(fn) if fn is not None else wrap


class Toolkit:
    """A named group of tools that belong together (e.g. the SQL schema-exploration toolkit)."""

    name: str = "toolkit"

    def __init__(self, tools: Iterable[Tool] = (), name: str | None = None) -> None:
        self._tools = list(tools)
        if name:
            self.name = name

    def tools(self) -> list[Tool]:
        """The tools of this kit."""
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools())


def as_tools(items: Iterable[Tool | Toolkit | Callable[..., Any]]) -> dict[str, Tool]:
    """Flatten tools, toolkits and plain functions into {name: Tool}; duplicate names are an error."""
    out: dict[str, Tool] = {}
    for item in items:
        group = item.tools() if isinstance(item, Toolkit) else [item if isinstance(item, Tool) else Tool(item)]
        for t in group:
            if t.name in out:
                raise ToolDefinitionError(f"two tools are named {t.name!r}")
            out[t.name] = t
    return out


def render_output(value: Any, limit: int) -> str:
    """Turn a tool's return value into text, cut to `limit` characters with a note saying so."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, BaseModel):
        text = value.model_dump_json()
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = str(value)
    if len(text) > limit:
        text = f"{text[:limit]}\n[output truncated: {len(text)} characters, showing the first {limit}]"
    return text


def _format_validation_error(tool_name: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        problems.append(f"{where}: {err['msg']}")
    return f"Invalid arguments for {tool_name}: " + "; ".join(problems)


class ToolRunner:
    """Runs validated tool calls with time limits, in parallel when several come at once."""

    def __init__(self, max_workers: int = 8) -> None:
        self._pool = _DaemonPool(max_workers)

    def close(self) -> None:
        self._pool.close()

    def run_many(self, calls: list[tuple[Tool | None, str, dict[str, Any]]]) -> list[ToolOutcome]:
        """Run (tool, name, arguments) triples; a `None` tool is an unknown name."""
        prepared = [self._prepare(t, name, args) for t, name, args in calls]
        if len(prepared) == 1 and not isinstance(prepared[0], ToolOutcome) and prepared[0][0].timeout_s is None:
            return [_run_inline(*prepared[0])]  # no time limit asked: no thread hand-off
        futures = {
            i: self._pool.submit(_invoke, p[0], p[1]) for i, p in enumerate(prepared) if not isinstance(p, ToolOutcome)
        }
        outcomes: list[ToolOutcome] = []
        for i, p in enumerate(prepared):
            if isinstance(p, ToolOutcome):
                outcomes.append(p)
                continue
            t = p[0]
            start = time.perf_counter()
            try:
                value = futures[i].result(timeout=t.timeout_s)
            except FutureTimeout:
                futures[i].cancel()
                outcomes.append(ToolOutcome(f"Tool {t.name} timed out after {t.timeout_s:g} s.", is_error=True))
                continue
            except Exception as exc:
                outcomes.append(
                    ToolOutcome(f"Tool {t.name} raised {type(exc).__name__}: {exc}", is_error=True,
                                duration_s=time.perf_counter() - start)
                )
                continue
            outcomes.append(
                ToolOutcome(render_output(value, t.max_output_chars), duration_s=time.perf_counter() - start,
                            value=value)
            )
        return outcomes

    @staticmethod
    def _prepare(t: Tool | None, name: str, arguments: dict[str, Any]) -> tuple[Tool, dict[str, Any]] | ToolOutcome:
        if t is None:
            return ToolOutcome(f"Unknown tool {name!r}.", is_error=True)
        try:
            return t, t.validate(arguments)
        except ValidationError as exc:
            return ToolOutcome(_format_validation_error(t.name, exc), is_error=True)


def _run_inline(t: Tool, kwargs: dict[str, Any]) -> ToolOutcome:
    start = time.perf_counter()
    try:
        value = _invoke(t, kwargs)
    except Exception as exc:
        return ToolOutcome(f"Tool {t.name} raised {type(exc).__name__}: {exc}", is_error=True,
                           duration_s=time.perf_counter() - start)
    return ToolOutcome(render_output(value, t.max_output_chars), duration_s=time.perf_counter() - start, value=value)


_Job = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]


class _DaemonPool:
    """A thread pool whose workers are daemons: a tool stuck past its time limit cannot keep the
    process alive at exit (the standard ThreadPoolExecutor joins its workers)."""

    def __init__(self, max_workers: int) -> None:
        self._max = max_workers
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._idle == 0 and len(self._threads) < self._max:
                worker = threading.Thread(target=self._work, name="agentkit-tool", daemon=True)
                self._threads.append(worker)
                worker.start()
            else:
                self._idle -= 1
        self._jobs.put((future, fn, args))
        return future

    def _work(self) -> None:
        # An idle worker blocks SIGINT, so Ctrl-C reaches the main thread even while it waits in a
        # terminal read (a signal taken by this thread would not wake that read). A running tool
        # (and any process it starts) gets the normal signal mask.
        _interrupts(block=True)
        while (job := self._jobs.get()) is not None:
            future, fn, args = job
            if future.set_running_or_notify_cancel():
                _interrupts(block=False)
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:
                    future.set_exception(exc)
                finally:
                    _interrupts(block=True)
            with self._lock:
                self._idle += 1

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)


def _interrupts(*, block: bool) -> None:
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK if block else signal.SIG_UNBLOCK, {signal.SIGINT})


def _invoke(t: Tool, kwargs: dict[str, Any]) -> Any:
    if t.is_async:
        import asyncio

        return asyncio.run(t.fn(**kwargs))
    return t.fn(**kwargs)
