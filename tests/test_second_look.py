"""The second look (`Agent(second_look=True)`): a chat turn answered in text is asked again seeing only the earlier
turns that called tools; a call made then goes on in the real conversation."""

from __future__ import annotations

from collections.abc import Sequence
from io import StringIO
from typing import Any

from rich.console import Console

from agentkit import Agent, tool
from agentkit.cli.chat import ChatSession, build_agent
from agentkit.loop.second_look import FIRST_LOOK, SECOND_LOOK, lookup_view
from agentkit.messages import Message, ToolCall
from agentkit.models.protocol import GenerationSettings, Model
from agentkit.testing import FunctionModel, ScriptedModel, call


@tool
def seed_lot(species: str) -> str:
    """The seed lot of a species: its id and how many seeds it holds."""
    return {"Alpine Aster": "SB-4471: 12400 seeds", "Blue Flax": "SB-2210: 800 seeds"}.get(species, "no lot")


def _called(request: str, name: str, result: str) -> list[Message]:
    lookup = ToolCall(name=name, arguments={"species": request})
    return [Message.user(request), Message.assistant(tool_calls=[lookup]), Message.tool(lookup, result),
            Message.assistant("Done.")]


def test_the_view_keeps_the_system_message_the_turns_that_called_and_the_request() -> None:
    system, chat = Message.system("Be brief."), [Message.user("Hi!"), Message.assistant("Hello.")]
    looked_up = _called("Alpine Aster", "seed_lot", "SB-4471: 12400 seeds")
    made_up = [Message.user("And Blue Flax?"), Message.assistant("SB-0001, 500 seeds.")]
    request = Message.user("How many seeds in both?")
    assert lookup_view([system, *chat, *looked_up, *made_up, request]) == [system, *looked_up, request]
    assert lookup_view([system, *chat, request]) == [system, request]
    assert lookup_view([system, *looked_up, request]) is None  # nothing left out: the prompt itself
    assert lookup_view([system, request]) is None and lookup_view([system, *chat]) is None
    assert lookup_view([*chat, request]) == [request]  # no system message


def _lookups_unless_shown_a_made_up_answer(calls: list[Sequence[Message]]) -> FunctionModel:
    """A model that calls seed_lot when the earlier made-up answer is not in view, and answers from the
    results once it has them."""

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> Message:
        calls.append(list(messages))
        if messages[-1].role == "tool":
            return Message.assistant(f"From the lot: {messages[-1].content}.")
        if any(m.role == "assistant" and "made up" in m.content for m in messages):
            return Message.assistant("Blue Flax: about 500 seeds (made up).")
        request = messages[-1].content
        return Message.assistant(tool_calls=[ToolCall(name="seed_lot", arguments={
            "species": "Blue Flax" if "Flax" in request else "Alpine Aster"})])

    return FunctionModel(reply)


def test_in_a_chat_a_turn_answered_from_nothing_gets_its_call_on_the_second_look() -> None:
    seen: list[Sequence[Message]] = []
    model = _lookups_unless_shown_a_made_up_answer(seen)

    def factory(m: Model) -> Agent:
        return build_agent(m, tools="calculator", extra_tools=[seed_lot], settings=GenerationSettings(temperature=0),
                           second_look=True)

    out = StringIO()
    chat = ChatSession(factory, model, "scripted", Console(file=out, width=120), read_answer=lambda _q: "y")
    chat.history = [Message.user("What do I have of Zinnia?"), Message.assistant("Zinnia: 300 seeds (made up).")]
    result = chat.ask("And how many seeds of Blue Flax?")
    assert result is not None and result.answer == "From the lot: SB-2210: 800 seeds."
    first, second, after = seen  # the first look saw the made-up answer, the second did not, then the result
    assert first[1].content == "What do I have of Zinnia?" and [m.role for m in second] == ["system", "user"]
    assert after[-1].role == "tool" and after[1].content == "What do I have of Zinnia?"  # on in the real chat
    assert result.trajectory.turns[0].context == FIRST_LOOK
    assert result.trajectory.turns[0].output.content.startswith("Blue Flax: about 500 seeds")
    main = [t for t in result.trajectory.turns if t.context == "main"]
    assert [c.name for c in main[0].output.tool_calls] == ["seed_lot"]
    assert chat.history[-3].tool_calls[0].arguments == {"species": "Blue Flax"}  # the call went on in the chat
    assert "second look" in out.getvalue()  # one quiet line says the answer was replaced

    seen.clear()
    chat.history = []
    result = chat.ask("How many seeds of Blue Flax?")  # no earlier turns: one look
    assert result is not None and len(seen) == 2 and all(t.context == "main" for t in result.trajectory.turns)


def test_a_second_answer_in_text_leaves_the_first_standing_and_is_recorded() -> None:
    model = ScriptedModel(["Hello again!", "Hi there."])
    history = [Message.user("Hi!"), Message.assistant("Hello.")]
    result = Agent(model, tools=[seed_lot], second_look=True).run("Hi again!", history=history)
    assert result.answer == "Hello again!" and len(model.requests) == 2
    looked, kept = result.trajectory.turns  # the look not kept is recorded before the step's turn
    assert kept.context == "main" and looked.context == SECOND_LOOK and looked.output.content == "Hi there."
    assert [m.role for m in looked.input or []] == ["system", "user"]


def test_off_by_default_and_without_tools_or_on_a_later_step() -> None:
    history = [Message.user("Hi!"), Message.assistant("Hello.")]
    for agent in (Agent(ScriptedModel(["Hello again!"]), tools=[seed_lot]),
                  Agent(ScriptedModel(["Hello again!"]), second_look=True)):
        assert agent.run("Hi again!", history=history).answer == "Hello again!"
        assert len(agent.model.requests) == 1  # type: ignore[attr-defined]
    model = ScriptedModel([call("seed_lot", species="Blue Flax"), "800 seeds."])
    result = Agent(model, tools=[seed_lot], second_look=True).run("Blue Flax?", history=history)
    assert result.answer == "800 seeds." and len(model.requests) == 2  # the answer after a call: no second look
