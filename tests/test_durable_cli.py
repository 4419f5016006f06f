"""`agentkit runs list|show|resume` over a run store (issue 43)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from agentkit import Agent, tool
from agentkit.cli import runs_cmd
from agentkit.runs.durable import DirectoryStore
from agentkit.testing import FunctionModel, ScriptedModel, call
from agentkit.tools.builtin import calculator

AGENT_FILE = '''
from agentkit import Agent, tool
from agentkit.testing import FunctionModel, call

ran = []

@tool
def step(i: int) -> str:
    """Do step i."""
    ran.append(i)
    with open({effects!r}, "a") as f:
        f.write(f"step {{i}}\\n")
    return f"step {{i}} done"

def reply(messages, tools):
    done = sum(1 for m in messages if m.role == "tool")
    return call("step", i=done) if done < 3 else f"all {{done}} steps done"

agent = Agent(FunctionModel(reply), tools=[step])
'''


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()
    runs_cmd.register(app)
    return app


def runs(app: typer.Typer, *args: str):
    return CliRunner().invoke(app, ["runs", *args])


def _crashed_run(store: Path, effects: Path) -> str:
    """A run of AGENT_FILE's agent whose process failed after its first step: its id."""

    @tool
    def step(i: int) -> str:
        """Do step i."""
        with open(effects, "a") as f:
            f.write(f"step {i}\n")
        return f"step {i} done"

    def reply(messages, tools):
        if any(m.role == "tool" for m in messages):
            raise ConnectionError("the model server went away")
        return call("step", i=0)

    with pytest.raises(ConnectionError):
        Agent(FunctionModel(reply), tools=[step], store=store).run("three steps")
    [run_id] = DirectoryStore(store).run_ids()
    return run_id


def test_list_and_show_say_where_each_run_stands(app, tmp_path) -> None:
    store = tmp_path / "runs"
    crashed = _crashed_run(store, tmp_path / "effects.txt")
    done = Agent(ScriptedModel(["hello there"]), store=store).run("say hello").trajectory.id

    listed = runs(app, "list", "--store", str(store))
    assert listed.exit_code == 0, listed.output
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "running" in lines[crashed] and "three steps" in lines[crashed]
    assert "finished" in lines[done] and "say hello" in lines[done]
    only = runs(app, "list", "--store", str(store), "--status", "finished")
    assert crashed not in only.stdout and done in only.stdout

    shown = runs(app, "show", crashed, "--store", str(store))
    assert shown.exit_code == 0, shown.output
    assert "status   running" in shown.stdout and "step(i=0)" in shown.stdout and "step 0 done" in shown.stdout
    as_json = json.loads(runs(app, "show", done, "--store", str(store), "--json").stdout)
    assert as_json["status"] == "finished" and as_json["trajectory"]["answer"] == "hello there"

    missing = runs(app, "show", "traj_000000000000", "--store", str(store))
    assert missing.exit_code == 2 and "no run traj_000000000000" in missing.stderr


def test_resume_with_an_agent_file_continues_without_running_the_finished_step(app, tmp_path) -> None:
    store, effects = tmp_path / "runs", tmp_path / "effects.txt"
    run_id = _crashed_run(store, effects)
    agent_file = tmp_path / "my_agent.py"
    agent_file.write_text(AGENT_FILE.format(effects=str(effects)))

    without = runs(app, "resume", run_id, "--store", str(store))
    assert without.exit_code == 2 and "--agent FILE.py:NAME" in without.stderr  # a Model object: no record to use

    result = runs(app, "resume", run_id, "--store", str(store), "--agent", f"{agent_file}:agent")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "all 3 steps done"
    assert effects.read_text().split("\n")[:-1] == ["step 0", "step 1", "step 2"]  # step 0 ran once, before
    assert DirectoryStore(store).load(run_id).status == "finished"

    again = runs(app, "resume", run_id, "--store", str(store), "--agent", f"{agent_file}:agent")
    assert again.stdout.strip() == "all 3 steps done" and len(effects.read_text().splitlines()) == 3


def test_resume_rebuilds_an_agent_from_its_model_string_and_importable_tools(app, tmp_path) -> None:
    store, script = tmp_path / "runs", tmp_path / "script.json"
    script.write_text(json.dumps([{"tool": "calculator", "arguments": {"expression": "6 * 7"}}]))
    agent = Agent(f"script:{script}", tools=[calculator], max_steps=5, store=store)
    with pytest.raises(RuntimeError, match="no reply #2"):  # the process stops after the first step
        agent.run("six times seven?")
    [run_id] = DirectoryStore(store).run_ids()
    assert DirectoryStore(store).load(run_id).agent.model == f"script:{script}"

    script.write_text(json.dumps(["It is 42."]))  # what the model says when asked again
    result = runs(app, "resume", run_id, "--store", str(store))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "It is 42."
    saved = DirectoryStore(store).load(run_id)
    assert saved.status == "finished" and [m.content for m in saved.trajectory.messages if m.role == "tool"] == ["42"]


def test_a_paused_run_needs_approve_or_deny(app, tmp_path) -> None:
    store = tmp_path / "runs"
    agent_file = tmp_path / "approving.py"
    agent_file.write_text(textwrap.dedent('''
        from agentkit import Agent, tool
        from agentkit.testing import FunctionModel, call

        @tool(requires_approval=True)
        def delete(path: str) -> str:
            """Delete a file."""
            return f"deleted {path}"

        def reply(messages, tools):
            told = [m for m in messages if m.role == "tool"]
            return told[-1].content if told else call("delete", path="old.log")

        def make():
            return Agent(FunctionModel(reply), tools=[delete])
    '''))
    agent = runs_cmd.load_agent(f"{agent_file}:make")
    agent.store = DirectoryStore(store)
    paused = agent.run("clean up")
    assert paused.stop_reason == "paused"

    undecided = runs(app, "resume", paused.trajectory.id, "--store", str(store), "--agent", f"{agent_file}:make")
    assert undecided.exit_code == 2 and "delete(path='old.log')" in undecided.stderr
    denied = runs(app, "resume", paused.trajectory.id, "--store", str(store), "--agent", f"{agent_file}:make",
                  "--deny", "-q")
    assert denied.exit_code == 0 and denied.stdout.strip() == "The user denied this call."


def test_list_marks_the_run_of_an_agent_call_with_its_caller(app, tmp_path) -> None:
    store = tmp_path / "runs"
    helper = Agent(ScriptedModel(["42"]), name="helper")
    boss = Agent(ScriptedModel([call("helper", request="the answer?"), "it is 42"]),
                 tools=[helper.as_tool("helper", "Answers questions.")], store=store)
    result = boss.run("ask the helper")
    [child] = result.trajectory.children
    lines = {line.split()[0]: line for line in runs(app, "list", "--store", str(store)).stdout.splitlines()}
    assert f"(agent call of {result.trajectory.id})" in lines[child.id]
    assert "agent call" not in lines[result.trajectory.id]
