"""Cost: prices from LiteLLM's local map, per turn and per run, in `agentkit chat` (/usage) and eval reports.

The model calls go over HTTP to a real OpenAI-compatible server (the stand-in in tests/fixtures) serving
under a name whose price LiteLLM's map knows."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from agentkit import Agent, Usage
from agentkit.cli.chat import ChatConfig, run_chat
from agentkit.environments.base import Task
from agentkit.evaluation import EvalRun, result_of
from agentkit.evaluation.reports import markdown_report
from agentkit.models.cost import Price, format_cost, price_of, with_cost
from agentkit.models.openai_compat import OpenAIModel
from agentkit.models.vllm_server import free_port

STANDIN = str(Path(__file__).parent / "fixtures" / "standin_openai_server.py")
PRICED = "gpt-4o-mini"  # $0.15 / $0.60 per million input / output tokens in LiteLLM's map


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, STANDIN, "--port", str(port), "--served-model-name", PRICED],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = [proc.stdout.readline() for _ in range(2)]  # "starting ...", then "ready"
    assert "ready" in lines[-1], lines
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(timeout=10)


def test_price_from_litellms_local_map() -> None:
    price = price_of(PRICED)
    assert price is not None
    assert price.cost(Usage(input_tokens=1_000_000, output_tokens=1_000_000)) == pytest.approx(0.15 + 0.60)
    assert price_of("local:smollm2-135m") is None and price_of("no-such-model-xyz") is None
    assert with_cost("no-such-model-xyz", Usage(input_tokens=5, output_tokens=5, calls=1)).cost_usd is None


def test_an_unknown_price_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """A self-hosted model's name (vLLM serves "default") is unknown to LiteLLM, whose lookup would print a
    red provider-list banner into the chat screen on the first reply."""
    assert price_of("default-served-by-a-test") is None
    assert capsys.readouterr().out == ""


def test_usage_sums_known_costs_and_keeps_unknown_as_none() -> None:
    a = Usage(input_tokens=10, output_tokens=2, calls=1, cost_usd=0.5)
    b = Usage(input_tokens=1, output_tokens=1, calls=1)
    assert (a + b).cost_usd == 0.5 and (b + b).cost_usd is None
    assert (a + a).cost_usd == pytest.approx(1.0) and (a + a).calls == 2
    assert format_cost(None) == "n/a" and format_cost(0.01234) == "$0.0123" and format_cost(1e-7) == "<$0.0001"
    assert Price(1e-6, 2e-6).cost(Usage(input_tokens=3, output_tokens=4)) == pytest.approx(11e-6)


@pytest.mark.parametrize("streaming", [False, True])
def test_each_turn_and_the_run_carry_their_cost(base_url: str, streaming: bool) -> None:
    model = OpenAIModel(PRICED, base_url=base_url, api_key="test")
    agent = Agent(model, max_steps=2)
    if streaming:
        result = next(e.result for e in agent.stream("hello there") if hasattr(e, "result"))
    else:
        result = agent.run("hello there")
    (turn,) = result.trajectory.turns
    price = price_of(PRICED)
    assert price is not None and turn.usage.input_tokens > 0
    assert turn.usage.cost_usd == pytest.approx(price.cost(turn.usage))
    assert result.usage.cost_usd == pytest.approx(turn.usage.cost_usd)


def test_chat_usage_command_shows_turns_and_total(base_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    out = io.StringIO()
    code = run_chat(ChatConfig(model=f"openai:{PRICED}", tools="none"), stdin=io.StringIO("hello\nhi again\n/usage\n"),
                    console=Console(file=out, width=200, highlight=False))
    assert code == 0
    text = out.getvalue()
    table = text[text.index("turn"):]
    assert "total" in table and table.count(PRICED) == 2 and "$" in table and "n/a" not in table


def test_chat_usage_says_when_the_price_is_unknown() -> None:
    out = io.StringIO()
    script = Path(__file__).parent / "data" / "chat_calculator.json"
    run_chat(ChatConfig(model=f"script:{script}"), stdin=io.StringIO("what is 2+2\n/usage\n"),
             console=Console(file=out, width=200, highlight=False))
    assert "n/a" in out.getvalue() and "no price is known" in out.getvalue()


def test_eval_report_shows_the_cost(base_url: str) -> None:
    agent = Agent(OpenAIModel(PRICED, base_url=base_url, api_key="test"), max_steps=2)
    trajectory = agent.run("count the tracks").trajectory
    run = EvalRun(config="hosted", environment="demo", model=PRICED,
                  results=[result_of(Task(id="t1", prompt="count the tracks"), "hosted", trajectory)])
    assert run.results[0].cost_usd == pytest.approx(trajectory.usage.cost_usd)
    assert run.summary()["cost_usd"] == pytest.approx(trajectory.usage.cost_usd, abs=1e-6)
    report = markdown_report([run])
    assert "| cost |" in report and format_cost(run.summary()["cost_usd"]) in report
