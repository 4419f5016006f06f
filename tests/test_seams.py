"""The seams between packages: planners by name, samples vs streaming, the choose hook, chat
commands per session, no environment mutation at import, one atomic write, one retry loop."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentkit import Agent
from agentkit.agent import RunResult
from agentkit.events import ContextAdded
from agentkit.files import atomic_write
from agentkit.loop.extensions import Extension, ReactPlanner, RunContext
from agentkit.loop.hooks import defined_hooks
from agentkit.loop.planners import PLANNERS, resolve_planner
from agentkit.loop.planning import MapThenActPlanner
from agentkit.models.protocol import ModelResponse, TextDelta, TransientModelError
from agentkit.models.retry import call_with_retries, stream_with_retries
from agentkit.testing import FunctionModel, ScriptedModel


def test_planners_resolve_by_one_explicit_mapping() -> None:
    assert set(PLANNERS) == {"react", "map-then-act"}
    assert isinstance(resolve_planner("react"), ReactPlanner)
    assert isinstance(resolve_planner("map-then-act"), MapThenActPlanner)
    mine = ReactPlanner()
    assert resolve_planner(mine) is mine
    with pytest.raises(ValueError, match="known: map-then-act, react"):
        Agent(ScriptedModel(["x"]), planner="plan-and-pray")
    with pytest.raises(TypeError):
        PLANNERS["mine"] = ReactPlanner  # type: ignore[index]


def test_streaming_refuses_samples_instead_of_ignoring_them() -> None:
    agent = Agent(ScriptedModel(["a", "b"]), samples=2)
    with pytest.raises(ValueError, match="samples=2"):
        agent.stream("q")

    async def consume() -> None:
        async for _ in agent.astream("q"):
            pass

    with pytest.raises(ValueError, match="samples=2"):
        asyncio.run(consume())
    assert agent.run("q").answer in ("a", "b")  # run() samples and chooses


def test_stream_is_a_generator_that_can_be_closed() -> None:
    stream = Agent(ScriptedModel(["hello"])).stream("q")
    next(stream)
    stream.close()  # a typed Generator: close() is part of the contract


class PickLast:
    name = "pick-last"

    def before_run(self, run: RunContext) -> None: ...

    def after_run(self, run: RunContext) -> None: ...

    def choose(self, results: Sequence[RunResult]) -> int:
        return len(results) - 1


def test_a_chooser_is_an_extension_with_choose() -> None:
    assert defined_hooks(PickLast()) == ("choose",) and isinstance(PickLast(), Extension)
    answers = iter(["one", "two", "three"])
    agent = Agent(FunctionModel(lambda m, t: next(answers)), samples=3, extensions=[PickLast()])
    assert agent.run("q").answer == "three"


class Note:
    """An extension that adds one context section (to see which extensions a run had)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def before_run(self, run: RunContext) -> None:
        run.add_context(self.name, self.name, f"from {self.name}")

    def after_run(self, run: RunContext) -> None: ...


def test_extensions_attach_one_way_and_a_copy_adds_more() -> None:
    first, second = Note("first"), Note("second")
    agent = Agent(ScriptedModel(["a", "b", "c"]), extensions=[first])
    with pytest.raises(TypeError):
        Agent(ScriptedModel(["a"]), skills=first)  # type: ignore[call-arg]  # no second way
    more = agent.with_extensions(second, first)  # one it already has is not attached twice
    assert agent.extensions == (first,) and more.extensions == (first, second)
    assert more.model is agent.model and more.tools is agent.tools
    assert [e.source for e in more.stream("q") if isinstance(e, ContextAdded)] == ["first", "second"]
    assert [e.source for e in agent.stream("q") if isinstance(e, ContextAdded)] == ["first"]
    with pytest.raises(AttributeError):
        agent.extensions.append(second)  # type: ignore[attr-defined]  # a tuple: attach through the constructor


def test_chat_commands_are_built_per_session() -> None:
    from agentkit.cli.chat import builtin_commands
    from agentkit.cli.slash import SlashCommand, commands_of, slash_command

    first, second = builtin_commands(), builtin_commands()
    assert first == second and first is not second
    assert {"help", "tools", "reset", "save", "model", "exit", "quit", "map", "notes"} <= set(first)
    first.pop("help")
    assert "help" in builtin_commands()

    @slash_command("hello", "Say hello")
    def hello(session: object, arg: str) -> None: ...

    assert commands_of(hello) == {"hello": SlashCommand("hello", "Say hello", hello)}
    assert "hello" not in builtin_commands()  # declaring a command registers nothing
    with pytest.raises(TypeError, match="slash_command"):
        commands_of(lambda session, arg: None)


def test_importing_the_cli_changes_no_environment_variable() -> None:
    code = ("import os; before = dict(os.environ); import agentkit.cli.main; "
            "print(sorted(set(os.environ.items()) ^ set(before.items())))")
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_atomic_write_replaces_whole_files(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "state.json"
    atomic_write(path, '{"a": 1}')
    assert path.read_text() == '{"a": 1}'
    atomic_write(path, b"\x00\x01", durable=False)
    assert path.read_bytes() == b"\x00\x01"
    with pytest.raises(UnicodeEncodeError):
        atomic_write(path, "\ud800")  # unencodable: nothing is written
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.json"]  # no temporary file left


def test_one_retry_loop_for_calls_and_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    attempts = iter([TransientModelError("429"), TransientModelError("503"), "ok"])

    def flaky() -> str:
        item = next(attempts)
        if isinstance(item, Exception):
            raise item
        return item

    assert call_with_retries(flaky, 2) == "ok" and waits == [1.0, 2.0]
    with pytest.raises(TransientModelError):
        call_with_retries(lambda: (_ for _ in ()).throw(TransientModelError("x")), 1)

    def stream_failing_after_text() -> list[TextDelta | ModelResponse]:
        yield TextDelta("partial")  # type: ignore[misc]
        raise TransientModelError("dropped")

    got = []
    with pytest.raises(TransientModelError):  # text was shown: no retry
        for item in stream_with_retries(stream_failing_after_text, 3, committed=lambda i: isinstance(i, TextDelta)):
            got.append(item)
    assert got == [TextDelta("partial")]
