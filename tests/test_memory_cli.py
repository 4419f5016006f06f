"""`agentkit notes`: list, show, search, rm, and learn with scripted models (exact-match reward)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from agentkit.cli import notes_cmd

SUBJECT = ("Counting how many tracks are in each genre of the music store database; needs GROUP BY genre "
           "with COUNT of tracks")


def make_app() -> typer.Typer:
    app = typer.Typer()
    notes_cmd.register(app)

    @app.command("noop")  # a second command keeps typer from collapsing the group
    def noop() -> None: ...

    return app


def test_learn_then_list_show_search_and_remove(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "g", "prompt": "How many tracks are in each genre?", "expected": "25"}) + "\n")
    note = {"corrected_examples": ["tracks per genre: GROUP BY GenreId -> 25 genres"],
            "correct_approach": "GROUP BY the genre and COUNT.", "mistake_summary": "answered 0",
            "generalisable_strategy": "per-group questions need GROUP BY", "anti_patterns": ["a single total"]}
    (tmp_path / "agent.json").write_text(json.dumps(["0", "25"]))  # baseline wrong, with the note right
    (tmp_path / "analyst.json").write_text(json.dumps([json.dumps({"subject": SUBJECT}), json.dumps(note)]))
    book = str(tmp_path / "notes")
    runner = CliRunner()
    app = make_app()

    result = runner.invoke(app, ["notes", "learn", str(tasks), "--reward", "exact", "--path", book, "--threshold",
                                 "0.3", "--model", f"script:{tmp_path / 'agent.json'}",
                                 "--analyst", f"script:{tmp_path / 'analyst.json'}", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(next(line for line in result.output.splitlines() if line.startswith('{"step": 1')))
    assert report["accepted"] and (report["wins"], report["losses"]) == (1, 0) and len(report["notes_added"]) == 1
    note_id = report["notes_added"][0]

    listed = runner.invoke(app, ["notes", "list", "--path", book])
    assert listed.exit_code == 0 and note_id in listed.output and "1 note(s)" in listed.output
    shown = runner.invoke(app, ["notes", "show", note_id[:10], "--path", book])
    assert shown.exit_code == 0 and "GROUP BY the genre" in shown.output and "learnt from tasks: g" in shown.output
    found = runner.invoke(app, ["notes", "search", "tracks per genre?", "--threshold", "0.3", "--path", book])
    assert found.exit_code == 0 and note_id in found.output
    none = runner.invoke(app, ["notes", "search", "capital of France", "--path", book])
    assert "No note reaches cosine 0.4" in none.output
    missing = runner.invoke(app, ["notes", "show", "note_nope", "--path", book])
    assert missing.exit_code == 1
    removed = runner.invoke(app, ["notes", "rm", note_id, "--path", book])
    assert removed.exit_code == 0 and "Removed" in removed.output
    assert "No notes" in runner.invoke(app, ["notes", "list", "--path", book]).output


def test_learn_rejects_bad_input_clearly(tmp_path: Path) -> None:
    runner = CliRunner()
    app = make_app()
    result = runner.invoke(app, ["notes", "learn", str(tmp_path / "absent.jsonl"), "--reward", "exact"])
    assert result.exit_code == 2 and "No task file" in result.output
    (tmp_path / "t.jsonl").write_text(json.dumps({"id": "a", "prompt": "q"}) + "\n")
    result = runner.invoke(app, ["notes", "learn", str(tmp_path / "t.jsonl"), "--reward", "exact",
                                 "--model", "script:none.json", "--path", str(tmp_path / "n")])
    assert result.exit_code != 0
    result = runner.invoke(app, ["notes", "learn", str(tmp_path / "t.jsonl"), "--reward", "nope"])
    assert result.exit_code == 2 and "--reward must be" in result.output


def test_learn_with_the_sql_reward_on_chinook(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "c1", "question": "How many tracks are there?",
                                 "sql": "SELECT COUNT(*) FROM Track"}) + "\n")
    confirm = [{"tool": "confirm_answer", "arguments": {"sql": "SELECT COUNT(*) FROM Album"}},
               {"tool": "confirm_answer", "arguments": {"sql": "SELECT COUNT(*) FROM Track"}}]
    (tmp_path / "agent.json").write_text(json.dumps(confirm))  # wrong table first, right with the note
    subject = ("Questions like how many tracks there are over the Chinook music store database: count the "
               "rows of the one table the question names with SELECT COUNT(*)")
    note = {"corrected_examples": ["How many tracks are there? SELECT COUNT(*) FROM Track"],
            "correct_approach": "COUNT the table the question names.", "mistake_summary": "counted Album",
            "generalisable_strategy": "match the table to the noun", "anti_patterns": ["counting another table"]}
    (tmp_path / "analyst.json").write_text(json.dumps([json.dumps({"subject": subject}), json.dumps(note)]))
    result = CliRunner().invoke(make_app(), [
        "notes", "learn", str(tasks), "--reward", "sql", "--path", str(tmp_path / "notes"), "--threshold", "0.3",
        "--model", f"script:{tmp_path / 'agent.json'}", "--analyst", f"script:{tmp_path / 'analyst.json'}"])
    assert result.exit_code == 0, result.output
    assert "W/T/L 1/0/0: accepted" in result.output and "success 0% → 100%" in result.output
