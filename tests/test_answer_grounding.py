"""Checked answers: an answer in text stating numbers or ids that no result, call or user message wrote is sent
back once (`Agent(check_answers=True)`); the second answer stands."""

from __future__ import annotations

import time

from agentkit import Agent, tool
from agentkit.loop.grounding import ungrounded_values
from agentkit.messages import Message, ToolCall
from agentkit.testing import ScriptedModel, call


@tool
def get_weather(city: str) -> str:
    """Temperature in Celsius for a city."""
    return f"{city}: {4 if city == 'Oslo' else 33} °C"


@tool(final=True)
def finish(answer: str) -> str:
    """Give the final answer."""
    return answer


def _looked_up(result: str, request: str = "How is the seed lot of Alpine Aster doing?") -> list[Message]:
    lookup = ToolCall(name="seed_lot", arguments={"species": "Alpine Aster"})
    return [Message.user(request), Message.assistant(tool_calls=[lookup]), Message.tool(lookup, result)]


def test_values_a_result_or_the_user_wrote_pass_in_their_usual_forms() -> None:
    seen = _looked_up("lot SB-4471: 12400 seeds, 0.72 germinated, 212.5 litres, 1200 m", "Lot for 300 seedlings?")
    for answer in ["Lot SB-4471 (sb 4471) holds 12,400 seeds.", "72% germinated.", "About 212 litres, or 213.",
                   "1.2 km, for 300 seedlings.", "It is the 2nd lot, 300ml? 1 or 0.", "It keeps well."]:
        assert ungrounded_values(answer, seen) == [], answer


def test_made_up_numbers_and_ids_are_named_as_written() -> None:
    seen = _looked_up("lot SB-4471: 12400 seeds")
    assert ungrounded_values("Lot SB-0001 holds 12400 seeds, 80% of them sprout.", seen) == ["SB-0001", "80"]
    assert ungrounded_values("4172 + 88 = 4260 parts.", [Message.user("4172 bolts and 88 hinges: how many?")]) == [
        "4260"]
    assert ungrounded_values("a 75cl bottle", seen) == ["75"]  # a unit's number is checked as a number
    assert len(ungrounded_values(" ".join(str(n) for n in range(100, 200)), seen)) == 3  # at most `limit`


def test_only_what_the_user_tools_and_calls_wrote_counts_not_the_models_own_text() -> None:
    made_up = Message.assistant("Lucia plays IV-001, worth 10000.")
    later = [Message.user("Which instrument does Lucia play?"), made_up, Message.user("What is it worth?")]
    assert ungrounded_values("IV-001 is worth 10000.", later) == ["IV-001", "10000"]
    lookup = ToolCall(name="instrument_card", arguments={"instrument": "IV-001"})
    assert ungrounded_values("IV-001 is worth 10000.", [*later, Message.assistant(tool_calls=[lookup])]) == ["10000"]


def test_reading_a_long_answer_and_history_stays_fast() -> None:
    history = _looked_up(" ".join(f"{n}.5 PS-{n}" for n in range(20_000)))
    started = time.perf_counter()
    values = ungrounded_values("x9 " * 200_000 + " 7.25", history)
    assert values == ["x9"] and time.perf_counter() - started < 2.0  # the answer is read up to 4000 characters


def test_a_made_up_answer_is_sent_back_once_and_the_lookup_then_made() -> None:
    model = ScriptedModel(["Oslo is 15 °C today.", call("get_weather", city="Oslo"), "Oslo is 4 °C today."])
    result = Agent(model, tools=[get_weather], check_answers=True).run("How warm is Oslo?")
    assert result.answer == "Oslo is 4 °C today." and len(model.requests) == 3
    asked = [m.content for m in result.trajectory.messages if m.role == "user"]
    assert asked[1].startswith("Your answer states 15, which no tool result") and "Call the offered tool" in asked[1]
    assert [s.tool_choice if s else None for s in model.settings] == [None, "required", None]  # then a call


def test_the_answer_after_the_call_stands_and_grounded_answers_pass_untouched() -> None:
    model = ScriptedModel(["It is 15 °C.", call("get_weather", city="Cairo"), "Oslo is 15 °C, I am sure."])
    result = Agent(model, tools=[get_weather], check_answers=True).run("How warm is Oslo?")
    assert result.answer == "Oslo is 15 °C, I am sure." and len(model.requests) == 3
    model = ScriptedModel([call("get_weather", city="Oslo"), "Oslo: 4 °C."])
    assert Agent(model, tools=[get_weather], check_answers=True).run("Oslo?").answer == "Oslo: 4 °C."
    assert len(model.requests) == 2


def test_off_by_default_without_tools_on_the_last_step_and_with_a_finishing_tool() -> None:
    for agent in (Agent(ScriptedModel(["It is 15 °C."]), tools=[get_weather]),
                  Agent(ScriptedModel(["It is 15 °C."]), check_answers=True),
                  Agent(ScriptedModel(["It is 15 °C."]), tools=[get_weather], check_answers=True, max_steps=1)):
        assert agent.run("How warm is Oslo?").answer == "It is 15 °C."
        assert len(agent.model.requests) == 1  # type: ignore[attr-defined]
    model = ScriptedModel(["It is 15 °C.", call("finish", answer="15")])
    result = Agent(model, tools=[get_weather, finish], check_answers=True).run("How warm is Oslo?")
    reminders = [m.content for m in result.trajectory.messages if m.role == "user"][1:]
    assert len(reminders) == 1 and reminders[0].startswith("A reply in text does not finish this task")


def test_the_chat_shows_a_sent_back_answer_as_one_quiet_line() -> None:
    from io import StringIO

    from rich.console import Console

    from cli.console import EventPrinter

    out = StringIO()
    printer = EventPrinter(Console(file=out, width=120))
    model = ScriptedModel(["Oslo is 15 °C.", call("get_weather", city="Oslo"), "Oslo is 4 °C."])
    for event in Agent(model, tools=[get_weather], check_answers=True).stream("How warm is Oslo?"):
        printer.handle(event)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Oslo is 15 °C."
    assert lines[1] == "+ check: values no result gave: the answer was sent back once"
    assert lines[2].startswith("⚙ get_weather(city='Oslo')") and lines[-1] == "Oslo is 4 °C."
