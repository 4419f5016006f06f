"""The evaluation runner, its reports, the oracle policy and `agentkit eval`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentkit import Agent
from agentkit.environments.base import OracleEnvironment, Task, succeeded
from agentkit.environments.tooluse import ToolUseEnvironment
from agentkit.evaluation import EvalConfig, EvalRun, evaluate, oracle_model, oracle_script_for
from agentkit.evaluation.reports import write_report
from agentkit.messages import Message
from agentkit.testing import ScriptedModel, call
from agentkit.trajectory import Trajectory, read_jsonl


def _env(tmp_path: Path) -> ToolUseEnvironment:
    fn = {"name": "echo", "description": "Echo a text.",
          "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
    rows = [{"id": f"t{i}", "question": f"Echo <b>{i}</b>", "function": [fn],
             "expected": [{"name": "echo", "arguments": {"text": str(i)}}]} for i in range(4)]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return ToolUseEnvironment.from_file(path)


def test_evaluate_keeps_order_under_concurrency_and_records_failures(tmp_path: Path) -> None:
    env = _env(tmp_path)

    def factory(tools):  # task t2 gets a model that runs out of replies: an error, not a crash
        def script(messages):
            text = next(m.content for m in messages if m.role == "user")
            n = text.split("<b>")[1].split("</b>")[0]
            if n == "2":
                raise RuntimeError("model fell over")
            return call("echo", text=n) if sum(m.role == "assistant" for m in messages) == 0 else "<script>x</script>"
        return Agent(ScriptedModel([script, script]), tools)

    seen: list[str] = []
    log = tmp_path / "traj.jsonl"
    run = evaluate(env, EvalConfig("react", factory), concurrency=3, log=log,
                   on_result=lambda r: seen.append(r.task_id))
    assert [r.task_id for r in run.results] == ["t0", "t1", "t2", "t3"]
    assert sorted(seen) == ["t0", "t1", "t2", "t3"]
    ok = [r for r in run.results if r.task_id != "t2"]
    assert all(r.success and r.steps == 2 and r.tool_calls == 1 and r.wall_s > 0 for r in ok)
    broken = run.results[2]
    assert not broken.success and "model fell over" in (broken.error or "") and broken.stop_reason == "error"
    summary = run.summary()
    assert summary["success_rate"] == 0.75 and summary["errors"] == 1 and summary["mean_steps"] == 1.5
    logged = read_jsonl(log)
    assert sorted(t.task_id for t in logged) == ["t0", "t1", "t3"]
    assert all(t.metadata["config"] == "react" for t in logged)


def test_reports_compare_configurations_and_drill_down(tmp_path: Path) -> None:
    env = _env(tmp_path)
    model = oracle_model(env.tasks(), env.oracle_script)
    runs = [evaluate(env, EvalConfig(p, lambda tools, p=p: Agent(model, tools, planner=p)))
            for p in ("react", "map-then-act")]
    paths = write_report(runs, tmp_path / "out", title="cmp")
    data = json.loads(paths["json"].read_text())
    assert [s["config"] for s in data["summary"]] == ["react", "map-then-act"]
    assert all(s["success_rate"] == 1.0 for s in data["summary"])
    again = EvalRun.model_validate(data["runs"][1])
    assert again.results[0].task_id == "t0" and again.results[0].phases == {"map": 1, "act": 2}
    md = paths["markdown"].read_text()
    assert "| react | 4 | 100.0% |" in md and "| t3 | ✓ 1 / 2 /" in md
    page = paths["html"].read_text()
    assert page.startswith("<!doctype html>") and "<link" not in page and "src=" not in page  # self-contained
    assert "id='t-map-then-act-t3'" in page and "href='#t-react-t0'" in page
    assert "Echo &lt;b&gt;3&lt;/b&gt;" in page and "<b>3</b>" not in page  # task text is escaped
    assert '<span class="phase">map</span>' in page and "Cognitive map" in page


def test_succeeded_rules() -> None:
    t = Trajectory(reward=1.1, rewards={"execution": 0.2, "format": 0.1, "schema": 0.8})
    assert not succeeded(t)
    assert succeeded(Trajectory(reward=1.1, rewards={"execution": 1.0, "format": 0.1}))
    assert not succeeded(Trajectory(reward=1.0, rewards={"success": 0.0, "reward": 1.0}))
    assert succeeded(Trajectory(reward=1.0)) and not succeeded(Trajectory(reward=0.5))
    assert not succeeded(Trajectory())


def test_each_environment_ships_its_oracle_policy_beside_it() -> None:
    from agentkit.environments.sql import SQLEnvironment
    from agentkit.environments.textgame import TextGameEnvironment

    for cls in (ToolUseEnvironment, SQLEnvironment, TextGameEnvironment):
        assert issubclass(cls, OracleEnvironment), cls
    env = ToolUseEnvironment.sample()
    assert oracle_script_for(env) == env.oracle_script
    with pytest.raises(ValueError, match="has no oracle policy"):
        oracle_script_for(object())


def test_oracle_refuses_unknown_conversations() -> None:
    model = oracle_model([Task(id="a", prompt="known task")], lambda t: ["answer"])
    assert model.generate([Message.user("known task, please")]).message.content == "answer"
    with pytest.raises(LookupError):
        model.generate([Message.user("something else")])


def test_cli_eval_compares_planners_with_the_oracle(tmp_path: Path) -> None:
    from agentkit.cli.main import app

    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--env", "tooluse", "--model", "oracle", "--planner", "react",
                                      "--planner", "map-then-act", "--concurrency", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert [(s["config"], s["success_rate"]) for s in data["summary"]] == [("react", 1.0), ("map-then-act", 1.0)]
    assert (out / "report.html").exists() and (out / "results.md").exists()
    assert len(read_jsonl(out / "trajectories-map-then-act.jsonl")) == len(ToolUseEnvironment.sample().tasks())

    bad = CliRunner().invoke(app, ["eval", "--env", "tooluse", "--model", "oracle", "--planner", "recipe",
                                   "--out", str(tmp_path / "bad")])
    assert bad.exit_code != 0 and "needs --env sql" in bad.output
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json\n")
    bad_file = CliRunner().invoke(app, ["eval", "--env", "tooluse", "--tasks", str(broken), "--model", "oracle"])
    assert bad_file.exit_code == 2 and "cannot load the tooluse tasks" in bad_file.output


def test_cli_eval_sql_oracle_is_perfect(tmp_path: Path) -> None:
    pytest.importorskip("agentkit.environments.sql")
    from agentkit.cli.main import app

    out = tmp_path / "sql"
    result = CliRunner().invoke(app, ["eval", "--env", "sql", "--model", "oracle", "--planner", "react",
                                      "--planner", "recipe", "--limit", "6", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert [s["success_rate"] for s in data["summary"]] == [1.0, 1.0]
    first = data["runs"][1]["results"][0]
    assert first["rewards"]["execution"] == 1.0 and first["phases"]["confirm_answer"] == 1


def test_cli_eval_check_limit_turns_the_toolkits_limit_check_on(tmp_path: Path) -> None:
    pytest.importorskip("agentkit.environments.sql")
    from agentkit.cli.eval_cmd import load_environment
    from agentkit.cli.main import app

    on, off = load_environment("sql", None, check_limit=True), load_environment("sql", None)
    try:
        assert on.check_limit and not off.check_limit
    finally:
        on.close()
        off.close()
    out = tmp_path / "sql"
    result = CliRunner().invoke(app, ["eval", "--env", "sql", "--model", "oracle", "--planner", "react",
                                      "--check-limit", "--limit", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "results.json").read_text())["summary"][0]["success_rate"] == 1.0
