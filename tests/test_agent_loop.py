"""The agent loop with a scripted model: each situation must end sensibly and be recorded."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from agentkit import Agent, Message, ToolCall, tool
from agentkit.events import ContextAdded, ModelText, ModelTurn, PhaseStarted, RunFinished, ToolFinished, ToolStarted
from agentkit.loop.extensions import Instructions
from agentkit.loop.repeats import call_key, uses_results
from agentkit.models.protocol import GenerationSettings, ModelResponse, TransientModelError
from agentkit.testing import FunctionModel, ScriptedModel, ScriptExhausted, call, calls
from agentkit.trajectory import read_jsonl


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(timeout_s=0.2)
def slow(seconds: float) -> str:
    """Sleep for a while."""
    time.sleep(seconds)
    return "done"


@tool
def boom() -> str:
    """Always fails."""
    raise RuntimeError("kaput")


@tool(final=True)
def final_answer(answer: str) -> str:
    """Give the final answer."""
    return answer


@tool
def run_query(sql: str) -> str:
    """Run a query."""
    return "42"


@tool(final=True)
def confirm(sql: str) -> str:
    """Confirm the final query; ends the run."""
    return f"confirmed {sql}"


def tool_messages(result) -> list[Message]:  # type: ignore[no-untyped-def]
    return [m for m in result.trajectory.messages if m.role == "tool"]


def test_single_tool_then_answer() -> None:
    model = ScriptedModel([call("add", a=2, b=40), "The answer is 42."])
    result = Agent(model, tools=[add]).run("What is 2 + 40?")
    assert result.answer == "The answer is 42." and result.stop_reason == "final"
    [obs] = tool_messages(result)
    assert obs.content == "42" and not obs.is_error
    # The second request saw the observation, answering the first call by id.
    second = model.requests[1]
    assert second[-1].role == "tool" and second[-1].tool_call_id == second[-2].tool_calls[0].id
    assert [m.role for m in result.trajectory.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert [t.n_input for t in result.trajectory.turns] == [2, 4]


def test_parallel_tools_run_concurrently() -> None:
    spans: list[tuple[float, float]] = []

    @tool
    def nap(seconds: float) -> float:
        """Sleep."""
        start = time.perf_counter()
        time.sleep(seconds)
        spans.append((start, time.perf_counter()))
        return seconds

    naps = calls(("nap", {"seconds": 0.3}), ("nap", {"seconds": 0.3}), ("add", {"a": 1, "b": 1}))
    model = ScriptedModel([naps, "ok"])
    result = Agent(model, tools=[nap, add]).run("nap twice")
    assert max(s for s, _ in spans) < min(e for _, e in spans)  # the second nap began before the first ended
    assert [m.content for m in tool_messages(result)] == ["0.3", "0.3", "2"]


def test_unknown_tool_is_an_observation() -> None:
    model = ScriptedModel([call("nope", x=1), "sorry"])
    result = Agent(model, tools=[add]).run("t")
    [obs] = tool_messages(result)
    assert obs.is_error and "Unknown tool 'nope'" in obs.content
    assert result.answer == "sorry"


def test_bad_arguments_are_an_observation_the_model_can_fix() -> None:
    model = ScriptedModel([call("add", a="two", b=2), call("add", a=2, b=2), "4"])
    result = Agent(model, tools=[add]).run("t")
    first, second = tool_messages(result)
    assert first.is_error and "Invalid arguments for add" in first.content
    assert second.content == "4" and result.answer == "4"


def test_unparseable_text_call_is_fed_back() -> None:
    model = ScriptedModel(["<tool_call>{not json}</tool_call>", '<tool_call>{"name": "add", "arguments": '
                           '{"a": 1, "b": 2,}}</tool_call>', "3"], text_tools=True)
    result = Agent(model, tools=[add]).run("t")
    msgs = result.trajectory.messages
    assert msgs[2].parse_error and msgs[3].role == "user" and "could not be parsed" in msgs[3].content
    assert tool_messages(result)[0].content == "3" and result.answer == "3"


def test_tool_exception_and_timeout() -> None:
    model = ScriptedModel([call("boom"), call("slow", seconds=2.0), "gave up"])
    start = time.perf_counter()
    result = Agent(model, tools=[boom, slow]).run("t")
    crashed, timed_out = tool_messages(result)
    assert crashed.is_error and "RuntimeError: kaput" in crashed.content
    assert timed_out.is_error and "timed out after 0.2 s" in timed_out.content
    assert time.perf_counter() - start < 1.5
    assert result.answer == "gave up"


def test_step_limit_stops_the_run() -> None:
    model = FunctionModel(lambda messages, tools: call("add", a=len(messages), b=1))  # a new call each step
    result = Agent(model, tools=[add], max_steps=4).run("loop forever")
    assert result.answer is None and result.stop_reason == "max_steps"  # it called a tool when told to answer
    assert len(result.trajectory.turns) == 4 and len(tool_messages(result)) == 4
    assert [s.tool_choice if s else None for s in model.settings] == [None, None, None, "none"]


def test_the_last_step_answers_in_text_instead_of_calling_again() -> None:
    """A run that spent its steps calling tools ends with an answer, not with none (smolagents' final answer
    at the step limit): the last reply is asked with no tools offered."""
    def reply(messages: list[Message], tools: object) -> Message | str:
        if model.settings[-1] is not None and model.settings[-1].tool_choice == "none":
            return "The sum is 5."
        return call("add", a=len(messages), b=1)

    model = FunctionModel(reply)
    result = Agent(model, tools=[add], max_steps=3).run("add things")
    assert result.answer == "The sum is 5." and result.stop_reason == "final"
    assert [s.tool_choice if s else None for s in model.settings] == [None, None, "none"]


def test_the_last_step_calls_the_finishing_tool_and_one_step_is_left_free() -> None:
    def reply(messages: list[Message], tools: object) -> Message | str:
        if model.settings[-1] is not None and model.settings[-1].tool_choice == "confirm":
            return call("confirm", sql="SELECT 42")
        return call("run_query", sql=f"SELECT {len(messages)}")

    model = FunctionModel(reply)
    result = Agent(model, tools=[run_query, confirm], max_steps=4).run("the answer?")
    assert result.answer == "confirmed SELECT 42" and result.stop_reason == "final"
    assert [s.tool_choice if s else None for s in model.settings] == [None, None, None, "confirm"]
    single = FunctionModel(lambda messages, tools: call("add", a=1, b=2))
    Agent(single, tools=[add], max_steps=1).run("one step")  # its only step may still call a tool
    assert [s.tool_choice if s else None for s in single.settings] == [None]


def test_final_tool_ends_the_run_with_its_output() -> None:
    model = ScriptedModel([call("final_answer", answer="Paris")])
    result = Agent(model, tools=[final_answer]).run("capital?")
    assert result.answer == "Paris" and result.stop_reason == "final"


def test_script_exhaustion_is_loud() -> None:
    with pytest.raises(ScriptExhausted):
        Agent(ScriptedModel([call("add", a=1, b=1)]), tools=[add]).run("t")


def test_stream_yields_events_in_order() -> None:
    model = ScriptedModel([call("add", a=1, b=2), "three, for sure"])
    events = list(Agent(model, tools=[add]).stream("t"))
    kinds = [type(e) for e in events]
    assert kinds[0] is PhaseStarted and kinds[-1] is RunFinished
    assert kinds.index(ToolStarted) < kinds.index(ToolFinished)
    text = "".join(e.text for e in events if isinstance(e, ModelText))
    assert text == "three, for sure"
    assert sum(isinstance(e, ModelTurn) for e in events) == 2
    assert events[-1].result.answer == "three, for sure"


def test_async_variants() -> None:
    async def go() -> tuple[str | None, list[type]]:
        agent = Agent(ScriptedModel([call("add", a=1, b=2), "3", call("add", a=1, b=2), "3"]), tools=[add])
        result = await agent.arun("t")
        kinds = [type(e) async for e in agent.astream("t")]
        return result.answer, kinds

    answer, kinds = asyncio.run(go())
    assert answer == "3" and kinds[-1] is RunFinished and ToolFinished in kinds


def test_history_reward_log_and_extension(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ext = Instructions("Always be brief.", title="House rules")
    model = ScriptedModel(["fine", "still fine"])
    log = tmp_path / "runs.jsonl"
    agent = Agent(model, extensions=[ext], log=log)
    events = list(agent.stream("hello", reward_fn=lambda t: {"execution": 1.0, "format": 0.1}, task_id="t1"))
    first = events[-1].result
    assert any(isinstance(e, ContextAdded) and e.title == "House rules" for e in events)
    assert "## House rules\nAlways be brief." in model.requests[0][0].content
    assert first.trajectory.reward == pytest.approx(1.1) and first.trajectory.rewards["format"] == 0.1
    assert first.trajectory.extras["instructions"] == {"shown": True}
    assert ext.seen == [first.trajectory.id]
    history = first.trajectory.messages[1:]
    second = agent.run("and again?", history=history, reward_fn=lambda t: 0.0)
    assert [m.content for m in model.requests[1][1:]] == ["hello", "fine", "and again?"]
    logged = read_jsonl(log)
    assert [t.id for t in logged] == [first.trajectory.id, second.trajectory.id]
    assert logged[0].task_id == "t1" and logged[1].reward == 0.0


def test_tool_phase_labels_the_turn() -> None:
    @tool(phase="explore_schema", read_only=True)
    def list_tables() -> str:
        """List tables."""
        return "a, b"

    result = Agent(ScriptedModel([call("list_tables"), "done"]), tools=[list_tables]).run("t")
    assert [t.phase for t in result.trajectory.turns] == ["explore_schema", "act"]


def test_transient_errors_are_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "sleep", lambda s: None)
    failures = iter([TransientModelError("429"), TransientModelError("503")])

    class Flaky(FunctionModel):
        def generate(self, messages, tools=(), settings=None) -> ModelResponse:  # type: ignore[no-untyped-def]
            err = next(failures, None)
            if err:
                raise err
            return super().generate(messages, tools, settings)

    assert Agent(Flaky(lambda m, t: "ok")).run("t").answer == "ok"
    failures = iter([TransientModelError("x")] * 10)
    with pytest.raises(TransientModelError):
        Agent(Flaky(lambda m, t: "ok"), max_retries=2).run("t")


def test_unknown_planner_and_model_are_clear_errors() -> None:
    from agentkit.models import ModelConfigError

    with pytest.raises(ValueError, match="unknown planner"):
        Agent(ScriptedModel([]), planner="nope")
    with pytest.raises(ModelConfigError, match="backend prefix"):
        Agent("gpt-4o")
    with pytest.raises(ModelConfigError, match="unknown model backend"):
        Agent("foo:bar")


def test_samples_majority_vote_and_chooser() -> None:
    answers = iter(["Paris", "Lyon", "paris ", "Nice"])
    agent = Agent(FunctionModel(lambda m, t: next(answers)), samples=3)
    assert agent.run("capital?").answer == "Paris"

    class PickLast(Instructions):
        def choose(self, results) -> int:  # type: ignore[no-untyped-def]
            return len(results) - 1

    answers = iter(["a", "b"])
    agent = Agent(FunctionModel(lambda m, t: next(answers)), samples=2, extensions=[PickLast("x")])
    assert agent.run("t").answer == "b"
    with pytest.raises(ValueError, match="samples"):
        Agent(FunctionModel(lambda m, t: "x"), samples=0)


def test_a_repeated_call_is_answered_from_its_result_and_a_repeat_without_tools_ends_the_run() -> None:
    ran: list[int] = []

    @tool
    def mul(a: int, b: int) -> int:
        """Multiply two integers."""
        ran.append(a * b)
        return a * b

    model = ScriptedModel([call("mul", a=17, b=23)] * 4 + ["never asked"])
    result = Agent(model, tools=[mul]).run("17 * 23?")
    assert ran == [391]  # the tool ran once
    observations = [m.content for m in result.trajectory.messages if m.role == "tool"]
    assert observations[0] == "391" and "already called mul" in observations[1] and "391" in observations[1]
    # the second repeat in a row makes the next reply answer with no tools; it repeated anyway: the end
    assert [s.tool_choice if s else None for s in model.settings] == [None, None, None, "none"]
    assert result.stop_reason == "repeated_call" and result.answer == "391"
    assert len(result.trajectory.turns) == 4


def test_a_tool_choice_the_user_set_is_kept_and_a_second_repeat_ends_the_run() -> None:
    @tool
    def mul(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    model = ScriptedModel([call("mul", a=17, b=23)] * 3 + ["never asked"])
    result = Agent(model, tools=[mul], settings=GenerationSettings(tool_choice="mul")).run("17 * 23?")
    assert [s.tool_choice if s else None for s in model.settings] == ["mul"] * 3
    assert result.stop_reason == "repeated_call" and result.answer == "391"


def test_at_the_step_limit_a_second_repeat_ends_the_run_with_its_results() -> None:
    @tool
    def mul(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    model = ScriptedModel([call("mul", a=17, b=23)] * 3 + ["never asked"])
    result = Agent(model, tools=[mul], max_steps=3).run("17 * 23?")
    assert result.stop_reason == "repeated_call" and result.answer == "391" and len(model.settings) == 3


def test_after_two_repeats_without_a_finishing_tool_the_next_reply_answers_with_no_tools_offered() -> None:
    @tool
    def weather(city: str) -> str:
        """Weather for a city."""
        return {"Paris": "Paris: 18 °C", "Tokyo": "Tokyo: 24 °C", "Oslo": "Oslo: 4 °C"}[city]

    paris, tokyo, oslo = (call("weather", city=c) for c in ("Paris", "Tokyo", "Oslo"))
    # one repeat, then the next item; two repeats in a row, then the answer
    model = ScriptedModel([paris, paris, tokyo, oslo, oslo, oslo, "Paris 18 °C, Tokyo 24 °C, Oslo 4 °C.", "never"])
    result = Agent(model, tools=[weather]).run("Weather in Paris, Tokyo and Oslo?")
    assert [s.tool_choice if s else None for s in model.settings] == [None] * 6 + ["none"]
    repeat = [m.content for m in result.trajectory.messages if m.role == "tool"][1]
    assert "already called weather" in repeat and "call the tool for that instead" in repeat
    # the answering reply sees the run without its loops: repeated calls and what they got back are left out
    assert [m.content for m in model.requests[-1] if m.role == "tool"] == ["Paris: 18 °C", "Tokyo: 24 °C",
                                                                           "Oslo: 4 °C"]
    assert len(result.trajectory.messages) == 15  # the trajectory keeps everything
    assert result.stop_reason == "final" and result.answer == "Paris 18 °C, Tokyo 24 °C, Oslo 4 °C."


def test_an_empty_answer_after_a_repeat_ends_the_run_with_the_repeated_results() -> None:
    @tool
    def mul(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    model = ScriptedModel([call("mul", a=17, b=23)] * 3 + ["  ", "never asked"])
    result = Agent(model, tools=[mul]).run("17 * 23?")
    assert result.stop_reason == "repeated_call" and result.answer == "391"


def test_an_answer_after_repeats_that_uses_nothing_the_run_found_gives_way_to_the_results() -> None:
    @tool
    def population(country: str) -> str:
        """Population of a country."""
        return "Brazil: 216400000"

    brazil = call("population", country="Brazil")
    for reply, answer, stop in [("Great! Thank you for providing the response.", "Brazil: 216400000", "repeated_call"),
                                ("About 216,400,000 people.", "About 216,400,000 people.", "final")]:
        result = Agent(ScriptedModel([brazil] * 3 + [reply]), tools=[population]).run("Population of Brazil?")
        assert (result.answer, result.stop_reason) == (answer, stop)


def test_uses_results_looks_for_numbers_and_words_of_the_results() -> None:
    results = ["New York: 12 °C, rain"]
    assert uses_results("Yes, it is raining in New York.", results)
    assert uses_results("It is 12 degrees.", results)
    assert not uses_results("I apologize, but I need more information.", results)
    assert uses_results("anything", [])  # nothing to use: any answer stands


def test_the_same_unreadable_call_twice_makes_the_next_reply_answer_in_text() -> None:
    @tool
    def mul(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    invented = '{"name": "sky_color", "arguments": {"color": "blue"}}'
    model = ScriptedModel([invented, invented, "The sky is blue.", "never asked"], text_tools=True)
    result = Agent(model, tools=[mul]).run("What color is the sky?")
    assert [s.tool_choice if s else None for s in model.settings] == [None, None, "none"]
    assert [m.role for m in model.requests[-1]] == ["system", "user"]  # asked again as at first, no tools
    assert result.stop_reason == "final" and result.answer == "The sky is blue."


def test_a_repeated_reply_of_two_calls_ends_the_run_with_both_results() -> None:
    @tool
    def weather(city: str) -> str:
        """Weather for a city."""
        return {"Paris": "Paris: 18 °C", "Tokyo": "Tokyo: 24 °C"}[city]

    both = calls(("weather", {"city": "Paris"}), ("weather", {"city": "Tokyo"}))
    result = Agent(ScriptedModel([both] * 4 + ["never asked"]), tools=[weather]).run("Paris and Tokyo?")
    assert result.stop_reason == "repeated_call" and result.answer == "Paris: 18 °C\nTokyo: 24 °C"


def test_after_a_repeat_the_next_reply_must_call_the_tool_that_finishes_the_run() -> None:
    q = "SELECT 42"
    model = ScriptedModel([call("run_query", sql=q), call("run_query", sql=q), call("confirm", sql=q), "never asked"])
    result = Agent(model, tools=[run_query, confirm]).run("the answer?")
    assert [s.tool_choice if s else None for s in model.settings] == [None, None, "confirm"]
    repeat = [m.content for m in result.trajectory.messages if m.role == "tool"][1]
    assert "already called run_query" in repeat and "call confirm now" in repeat
    assert result.stop_reason == "final" and result.answer == f"confirmed {q}"


def test_a_run_with_a_finishing_tool_asks_a_reply_in_text_once_to_call_it() -> None:
    q = "SELECT COUNT(*) FROM Customer"
    model = ScriptedModel([call("run_query", sql=q), "There are 42 customers.", call("confirm", sql=q)])
    result = Agent(model, tools=[run_query, confirm]).run("How many customers?")
    assert result.stop_reason == "final" and result.answer == f"confirmed {q}"
    assert [s.tool_choice if s else None for s in model.settings] == [None, None, "confirm"]
    reminder = model.requests[2][-1]
    assert reminder.content == ("A reply in text does not finish this task: call confirm now. Confirm the final "
                                "query; ends the run. confirm takes sql (string, required).")

    # a model that answers in text again is taken at its word; so is a text reply at the step limit
    stubborn = ScriptedModel([call("run_query", sql=q), "42.", "Still 42."])
    assert Agent(stubborn, tools=[run_query, confirm]).run("How many?").answer == "Still 42."
    last = ScriptedModel([call("run_query", sql=q), "42."])
    result = Agent(last, tools=[run_query, confirm], max_steps=2).run("How many?")
    assert result.answer == "42." and result.stop_reason == "final" and len(last.requests) == 2
    # a finishing call that fails re-arms the reminder: the text after it is sent back once more
    @tool(final=True)
    def strict(sql: str) -> str:
        """Confirm the final query; ends the run."""
        if "FROM" not in sql:
            raise ValueError("no such column: x")
        return f"confirmed {sql}"

    retry = ScriptedModel(["42.", call("strict", sql="SELECT x"), "It is 42.", call("strict", sql=q)])
    result = Agent(retry, tools=[run_query, strict]).run("How many?")
    assert result.stop_reason == "final" and result.answer == f"confirmed {q}"
    assert [s.tool_choice if s else None for s in retry.settings] == [None, "strict", None, "strict"]
    # without a finishing tool the text is the answer at once
    plain = ScriptedModel([call("run_query", sql=q), "42."])
    assert Agent(plain, tools=[run_query]).run("How many?").answer == "42." and len(plain.requests) == 2


def test_a_repeat_then_an_answer_is_a_normal_run_and_failed_calls_may_be_retried() -> None:
    attempts: list[int] = []

    @tool
    def flaky(x: int) -> int:
        """Fails the first time."""
        attempts.append(x)
        if len(attempts) == 1:
            raise RuntimeError("busy")
        return x * 2

    script = [call("flaky", x=4), call("flaky", x=4), call("flaky", x=4), "8"]
    result = Agent(ScriptedModel(script), tools=[flaky]).run("double 4")
    assert attempts == [4, 4]  # the failed call was retried; the repeat of the good one was not run
    assert result.stop_reason == "final" and result.answer == "8"


def test_a_call_that_failed_twice_the_same_way_is_not_run_a_third_time() -> None:
    ran: list[str] = []

    @tool
    def lookup(table: str) -> str:
        """Describe a table."""
        ran.append(table)
        raise ValueError(f"no such table: {table}")

    script = [call("lookup", table="Trak")] * 5 + ["never asked"]
    result = Agent(ScriptedModel(script), tools=[lookup]).run("describe Track")
    assert ran == ["Trak", "Trak"]  # tried again once (it could have been transient), then not run
    third = [m for m in result.trajectory.messages if m.role == "tool"][2]
    assert third.is_error and third.content.startswith("Not run: this exact call of lookup has already failed 2 times")
    assert "no such table: Trak" in third.content
    assert result.stop_reason == "repeated_call" and result.answer is None  # a failure is no answer


def test_after_a_refused_failing_call_the_next_reply_must_finish_and_other_calls_still_run() -> None:
    ran: list[str] = []

    @tool
    def run_query(sql: str) -> str:
        """Run a query."""
        ran.append(sql)
        if "Trak" in sql:
            raise ValueError("no such table: Trak")
        return "3503"

    bad, good = "SELECT COUNT(*) FROM Trak", "SELECT COUNT(*) FROM Track"
    model = ScriptedModel([call("run_query", sql=bad), call("run_query", sql=bad), call("run_query", sql=bad),
                           call("run_query", sql=good), call("confirm", sql=good), "never asked"])
    result = Agent(model, tools=[run_query, confirm]).run("How many tracks?")
    assert ran == [bad, bad, good]
    assert [s.tool_choice if s else None for s in model.settings] == [None, None, None, "confirm", None]
    refused = [m.content for m in result.trajectory.messages if m.role == "tool"][2]
    assert "or call confirm with the best you have found" in refused
    assert result.stop_reason == "final" and result.answer == f"confirmed {good}"


def test_failures_with_different_errors_are_each_tried() -> None:
    attempts: list[int] = []

    @tool
    def busy(x: int) -> int:
        """Fails with a new message each time."""
        attempts.append(x)
        raise RuntimeError(f"busy, attempt {len(attempts)}")

    result = Agent(ScriptedModel([call("busy", x=1)] * 4 + ["gave up"]), tools=[busy]).run("go")
    assert attempts == [1, 1, 1, 1] and result.answer == "gave up"


def test_run_context_joins_the_system_prompt_but_not_the_task() -> None:
    model = ScriptedModel(["done", "done again"])
    agent = Agent(model, instructions="Be brief.")
    result = agent.run("the question", context={"Tables": "CREATE TABLE t (a INTEGER);"})
    system, user = result.trajectory.messages[0].content, result.trajectory.messages[1].content
    assert system.startswith("Be brief.") and "Tables" in system and "CREATE TABLE t (a INTEGER);" in system
    assert user == "the question" and result.trajectory.task == "the question"
    again = agent.run("another")  # context is per run
    assert "CREATE TABLE" not in again.trajectory.messages[0].content


@pytest.mark.parametrize(("same", "arguments", "other"), [
    (True, {"a": 1, "b": "x"}, {"b": "x", "a": 1}),      # order does not matter
    (False, {"x": 1}, {"x": True}),                       # 1 and True are different calls
    (False, {"x": 1}, {"x": 1.0}),
    (False, {"x": 1}, {"x": "1"}),
    (False, {"x": None}, {}),
    (True, {"x": [1, {"b": 2, "a": 1}]}, {"x": [1, {"a": 1, "b": 2}]}),  # nested: canonical JSON
    (False, {"x": [1]}, {"x": "[1]"}),
])
def test_a_calls_key_is_the_same_exactly_for_the_same_arguments(same: bool, arguments: dict[str, Any],
                                                                 other: dict[str, Any]) -> None:
    first, second = ToolCall(name="t", arguments=arguments), ToolCall(name="t", arguments=other)
    assert (call_key(first) == call_key(second)) is same
    assert call_key(first) != call_key(ToolCall(name="u", arguments=arguments))
