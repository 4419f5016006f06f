"""Fuzz: model replies against the text tool-call parser and the agent loop (issue 16). Whatever a
model writes (broken tags and JSON, surrogate escapes, calls of unknown tools, hundreds of calls)
the parser never raises, and a run ends with a trajectory that is logged and can be read back."""

from __future__ import annotations

import json
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit import Agent
from agentkit.testing import ScriptedModel
from agentkit.tools import tool
from agentkit.tools.text_calls import parse_tool_calls
from agentkit.trajectory import read_jsonl


@tool(timeout_s=0.2)
def echo(text: str = "") -> str:
    """Return the text.

    Args:
        text: anything.
    """
    return text


@tool(timeout_s=0.2)
def nap(seconds: float = 0.0) -> str:
    """Sleep a little (capped at one second).

    Args:
        seconds: how long.
    """
    time.sleep(min(max(seconds, 0.0), 1.0))
    return "rested"


PIECES = ["<tool_call>", "</tool_call>", "<function_call>", "{", "}", "[", "]", '"', "'", ":", ",", "```json\n",
          "```", '"name"', '"arguments"', '"echo"', '"nap"', '"missing"', '"text"', '"seconds"', "\\ud800",
          "\\udfff", "\ud800", "null", "1e999", "-0", "echo(text='x')", "nap(seconds=5)", "\x00", "é", "\n"]
CALL = st.builds(lambda name, args: '<tool_call>' + json.dumps({"name": name, "arguments": args}) + '</tool_call>',
                 st.sampled_from(["echo", "nap", "missing", "", "\ud800"]),
                 st.dictionaries(st.sampled_from(["text", "seconds", "other", "\udfff"]),
                                 st.one_of(st.text(max_size=10), st.floats(), st.integers(), st.none()), max_size=2))
REPLY = st.one_of(
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=8)), max_size=20).map("".join),
    st.lists(CALL, min_size=1, max_size=40).map("\n".join),
    st.text(max_size=60),
)


@settings(max_examples=200, deadline=None)
@given(text=REPLY)
def test_the_parser_never_raises(text: str) -> None:
    parsed = parse_tool_calls(text, {"echo", "nap"})
    assert isinstance(parsed.content, str)
    for call in parsed.calls:
        json.dumps(call.arguments, ensure_ascii=False).encode("utf-8")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(replies=st.lists(REPLY, min_size=1, max_size=4))
def test_a_run_on_any_replies_ends_and_is_logged(tmp_path_factory, replies: list[str]) -> None:
    log = tmp_path_factory.mktemp("fuzz-loop") / "log.jsonl"
    agent = Agent(ScriptedModel([*replies, "final answer"], text_tools=True), tools=[echo, nap], log=log,
                  max_steps=len(replies) + 1)
    start = time.perf_counter()
    result = agent.run("fuzz \ud800 task")
    assert time.perf_counter() - start < 0.5 * (len(replies) + 1) + 2.0  # one shared deadline per reply
    assert result.stop_reason in ("final", "max_steps", "repeated_call")  # repeats end a run (agentkit.loop.repeats)
    [logged] = read_jsonl(log)
    assert logged.id == result.trajectory.id
    agent.close()
