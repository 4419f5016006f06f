"""Typed output: the model answers through `final_result`; rejected results go back for a bounded retry."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from agentkit import Agent, tool
from agentkit.loop.output import FINAL_RESULT_TOOL, ModelRetry
from agentkit.testing import ScriptedModel, call, calls
from agentkit.tools import ToolDefinitionError


class City(BaseModel):
    name: str
    population: int


@dataclass
class Point:
    x: float
    y: float


class Pair(TypedDict):
    key: str
    value: int


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def final_spec(model: ScriptedModel) -> dict:
    return next(s for s in model_specs(model) if s["function"]["name"] == FINAL_RESULT_TOOL)


def model_specs(model: ScriptedModel) -> list[dict]:
    return model.specs_seen[-1]


class SpecRecorder(ScriptedModel):
    """A scripted model that also keeps the tool specs it was offered."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.specs_seen: list[list[dict]] = []

    def generate(self, messages, tools=(), settings=None):  # type: ignore[no-untyped-def]
        self.specs_seen.append(list(tools))
        return super().generate(messages, tools, settings)


def test_a_pydantic_model_through_the_final_call_after_a_tool() -> None:
    model = SpecRecorder([call("add", a=2, b=40), call(FINAL_RESULT_TOOL, name="Oslo", population=709_000)])
    result = Agent(model, tools=[add], output_type=City).run("Largest city of Norway?")
    assert result.output == City(name="Oslo", population=709_000) and result.stop_reason == "final"
    assert json.loads(result.answer) == {"name": "Oslo", "population": 709_000}
    params = final_spec(model)["function"]["parameters"]
    assert params["required"] == ["name", "population"] and params["properties"]["population"]["type"] == "integer"
    [check] = result.trajectory.output_checks
    assert check.passed and check.turn == 1
    assert result.trajectory.messages[-1].content == "Final result accepted."


@pytest.mark.parametrize(("output_type", "arguments", "expected"), [
    (Point, {"x": 1, "y": 2.5}, Point(1.0, 2.5)),
    (Pair, {"key": "k", "value": "7"}, {"key": "k", "value": 7}),
    (int, {"result": 42}, 42),
    (list[str], {"result": ["a", "b"]}, ["a", "b"]),
])
def test_dataclasses_typeddicts_and_primitives(output_type, arguments, expected) -> None:  # type: ignore[no-untyped-def]
    model = SpecRecorder([call(FINAL_RESULT_TOOL, **arguments)])
    result = Agent(model, output_type=output_type).run("t")
    assert result.output == expected and type(result.output) is type(expected)
    params = final_spec(model)["function"]["parameters"]
    if "result" in arguments:  # not an object: wrapped as {"result": ...}
        assert params["required"] == ["result"]


def test_validation_errors_go_back_to_the_model_for_a_bounded_number_of_retries() -> None:
    model = ScriptedModel([
        call(FINAL_RESULT_TOOL, name="Oslo", population="many"),   # invalid: not an integer
        "Oslo has about 700k people.",                             # text instead of the final call
        call(FINAL_RESULT_TOOL, name="Oslo", population=709_000),
    ])
    result = Agent(model, output_type=City, output_retries=2).run("t")
    assert result.output == City(name="Oslo", population=709_000)
    first_feedback = model.requests[1][-1]
    assert first_feedback.role == "tool" and first_feedback.is_error
    assert "population: Input should be a valid integer" in first_feedback.content
    second_feedback = model.requests[2][-1]
    assert second_feedback.role == "user" and "did not call final_result" in second_feedback.content
    assert [c.passed for c in result.trajectory.output_checks] == [False, False, True]

    # One retry too few: the run stops without an output, and says why.
    model = ScriptedModel([call(FINAL_RESULT_TOOL, name="Oslo"), call(FINAL_RESULT_TOOL, population=1), "x"])
    result = Agent(model, output_type=City, output_retries=1).run("t")
    assert result.stop_reason == "invalid_output" and result.output is None and result.answer is None
    assert len(model.requests) == 2 and [c.passed for c in result.trajectory.output_checks] == [False, False]


def test_output_validators_may_ask_for_a_retry() -> None:
    model = ScriptedModel([call(FINAL_RESULT_TOOL, name="oslo", population=-5),
                           call(FINAL_RESULT_TOOL, name="oslo", population=709_000)])
    agent = Agent(model, output_type=City)

    @agent.output_validator
    def positive(city: City) -> City:
        if city.population <= 0:
            raise ModelRetry("population must be positive")
        return city.model_copy(update={"name": city.name.title()})

    result = agent.run("t")
    assert result.output == City(name="Oslo", population=709_000)
    assert model.requests[1][-1].content == "population must be positive"
    assert [(c.passed, c.error) for c in result.trajectory.output_checks] == [
        (False, "population must be positive"), (True, None)]


def test_text_protocol_and_str_output() -> None:
    # A model without native tool calling writes the final call in the text protocol.
    text = '<tool_call>{"name": "final_result", "arguments": {"name": "Bergen", "population": 291000}}</tool_call>'
    result = Agent(ScriptedModel([text], text_tools=True), output_type=City).run("t")
    assert result.output == City(name="Bergen", population=291_000)
    # output_type=str takes a text answer, checked by the validators.
    agent = Agent(ScriptedModel(["", "Oslo"]), output_type=str,
                  output_validators=[lambda s: (_ for _ in ()).throw(ModelRetry("empty")) if not s else None])
    result = agent.run("t")
    assert result.output == "Oslo" and result.answer == "Oslo"
    assert [c.passed for c in result.trajectory.output_checks] == [False, True]
    # Without output_type the output is the text answer.
    assert Agent(ScriptedModel(["plain"])).run("t").output == "plain"


def test_bad_configuration_is_refused() -> None:
    @tool
    def final_result(x: int) -> int:
        """A clash."""
        return x

    with pytest.raises(ToolDefinitionError, match="final_result"):
        Agent(ScriptedModel([]), tools=[final_result], output_type=int)
    with pytest.raises(ValueError, match="need an output_type"):
        Agent(ScriptedModel([]), output_validators=[lambda x: x])
    with pytest.raises(TypeError, match="no JSON schema"):
        Agent(ScriptedModel([]), output_type=object())


def test_final_call_in_a_reply_with_other_calls_runs_them_first() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 1}), (FINAL_RESULT_TOOL, {"result": 2}))])
    result = Agent(model, tools=[add], output_type=int).run("t")
    assert result.output == 2
    assert [m.content for m in result.trajectory.messages if m.role == "tool"] == ["2", "Final result accepted."]


def test_through_an_openai_compatible_server_native_and_text_protocol() -> None:
    from test_models_openai import ChatServer, completion, model_for, tool_call

    server = ChatServer()
    try:
        # Native tool calling: the final_result tool is offered with the type's schema.
        server.reply(completion(None, [tool_call(FINAL_RESULT_TOOL, '{"name": "Oslo", "population": "lots"}',
                                                 "call_1")], finish="tool_calls"))
        server.reply(completion(None, [tool_call(FINAL_RESULT_TOOL, '{"name": "Oslo", "population": 709000}',
                                                 "call_2")], finish="tool_calls"))
        result = Agent(model_for(server), output_type=City).run("Largest city of Norway?")
        assert result.output == City(name="Oslo", population=709_000)
        [offered] = server.requests[0]["tools"]
        assert offered["function"]["name"] == FINAL_RESULT_TOOL
        assert offered["function"]["parameters"]["properties"]["population"] == {"type": "integer"}
        feedback = server.requests[1]["messages"][-1]
        assert feedback["role"] == "tool" and feedback["tool_call_id"] == "call_1"
        assert "population: Input should be a valid integer" in feedback["content"]
        # The text protocol: the tool is described in the prompt, the call comes back as text.
        server.reply(completion('<tool_call>{"name": "final_result", "arguments": {"result": [3, 4]}}</tool_call>'))
        result = Agent(model_for(server, native_tools=False), output_type=list[int]).run("Two numbers?")
        assert result.output == [3, 4]
        system = server.requests[2]["messages"][0]["content"]
        assert "final_result: Give your final answer as structured data." in system
    finally:
        server.close()
