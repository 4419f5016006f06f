"""Where a tool call runs and how its time limit stops it: in the main thread, interrupted by a signal, or on a
worker thread, abandoned at the limit."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import threading
import time
from typing import Any

import pytest

from agentkit import Agent, tool
from agentkit.testing import ScriptedModel, call
from agentkit.tools import Tool, ToolOutcome, ToolRunner, limits


@tool
def where() -> str:
    """Name the thread the call runs in."""
    return threading.current_thread().name


def run_one(t: Tool, **arguments: Any) -> ToolOutcome:
    runner = ToolRunner()
    try:
        [outcome] = runner.run_many([(t, t.name, arguments)])
        return outcome
    finally:
        runner.close()


def in_thread(fn: Any) -> Any:
    box: list[Any] = []
    worker = threading.Thread(target=lambda: box.append(fn()), name="caller")
    worker.start()
    worker.join()
    return box[0]


def test_a_single_call_runs_in_the_main_thread_and_elsewhere_on_a_worker() -> None:
    assert run_one(where).content == "MainThread"
    assert in_thread(lambda: run_one(where)).content == "agentkit-tool"
    unlimited = Tool(where.fn, name="where", timeout_s=None)
    assert in_thread(lambda: run_one(unlimited)).content == "caller"
    runner = ToolRunner()  # several calls at once run in parallel on workers
    both = runner.run_many([(where, "where", {}), (where, "where", {})])
    runner.close()
    assert [o.content for o in both] == ["agentkit-tool", "agentkit-tool"]


@pytest.mark.parametrize("how", ["sleep", "busy loop", "except Exception", "child process"])
def test_a_call_in_the_main_thread_is_stopped_at_its_limit(how: str) -> None:
    @tool(timeout_s=0.3)
    def slow() -> str:
        """Take too long."""
        if how == "sleep":
            time.sleep(5)
        elif how == "busy loop":
            while True:
                pass
        elif how == "except Exception":
            for _ in range(100):
                with contextlib.suppress(Exception):
                    time.sleep(0.1)
        else:
            subprocess.run(["sleep", "5"], check=True)
        return "finished"

    start = time.monotonic()
    outcome = run_one(slow)
    assert time.monotonic() - start < 1.5
    assert outcome.is_error and outcome.content == "Tool slow timed out after 0.3 s."
    assert run_one(where).content == "MainThread"  # the next call is not hit by the passed limit


def test_a_call_that_takes_the_timeout_and_returns_late_is_still_reported_timed_out() -> None:
    @tool(timeout_s=0.2)
    def stubborn() -> str:
        """Ignore being stopped."""
        try:
            time.sleep(5)
        except BaseException:
            time.sleep(0.1)
        return "late"

    outcome = run_one(stubborn)
    assert outcome.is_error and "timed out after 0.2 s" in outcome.content


def test_an_async_tool_is_cancelled_at_its_limit() -> None:
    cancelled: list[bool] = []

    @tool(timeout_s=0.2)
    async def waits() -> str:
        """Wait too long."""
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "late"

    start = time.monotonic()
    outcome = run_one(waits)
    assert time.monotonic() - start < 1.5 and "timed out after 0.2 s" in outcome.content
    assert cancelled == [True]


@pytest.mark.parametrize(("inner_s", "outer_s", "expected"), [
    (10, 0.3, "Tool outer timed out after 0.3 s."),  # the outer limit stops the inner call with it
    (0.2, 10, "outer saw: Tool inner timed out after 0.2 s."),  # the inner limit leaves the outer call running
])
def test_nested_calls_each_keep_their_own_limit(inner_s: float, outer_s: float, expected: str) -> None:
    def sleeps() -> str:
        """Sleep past any limit here."""
        time.sleep(5)
        return "inner done"

    inner = Tool(sleeps, name="inner", timeout_s=inner_s)

    def runs_inner() -> str:
        """Run the inner tool and say what it gave."""
        return "outer saw: " + run_one(inner).content

    start = time.monotonic()
    outcome = run_one(Tool(runs_inner, name="outer", timeout_s=outer_s))
    assert time.monotonic() - start < 1.5
    assert outcome.content == expected and outcome.is_error == expected.startswith("Tool outer")


def test_a_program_that_uses_the_signal_gets_worker_threads() -> None:
    assert limits.LIMIT_SIGNAL is not None
    previous = signal.signal(limits.LIMIT_SIGNAL, lambda *_: None)
    try:
        assert not limits.usable()
        assert run_one(where).content == "agentkit-tool"
    finally:
        signal.signal(limits.LIMIT_SIGNAL, previous)
    assert limits.usable() and run_one(where).content == "MainThread"


def test_an_agent_goes_on_after_a_call_timed_out_in_its_thread() -> None:
    @tool(timeout_s=0.2)
    def stuck() -> str:
        """Hang."""
        time.sleep(5)
        return "late"

    result = Agent(ScriptedModel([call("stuck"), call("where"), "done"]), tools=[stuck, where]).run("go")
    observations = [m.content for m in result.trajectory.messages if m.role == "tool"]
    assert observations == ["Tool stuck timed out after 0.2 s.", "MainThread"] and result.answer == "done"


def test_a_forked_child_keeps_time_limits_of_its_own() -> None:
    import multiprocessing

    run_one(where)  # the parent's watchdog is running before the fork
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        content, seconds = pool.apply(_slow_call_in_child)
    assert content == "Tool nap timed out after 0.3 s." and seconds < 1.5


def _slow_call_in_child() -> tuple[str, float]:
    @tool(timeout_s=0.3)
    def nap() -> str:
        """Sleep too long."""
        time.sleep(5)
        return "late"

    start = time.monotonic()
    return run_one(nap).content, time.monotonic() - start
