"""Framework overhead per agent step, excluding the model: agentkit vs smolagents vs pydantic-ai.

Each framework is driven by its own scripted model that calls one trivial tool N-1 times and then
answers; we time whole runs and report µs per step (median of R runs) for N = 10, 50, 200.
Peers are measured only when importable (install them in a benchmark venv, not the project's):

    python tests/benchmarks/bench_overhead.py --runs 25 --out bench-out/overhead.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

STEPS = (10, 50, 200)


def bench_agentkit(n: int, timeout_s: float | None = 60.0) -> Callable[[], None]:
    """agentkit with its default: every tool call runs on a worker thread under a time limit."""
    from agentkit import Agent, Message, ToolCall, tool
    from agentkit.testing import ScriptedModel

    @tool(timeout_s=timeout_s)
    def ping(x: int) -> int:
        """Return x."""
        return x

    def run() -> None:
        script = [Message.assistant(tool_calls=[ToolCall(name="ping", arguments={"x": i})]) for i in range(n - 1)]
        agent = Agent(ScriptedModel([*script, "done"]), tools=[ping], max_steps=n)
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


FRAMEWORKS = {
    "agentkit": bench_agentkit,
    "agentkit-inline": bench_agentkit_inline,
    "smolagents": bench_smolagents,
    "pydantic-ai": bench_pydantic_ai,
}


def measure(make: Callable[[int], Callable[[], None]], n: int, runs: int,
            clock: Callable[[], float] = time.perf_counter) -> float:
    run = make(n)
    run()  # warm up
    times = []
    for _ in range(runs):
        start = clock()
        run()
        times.append(clock() - start)
    return statistics.median(times) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", nargs="*", default=list(FRAMEWORKS))
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: the process's CPU time (all threads), steadier on a loaded machine")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    results: dict[str, dict[str, float] | str] = {}
    for name in args.only:
        try:
            results[name] = {str(n): round(measure(FRAMEWORKS[name], n, args.runs, clock), 1) for n in STEPS}
        except ImportError as exc:
            results[name] = f"not installed ({exc.name})"
    print(f"µs per step ({args.clock} clock), median of {args.runs} runs")
    print("| framework | " + " | ".join(f"{n} steps" for n in STEPS) + " | 200/10 |")
    print("|---|" + "---|" * (len(STEPS) + 1))
    for name, row in results.items():
        if isinstance(row, str):
            print(f"| {name} | {row} |")
        else:
            ratio = row[str(STEPS[-1])] / row[str(STEPS[0])]
            print(f"| {name} | " + " | ".join(f"{row[str(n)]:.0f}" for n in STEPS) + f" | {ratio:.2f} |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"unit": "us_per_step", "clock": args.clock, "runs": args.runs,
                                         "results": results}, indent=2))


if __name__ == "__main__":
    main()
