"""Earlier turns shown as a transcript (`Agent(history_view="transcript")`, agentkit.loop.transcript)."""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from agentkit import Agent, tool
from agentkit.cli.chat import ChatSession, build_agent
from agentkit.loop.transcript import EARLIER, LEFT_OUT, MAX_TRANSCRIPT_CHARS, NOW, transcript_lines, with_transcript
from agentkit.messages import Message, ToolCall
from agentkit.testing import ScriptedModel, call


@tool
def seed_lot(species: str) -> str:
    """The seed bank's lot for a species."""
    return {"Alpine Aster": "SB-4471, 12400 seeds"}.get(species, "no such species")


def test_without_history_the_message_is_the_users_text() -> None:
    assert with_transcript([], "How much?") == "How much?"
    assert with_transcript([Message.system("ignored")], "How much?") == "How much?"


def test_the_transcript_writes_each_message_calls_with_their_results_and_answers() -> None:
    lookup = ToolCall(id="c1", name="seed_lot", arguments={"species": "Alpine Aster"})
    broken = ToolCall(id="c2", name="seed_lot", arguments={})
    history = [
        Message.user("Which lot holds the Alpine Aster?"),
        Message.assistant(tool_calls=[lookup, broken]),
        Message.tool(lookup, "SB-4471, 12400 seeds"),
        Message.tool(broken, "missing argument 'species'", is_error=True),
        Message.assistant("It is lot SB-4471."),
    ]
    assert transcript_lines(history) == [
        "user: Which lot holds the Alpine Aster?",
        'call seed_lot({"species": "Alpine Aster"}) returned: SB-4471, 12400 seeds',
        "call seed_lot({}) returned (error): missing argument 'species'",
        "assistant: It is lot SB-4471.",
    ]
    text = with_transcript(history, "And how many seeds?")
    assert text.startswith(EARLIER + "\nuser: Which lot") and text.endswith(f"\n\n{NOW}\nAnd how many seeds?")


def test_a_long_history_keeps_its_latest_lines_within_the_bound_and_renders_in_linear_time() -> None:
    history: list[Message] = []
    for i in range(2_000):
        history += [Message.user(f"question {i} " + "x" * 3_000), Message.assistant(f"answer {i}")]
    t0 = time.perf_counter()
    text = with_transcript(history, "last?")
    assert time.perf_counter() - t0 < 2.0
    body = text.split("\n")
    assert body[1] == LEFT_OUT and body[-1] == "last?" and body[-4] == "assistant: answer 1999"
    assert len(text) < MAX_TRANSCRIPT_CHARS + 200
    assert all(len(line) <= 1_600 for line in body)  # a long message is cut in the transcript


def test_a_chat_in_transcript_view_sends_each_turn_as_one_fresh_request_and_keeps_the_turns() -> None:
    model = ScriptedModel([call("seed_lot", species="Alpine Aster"), "Lot SB-4471.", "12400 seeds."])
    session = ChatSession(lambda m: build_agent(m, tools="none", extra_tools=[seed_lot], history_view="transcript"),
                          model, "scripted", Console(file=io.StringIO()))
    session.ask("Which lot holds the Alpine Aster?")
    session.ask("How many seeds are in it?")
    second = model.requests[-1]
    assert [m.role for m in second] == ["system", "user"]
    assert second[1].content == "\n".join([
        EARLIER,
        "user: Which lot holds the Alpine Aster?",
        'call seed_lot({"species": "Alpine Aster"}) returned: SB-4471, 12400 seeds',
        "assistant: Lot SB-4471.",
        "",
        NOW,
        "How many seeds are in it?",
    ])
    # the conversation the chat keeps is the turns, as in the messages view
    assert [m.role for m in session.history] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert session.history[4].content == "How many seeds are in it?"
    assert session.trajectories[-1].task == "How many seeds are in it?"


def test_the_messages_view_sends_the_turns_and_a_single_request_is_the_same_in_both_views() -> None:
    turns = ScriptedModel(["Hello.", "Fine."])
    agent = Agent(turns)
    first = agent.run("Hi")
    history = agent.continued([], first)
    agent.run("How are you?", history=history)
    assert [m.role for m in turns.requests[-1]] == ["system", "user", "assistant", "user"]

    single = [ScriptedModel(["Paris."]) for _ in range(2)]
    Agent(single[0], tools=[seed_lot]).run("Capital of France?")
    Agent(single[1], tools=[seed_lot], history_view="transcript").run("Capital of France?")
    assert single[0].requests == single[1].requests


def test_an_unknown_history_view_is_refused() -> None:
    with pytest.raises(ValueError, match="history_view"):
        Agent(ScriptedModel(["x"]), history_view="summary")  # type: ignore[arg-type]
