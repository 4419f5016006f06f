"""Grounded calls: a call with an id the conversation never wrote, or a later call of a reply with such a number,
is not run once; the reply's other calls run; the call made again runs."""

from __future__ import annotations

from agentkit import Agent, tool
from agentkit.loop.grounding import Grounding
from agentkit.messages import Message, ToolCall
from agentkit.testing import ScriptedModel, call, calls

TEMPERATURES = {"oslo": 4, "cairo": 33}
PISTES = {"PS-41": "5200 m, groomed"}


@tool
def get_weather(city: str) -> str:
    """Temperature in Celsius for a city."""
    return f"{city}: {TEMPERATURES[city.lower()]} °C"


@tool
def to_fahrenheit(celsius: float) -> str:
    """Convert Celsius to Fahrenheit."""
    return f"{celsius * 9 / 5 + 32:.1f} °F"


@tool
def find_piste(name: str) -> str:
    """The id of a piste by its name."""
    return "PS-41" if name == "Marmot" else "no such piste"


@tool
def piste_report(piste: str) -> str:
    """The report of a piste by its id."""
    return PISTES.get(piste, f"{piste} is not a piste")


def _reply(*items: tuple[str, dict[str, object]]) -> Message:
    return Message.assistant(tool_calls=[ToolCall(name=n, arguments=a) for n, a in items])


def _waiting(earlier: list[Message], reply: Message) -> dict[str, str]:
    return dict(Grounding().waiting(reply, [*earlier, reply]))


def test_a_later_call_with_a_number_nobody_wrote_waits() -> None:
    reply = _reply(("get_weather", {"city": "Oslo"}), ("to_fahrenheit", {"celsius": 15}))
    waiting = _waiting([Message.user("How warm is Oslo, in Fahrenheit?")], reply)
    assert list(waiting) == [reply.tool_calls[1].id]
    assert waiting[reply.tool_calls[1].id].startswith("Not run: 15 (argument celsius)")


def test_values_the_conversation_wrote_pass() -> None:
    earlier = [Message.user("Convert 1,250 km and 3.50 miles, order AC 1187 from 2026-11-28, flight ba123")]
    reply = _reply(("a", {"x": 1}), ("b", {"km": 1250}), ("c", {"miles": 3.5}), ("d", {"order": "ac-1187"}),
                   ("e", {"day": "2026-11-28"}), ("f", {"expression": "1250 * 3.5"}), ("g", {"flag": True, "n": 1}),
                   ("h", {"flight": "BA-123"}))
    assert _waiting(earlier, reply) == {}


def test_an_id_is_checked_in_every_call_a_number_only_after_the_first() -> None:
    earlier = [Message.user("hi")]
    assert _waiting(earlier, _reply(("a", {"x": 77}))) == {}  # a lone call's number: its own to choose
    lone_id = _reply(("piste_report", {"piste": "PS-01"}))
    assert _waiting(earlier, lone_id)[lone_id.tool_calls[0].id].startswith("Not run: 'PS-01' (argument piste)")
    made_up = _reply(("a", {"x": 2}), ("b", {"y": "AC-0932"}), ("c", {"items": [3, 99]}), ("d", {"q": {"n": 12}}))
    assert set(_waiting(earlier, made_up)) == {c.id for c in made_up.tool_calls[1:]}


def test_free_text_is_not_checked() -> None:
    reply = _reply(("a", {}), ("run_sql", {"query": "SELECT name FROM tracks WHERE id = 'TR-9' LIMIT 5"}),
                   ("say", {"text": "x" * 300 + " 42 QX-77"}))
    assert _waiting([Message.user("the five dearest tracks")], reply) == {}


def test_a_value_an_earlier_call_used_counts_as_written() -> None:
    earlier = [Message.user("go"), _reply(("run_sql", {"query": "SELECT 4711 FROM t WHERE code = 'ZX-9'"}))]
    assert _waiting(earlier, _reply(("a", {}), ("b", {"n": 4711, "code": "ZX-9"}))) == {}


def test_the_same_call_made_again_runs() -> None:
    grounding = Grounding()
    messages = [Message.user("weather in Oslo and 15 degrees... no, 19 in F")]
    first = _reply(("get_weather", {"city": "Oslo"}), ("to_fahrenheit", {"celsius": 77}))
    messages.append(first)
    assert list(grounding.waiting(first, messages)) == [first.tool_calls[1].id]
    again = _reply(("to_fahrenheit", {"celsius": 77}), ("to_fahrenheit", {"celsius": 77}))
    messages.append(again)
    assert grounding.waiting(again, messages) == {}


def test_the_agent_runs_the_first_call_and_the_second_again_with_its_result() -> None:
    model = ScriptedModel([
        calls(("get_weather", {"city": "Oslo"}), ("to_fahrenheit", {"celsius": 15})),
        call("to_fahrenheit", celsius=4),
        "Oslo is 4 °C, 39.2 °F.",
    ])
    agent = Agent(model, tools=[get_weather, to_fahrenheit], wait_for_results=True)
    result = agent.run("How warm is Oslo in Fahrenheit?")
    observations = [m for m in result.trajectory.messages if m.role == "tool"]
    assert [o.content for o in observations][::2] == ["Oslo: 4 °C", "39.2 °F"]
    assert observations[1].is_error and observations[1].content.startswith("Not run: 15 (argument celsius)")
    assert "call to_fahrenheit with the value it gives" in observations[1].content
    assert result.answer == "Oslo is 4 °C, 39.2 °F." and len(model.requests) == 3


def test_a_guessed_id_is_looked_up_first() -> None:
    model = ScriptedModel([call("piste_report", piste="PS-01"), call("find_piste", name="Marmot"),
                           call("piste_report", piste="PS-41"), "Marmot: 5200 m, groomed."])
    result = Agent(model, tools=[find_piste, piste_report], wait_for_results=True).run("How long is the Marmot piste?")
    observations = [m.content for m in result.trajectory.messages if m.role == "tool"]
    assert observations[0].startswith("Not run: 'PS-01'") and observations[1:] == ["PS-41", "5200 m, groomed"]


def test_calls_side_by_side_with_given_values_all_run_and_the_check_is_off_by_default() -> None:
    model = ScriptedModel([calls(("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Cairo"})), "done"])
    result = Agent(model, tools=[get_weather], wait_for_results=True).run("Weather in Oslo and Cairo?")
    assert [m.content for m in result.trajectory.messages if m.role == "tool"] == ["Oslo: 4 °C", "Cairo: 33 °C"]
    model = ScriptedModel([call("piste_report", piste="PS-41"), "ok"])
    result = Agent(model, tools=[piste_report]).run("report?")
    assert [m.content for m in result.trajectory.messages if m.role == "tool"] == ["5200 m, groomed"]


def test_a_reply_a_check_hook_copied_is_still_checked() -> None:
    """The trajectory keeps the model's own reply; the loop runs a fixed copy: its values are not "written"."""
    own = _reply(("get_weather", {"city": "Oslo"}), ("to_fahrenheit", {"celsius": 15}))
    fixed = own.model_copy(update={"tool_calls": list(own.tool_calls)})
    waiting = Grounding().waiting(fixed, [Message.user("Oslo in Fahrenheit?"), own])
    assert list(waiting) == [own.tool_calls[1].id]
