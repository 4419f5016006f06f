"""`--memory DIR`: one learn run's folder attaches what the run kept, the same extensions as the one-artefact
flags (`--checks`, `--repairs`, `--pacing`, ...), and `agentkit.memory.load_memory` opens the same."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from agentkit.memory import load_memory
from agentkit.memory.load import kept, memory_model

if TYPE_CHECKING:
    from conftest import ClinicCLI

BAD = {"tool": "run_query", "arguments": {"sql": "SELECT Nope FROM Patient"}}  # refused by the database
CUT = {"tool": "confirm_answer", "arguments": {"sql": "SELECT * FROM Patient LIMIT 1"}}  # every answer, cut


def _eval(cli: ClinicCLI, out: Path, *extra: str) -> list[dict[str, Any]]:
    from agentkit.cli.main import app

    result = CliRunner().invoke(app, ["eval", "--env", "sql", "--tasks", str(cli.tasks), "--db", str(_db()),
                                      "--model", f"script:{cli.script}", "--max-steps", "2", *extra,
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in (out / "trajectories-react.jsonl").read_text().splitlines()]


def _db() -> Path:
    from agentkit.environments.sql import CLINIC_DB

    return Path(CLINIC_DB)


def _comparable(runs: list[dict[str, Any]]) -> list[Any]:
    return [(r["task_id"], [(m["role"], m["content"]) for m in r["messages"]], r["extras"], r["reward"]) for r in runs]


def test_eval_with_memory_attaches_what_the_one_artefact_flags_attach(
        clinic_cli: ClinicCLI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentkit.cli import eval_cmd

    result = clinic_cli.learn("checks,repairs,pacing", [BAD, CUT] * 40, tasks=8, budget="20ep",
                              extra=("--validation", "0"))
    assert result.exit_code == 0, result.output
    out = clinic_cli.out
    assert f"--memory {out}" in result.output.replace("\n", "")
    assert kept(out) == ["checks", "repairs", "pacing"]

    attached: list[list[str]] = []
    factory = eval_cmd.agent_factory

    def spy(*args: Any, **kwargs: Any) -> Any:
        attached.append([repr(e) for e in kwargs["learned"]])
        return factory(*args, **kwargs)

    monkeypatch.setattr(eval_cmd, "agent_factory", spy)
    by_folder = _eval(clinic_cli, tmp_path / "by-folder", "--memory", str(out))
    by_flags = _eval(clinic_cli, tmp_path / "by-flags", "--checks", str(out / "checks.json"), "--repairs",
                     str(out / "repairs.json"), "--pacing", str(out / "pacing.json"))
    assert [a.split("(")[0] for a in attached[0]] == ["ShapeChecks", "Repairs", "Pacing"]
    assert attached[0] == attached[1]  # the same extensions, learned the same
    assert [repr(e) for e in load_memory(out)] == attached[0]
    assert _comparable(by_folder) == _comparable(by_flags)  # and the runs go the same way
    assert any(r["extras"].get("shape_checks") for r in by_folder) and any(r["extras"].get("repairs")
                                                                           for r in by_folder)

    # a flag replaces that artefact of the folder; a method the run did not keep is not attached
    from agentkit.memory.pacing import Pacing

    Pacing({"x": 1}).save(tmp_path / "other.json")
    _eval(clinic_cli, tmp_path / "replaced", "--memory", str(out), "--pacing", str(tmp_path / "other.json"))
    assert attached[2][:2] == attached[0][:2] and attached[2][2].startswith("Pacing({'x': 1")
    summary = json.loads((out / "summary.json").read_text())
    del summary["artefacts"]["repairs"]
    (out / "summary.json").write_text(json.dumps(summary))
    assert [type(e).__name__ for e in load_memory(out)] == ["ShapeChecks", "Pacing"]


def test_a_folder_without_a_summary_attaches_every_artefact_present(tmp_path: Path) -> None:
    from agentkit.memory.pacing import Pacing
    from agentkit.memory.repairs import Repairs

    Pacing({"explore": 2}).save(tmp_path / "pacing.json")
    Repairs().save(tmp_path / "repairs.json")
    (tmp_path / "adapter").mkdir()
    assert kept(tmp_path) == ["repairs", "pacing", "adapter"]
    assert [type(e) for e in load_memory(tmp_path)] == [Repairs, Pacing]
    assert memory_model("local:default", tmp_path) == "local:default"  # no summary: the model trained is unknown
    (tmp_path / "summary.json").write_text(json.dumps({"model": "local:default", "artefacts": {"adapter": "x"}}))
    assert load_memory(tmp_path) == []  # the run kept only its adapter
    assert memory_model("local:default", tmp_path) == f"local:default+{tmp_path / 'adapter'}"
    assert memory_model("local:other", tmp_path) == "local:other"


def test_skills_and_notes_attach_first_and_chat_gets_the_skills_command(tmp_path: Path) -> None:
    from agentkit.cli.chat_cmd import memory_and_skills
    from agentkit.memory.notebook import MistakeNotebook
    from agentkit.memory.pacing import Pacing
    from agentkit.skills import SkillLibrary

    Pacing({"explore": 2}).save(tmp_path / "pacing.json")
    SkillLibrary.open(tmp_path / "skills")
    MistakeNotebook.open(tmp_path / "notes").close()
    assert [type(e) for e in load_memory(tmp_path)] == [SkillLibrary, MistakeNotebook, Pacing]
    extensions, commands, *_ = memory_and_skills(skills=None, notes=None, session=None, model="x", memory=tmp_path)
    assert [type(e) for e in extensions] == [SkillLibrary, MistakeNotebook, Pacing] and "skills" in commands


def test_what_is_not_a_learn_folder_is_a_clear_error(tmp_path: Path) -> None:
    from agentkit.cli.main import app

    with pytest.raises(ValueError, match="not a folder"):
        load_memory(tmp_path / "missing")
    with pytest.raises(ValueError, match="holds nothing a learn run writes"):
        load_memory(tmp_path)
    (tmp_path / "pacing.json").write_text("{}")
    with pytest.raises(ValueError, match="not a pacing file"):
        load_memory(tmp_path)
    result = CliRunner().invoke(app, ["eval", "--env", "sql", "--model", "oracle", "--limit", "1",
                                      "--memory", str(tmp_path / "missing")])
    words = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())  # typer's error box, as one line
    assert result.exit_code == 2 and "--memory:" in words and "is not a folder" in words, result.output


def test_an_adapter_kept_for_another_model_is_left_out_with_a_line_that_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentkit.cli.memory_options import memory_model as cli_memory_model
    from agentkit.memory.load import trained_model

    (tmp_path / "adapter").mkdir()
    (tmp_path / "summary.json").write_text(json.dumps({"model": "local:default", "artefacts": {"adapter": "x"}}))
    assert trained_model(tmp_path) == "local:default"
    assert cli_memory_model("local:default", tmp_path) == f"local:default+{tmp_path / 'adapter'}"
    assert capsys.readouterr().err == ""
    assert cli_memory_model("local:qwen2.5-coder-1.5b-sql", tmp_path) == "local:qwen2.5-coder-1.5b-sql"
    err = capsys.readouterr().err
    assert "trained on local:default" in err and "--model local:default runs it" in err
