"""`agentkit skills ...` end to end through the real CLI, and the /skills chat command."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from agentkit import Agent
from agentkit.cli.main import app
from agentkit.skills import SkillLibrary
from agentkit.testing import FunctionModel

DATA = Path(__file__).parent / "data" / "skills"
runner = CliRunner()


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["skills", *args])
    return result.exit_code, result.output


def test_skills_commands_round_trip(tmp_path):
    lib = str(tmp_path / "lib")
    code, out = cli("add", str(DATA / "undo-git-commit"), "-l", lib)
    assert code == 0 and "added undo-git-commit (skill_" in out
    code, out = cli("import", str(DATA), "-l", lib)
    assert code == 0
    assert f"{len(list(DATA.iterdir())) - 1} of {len(list(DATA.iterdir()))} skill(s) imported" in out
    assert "refused   undo-git-commit  (a skill named 'undo-git-commit' already exists" in out
    code, out = cli("list", "-l", lib)
    assert code == 0 and "sql-top-n-by-value" in out and f"{len(list(DATA.iterdir()))} skill(s)" in out
    code, out = cli("list", "-l", lib, "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["name"] for r in rows} == {p.name for p in DATA.iterdir()} and all(r["utility"] == 0.5 for r in rows)
    code, out = cli("search", "my disk is full", "-k", "2", "-l", lib)
    assert code == 0 and out.splitlines()[0].split()[1] == "find-large-files" and len(out.splitlines()) == 2
    code, out = cli("show", "unit-conversion", "-l", lib)
    assert code == 0 and out.startswith("---\nname: unit-conversion") and "source hand-written" in out
    code, out = cli("export", str(tmp_path / "out"), "-l", lib)
    assert code == 0 and (tmp_path / "out" / "unit-conversion" / "SKILL.md").is_file()
    code, out = cli("rm", "unit-conversion", "-l", lib)
    assert code == 0 and out.startswith("removed unit-conversion")
    code, out = cli("stats", "-l", lib, "--json")
    figures = json.loads(out)
    assert figures["skills"] == figures["indexed"] == len(list(DATA.iterdir())) - 1
    assert figures["refused"] == 1
    code, out = cli("sync", "-l", lib)
    assert code == 0 and "0 added, 0 removed" in out


def test_skills_commands_explain_bad_input(tmp_path):
    lib = str(tmp_path / "lib")
    code, out = cli("add", str(tmp_path), "-l", lib)
    assert code == 2 and "has no SKILL.md" in out
    bad = tmp_path / "bad-skill"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: Bad Name\ndescription: x\n---\n")
    code, out = cli("add", str(bad), "-l", lib)
    assert code == 2 and "invalid skill name" in out
    code, out = cli("show", "nope", "-l", lib)
    assert code == 1 and "no skill named" in out
    manifest = json.loads((tmp_path / "lib" / "library.json").read_text())
    (tmp_path / "lib" / "library.json").write_text(json.dumps({**manifest, "schema_version": 9}))
    code, out = cli("list", "-l", lib)
    assert code == 2 and "newer agentkit" in out


def test_slash_skills_command_in_a_chat(tmp_path):
    from agentkit.cli.chat import ChatSession
    from agentkit.cli.skills_cmd import chat_commands

    library = SkillLibrary.open(tmp_path / "lib", rerank="top")
    library.import_dir(DATA / "unit-conversion")
    distilled = json.dumps({"name": "miles-to-km", "description": "Convert a distance in miles to kilometres.",
                            "lessons": ["1 mile is 1.609 km"], "success": True})

    def policy(messages, tools):
        system = messages[0].content
        if "search query" in system:
            return "<query>convert units of length</query>"
        if "reusable skills" in system:
            return distilled
        return "10 miles is 16.09 km."

    out = io.StringIO()
    session = ChatSession(lambda m: Agent(m, extensions=[library]), FunctionModel(policy), "function",
                          Console(file=out, width=200), commands=chat_commands(library))
    session.ask("How far is 10 miles in km?")
    session.command("/skills")
    text = out.getvalue()
    assert "* " in text and "unit-conversion" in text and "query: convert units of length" in text
    assert "not admitted: outcome unknown" in text
    session.command("/skills good")
    assert "distilled skill admitted" in out.getvalue()
    assert library.get("miles-to-km").source_trajectory == session.trajectories[-1].id
    assert library.get("unit-conversion").utility == pytest.approx(0.525)


def test_show_names_the_task_a_distilled_skill_solved(tmp_path):
    from agentkit.skills import Skill

    library = SkillLibrary.open(tmp_path / "lib")
    library.add(Skill(name="count-rows", description="Count rows with COUNT(*).", source="distilled",
                      example_task="How many playlists are there?"))
    code, out = cli("show", "count-rows", "-l", str(tmp_path / "lib"))
    assert code == 0 and "Solved: How many playlists are there?" in out and "Worked example" not in out
