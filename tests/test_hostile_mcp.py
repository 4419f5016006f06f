"""MCP results a server should never send, from a real (hand-written) stdio server through the real SDK client:
each comes back to the model as an observation of bounded size, the connection stays up, and the run goes on."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from agentkit import Agent
from agentkit.testing import ScriptedModel, call
from agentkit.tools.mcp import MAX_RESULT_CHARS, MCPToolError, MCPToolkit
from agentkit.trajectory import Trajectory

SERVER = [sys.executable, str(Path(__file__).parent / "fixtures" / "hostile_mcp_server.py")]


@pytest.fixture(scope="module")
def kit() -> Iterator[MCPToolkit]:
    toolkit = MCPToolkit(SERVER, timeout_s=30)
    yield toolkit
    toolkit.close()


def raw_call(kit: MCPToolkit, name: str) -> str:
    return kit.connection.call(name, {})


def test_a_huge_text_result_is_read_up_to_the_limit(kit: MCPToolkit) -> None:
    text = raw_call(kit, "big")
    assert MAX_RESULT_CHARS < len(text) < MAX_RESULT_CHARS + 200 and "3,000,000 characters" in text


def test_a_result_of_many_blocks_is_read_up_to_the_limit(kit: MCPToolkit) -> None:
    text = raw_call(kit, "blocks")
    assert len(text) < MAX_RESULT_CHARS + 1_000 and "more content blocks not read" in text


def test_deep_structured_content_is_named_not_written_out(kit: MCPToolkit) -> None:
    text = raw_call(kit, "deep_structured")
    assert "too deeply nested" in text and len(text) < 300


@pytest.mark.parametrize("name", ["bad_shape", "text_null"])
def test_a_malformed_result_is_an_error_and_the_connection_stays_up(kit: MCPToolkit, name: str) -> None:
    with pytest.raises(MCPToolError, match="could not be read"):
        raw_call(kit, name)
    assert kit.connected and raw_call(kit, "ok") == "fine"


def test_a_server_that_answers_with_garbage_times_out_and_the_next_call_works() -> None:
    with MCPToolkit(SERVER, timeout_s=2) as kit:
        with pytest.raises(MCPToolError, match="did not answer within 2 s"):
            raw_call(kit, "silent")
        assert raw_call(kit, "ok") == "fine"


def test_the_run_goes_on_through_every_hostile_result(kit: MCPToolkit) -> None:
    names = ["big", "blocks", "bad_shape", "text_null", "deep_structured", "ok"]
    model = ScriptedModel([*(call(n) for n in names), "done"])
    agent = Agent(model, tools=[kit], max_steps=10)
    result = agent.run("call them all")
    agent.close()
    assert result.stop_reason == "final" and result.answer == "done"
    outputs = [m for m in result.trajectory.messages if m.role == "tool"]
    assert len(outputs) == len(names) and outputs[-1].content == "fine"
    assert [m.is_error for m in outputs] == [False, False, True, True, False, False]
    assert all(len(m.content) < 10_000 for m in outputs)  # the tool's output limit cut what was read
    back = Trajectory.model_validate_json(result.trajectory.model_dump_json())
    assert back.model_dump() == result.trajectory.model_dump()
