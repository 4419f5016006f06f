"""The agent loop neither crashes nor hangs on what a model or a tool does (issue 16): lone surrogates
anywhere text enters, tool return values that cannot become text, tools raising SystemExit or
KeyboardInterrupt, and many slow calls in one reply (one shared deadline, a cap on calls)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentkit import Agent
from agentkit.messages import Message, ToolCall, clean_text
from agentkit.testing import ScriptedModel, call, calls
from agentkit.tools import MAX_CALLS_PER_REPLY, ToolRunner, render_output, tool
from agentkit.trajectory import read_jsonl


@tool(timeout_s=5)
def echo(text: str) -> str:
    """Return the text.

    Args:
        text: anything.
    """
    return text


@tool(timeout_s=5)
def hostile(kind: str) -> object:
    """Return or raise something hostile.

    Args:
        kind: which hostile thing.
    """
    class BadStr:
        def __str__(self) -> str:
            raise RuntimeError("no text for you")

        __repr__ = __str__

    if kind == "bigint":
        return 10**5000
    if kind == "deep":
        root: list = []
        node = root
        for _ in range(100_000):
            node.append([])
            node = node[0]
        return root
    if kind == "badstr":
        return BadStr()
    if kind == "surrogate":
        return "out\ud800put"
    if kind == "exit":
        raise SystemExit(3)
    if kind == "interrupt":
        raise KeyboardInterrupt
    raise ValueError(kind)


def _agent(script: list, tmp_path: Path, **options) -> tuple[Agent, Path]:
    log = tmp_path / "log.jsonl"
    return Agent(ScriptedModel(script, **options), tools=[echo, hostile], log=log), log


def test_lone_surrogates_in_model_text_arguments_and_outputs_are_logged(tmp_path) -> None:
    # JSON-escaped lone surrogates in a text tool call, in the answer, and in a tool's output.
    script = ['<tool_call>{"name": "echo", "arguments": {"text": "a\\ud800b"}}</tool_call>',
              '<tool_call>{"name": "hostile", "arguments": {"kind": "surrogate"}}</tool_call>',
              "the answer \ud800 is \udfff here"]
    agent, log = _agent(script, tmp_path, text_tools=True)
    result = agent.run("task with \udc80 in it")
    assert result.answer == "the answer \ufffd is \ufffd here"
    [logged] = read_jsonl(log)
    tool_outputs = [m.content for m in logged.messages if m.role == "tool"]
    assert tool_outputs == ["a\ufffdb", "out\ufffdput"]
    assert logged.task == "task with \ufffd in it"
    assert logged.answer == result.answer


def test_streamed_deltas_with_lone_surrogates_are_clean(tmp_path) -> None:
    agent, log = _agent(["streamed \ud800 text"], tmp_path)
    deltas = [e.text for e in agent.stream("go") if type(e).__name__ == "ModelText"]
    assert deltas and all("\ud800" not in d for d in deltas)
    "".join(deltas).encode("utf-8")  # would raise UnicodeEncodeError on a lone surrogate
    assert read_jsonl(log)[0].answer == "streamed \ufffd text"


def test_clean_text_keeps_pairs_and_walks_containers() -> None:
    assert clean_text("\ud83d\ude00") == "\U0001f600"  # a surrogate pair is its character
    assert clean_text({"k\ud800": ["\udfff", ("x\ud800",)]}) == {"k\ufffd": ["\ufffd", ("x\ufffd",)]}
    assert clean_text(5) == 5
    assert ToolCall(name="t", arguments={"a": "\ud800"}).arguments == {"a": "\ufffd"}
    assert Message.user("\ud800").content == "\ufffd"


def test_cli_run_with_a_surrogate_script_exits_0(tmp_path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool": "calculator", "arguments": {"expression": "1+1"}},
                                  "two \ud800 answer"]))  # json.dumps writes the escape \ud800
    log = tmp_path / "log.jsonl"
    proc = subprocess.run([sys.executable, "-m", "agentkit.cli.main", "run", "1+1?", "--model", f"script:{script}",
                           "--log", str(log)], capture_output=True, env={**os.environ, "PYTHONIOENCODING": "utf-8"},
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert "two \ufffd answer" in proc.stdout.decode("utf-8")
    assert b"Traceback" not in proc.stderr
    assert read_jsonl(log)[0].answer == "two \ufffd answer"


@pytest.mark.parametrize("kind", ["bigint", "deep", "badstr", "exit", "interrupt"])
def test_hostile_tool_values_and_exits_become_observations(tmp_path, kind) -> None:
    agent, log = _agent([call("hostile", kind=kind), "survived"], tmp_path)
    if kind == "interrupt":  # in the main thread a KeyboardInterrupt is Ctrl-C: only elsewhere is it the tool's
        with ThreadPoolExecutor(1) as pool:
            result = pool.submit(agent.run, "go").result()
    else:
        result = agent.run("go")
    assert result.answer == "survived"
    observation = next(m for m in result.trajectory.messages if m.role == "tool")
    expected = {"bigint": "cannot be shown as text", "deep": "RecursionError", "badstr": "no text for you",
                "exit": "raised SystemExit: 3", "interrupt": "raised KeyboardInterrupt"}[kind]
    assert expected in observation.content
    assert len(read_jsonl(log)) == 1


def test_a_keyboard_interrupt_in_a_tool_in_the_main_thread_stops_the_run(tmp_path) -> None:
    agent, _ = _agent([call("hostile", kind="interrupt"), "survived"], tmp_path)
    with pytest.raises(KeyboardInterrupt):
        agent.run("go")
    again, _ = _agent([call("echo", text="hi"), "still works"], tmp_path)
    assert again.run("go").answer == "still works"


def test_a_tool_without_time_limit_raising_system_exit_is_an_observation() -> None:
    @tool(timeout_s=None)
    def leave() -> str:
        """Exit."""
        raise SystemExit(1)

    [outcome] = ToolRunner().run_many([(leave, "leave", {})])
    assert outcome.is_error and "SystemExit" in outcome.content


def test_render_output_never_raises_and_stays_bounded() -> None:
    class BadStr:
        def __str__(self) -> str:
            raise ValueError("bad")

    for value in (10**5000, [10**5000], BadStr(), {"x": BadStr()}, "\ud800" * 10, b"\xff" * 10_000):
        text = render_output(value, 100)
        text.encode("utf-8")
        assert len(text) < 400


def test_many_slow_calls_share_one_deadline_and_are_capped() -> None:
    @tool(timeout_s=0.5)
    def nap(i: int) -> str:
        """Sleep two seconds.

        Args:
            i: which call.
        """
        time.sleep(2)
        return "awake"

    runner = ToolRunner()
    start = time.monotonic()
    outcomes = runner.run_many([(nap, "nap", {"i": i}) for i in range(100)])
    elapsed = time.monotonic() - start
    assert elapsed < 2.0, elapsed  # was 50 s: each call waited its own 0.5 s
    assert len(outcomes) == 100 and all(o.is_error for o in outcomes)
    assert all("timed out" in o.content for o in outcomes[:MAX_CALLS_PER_REPLY])
    assert all("at most 32 tool calls per reply" in o.content for o in outcomes[MAX_CALLS_PER_REPLY:])
    # The threads still sleeping do not block the next reply's calls.
    start = time.monotonic()
    [fine] = runner.run_many([(echo, "echo", {"text": "ok"})])
    assert fine.content == "ok" and time.monotonic() - start < 1.0


def test_agent_with_a_reply_of_many_slow_calls_finishes(tmp_path) -> None:
    @tool(timeout_s=0.3)
    def stall(i: int) -> str:
        """Stall.

        Args:
            i: which call.
        """
        time.sleep(1.5)
        return "late"

    agent = Agent(ScriptedModel([calls(*[("stall", {"i": i}) for i in range(100)]), "done"]), tools=[stall])
    start = time.monotonic()
    result = agent.run("go")
    assert result.answer == "done" and time.monotonic() - start < 2.0
