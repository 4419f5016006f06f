"""`agentkit learn --from-runs LOG`: an afternoon of chat on a database (the SQL toolkit's tools, a scripted model),
rated with /good and /bad, learned with no task file and no gold, and attached the next morning with --memory.
Real SQLite file from the task engine, real MiniLM embeddings and notebook; the script is the model's choices."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

from rich.console import Console
from test_experience import build_train_db
from typer.testing import CliRunner

from agentkit.cli.chat import ChatConfig, run_chat
from agentkit.cli.main import app
from agentkit.feedback import rate
from agentkit.memory.experience import TITLE, Experience, database_key_of
from agentkit.records import EXPERIENCE
from agentkit.sql import SchemaToolkit
from agentkit.trajectory import Trajectory, read_jsonl


def confirm(sql: str) -> dict[str, Any]:
    return {"tool": "confirm_answer", "arguments": {"sql": sql}}


def test_an_afternoon_of_rated_chat_becomes_experience_and_notes_for_the_next_day(tmp_path: Path) -> None:
    db, records = build_train_db(tmp_path / "sqlgen")
    by_number = {int(r["id"].rsplit("-", 1)[1]): r for r in records}
    asked = [by_number[n] for n in (4, 30, 3, 29, 21)]
    script = tmp_path / "afternoon.json"
    script.write_text(json.dumps([confirm(asked[0]["sql"]), confirm(asked[1]["sql"]), confirm(asked[2]["sql"]),
                                  confirm("SELECT COUNT(*) FROM Shop"), confirm(asked[4]["sql"])]))
    log = tmp_path / "chat.jsonl"
    lines = [asked[0]["question"], "/good", asked[1]["question"], "/good", asked[2]["question"], "/good",
             asked[3]["question"], "/bad count the order lines, not the shops", asked[4]["question"]]
    out = StringIO()
    code = run_chat(ChatConfig(model=f"script:{script}", tools="none", log=log), extra_tools=[SchemaToolkit(db)],
                    console=Console(file=out, width=200), stdin=StringIO("\n".join(lines) + "\n"))
    assert code == 0, out.getvalue()
    assert len(read_jsonl(log)) == 5

    runner, learned = CliRunner(), tmp_path / "learned"
    # the chat's runs did not record their database: without --db none can be admitted, and it says why
    blind = runner.invoke(app, ["learn", "--from-runs", str(log), "--out", str(tmp_path / "blind"),
                                "--method", "experience"])
    assert blind.exit_code == 0, blind.output
    assert "0 examples admitted" in blind.output and "3 good runs not admitted: its database is not known" in \
        blind.output.replace("\n", " ")
    result = runner.invoke(app, ["learn", "--from-runs", str(log), "--db", str(db), "--out", str(learned)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "5 runs: 3 rated good, 1 rated bad, 1 not rated" in text
    assert "experience: 3 examples admitted, 0 forgotten (rated bad since), 3 in all" in text
    assert "notes: 1 written from bad runs with a reason" in text
    experience = Experience.load(learned / "experience.json")
    assert [e.question for e in experience.examples] == [r["question"] for r in asked[:3]]
    assert all(e.verified_by == "user" and e.database == database_key_of(db) for e in experience.examples)
    assert [e.sql for e in experience.examples] == [r["sql"] for r in asked[:3]]
    notes = json.loads((learned / "notes" / "notes.json").read_text())["notes"]
    assert len(notes) == 1 and notes[0]["correct_approach"] == "count the order lines, not the shops"
    assert notes[0]["anti_patterns"] == ["SELECT COUNT(*) FROM Shop"]
    summary = json.loads((learned / "summary.json").read_text())
    assert set(summary["artefacts"]) == {"experience", "notes"} and summary["from_runs"]["good"] == 3

    # the next morning: `agentkit sql --memory` shows the afternoon's verified answer to the same kind of question
    # as a worked example ("Count the employees." at question cosine 0.81), not the other kinds
    morning = tmp_path / "morning.json"
    morning.write_text(json.dumps([confirm("SELECT COUNT(*) FROM Employee")]))
    runs = tmp_path / "morning.jsonl"

    def ask_employees(log_to: Path) -> Trajectory:
        """`agentkit sql` with the learned memory on one question; its logged run."""
        answer = runner.invoke(app, ["sql", "What is the number of employees?", "--db", str(db), "--memory",
                                     str(learned), "--model", f"script:{morning}", "--planner", "react", "--no-embed",
                                     "--log", str(log_to)])
        assert answer.exit_code == 0, answer.output
        (logged,) = read_jsonl(log_to)
        return logged

    run = ask_employees(runs)
    shown = run.records.get(EXPERIENCE)
    assert shown is not None and [s.question for s in shown.shown] == [asked[0]["question"]]
    assert f"## {TITLE}" in run.messages[0].content and asked[0]["sql"] in run.messages[0].content
    assert asked[1]["sql"] not in run.messages[0].content
    assert shown.use == "copied"  # the example's SQL as it was
    assert run.records.get(EXPERIENCE).database == database_key_of(db)  # type: ignore[union-attr]

    # a stricter floor, given once, is saved with the examples and holds the next morning: 0.81 is too far now
    strict = runner.invoke(app, ["learn", "--from-runs", str(log), "--db", str(db), "--out", str(learned),
                                 "--method", "experience", "--min-similarity", "0.9"])
    assert strict.exit_code == 0, strict.output
    assert Experience.load(learned / "experience.json").min_similarity == 0.9
    run = ask_employees(tmp_path / "later.jsonl")
    assert f"## {TITLE}" not in run.messages[0].content and asked[0]["sql"] not in run.messages[0].content

    # a run rated bad after it was learned is forgotten on the next pass; passes add each run once
    first = next(t for t in read_jsonl(log) if t.task == asked[0]["question"])
    rate(first, good=False, why="the question meant active employees", log=log)
    again = runner.invoke(app, ["learn", "--from-runs", str(log), "--from-runs", str(runs), "--db", str(db),
                                "--out", str(learned)])
    assert again.exit_code == 0, again.output
    assert "0 examples admitted, 1 forgotten" in " ".join(again.output.split())
    assert [e.question for e in Experience.load(learned / "experience.json").examples] == \
        [r["question"] for r in asked[1:3]]
    assert len(json.loads((learned / "notes" / "notes.json").read_text())["notes"]) == 2


def test_from_runs_refuses_what_it_cannot_learn(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["learn", "--from-runs", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o")])
    assert missing.exit_code == 1 and "no log at" in missing.output
    (tmp_path / "log.jsonl").write_text("")
    wrong = runner.invoke(app, ["learn", "--from-runs", str(tmp_path / "log.jsonl"), "--out", str(tmp_path / "o"),
                                "--method", "rl"])
    assert wrong.exit_code == 1 and "learns experience, notes, not rl" in wrong.output
