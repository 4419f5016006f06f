"""`@tool`: a typed, documented Python function becomes a tool with a JSON schema.

The signature and the docstring are the single source of the schema; a tool whose schema comes from
elsewhere (an MCP server) passes it as `parameters=` instead. Arguments are validated by
pydantic before the call; failures, exceptions, time-outs and over-long outputs come back as
`ToolOutcome`s with `is_error=True` that the agent shows to the model as observations.
"""

from __future__ import annotations

import importlib
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
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agentkit.messages import clean_text
from agentkit.tools import limits

MCP_TOOLKIT = ("agentkit.tools.mcp", "MCPToolkit")
"""Where `Toolkit.from_mcp` finds the MCP toolkit class, imported by name on the first call: the MCP client
builds on `Tool` and `Toolkit`, so this module does not import it (imports flow one way)."""

DEFAULT_TIMEOUT_S = 60.0
ApprovalRule = bool | Callable[[dict[str, Any]], bool]
"""Whether a call needs a person's approval: always (True), never (False), or decided from its arguments."""
DEFAULT_MAX_OUTPUT_CHARS = 8000
MAX_CALLS_PER_REPLY = 32
MAX_ABANDONED_THREADS = 64  # tools still running past their time limit, each on a thread of its own


class ToolDefinitionError(TypeError):
    """A function cannot become a tool (missing docstring, untyped parameter, ...)."""


@dataclass
class ToolOutcome:
    """What one tool call produced, as text for the model."""

    content: str
    is_error: bool = False
    duration_s: float = 0.0
    value: Any = None

    def __post_init__(self) -> None:
        self.content = clean_text(self.content)


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
    """A callable tool: name, description, argument model, and how to run it safely.

    `parameters` gives the arguments' JSON schema as it is (for tools defined elsewhere, such as an
    MCP server's): the function then takes keyword arguments, and only the schema's required and
    unknown names are checked here; the tool's owner validates the rest.

    `timeout_s` limits one call (`None`: no limit). Past it the model is told the call timed out; how the call
    is stopped depends on where it runs (`ToolRunner`).
    """

    requires_approval: ApprovalRule = False  # also for subclasses that build themselves without __init__
    idempotent: bool = False

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
        parameters: dict[str, Any] | None = None,
        requires_approval: ApprovalRule = False,
        idempotent: bool = False,
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
        self.idempotent = idempotent
        self.is_async = inspect.iscoroutinefunction(fn)
        self.parameters = parameters
        self.args_model = _arguments_model(fn, self.name, arg_docs) if parameters is None else None
        self._spec: dict[str, Any] | None = None

    def spec(self) -> dict[str, Any]:
        """The OpenAI-style function spec: {"type": "function", "function": {name, description, parameters}}."""
        if self._spec is None:
            if self.args_model is None:
                params = dict(self.parameters or {})
            else:
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
        if self.args_model is None:
            return _check_against_schema(self.name, self.parameters or {}, arguments)
        return dict(self.args_model.model_validate(arguments).__dict__)  # the fields (extra ones are refused)

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


def _check_against_schema(name: str, schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments, if every required name is there and (when the schema forbids others) no unknown one."""
    errors: list[dict[str, Any]] = [
        {"type": "missing", "loc": (key,), "input": arguments}
        for key in schema.get("required", []) if key not in arguments
    ]
    if schema.get("additionalProperties") is False:
        known = schema.get("properties", {})
        errors += [{"type": "extra_forbidden", "loc": (key,), "input": value}
                   for key, value in arguments.items() if key not in known]
    if errors:
        raise ValidationError.from_exception_data(f"{name} arguments", errors)  # type: ignore[arg-type]
    return dict(arguments)


@overload
def tool(
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
    idempotent: bool = False,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    phase: str | None = None,
    final: bool = False,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    requires_approval: ApprovalRule = False,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Callable[..., Any] | None = None, **options: Any) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a tool from a typed function with a docstring; usable bare (`@tool`) or with options (those of
    `Tool`, typed in the overloads above).

    `read_only` marks tools safe for exploration; `phase` labels the model turn that calls it in the
    trajectory; `final=True` ends the run with the tool's output as the answer (an agent with such a tool
    sends a reply in text back once, asking for the call); `requires_approval`
    (True, or a function of the call's arguments) pauses the run before the call until a person decides
    (`agentkit.runs.approval`). `idempotent=True` says running a call twice does no harm: a durable run resumed
    after a crash runs a call that may have been in flight again when its tool is idempotent or read-only, and
    tells the model instead for any other tool (`agentkit.runs.durable`).
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(f, **options)

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

    @staticmethod
    def from_mcp(server: str | list[str], **options: Any) -> Toolkit:
        """The tools of an MCP server: a stdio command ("python server.py" or a list of arguments) or a
        streamable-HTTP URL. Options as for `agentkit.tools.mcp.MCPToolkit` (timeout_s, prefix, env,
        headers, ...); close it (or use `with`) to stop the server. Needs `pip install 'agentkit[mcp]'`.

        The kit is an `agentkit.tools.mcp.MCPToolkit` (construct that directly for its type)."""
        module, name = MCP_TOOLKIT
        kit: Toolkit = getattr(importlib.import_module(module), name)(server, **options)
        return kit

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
    """Turn a tool's return value into text, cut to `limit` characters with a note saying so.

    Never raises: a value that cannot become text (an `__str__` that raises, an integer past Python's
    digit limit, nesting deeper than the recursion limit) is described instead."""
    try:
        text = _as_text(value)
    except Exception as exc:  # RecursionError, ValueError (int digits), whatever a __str__ raises
        text = f"[the tool's return value ({_type_name(value)}) cannot be shown as text: {describe_exception(exc)}]"
    if len(text) > limit:
        text = f"{text[:limit]}\n[output truncated: {len(text)} characters, showing the first {limit}]"
    cleaned: str = clean_text(text)
    return cleaned


_JSON = json.JSONEncoder(ensure_ascii=False, default=str)  # made once: dumps() with options makes one a call


def _as_text(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is int:
        return int.__repr__(value)  # as JSON writes it (past Python's digit limit it raises, as JSON would)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return _JSON.encode(value)
    except (TypeError, ValueError):
        return str(value)


def _type_name(value: Any) -> str:
    try:
        return type(value).__name__
    except Exception:  # pragma: no cover - a type whose name cannot be read
        return "value"


def failure_text(name: str, exc: BaseException) -> str:
    """The observation of a call whose tool `name` raised `exc`."""
    return f"Tool {name} raised {describe_exception(exc)}"


def describe_exception(exc: BaseException) -> str:
    """"TypeName: message" of an exception, even when its `__str__` raises."""
    try:
        message = str(exc)
    except Exception:
        message = "(its message cannot be shown)"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _format_validation_error(tool_name: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        problems.append(f"{where}: {err['msg']}")
    return f"Invalid arguments for {tool_name}: " + "; ".join(problems)


def parameter_list(t: Tool) -> str:
    """The tool's parameters in a line, from its spec: `table (string, required), limit (integer)`."""
    params = t.spec()["function"].get("parameters") or {}
    props: dict[str, Any] = params.get("properties") or {}
    if not props:
        return "no arguments"
    required = set(params.get("required") or ())

    def kind(schema: Any) -> str:
        if not isinstance(schema, dict):
            return "any"
        if "type" in schema:
            types = schema["type"]
            return " or ".join(map(str, types)) if isinstance(types, list) else str(types)
        options = schema.get("anyOf") or schema.get("oneOf") or []
        return " or ".join(dict.fromkeys(kind(o) for o in options)) or "any"

    return ", ".join(f"{name} ({kind(schema)}{', required' if name in required else ''})"
                     for name, schema in props.items())


class ToolRunner:
    """Runs validated tool calls with time limits, in parallel when several come at once.

    A reply's only call runs in the calling thread when that is the main thread (its limit kept by
    `agentkit.tools.limits`, which interrupts it with `ToolTimeout`) or when it has no limit; otherwise calls run
    on worker threads, and a call still running at its limit is left to finish on its own while the run goes on.

    The calls of one reply share one deadline: each call's time limit counts from the moment the
    reply's calls start, so 100 slow calls take as long as the slowest limit, not the sum. At most
    `max_calls` calls of one reply run; the others come back as errors saying so. Whatever a tool
    raises, `SystemExit` included, becomes an error outcome, except `KeyboardInterrupt` in the main
    thread: that is Ctrl-C, and it stops the run.
    """

    def __init__(self, max_workers: int = 8, max_calls: int = MAX_CALLS_PER_REPLY) -> None:
        self._pool = _DaemonPool(max_workers)
        self.max_calls = max_calls

    def close(self) -> None:
        """Let the worker threads end once the calls already handed to them are done (nothing waits for them)."""
        self._pool.close()

    def run_many(self, calls: list[tuple[Tool | None, str, dict[str, Any]]]) -> list[ToolOutcome]:
        """Run (tool, name, arguments) triples; a `None` tool is an unknown name."""
        prepared = [self._prepare(t, name, args) for t, name, args in calls[: self.max_calls]]
        skipped = [ToolOutcome(f"Tool {name} was not run: at most {self.max_calls} tool calls per reply "
                               f"(this reply made {len(calls)}); call fewer at once.", is_error=True)
                   for _, name, _ in calls[self.max_calls :]]
        if len(prepared) == 1 and not isinstance(prepared[0], ToolOutcome):
            t, kwargs = prepared[0]
            if t.timeout_s is None or limits.usable():  # one call: in this thread, no hand-off
                return [_run_inline(t, kwargs), *skipped]
        start = time.monotonic()
        futures = {
            i: self._pool.submit(_invoke, p[0], p[1]) for i, p in enumerate(prepared) if not isinstance(p, ToolOutcome)
        }
        outcomes: list[ToolOutcome] = []
        for i, p in enumerate(prepared):
            if isinstance(p, ToolOutcome):
                outcomes.append(p)
                continue
            t, future = p[0], futures[i]
            remaining = None if t.timeout_s is None else max(0.0, start + t.timeout_s - time.monotonic())
            try:
                error = future.exception(timeout=remaining)  # what the tool raised (a real Ctrl-C here propagates)
            except FutureTimeout:
                if not future.cancel():
                    self._pool.abandon(future)
                outcomes.append(_timed_out(t, time.monotonic() - start))
                continue
            elapsed = time.monotonic() - start
            if error is not None:
                outcomes.append(ToolOutcome(failure_text(t.name, error), is_error=True,
                                            duration_s=elapsed))
                continue
            value = future.result()
            outcomes.append(ToolOutcome(render_output(value, t.max_output_chars), duration_s=elapsed, value=value))
        return outcomes + skipped

    @staticmethod
    def _prepare(t: Tool | None, name: str, arguments: dict[str, Any]) -> tuple[Tool, dict[str, Any]] | ToolOutcome:
        if t is None:
            return ToolOutcome(f"Unknown tool {name!r}.", is_error=True)
        try:
            return t, t.validate(arguments)
        except ValidationError as exc:
            takes = f"{t.name} takes {parameter_list(t)}"  # what the model should have sent
            return ToolOutcome(f"{_format_validation_error(t.name, exc)}. {takes}.", is_error=True)


def _run_inline(t: Tool, kwargs: dict[str, Any]) -> ToolOutcome:
    """Run one call in this thread; a time limit is kept by `limits` (this is then the main thread)."""
    start = time.perf_counter()
    watch = limits.enter(t.timeout_s) if t.timeout_s is not None else None
    try:
        try:
            value = _invoke(t, kwargs)
        finally:
            passed = watch is not None and limits.leave(watch)
    except BaseException as exc:  # SystemExit from a tool must not end the run
        if watch is not None and limits.leave(watch):
            return _timed_out(t, time.perf_counter() - start)
        if isinstance(exc, limits.ToolTimeout):
            raise  # the limit of a call this one runs inside
        if isinstance(exc, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
            raise  # Ctrl-C (a signal reaches only the main thread): it stops the run, as it would between calls
        return ToolOutcome(failure_text(t.name, exc), is_error=True, duration_s=time.perf_counter() - start)
    if passed:  # the tool took the ToolTimeout and went on, or returned just as its limit passed
        return _timed_out(t, time.perf_counter() - start)
    return ToolOutcome(render_output(value, t.max_output_chars), duration_s=time.perf_counter() - start, value=value)


def _timed_out(t: Tool, elapsed: float) -> ToolOutcome:
    return ToolOutcome(f"Tool {t.name} timed out after {t.timeout_s:g} s.", is_error=True, duration_s=elapsed)


_Job = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]


class _DaemonPool:
    """A thread pool whose workers are daemons: a tool stuck past its time limit cannot keep the
    process alive at exit (the standard ThreadPoolExecutor joins its workers)."""

    def __init__(self, max_workers: int) -> None:
        self._max = max_workers
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._abandoned: set[Future[Any]] = set()
        self._lock = threading.Lock()

    def abandon(self, future: Future[Any]) -> None:
        """The caller stopped waiting for `future` (past its time limit): its thread does not count
        against `max_workers` until the job ends (at most MAX_ABANDONED_THREADS such threads)."""
        with self._lock:
            if not future.done() and len(self._abandoned) < MAX_ABANDONED_THREADS:
                self._abandoned.add(future)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            # _idle is free workers minus queued jobs no worker has taken yet (negative: a backlog).
            if self._idle <= 0 and len(self._threads) - len(self._abandoned) < self._max:
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
                self._abandoned.discard(future)

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
