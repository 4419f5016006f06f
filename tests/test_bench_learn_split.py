"""tests/benchmarks/bench_learn_split.py end to end on one generated database (real SQLite from the task engine,
real MiniLM embeddings, the real learning loop and skill library): per seed, the database's questions split into
learning and held-out ones, `learn` run on each, the rows pooled and averaged over seeds, and a finished run read
back on resume. The scripted model stands for the model's choices: it answers a question right only when a
learned skill is in its context (or, while sampling, on some attempts)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from test_experience import build_train_db
from test_learn_loop import LearningScript

import agentkit.models
from agentkit.environments.sql import SQLEnvironment
from agentkit.messages import Message
from agentkit.testing import FunctionModel
from agentkit.training.learning.loop import MIN_GAIN

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
from bench_from_runs import by_database
from bench_learn_split import main, markdown, over_seeds, plan_seed, pooled, run

LEARN = {"skill_options": {"min_score": -1.0}, "train_temperature": 0.7}


def test_each_database_learns_from_its_own_questions_and_is_measured_on_the_rest_per_seed(tmp_path: Path) -> None:
    build_train_db(tmp_path / "sqlgen")
    env = SQLEnvironment(tasks=tmp_path / "sqlgen" / "train.jsonl", schema="digest", name="sql-train")
    groups = by_database(env.tasks())
    (db,) = groups
    plans = {seed: plan_seed(groups, [db], seed, 6, 3, spares={})[db] for seed in (0, 1)}
    for plan in plans.values():
        assert len(plan.afternoon) == 6 and len(plan.heldout) == 3
        assert not {t.id for t in plan.afternoon} & {t.id for t in plan.heldout}
    assert {t.id for t in plans[0].heldout} != {t.id for t in plans[1].heldout}  # the seed picks the held-out
    assert plan_seed(groups, [db], 0, 6, 3, spares={})[db].heldout == plans[0].heldout  # and the same again

    seen: list[tuple[int, str]] = []
    result = run(env, [db], [0, 1], LearningScript([env]), tmp_path / "work", train=6, heldout=3, budget="6ep",
                 methods=("skills",), spares={}, max_steps=3, options=LEARN, rows=tmp_path / "rows.jsonl",
                 on_row=lambda seed, row: seen.append((seed, row["db_id"])))
    assert seen == [(0, db), (1, db)]
    for seed in ("0", "1"):
        (row,) = result["seeds"][seed]["databases"]
        assert (row["train"], row["heldout"]) == (6, 3)
        assert row["before"] == {"correct": 0, "tasks": 3} and row["after"] == {"correct": 3, "tasks": 3}
        assert row["delta_points"] == 100.0
        assert row["methods"] == [{"method": "skills", "kept": True, "set_aside": None, "delta_points": 100.0,
                                   "after": 3}]
        assert len(row["flips"]) == 3 and all(f["became"] == "right" and f["artefacts"] for f in row["flips"])
        assert any(c["phase"] == "learn-skills" and c["episodes"] >= 1 for c in row["costs"])
        summary = json.loads((tmp_path / "work" / f"seed{seed}" / db / "summary.json").read_text())
        assert sorted(summary["heldout_tasks"]) == sorted(t.id for t in plans[int(seed)].heldout)
        overall = result["seeds"][seed]["overall"]
        assert overall["before"]["wilson95"][0] == 0.0 and overall["after"]["accuracy"] == 1.0
        assert overall["became_right"] == 3 and overall["became_wrong"] == 0
    assert result["overall"]["seeds"] == 2 and result["overall"]["mean_delta_points"] == 100.0
    assert result["overall"]["method_mean_delta_points"] == {"skills": 100.0}
    table = markdown({"seeds": result["seeds"], "overall": result["overall"]})
    assert "| 1 | **all** |" in table and "Mean over 2 seeds: +100.0 points" in table

    def never(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> str:
        raise AssertionError("a finished (seed, database) ran the model again")

    again = run(env, [db], [0, 1], FunctionModel(never, name="learning-script"), tmp_path / "work", train=6,
                heldout=3, budget="6ep", methods=("skills",), spares={}, max_steps=3, options=LEARN)
    assert again == result
    # the rows file alone carries the finished runs to a machine without WORK; other settings run again
    kept = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [(k["seed"], k["db_id"]) for k in kept] == [(0, db), (1, db)]
    with (tmp_path / "rows.jsonl").open("a") as handle:
        handle.write('{"key": "cut sh')  # a write cut short is skipped
    elsewhere = run(env, [db], [0, 1], FunctionModel(never, name="learning-script"), tmp_path / "elsewhere",
                    train=6, heldout=3, budget="6ep", methods=("skills",), spares={}, max_steps=3, options=LEARN,
                    rows=tmp_path / "rows.jsonl")
    assert elsewhere == result and not (tmp_path / "elsewhere").exists()
    with pytest.raises(AssertionError, match="ran the model again"):
        run(env, [db], [0], FunctionModel(never, name="learning-script"), tmp_path / "other", train=6, heldout=3,
            budget="5ep", methods=("skills",), spares={}, max_steps=3, options=LEARN, rows=tmp_path / "rows.jsonl")
    env.close()


def test_the_command_builds_the_split_and_writes_the_results_file(tmp_path: Path, monkeypatch: Any) -> None:
    def scripted(spec: str, **_: Any) -> LearningScript:
        assert spec == "local:default"
        return LearningScript([SQLEnvironment(tasks=tmp_path / "data" / "dev.jsonl", name="sql-dev")])

    monkeypatch.setattr(agentkit.models, "resolve_model", scripted)
    out = tmp_path / "learn-split.json"
    assert main(["--split", "dev", "--dbs", "1", "--train", "4", "--heldout", "2", "--budget", "1ep", "--seeds", "0",
                 "--methods", "skills", "--data", str(tmp_path / "data"), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["data_kind"] == "dev" and report["model"] == "local:default" and report["methods"] == "skills"
    assert (report["planner"], report["schema"]) == ("react", "digest")
    assert report["validation_min_gain"] == MIN_GAIN  # the rule its validation judged skills and notes by
    (row,) = report["seeds"]["0"]["databases"]
    assert (row["train"], row["heldout"], row["before"]["tasks"]) == (4, 2, 2)
    assert row["spares"]["used"] == 0 and row["spares"]["available"] > 0  # the task file's own questions fill it
    assert (tmp_path / "data" / "learn-split" / "dev" / "seed0" / row["db_id"] / "summary.json").is_file()


def test_with_a_generator_seed_it_learns_and_holds_out_only_questions_the_shipped_build_lacks(
        tmp_path: Path, monkeypatch: Any) -> None:
    from agentkit.sql.taskgen import spare_questions
    from agentkit.sql.taskgen.build import SEED, build_database
    from agentkit.sql.taskgen.domains import ALL_DOMAINS

    data = tmp_path / "fresh"
    monkeypatch.setattr(agentkit.models, "resolve_model", lambda spec, **_: LearningScript(
        [SQLEnvironment(tasks=data / "fresh.jsonl", name="sql-dev")]))
    out = tmp_path / "learn-split.json"
    assert main(["--split", "dev", "--dbs", "1", "--train", "4", "--heldout", "2", "--budget", "1ep", "--seeds", "0",
                 "--methods", "skills", "--generator-seed", "11", "--data", str(data), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["generator_seed"] == 11 and report["data_kind"] == "dev"
    (row,) = report["seeds"]["0"]["databases"]
    assert (row["train"], row["heldout"]) == (4, 2)
    fresh = {r["id"]: r for r in map(json.loads, (data / "fresh.jsonl").read_text().splitlines())}
    pool = [r for r in fresh.values() if r["db_id"] == row["db_id"]]
    assert row["spares"]["available"] == len(pool) - 2   # all but the held-out, filtered as spares are
    summary = json.loads((data / "learn-split" / "dev" / "seed0" / row["db_id"] / "summary.json").read_text())
    used = set(summary["heldout_tasks"]) | set(summary["train_tasks"])
    assert used <= set(fresh) and all(t.endswith("-g11") for t in used)
    domain = next(d for d in ALL_DOMAINS if d.name == row["db_id"])
    shipped = build_database(domain, tmp_path / "s0", seed=SEED).questions + spare_questions(domain, tmp_path / "s0")
    assert not {fresh[t]["question"] for t in used} & {r["question"] for r in shipped}
    assert not {fresh[t]["sql"] for t in used} & {r["sql"] for r in shipped}


def test_a_generator_seed_on_the_test_split_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["--split", "test", "--generator-seed", "11", "--data", str(tmp_path), "--seeds", "0"])
    assert not (tmp_path / "fresh.jsonl").exists()


def test_a_set_aside_method_measured_on_the_held_out_questions_is_reported_as_if_kept() -> None:
    from bench_from_runs import Plan
    from bench_learn_split import database_row

    from agentkit.training.learning.report import LearningReport, Score

    def score(label: str, solved: dict[str, bool], **extra: Any) -> Score:
        k = sum(solved.values())
        return Score(label=label, environment="sql-db", tasks=len(solved), successes=k,
                     success_rate=k / len(solved), ci_low=0.0, ci_high=1.0, per_task=solved, **extra)

    before = score("before", {"a": True, "b": False, "c": True})
    report = LearningReport(
        environment="sql-db", model="m", methods=["skills", "experience"], seed=0, train_tasks=["t"],
        heldout_tasks=["a", "b", "c"], before=before, after=score("after-experience", dict.fromkeys("abc", True)),
        evaluations=[score("after-skills", before.per_task, same_as="before"),
                     score("after-experience", dict.fromkeys("abc", True))],
        set_aside=[score("set-aside-skills", {"a": False, "b": True, "c": True})],
        details={"skills": {"set_aside": "skills set aside: ..."}, "experience": {}})
    row = database_row("db", report, Plan(afternoon=[1], heldout=[1, 2, 3], questions=4))
    skills, experience = row["methods"]
    assert skills["kept"] is False and skills["delta_points"] == 0.0
    assert skills["if_kept"] == {"correct": 2, "tasks": 3, "delta_points": 0.0, "right": ["b"], "wrong": ["a"]}
    assert experience["kept"] is True and "if_kept" not in experience and experience["delta_points"] == 33.3
    page = markdown({"seeds": {"0": {"databases": [row], "overall": pooled([row])}},
                     "overall": over_seeds({"0": {"databases": [row], "overall": pooled([row])}})})
    assert "skills +0.0 (set aside; if kept +0.0), experience +33.3" in page
