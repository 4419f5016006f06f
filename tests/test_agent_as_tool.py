"""Agents as tools: `agent.as_tool(...)` in another agent's tools, its run a child of the caller's run."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import BaseModel

from agentkit import Agent, Message, tool
from agentkit.events import InnerEvent, ModelText, RunFinished, RunPaused, ToolFinished, ToolStarted
from agentkit.messages import Usage
from agentkit.models.protocol import GenerationSettings, ModelResponse, ToolSpecs
from agentkit.runs.approval import RunState, approve, deny
from agentkit.testing import ScriptedModel, call, calls
from agentkit.tools import ToolRunner
from agentkit.trajectory import read_jsonl


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Priced(ScriptedModel):
    """A scripted model whose every call costs $0.001 (a hosted model's usage, as its backend reports it)."""

    def generate(self, messages: Sequence[Message], tools: ToolSpecs = (),
                 settings: GenerationSettings | None = None) -> ModelResponse:
        response = super().generate(messages, tools, settings)
        return replace(response, usage=response.usage.model_copy(update={"cost_usd": 0.001}))


def math_agent(script: list) -> Agent:
    return Agent(ScriptedModel(script), tools=[add], name="math", instructions="You do sums.")


def test_the_inner_answer_is_the_observation_and_the_inner_run_a_child_trajectory() -> None:
    inner = math_agent([call("add", a=1, b=2), "three"])
    outer_model = ScriptedModel([call("ask_math", request="What is 1 + 2?"), "It is three."])
    outer = Agent(outer_model, tools=[inner.as_tool("ask_math", "Ask the math agent a question.")], name="boss")
    result = outer.run("Add one and two.")

    assert result.answer == "It is three."
    observation = result.trajectory.messages[-2]
    assert (observation.role, observation.name, observation.content) == ("tool", "ask_math", "three")
    [child] = result.trajectory.children
    call_id = result.trajectory.messages[2].tool_calls[0].id
    assert (child.parent_id, child.parent_call_id, child.relation) == (result.trajectory.id, call_id, "tool")
    assert (child.agent, result.trajectory.agent) == ("math", "boss")
    assert child.task == "What is 1 + 2?" and child.answer == "three" and child.stop_reason == "final"
    assert [m.role for m in child.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert child.messages[0].content == "You do sums."
    assert len(child.turns) == 2 and len(result.trajectory.turns) == 2
    spec = outer.tools["ask_math"].spec()["function"]
    assert spec["parameters"]["required"] == ["request"] and spec["description"] == "Ask the math agent a question."


def test_inner_events_stream_through_the_outer_stream_between_the_calls_start_and_finish() -> None:
    inner = math_agent([call("add", a=20, b=22), "forty-two, computed"])
    outer = Agent(ScriptedModel([call("ask_math", request="20 + 22?"), "42"]),
                  tools=[inner.as_tool("ask_math", "Ask the math agent.")])
    events = list(outer.stream("What is 20 + 22?"))

    start = next(i for i, e in enumerate(events) if isinstance(e, ToolStarted))
    end = next(i for i, e in enumerate(events) if isinstance(e, ToolFinished))
    inner_events = [e for e in events if isinstance(e, InnerEvent)]
    assert all(start < events.index(e) < end for e in inner_events)
    call_id = events[start].call.id  # type: ignore[union-attr]
    assert {(e.agent, e.call_id) for e in inner_events} == {("math", call_id)}
    kinds = [type(e.event).__name__ for e in inner_events]
    assert kinds[0] == "PhaseStarted" and kinds[-1] == "RunFinished"
    assert [k for k in kinds if k.startswith("Tool")] == ["ToolStarted", "ToolFinished"]
    streamed = "".join(e.event.text for e in inner_events if isinstance(e.event, ModelText))
    assert streamed == "forty-two, computed"  # the inner model's text, streamed as it came
    assert isinstance(events[-1], RunFinished) and events[-1].result.answer == "42"


def test_inner_usage_and_cost_are_added_to_the_outer_runs() -> None:
    inner = Agent(Priced([call("add", a=1, b=1), "two"]), tools=[add], name="math")
    outer = Agent(Priced([call("ask_math", request="1+1"), "2"]), tools=[inner.as_tool("ask_math", "Ask math.")])
    result = outer.run("1+1?")
    child = result.trajectory.children[0]
    own = sum((t.usage for t in result.trajectory.turns), Usage())
    assert child.usage.calls == 2 and own.calls == 2
    assert result.usage.calls == 4
    assert result.usage.input_tokens == own.input_tokens + child.usage.input_tokens
    assert result.usage.cost_usd == pytest.approx(0.004)


class Capital(BaseModel):
    country: str
    city: str


class CountryQuestion(BaseModel):
    country: str
    detail: str = "the capital"


def test_typed_output_is_the_tools_value_and_json_for_the_outer_model() -> None:
    geo = Agent(ScriptedModel([call("final_result", country="France", city="Paris")]), output_type=Capital,
                name="geo")
    capital = geo.as_tool("capital_of", "The capital of a country.", input_type=CountryQuestion)
    params = capital.spec()["function"]["parameters"]
    assert set(params["properties"]) == {"country", "detail"} and params["required"] == ["country"]

    outer = Agent(ScriptedModel([call("capital_of", country="France"), "Paris."]), tools=[capital])
    result = outer.run("Capital of France?")
    assert json.loads(result.trajectory.messages[-2].content) == {"country": "France", "city": "Paris"}
    assert json.loads(result.trajectory.children[0].task) == {"country": "France", "detail": "the capital"}

    geo.model = ScriptedModel([call("final_result", country="Peru", city="Lima")])
    assert capital.fn(country="Peru") == Capital(country="Peru", city="Lima")  # called directly: the typed value


def test_invalid_arguments_are_an_observation_and_nothing_runs() -> None:
    inner_model = ScriptedModel(["never asked"])
    inner = Agent(inner_model, name="math")
    outer = Agent(ScriptedModel([call("ask_math", question="1+1"), "sorry"]),
                  tools=[inner.as_tool("ask_math", "Ask math.")])
    result = outer.run("1+1?")
    observation = result.trajectory.messages[-2]
    assert observation.is_error and "Invalid arguments for ask_math" in observation.content
    assert "request (string, required)" in observation.content
    assert inner_model.requests == [] and result.trajectory.children == []


def test_a_run_past_its_time_limit_is_an_error_observation_and_stops() -> None:
    started = threading.Event()
    release = threading.Event()

    @tool(timeout_s=None)
    def slow_lookup() -> str:
        """Look something up, slowly."""
        started.set()
        release.wait(5)
        return "found"

    inner_model = ScriptedModel([call("slow_lookup"), "found it", "more"])
    inner = Agent(inner_model, tools=[slow_lookup], name="researcher")
    outer = Agent(ScriptedModel([call("research", request="find it"), "It took too long."]),
                  tools=[inner.as_tool("research", "Research a question.", timeout_s=0.3)])
    t0 = time.perf_counter()
    result = outer.run("Find it.")
    elapsed = time.perf_counter() - t0
    release.set()

    assert started.is_set() and elapsed < 2.0
    observation = result.trajectory.messages[-2]
    assert observation.is_error and observation.content == "Agent researcher did not answer within 0.3 s."
    assert result.answer == "It took too long."
    [child] = result.trajectory.children
    assert child.stop_reason == "timeout" and child.parent_call_id == observation.tool_call_id
    time.sleep(0.2)  # the inner run stops at its next event: its model is not asked again
    assert len(inner_model.requests) == 1


def test_a_failing_inner_run_is_an_error_observation() -> None:
    inner = Agent(ScriptedModel([]), name="broken")  # its model has no reply to give
    outer = Agent(ScriptedModel([call("ask", request="hi"), "it failed"]), tools=[inner.as_tool("ask", "Ask.")])
    result = outer.run("hi")
    observation = result.trajectory.messages[-2]
    assert observation.is_error and observation.content.startswith("Agent broken raised ScriptExhausted")
    assert result.trajectory.children[0].stop_reason == "error" and result.answer == "it failed"


def test_an_inner_run_without_an_answer_is_an_error_observation() -> None:
    inner = Agent(ScriptedModel([call("add", a=1, b=1)], repeat_last=True), tools=[add], name="loops", max_steps=2)
    outer = Agent(ScriptedModel([call("ask", request="sum"), "no luck"]), tools=[inner.as_tool("ask", "Ask.")])
    observation = outer.run("sum").trajectory.messages[-2]
    assert observation.is_error and observation.content.startswith("Agent loops stopped without an answer")


@pytest.fixture
def janitor_tools() -> tuple[list, list[str]]:
    deleted: list[str] = []

    @tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    return [delete], deleted


def test_an_inner_call_needing_approval_pauses_the_outer_run_and_resumes_from_json(janitor_tools, tmp_path) -> None:
    tools, deleted = janitor_tools
    janitor = Agent(ScriptedModel([call("delete", path="/tmp/old.log"), "Deleted it."]), tools=tools, name="janitor")
    outer = Agent(ScriptedModel([call("clean_up", request="remove /tmp/old.log"), "Cleaned up."]),
                  tools=[janitor.as_tool("clean_up", "Clean up files.")], name="boss", log=tmp_path / "runs.jsonl")
    events = list(outer.stream("Clean up."))
    paused = events[-1].result  # type: ignore[union-attr]
    assert isinstance(events[-2], RunPaused) and paused.stop_reason == "paused"
    assert [(c.name, c.arguments) for c in paused.pending] == [("delete", {"path": "/tmp/old.log"})]
    assert deleted == [] and paused.trajectory.children[0].stop_reason == "paused"
    assert not (tmp_path / "runs.jsonl").exists()  # a paused run is not logged yet

    state = RunState.from_json(paused.state.to_json())  # e.g. stored while a person decides
    resumed = list(outer.resume_stream(state, {paused.pending[0].id: approve()}))
    result = resumed[-1].result  # type: ignore[union-attr]
    assert result.answer == "Cleaned up." and deleted == ["/tmp/old.log"]
    assert any(isinstance(e, InnerEvent) and isinstance(e.event, ToolFinished) for e in resumed)
    [child] = result.trajectory.children
    assert child.stop_reason == "final" and child.answer == "Deleted it."
    assert [(a.tool, a.approved) for a in child.approvals] == [("delete", True)]
    assert result.trajectory.messages[-2].content == "Deleted it."
    assert result.usage.calls == 4  # both models' calls, the paused part included once

    [logged] = read_jsonl(tmp_path / "runs.jsonl")
    assert logged.children[0].answer == "Deleted it." and logged.children[0].parent_id == logged.id


def test_a_denied_inner_call_is_the_inner_models_observation(janitor_tools) -> None:
    tools, deleted = janitor_tools
    janitor_model = ScriptedModel([call("delete", path="/etc/passwd"), "I was not allowed."])
    janitor = Agent(janitor_model, tools=tools, name="janitor")
    outer = Agent(ScriptedModel([call("clean_up", request="remove /etc/passwd"), "Not done."]),
                  tools=[janitor.as_tool("clean_up", "Clean up files.")])
    paused = outer.run("Clean up.")
    result = outer.resume(paused, {paused.pending[0].id: deny("never that file")})
    assert deleted == [] and result.answer == "Not done."
    assert "never that file" in janitor_model.requests[-1][-1].content
    assert result.trajectory.messages[-2].content == "I was not allowed."


def test_calls_of_the_paused_reply_run_once_and_its_earlier_decisions_stand(janitor_tools) -> None:
    tools, deleted = janitor_tools
    counted: list[int] = []

    @tool(requires_approval=True)
    def wipe_disk() -> str:
        """Wipe the disk."""
        counted.append(-1)
        return "wiped"

    @tool
    def count(n: int) -> int:
        """Count."""
        counted.append(n)
        return n

    helper = math_agent([call("add", a=1, b=1), "two"])
    janitor = Agent(ScriptedModel([call("delete", path="a.log"), "Deleted."]), tools=tools, name="janitor")
    reply = calls(("wipe_disk", {}), ("ask_math", {"request": "1+1"}), ("clean_up", {"request": "a.log"}),
                  ("count", {"n": 7}))
    outer = Agent(ScriptedModel([reply, "Done."]), tools=[wipe_disk, count, helper.as_tool("ask_math", "Math."),
                                                          janitor.as_tool("clean_up", "Clean up.")])
    first = outer.run("Tidy up.")
    assert [c.name for c in first.pending] == ["wipe_disk"]  # the outer agent's own approval, first
    second = outer.resume(first, {first.pending[0].id: deny()})
    assert [c.name for c in second.pending] == ["delete"] and counted == []  # the janitor's, before `count` runs
    result = outer.resume(second, {second.pending[0].id: True})

    assert result.answer == "Done." and deleted == ["a.log"] and counted == [7]  # wipe_disk denied, once
    observations = [m for m in result.trajectory.messages if m.role == "tool"]
    assert [m.name for m in observations] == ["wipe_disk", "ask_math", "clean_up", "count"]
    assert observations[0].is_error and [o.content for o in observations[1:]] == ["two", "Deleted.", "7"]
    assert [c.agent for c in result.trajectory.children] == ["math", "janitor"]
    assert len(helper.model.requests) == 2  # type: ignore[attr-defined]  # the helper ran once


def test_an_approval_two_levels_down_surfaces_at_the_top(janitor_tools) -> None:
    tools, deleted = janitor_tools
    janitor = Agent(ScriptedModel([call("delete", path="x"), "deleted x"]), tools=tools, name="janitor")
    manager = Agent(ScriptedModel([call("janitor", request="delete x"), "the janitor deleted x"]),
                    tools=[janitor.as_tool("janitor", "The janitor.")], name="manager")
    ceo = Agent(ScriptedModel([call("manager", request="get x deleted"), "x is gone"]),
                tools=[manager.as_tool("manager", "The manager.")], name="ceo")
    paused = ceo.run("Delete x.")
    assert [c.name for c in paused.pending] == ["delete"]
    result = ceo.resume(RunState.from_json(paused.state.to_json()), {paused.pending[0].id: approve()})
    assert result.answer == "x is gone" and deleted == ["x"]
    manager_run = result.trajectory.children[0]
    assert manager_run.children[0].agent == "janitor" and manager_run.children[0].answer == "deleted x"
    assert result.usage.calls == 6


def test_an_inner_agents_own_log_is_not_written_for_runs_it_does_as_a_tool(tmp_path) -> None:
    inner = Agent(ScriptedModel(["inner answer", "alone"]), name="inner", log=tmp_path / "inner.jsonl")
    outer = Agent(ScriptedModel([call("ask", request="q"), "outer answer"]), tools=[inner.as_tool("ask", "Ask.")],
                  log=tmp_path / "outer.jsonl")
    outer.run("q")
    assert not (tmp_path / "inner.jsonl").exists()
    inner.run("on its own")
    assert [t.answer for t in read_jsonl(tmp_path / "inner.jsonl")] == ["alone"]
    [logged] = read_jsonl(tmp_path / "outer.jsonl")
    assert [c.answer for c in logged.children] == ["inner answer"]


def test_logs_without_nested_runs_still_load() -> None:
    old = read_jsonl(Path(__file__).parent / "data" / "trajectories-0.1.0.jsonl")
    assert old and all(t.children == [] and t.parent_id is None and t.agent is None for t in old)


def test_called_directly_the_tool_runs_the_agent_and_a_pause_is_an_error(janitor_tools) -> None:
    tools, deleted = janitor_tools
    math = math_agent([call("add", a=2, b=3), "five"])
    janitor = Agent(ScriptedModel([call("delete", path="y")]), tools=tools, name="janitor")
    runner = ToolRunner()
    answered, paused = runner.run_many([(math.as_tool("m", "Math."), "m", {"request": "2+3"}),
                                        (janitor.as_tool("j", "Janitor."), "j", {"request": "delete y"})])
    assert (answered.content, answered.is_error) == ("five", False)
    assert paused.is_error and "paused for approval of delete" in paused.content and deleted == []


def test_an_agent_tool_is_read_only_when_every_inner_tool_is(janitor_tools) -> None:
    @tool(read_only=True)
    def look() -> str:
        """Look."""
        return "seen"

    assert Agent(ScriptedModel([]), tools=[look]).as_tool("a", "A.").read_only
    assert not Agent(ScriptedModel([]), tools=[look, *janitor_tools[0]]).as_tool("b", "B.").read_only
    with pytest.raises(ValueError, match="timeout_s"):
        Agent(ScriptedModel([])).as_tool("c", "C.", timeout_s=0)
