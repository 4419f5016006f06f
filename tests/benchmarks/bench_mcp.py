"""Tool-call round trip: an MCP server's tool (stdio and streamable HTTP) vs a local `@tool`.

Each call goes through the agent's `ToolRunner` (argument checks, time limit, rendering), so the
figures are what one tool call of an agent step costs, without the model. The MCP server is the real
FastMCP test server (tests/fixtures/mcp_server.py); its `add` tool is timed against a local `add`.

    python tests/benchmarks/bench_mcp.py --calls 300 --out bench-out/mcp.json
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from agentkit import Toolkit, tool
from agentkit.tools import Tool, ToolRunner

SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_server.py"


def time_calls(runner: ToolRunner, t: Tool, calls: int) -> dict[str, float]:
    """Median, p90 and mean of `calls` round trips, in milliseconds (after 20 warm-up calls)."""
    for i in range(20):
        (out,) = runner.run_many([(t, t.name, {"a": i, "b": 1})])
        assert not out.is_error and out.content == str(i + 1), out.content
    samples = []
    for i in range(calls):
        start = time.perf_counter()
        (out,) = runner.run_many([(t, t.name, {"a": i, "b": 2})])
        samples.append((time.perf_counter() - start) * 1000)
        assert not out.is_error
    samples.sort()
    return {"median_ms": round(statistics.median(samples), 4), "p90_ms": round(samples[int(0.9 * len(samples))], 4),
            "mean_ms": round(statistics.fmean(samples), 4)}


def raw_sdk_stdio(calls: int) -> dict[str, float]:
    """The same calls with the `mcp` SDK alone (asyncio, no agentkit): the floor of the stdio figure."""
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def go() -> list[float]:
        params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for i in range(20):
                await session.call_tool("add", {"a": i, "b": 1})
            samples = []
            for i in range(calls):
                start = time.perf_counter()
                await session.call_tool("add", {"a": i, "b": 2})
                samples.append((time.perf_counter() - start) * 1000)
            return samples

    samples = sorted(asyncio.run(go()))
    return {"median_ms": round(statistics.median(samples), 4), "p90_ms": round(samples[int(0.9 * len(samples))], 4),
            "mean_ms": round(statistics.fmean(samples), 4)}


def http_server() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the MCP test server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    def local(timeout_s: float | None) -> Tool:
        @tool(timeout_s=timeout_s)
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        return add

    runner = ToolRunner()
    results: dict[str, dict[str, float]] = {}
    cases: list[tuple[str, Callable[[], tuple[Tool, Callable[[], None]]]]] = [
        ("local @tool, inline (timeout_s=None)", lambda: (local(None), lambda: None)),
        ("local @tool, worker thread (default 60 s limit)", lambda: (local(60.0), lambda: None)),
    ]
    for label, make in cases:
        t, _ = make()
        results[label] = time_calls(runner, t, args.calls)

    connect = time.perf_counter()
    with Toolkit.from_mcp([sys.executable, str(SERVER)]) as kit:
        results["MCP stdio"] = {**time_calls(runner, next(t for t in kit.tools() if t.name == "add"), args.calls),
                                "connect_s": round(time.perf_counter() - connect, 3)}
    results["mcp SDK alone, stdio (no agentkit)"] = raw_sdk_stdio(args.calls)
    proc, url = http_server()
    try:
        connect = time.perf_counter()
        with Toolkit.from_mcp(url) as kit:
            results["MCP streamable HTTP"] = {
                **time_calls(runner, next(t for t in kit.tools() if t.name == "add"), args.calls),
                "connect_s": round(time.perf_counter() - connect, 3)}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    runner.close()

    print(f"| tool call ({args.calls} calls) | median ms | p90 ms | mean ms | connect s |")
    print("|---|---|---|---|---|")
    for label, r in results.items():
        print(f"| {label} | {r['median_ms']:.3f} | {r['p90_ms']:.3f} | {r['mean_ms']:.3f} | {r.get('connect_s', '')} |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"calls": args.calls, "results": results}, indent=1))


if __name__ == "__main__":
    main()
