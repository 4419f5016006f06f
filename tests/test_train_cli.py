"""`agentkit train --data`: the model trained is the one whose token ids the logs hold."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agentkit.cli.main import app
from agentkit.cli.train_cmd import _base, logged_model


def _log(path: Path, *models: str) -> Path:
    lines = ['{"torn": ', *(json.dumps({"task": "t", "model": m}) for m in models)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_logged_local_model_is_found_and_aliases_compare_equal(tmp_path: Path) -> None:
    assert logged_model([_log(tmp_path / "a.jsonl", "local:default")]) == "local:default"
    assert logged_model([_log(tmp_path / "b.jsonl", "openai:gpt-4o-mini")]) is None  # served: its ids are not ours
    assert logged_model([_log(tmp_path / "c.jsonl")]) is None
    assert _base("local:default+runs/adapter") == _base("local:qwen2.5-coder-1.5b") != _base("local:qwen2.5-coder-0.5b")


def test_training_another_model_than_the_logged_one_is_refused(tmp_path: Path) -> None:
    data = _log(tmp_path / "runs.jsonl", "local:default")
    result = CliRunner().invoke(app, ["train", "--data", str(data), "--model", "local:smollm2-135m",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "logged with local:default" in result.output and "--model local:default" in result.output
    assert not (tmp_path / "out").exists()  # refused before anything was loaded or written
