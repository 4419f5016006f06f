"""`agentkit chat --agent FILE.py:NAME`: a user's own agents, built by their file (scripted models there), chatted
with through the real command (typer's CliRunner: stdin is a pipe)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from agentkit.trajectory import read_jsonl

TEAM = '''
from agentkit import Agent, tool
from agentkit.testing import ScriptedModel, call


@tool(read_only=True)
def invoices(account: int) -> str:
    """List an account's invoices."""
    return f"account {account}: invoice 9 charged twice"


@tool(requires_approval=True)
def refund(invoice: int) -> str:
    """Refund an invoice."""
    return f"refunded invoice {invoice}"


math = Agent(ScriptedModel(["4"]), name="math")
billing = Agent(ScriptedModel([call("invoices", account=17), call("refund", invoice=9),
                               "Invoice 9 was charged twice; I refunded it."]),
                tools=[invoices, refund], name="billing")
support = Agent(ScriptedModel([call("ask_math", request="2 + 2"), call("transfer_to_billing"), "Glad to help!"]),
                tools=[math.as_tool("ask_math", "Ask the math agent.")], name="triage", handoffs=[billing])


def build():
    return Agent(ScriptedModel(["built fresh"]), name="fresh")


not_an_agent = 42
'''


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    from agentkit.cli.main import app  # the `agentkit` command itself

    return app


@pytest.fixture
def team(tmp_path: Path) -> Path:
    path = tmp_path / "team.py"
    path.write_text(textwrap.dedent(TEAM))
    return path


def test_chat_with_the_agents_a_file_builds(app: typer.Typer, team: Path, tmp_path: Path) -> None:
    log = tmp_path / "chat.jsonl"
    lines = ["I was charged twice.", "y", "/tools", "Thanks!", "/exit"]
    result = CliRunner().invoke(app, ["chat", "--agent", f"{team}:support", "--log", str(log)],
                                input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"agent triage from {team}:support" in out
    order = ["ask_math(request='2 + 2')", "▸ math", "transfer_to_billing()", "▸ billing", "invoices(account=17)",
             "allow refund(invoice=9)? [y/n/always] y", "refund(invoice=9)",
             "Invoice 9 was charged twice; I refunded it."]
    at = [out.index(text) for text in order]
    assert at == sorted(at), out
    assert "ask_math" in out[out.index("/tools"):] and out.rindex("Glad to help!") > at[-1]

    first, second = read_jsonl(log)
    assert first.agent == "triage" and [c.agent for c in first.children] == ["math", "billing"]
    assert first.answer == "Invoice 9 was charged twice; I refunded it."
    assert [a.tool for a in first.children[1].approvals] == ["refund"]
    assert second.answer == "Glad to help!"
    assert second.messages[-3].content == first.answer  # the next turn saw the billing agent's answer


def test_a_function_returning_an_agent_is_called(app: typer.Typer, team: Path) -> None:
    result = CliRunner().invoke(app, ["chat", "--agent", f"{team}:build"], input="hello\n")
    assert result.exit_code == 0, result.output
    assert "built fresh" in result.stdout and "agent fresh" in result.stdout


@pytest.mark.parametrize(("spec", "says"), [
    ("{team}:missing", "defines no 'missing'; its agents: billing, math, support"),
    ("{team}:not_an_agent", "not_an_agent in {team} is a int, not an agentkit Agent"),
    ("{team}", "write FILE.py:NAME"),
    ("{team}.nope:support", "no file {team}.nope"),
])
def test_a_wrong_spec_says_what_is_wrong(app: typer.Typer, team: Path, spec: str, says: str) -> None:
    result = CliRunner().invoke(app, ["chat", "--agent", spec.format(team=team)], input="hi\n")
    assert result.exit_code == 2
    assert says.format(team=team) in " ".join(result.output.split())


def test_options_that_build_an_agent_do_not_go_with_agent(app: typer.Typer, team: Path) -> None:
    result = CliRunner().invoke(app, ["chat", "--agent", f"{team}:support", "--model", "local:default",
                                      "--tools", "calculator"], input="hi\n")
    assert result.exit_code == 2 and "drop --model, --tools" in result.output


def test_a_file_that_raises_says_so(app: typer.Typer, tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no key set')\n")
    result = CliRunner().invoke(app, ["chat", "--agent", f"{broken}:agent"], input="hi\n")
    assert result.exit_code == 2 and "raised RuntimeError: no key set" in result.output
