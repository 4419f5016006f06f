"""Framework overhead per agent step, excluding the model: agentkit vs smolagents vs pydantic-ai.

Each framework is driven by its own scripted model that calls one trivial tool N-1 times and then
answers; we time whole runs and report µs per step (median of R runs) for N = 10, 50, 200.
Peers are measured only when importable (install them in a benchmark venv, not the project's):

    python tests/benchmarks/bench_overhead.py --runs 25 --out bench-out/overhead.json

Each variant is measured in a fresh process (measured one after another in one process, a variant ran slower
after the threaded one). agentkit's own features are measured as variants of the inline run (`--only agentkit-inline
agentkit-approval agentkit-otel-noop agentkit-otel-sdk`): an approval policy checked at every call
(never asking), and OpenTelemetry on with the API's no-op provider or with the SDK recording every
span into memory.

The default tool call (`agentkit`, a 60 s limit) runs in the main thread, its limit kept by a signal;
`agentkit-worker` runs the same agent from another thread, where each call goes to a worker thread (a thread
hand-off per step).

A nested call (`--only agentkit agentkit-inline agentkit-nested agentkit-nested-timeout`): every call is
another agent called as a tool (`Agent.as_tool`), which answers at once (one model call of its own), without
a time limit (in the caller's thread) or with one (on a worker thread). The ratios printed compare a step with
a nested call to a step with one tool call (the default tool and an inline one), and the nested call with a
limit to a tool call on a worker thread.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STEPS = (10, 50, 200)


def bench_agentkit(n: int, timeout_s: float | None = 60.0, **agent_options: Any) -> Callable[[], None]:
    """agentkit with its default: a tool call under a 60 s time limit (in the main thread, kept by a signal; on
    a worker thread when the agent runs off the main thread, variant `agentkit-worker`)."""
    from agentkit import Agent, Message, ToolCall, tool
    from agentkit.testing import ScriptedModel

    @tool(timeout_s=timeout_s)
    def ping(x: int) -> int:
        """Return x."""
        return x

    def run() -> None:
        script = [Message.assistant(tool_calls=[ToolCall(name="ping", arguments={"x": i})]) for i in range(n - 1)]
        agent = Agent(ScriptedModel([*script, "done"]), tools=[ping], max_steps=n, **agent_options)
        result = agent.run("go")
        assert result.answer == "done" and len(result.trajectory.turns) == n
        agent.close()

    return run


def bench_smolagents(n: int) -> Callable[[], None]:
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, Model

    @tool
    def ping(x: int) -> int:
        """Return x.

        Args:
            x: a number
        """
        return x

    class Scripted(Model):
        def __init__(self) -> None:
            super().__init__(model_id="scripted")
            self.i = 0

        def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kw):  # type: ignore[no-untyped-def]
            self.i += 1
            if self.i < n:
                name, args = "ping", {"x": self.i}
            else:
                name, args = "final_answer", {"answer": "done"}
            call = ChatMessageToolCall(id=f"c{self.i}", type="function",
                                       function=ChatMessageToolCallFunction(name=name, arguments=args))
            return ChatMessage(role="assistant", content="", tool_calls=[call])

    def run() -> None:
        agent = ToolCallingAgent(tools=[ping], model=Scripted(), max_steps=n + 1, verbosity_level=-1)
        assert agent.run("go") == "done"

    return run


def bench_pydantic_ai(n: int) -> Callable[[], None]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    def respond(messages, info: AgentInfo) -> ModelResponse:  # type: ignore[no-untyped-def]
        k = sum(1 for m in messages if isinstance(m, ModelResponse))
        if k < n - 1:
            return ModelResponse(parts=[ToolCallPart("ping", {"x": k})])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond))

    @agent.tool_plain
    def ping(x: int) -> int:
        """Return x."""
        return x

    def run() -> None:
        assert agent.run_sync("go", usage_limits=UsageLimits(request_limit=None)).output == "done"

    return run


def bench_agentkit_inline(n: int) -> Callable[[], None]:
    """agentkit with `@tool(timeout_s=None)`: the call runs inline, no thread hand-off."""
    return bench_agentkit(n, timeout_s=None)


def bench_agentkit_approval(n: int) -> Callable[[], None]:
    """Inline, with an agent-level approval policy consulted at every call (it never asks)."""
    return bench_agentkit(n, timeout_s=None, approval=lambda tool, args: args.get("x", 0) < 0)


def bench_agentkit_otel_noop(n: int) -> Callable[[], None]:
    """Inline, tracing on, no SDK configured: the OpenTelemetry API's no-op spans."""
    from opentelemetry.trace import NoOpTracerProvider

    return bench_agentkit(n, timeout_s=None, tracing=NoOpTracerProvider())


def bench_agentkit_otel_sdk(n: int) -> Callable[[], None]:
    """Inline, tracing on with the SDK recording every span (in memory, cleared after each run)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run = bench_agentkit(n, timeout_s=None, tracing=provider)

    def traced() -> None:
        run()
        assert len(exporter.get_finished_spans()) == 2 * n  # the run, n model calls, n-1 tool calls
        exporter.clear()

    return traced


def bench_agentkit_nested(n: int, timeout_s: float | None = None) -> Callable[[], None]:
    """Each call is an agent called as a tool, which answers at once: a child run per step."""
    from agentkit import Agent, Message, ToolCall
    from agentkit.testing import ScriptedModel

    inner = Agent(ScriptedModel(["pong"], repeat_last=True), name="inner")  # built once, as the tool of the others
    ask = inner.as_tool("ask", "Ask.", timeout_s=timeout_s)

    def run() -> None:
        script = [Message.assistant(tool_calls=[ToolCall(name="ask", arguments={"request": str(i)})])
                  for i in range(n - 1)]
        inner.model = ScriptedModel(["pong"], repeat_last=True)  # a fresh script per run, as the caller's
        agent = Agent(ScriptedModel([*script, "done"]), tools=[ask], max_steps=n)
        result = agent.run("go")
        assert result.answer == "done" and len(result.trajectory.children) == n - 1
        agent.close()

    return run


def bench_agentkit_nested_timeout(n: int) -> Callable[[], None]:
    """A nested call with a time limit: the inner run goes on a worker thread."""
    return bench_agentkit_nested(n, timeout_s=60.0)


FRAMEWORKS = {
    "agentkit": bench_agentkit,
    "agentkit-worker": bench_agentkit,  # measured in a thread other than the main one: tool calls on workers
    "agentkit-inline": bench_agentkit_inline,
    "agentkit-approval": bench_agentkit_approval,
    "agentkit-otel-noop": bench_agentkit_otel_noop,
    "agentkit-otel-sdk": bench_agentkit_otel_sdk,
    "agentkit-nested": bench_agentkit_nested,
    "agentkit-nested-timeout": bench_agentkit_nested_timeout,
    "smolagents": bench_smolagents,
    "pydantic-ai": bench_pydantic_ai,
}


def measure(make: Callable[[int], Callable[[], None]], n: int, runs: int, clock: str = "wall",
            stat: str = "median") -> float:
    """µs per step. `clock="cpu"` counts the process's CPU time (all threads), which a busy shared
    machine disturbs less than wall time; `stat="min"` is the least disturbed run."""
    timer = time.process_time if clock == "cpu" else time.perf_counter
    run = make(n)
    run()  # warm up
    times = []
    for _ in range(runs):
        start = timer()
        run()
        times.append(timer() - start)
    value = min(times) if stat == "min" else statistics.median(times)
    return value / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", nargs="*", default=list(FRAMEWORKS))
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    parser.add_argument("--stat", choices=["median", "min"], default="median")
    parser.add_argument("--repeat", type=int, default=1,
                        help="measure every variant this many times, round-robin, and keep the lowest figure "
                             "(evens out load that comes and goes on a shared machine)")
    parser.add_argument("--variant", default=None, help=argparse.SUPPRESS)  # one variant, in this process
    args = parser.parse_args()
    if args.variant is not None:
        print(json.dumps(variant_here(args.variant, args.runs, args.clock, args.stat)))
        return
    started = os.getloadavg()[0]
    results: dict[str, dict[str, float] | str] = {}
    for _ in range(args.repeat):
        for name in args.only:
            if isinstance(results.get(name), str):
                continue
            row = variant_row(name, args.runs, args.clock, args.stat)
            if isinstance(row, str):
                results[name] = row
                continue
            best = results.get(name)
            results[name] = row if not isinstance(best, dict) else {k: min(v, best[k]) for k, v in row.items()}
    print(f"µs per step ({args.clock} clock), {args.stat} of {args.runs} runs"
          + (f", lowest of {args.repeat} rounds" if args.repeat > 1 else ""))
    print("| framework | " + " | ".join(f"{n} steps" for n in STEPS) + " | 200/10 |")
    print("|---|" + "---|" * (len(STEPS) + 1))
    for name, row in results.items():
        if isinstance(row, str):
            print(f"| {name} | {row} |")
        else:
            ratio = row[str(STEPS[-1])] / row[str(STEPS[0])]
            print(f"| {name} | " + " | ".join(f"{row[str(n)]:.0f}" for n in STEPS) + f" | {ratio:.2f} |")
    ratios = nested_ratios(results)
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"unit": "us_per_step", "runs": args.runs, "clock": args.clock,
                                        "stat": args.stat, "repeat": args.repeat, "machine": machine(started),
                                        "results": results,
                                        **({"nested_over_tool_call": ratios} if ratios else {})}, indent=2))


def variant_here(name: str, runs: int, clock: str, stat: str) -> dict[str, float] | str:
    """µs per step of one variant at each step count, measured in this process (`agentkit-worker` in a thread of
    its own, so that its tool calls go to worker threads)."""
    def row() -> dict[str, float] | str:
        try:
            return {str(n): round(measure(FRAMEWORKS[name], n, runs, clock, stat), 1) for n in STEPS}
        except ImportError as exc:
            return f"not installed ({exc.name})"

    if name != "agentkit-worker":
        return row()
    box: list[dict[str, float] | str] = []
    caller = threading.Thread(target=lambda: box.append(row()))
    caller.start()
    caller.join()
    return box[0]


def variant_row(name: str, runs: int, clock: str, stat: str) -> dict[str, float] | str:
    """µs per step of one variant at each step count, measured in a fresh process (so that no variant inherits
    another's threads, garbage or allocator state); a string when its framework is not installed."""
    proc = subprocess.run([sys.executable, __file__, "--variant", name, "--runs", str(runs), "--clock", clock,
                           "--stat", stat], capture_output=True, text=True, check=True)
    row: dict[str, float] | str = json.loads(proc.stdout.strip().splitlines()[-1])
    return row


def machine(load_before: float) -> dict[str, Any]:
    """What the figures were measured on: cores, load, Python and the versions of the frameworks compared."""
    versions = {}
    for package in ("pydantic", "smolagents", "pydantic-ai-slim", "opentelemetry-sdk"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {"cpus": os.cpu_count(), "load_1min_before": round(load_before, 2),
            "load_1min_after": round(os.getloadavg()[0], 2), "python": platform.python_version(),
            "versions": versions}


def nested_ratios(results: dict[str, dict[str, float] | str]) -> dict[str, float]:
    """A step with a nested call over a step with one tool call, at the most steps measured, for every pair of
    (nested row, tool-call row) measured."""
    last = str(STEPS[-1])
    pairs = {"nested / tool call": ("agentkit-nested", "agentkit"),
             "nested / inline tool call": ("agentkit-nested", "agentkit-inline"),
             "nested with time limit / tool call on a worker": ("agentkit-nested-timeout", "agentkit-worker")}
    out = {}
    for label, (nested, plain) in pairs.items():
        a, b = results.get(nested), results.get(plain)
        if isinstance(a, dict) and isinstance(b, dict):
            out[label] = round(a[last] / b[last], 2)
    return out


if __name__ == "__main__":
    main()
