"""tests/benchmarks/bench_experience_threshold.py end to end on one generated database (real SQLite from the task
engine, real MiniLM embeddings, the real draft agent): a learn split's held-out questions run without examples and
with them under two question floors. The model stands for the model's choices: it writes a question's gold query
only when a worked example is in its prompt."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from test_experience import DB_NAME, build_train_db, example

from agentkit.environments.base import Task
from agentkit.memory.experience import TITLE, Experience, database_key_of
from agentkit.messages import Message
from agentkit.sql import sql_task_prompt
from agentkit.testing import FunctionModel

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
from bench_experience_threshold import eligible_tasks, flips, main


def test_flips_name_what_turned_right_and_wrong() -> None:
    assert flips({"a": True, "b": False, "c": True}, {"a": False, "b": True, "c": True}) == {"right": ["b"],
                                                                                            "wrong": ["a"]}


def test_floors_decide_which_examples_are_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "sqlgen"
    db, records = build_train_db(data)
    heldout = records[:3]
    folder = tmp_path / "work" / "seed0" / DB_NAME
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(json.dumps({"config": {"heldout": [r["id"] for r in heldout]}}))
    Experience([example(records, n, database_key_of(db)) for n in range(10, 16)]).save(folder / "experience.json")
    golds = {r["question"]: r["sql"] for r in heldout}

    def reply(messages: Sequence[Message], tools: Any) -> str:
        system = messages[0].content if messages and messages[0].role == "system" else ""
        question = next((q for q in golds if q in str(messages[-1].content)), None)
        if f"## {TITLE}" in system and question is not None:
            return f"```sql\n{golds[question]}\n```"
        return "```sql\nSELECT 1\n```"

    monkeypatch.setattr("agentkit.models.resolve_model", lambda spec, **_: FunctionModel(reply))
    out = tmp_path / "floors.json"
    assert main(["--work", str(tmp_path / "work"), "--split", "train", "--db-ids", DB_NAME, "--floors", "0,0.99",
                 "--gated", "0", "--votes", "1", "--concurrency", "1", "--data", str(data), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["data_kind"] == "train" and report["tasks"] == 3
    # no examples: every answer wrong; floor 0 shows the nearest examples, so every answer right; at 0.99 no
    # learned question is that close to a held-out one, so none is shown
    # gated, the pre-prediction ("SELECT 1", written without examples) is of no example's kind: none is shown
    assert report["total"] == {"none": 0, "floor-0": 3, "floor-0.99": 0, "gate-0": 0}
    assert report["gated_floors"] == [0.0]
    (row,) = report["databases"]
    ids = sorted(r["id"] for r in heldout)
    assert row["configs"]["floor-0"]["flips_vs_none"] == {"right": ids, "wrong": []}
    assert row["configs"]["floor-0.99"]["flips_vs_none"] == {"right": [], "wrong": []}
    assert sorted(row["configs"]["floor-0"]["outcomes"]) == ids
    assert (folder / "floors" / "floor-0.jsonl").is_file()


def test_eligible_only_keeps_the_questions_an_example_passes_the_floor_for(tmp_path: Path) -> None:
    db, records = build_train_db(tmp_path / "sqlgen")
    experience = Experience([example(records, n, database_key_of(db)) for n in (10, 11)], min_similarity=0.99)
    tasks = [Task(r["id"], sql_task_prompt(r["question"])) for r in (records[0], records[10], records[2])]
    assert [t.id for t in eligible_tasks(experience, tasks)] == [records[10]["id"]]  # its own question: cosine 1
    experience.min_similarity = 0.0
    assert eligible_tasks(experience, tasks) == tasks
