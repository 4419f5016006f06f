"""Tool selection: each run offers the model the tools nearest its task (real MiniLM embeddings)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from agentkit import Agent, tool
from agentkit.loop.extensions import RunContext
from agentkit.memory.tool_selection import ToolSelection
from agentkit.messages import Message, ToolCall
from agentkit.records import TOOLS_OFFERED
from agentkit.runs.approval import approve
from agentkit.testing import FunctionModel
from agentkit.trajectory import Trajectory


@tool
def get_weather(city: str) -> str:
    """Current weather for a city: temperature in Celsius and conditions.

    Args:
        city: the city name
    """
    return f"{city}: 4 °C, snow"


@tool
def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert an amount of money between currencies at today's rate.

    Args:
        amount: the amount of money
        from_currency: ISO code of the currency to convert from
        to_currency: ISO code of the currency to convert to
    """
    return f"{amount} {from_currency} = {amount * 0.9:.2f} {to_currency}"


@tool
def unit_convert(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a value between units of length, weight or temperature.

    Args:
        value: the number to convert
        from_unit: unit of the value
        to_unit: unit to convert to
    """
    return f"{value} {from_unit} = {value * 0.621371:.2f} {to_unit}"


@tool
def get_population(country: str) -> str:
    """The population of a country.

    Args:
        country: the country name
    """
    return f"{country}: 5520000"


@tool
def count_letters(word: str, letter: str) -> str:
    """Count how many times a letter occurs in a word.

    Args:
        word: the word to look at
        letter: the letter to count
    """
    return str(word.count(letter))


@tool(requires_approval=True)
def send_email(to: str, body: str) -> str:
    """Send an email message to someone.

    Args:
        to: the recipient's address
        body: the text of the message
    """
    return f"sent to {to}"


@tool(final=True)
def submit_answer(answer: str) -> str:
    """Give the final answer and finish.

    Args:
        answer: the answer
    """
    return answer


TOOLS = [get_weather, convert_currency, unit_convert, get_population, count_letters]


def names(specs: Sequence[dict[str, Any]]) -> list[str]:
    return [s["function"]["name"] for s in specs]


class Recorder:
    """A model whose replies come from a script, remembering the tool names it was shown at each call."""

    def __init__(self, script: list[Message | str]) -> None:
        self.shown: list[list[str]] = []
        self.script = script

        def reply(messages: Sequence[Message], specs: Sequence[dict[str, Any]]) -> Message | str:
            self.shown.append(names(specs))
            return self.script[len(self.shown) - 1]

        self.model = FunctionModel(reply)


def test_a_run_offers_the_tools_nearest_its_task_and_records_the_ranking() -> None:
    recorder = Recorder([Message.assistant(tool_calls=[ToolCall(name="unit_convert", arguments={
        "value": 10, "from_unit": "km", "to_unit": "mi"})]), "10 km is 6.21 miles."])
    agent = Agent(recorder.model, TOOLS, extensions=[ToolSelection(top_k=3)])
    result = agent.run("How many miles is 10 kilometres?")

    assert result.answer == "10 km is 6.21 miles."
    offered = result.trajectory.records.get(TOOLS_OFFERED)
    assert offered is not None and len(offered.offered) == 3
    assert offered.offered[0] == "unit_convert"  # the nearest tool comes first
    assert recorder.shown == [offered.offered, offered.offered]  # every model call saw the same three tools
    assert set(offered.scores) == {t.name for t in TOOLS}  # every tool was ranked
    ranked = sorted(offered.scores, key=offered.scores.__getitem__, reverse=True)
    assert ranked[:3] == offered.offered
    assert result.trajectory.messages[-2].content == "10.0 km = 6.21 mi"  # the offered tool ran

    # The same agent, another task: the offer follows the task.
    recorder.shown, recorder.script = [], ["It is snowing."]
    weather = agent.run("What is the weather like in Oslo?").trajectory.records.get(TOOLS_OFFERED)
    assert weather is not None and weather.offered[0] == "get_weather"


def test_top_k_none_offers_every_tool_nearest_first() -> None:
    recorder = Recorder(["6.21 miles."])
    result = Agent(recorder.model, TOOLS, extensions=[ToolSelection(top_k=None)]).run("How many miles is 10 km?")
    offered = result.trajectory.records.get(TOOLS_OFFERED)
    assert offered is not None and sorted(offered.offered) == sorted(t.name for t in TOOLS)
    assert offered.offered[0] == "unit_convert" and recorder.shown == [offered.offered]
    assert offered.offered == sorted(offered.scores, key=offered.scores.__getitem__, reverse=True)


def test_few_tools_are_all_offered_and_finishing_tools_always_are() -> None:
    recorder = Recorder(["fine", "fine"])
    small = Agent(recorder.model, TOOLS[:2], extensions=[ToolSelection(top_k=3)])
    result = small.run("How many miles is 10 kilometres?")
    assert recorder.shown == [["get_weather", "convert_currency"]]
    assert result.trajectory.records.get(TOOLS_OFFERED) is None  # nothing was selected

    recorder.shown = []
    Agent(recorder.model, [*TOOLS, submit_answer], extensions=[ToolSelection(top_k=1)]).run("Weather in Oslo?")
    assert recorder.shown[0] == ["get_weather", "submit_answer"]  # (a text reply is then asked to submit)


def test_a_typed_output_tool_stays_offered() -> None:
    class Forecast(BaseModel):
        city: str
        celsius: float

    recorder = Recorder([Message.assistant(tool_calls=[ToolCall(name="final_result", arguments={
        "city": "Oslo", "celsius": 4})])])
    result = Agent(recorder.model, TOOLS, output_type=Forecast, extensions=[ToolSelection(top_k=2)]).run(
        "What is the temperature in Oslo?")
    assert result.output == Forecast(city="Oslo", celsius=4)
    [shown] = recorder.shown
    assert len(shown) == 3 and shown[0] == "get_weather" and shown[-1] == "final_result"


def test_a_resumed_run_shows_the_tools_it_showed_before_it_paused() -> None:
    recorder = Recorder([Message.assistant(tool_calls=[ToolCall(name="send_email", arguments={
        "to": "ana@example.com", "body": "Lunch at noon?"})]), "Sent."])
    agent = Agent(recorder.model, [*TOOLS, send_email], extensions=[ToolSelection(top_k=2)])
    paused = agent.run("Email ana@example.com to ask about lunch at noon")
    [pending] = paused.pending
    done = agent.resume(paused.state, {pending.id: approve()})
    assert done.answer == "Sent."
    assert recorder.shown[0][0] == "send_email" and len(recorder.shown[0]) == 2
    assert recorder.shown[1] == recorder.shown[0]


def test_an_unknown_tool_or_a_top_k_below_1_is_refused() -> None:
    run = RunContext(task="t", model=FunctionModel(lambda m, t: "x"), tools={"get_weather": get_weather},
                     trajectory=Trajectory(task="t"), settings=Agent(FunctionModel(lambda m, t: "x")).settings)
    with pytest.raises(ValueError, match="unknown tools \\['nope'\\]"):
        run.offer(["nope"])
    assert run.offered is None and run.trajectory.records.get(TOOLS_OFFERED) is None
    with pytest.raises(ValueError, match="top_k must be at least 1"):
        ToolSelection(top_k=0)
