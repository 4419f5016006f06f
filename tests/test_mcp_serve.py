"""`agentkit mcp serve`: the skill library and mistake notebook over MCP, checked with the `mcp` package's
own client against a real library (chromadb + the packaged MiniLM) and a real notebook."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from agentkit.memory.notebook import MistakeNotebook, Note
from agentkit.skills import SkillLibrary

DATA = Path(__file__).parent / "data" / "skills"
SUBJECT = ("Counting rows per group in a SQL database, such as tracks per genre or invoices per customer, "
           "with GROUP BY and COUNT")


@pytest.fixture(scope="module")
def learnt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("learnt")
    library = SkillLibrary.open(root / "skills")
    for name in ("sql-count-rows-per-group", "sql-top-n-by-value", "find-large-files", "unit-conversion"):
        library.import_dir(DATA / name)
    book = MistakeNotebook.open(root / "notes")
    book.add(Note(subject=SUBJECT, corrected_examples=["SELECT g.Name, COUNT(*) FROM Track t JOIN Genre g ..."],
                  correct_approach="Join to the group's table and GROUP BY its key.",
                  mistake_summary="Counted all rows instead of rows per group.",
                  generalisable_strategy="Per-X questions need GROUP BY X.",
                  anti_patterns=["COUNT(*) without GROUP BY for a per-group question"]))
    book.close()
    return root / "skills", root / "notes"


def serve_args(skills: Path, notes: Path, *extra: str) -> list[str]:
    return ["-m", "agentkit.cli.main", "mcp", "serve", "--skills", str(skills), "--notes", str(notes), *extra]


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def exercise(session: ClientSession, writable: bool) -> dict[str, Any]:
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    found = await session.call_tool("skills_search", {"query": "How many tracks are there in each genre?", "k": 3})
    hits = found.structuredContent["result"] if found.structuredContent else json.loads(text_of(found))
    shown = await session.call_tool("skills_show", {"name": "sql-count-rows-per-group"})
    missing = await session.call_tool("skills_show", {"name": "no-such-skill"})
    notes = await session.call_tool("notes_search", {"query": "number of invoices for each customer"})
    note_hits = notes.structuredContent["result"] if notes.structuredContent else json.loads(text_of(notes))
    note = await session.call_tool("notes_show", {"note_id": note_hits[0]["id"][:10]})
    out = {"tools": tools, "hits": hits, "shown": text_of(shown), "missing": missing, "note_hits": note_hits,
           "note": text_of(note)}
    if writable:
        added = await session.call_tool("skills_add", {
            "name": "sql-median-of-column", "description": "Compute the median of a numeric column in SQLite.",
            "body": "1. ORDER BY the column\n2. take the middle row with LIMIT/OFFSET", "when_to_use": "median"})
        out["added"] = text_of(added)
        bad = await session.call_tool("notes_add", {"subject": "too short", "corrected_examples": ["x"],
                                                    "correct_approach": "a", "mistake_summary": "b",
                                                    "generalisable_strategy": "c", "anti_patterns": ["d"]})
        out["bad_note"] = bad
    return out


def check_read_tools(out: dict[str, Any]) -> None:
    names = [h["name"] for h in out["hits"]]
    scores = [h["score"] for h in out["hits"]]
    assert len(names) == 3 and names.index("sql-count-rows-per-group") < 2 and scores == sorted(scores, reverse=True)
    assert "sql-count-rows-per-group" in out["shown"] and "GROUP BY" in out["shown"]
    assert out["missing"].isError and "no skill named" in text_of(out["missing"])
    assert out["note_hits"][0]["subject"] == SUBJECT
    assert "Per-X questions need GROUP BY X." in out["note"]
    assert out["tools"]["skills_search"].annotations.readOnlyHint is True


@pytest.mark.slow  # the server process loads the embedding model
def test_stdio_serve_is_read_only_by_default(learnt: tuple[Path, Path]) -> None:
    skills, notes = learnt

    async def main() -> dict[str, Any]:
        params = StdioServerParameters(command=sys.executable, args=serve_args(skills, notes))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await exercise(session, writable=False)

    out = asyncio.run(main())
    check_read_tools(out)
    assert set(out["tools"]) == {"skills_search", "skills_show", "notes_search", "notes_show"}


@pytest.mark.slow
def test_http_serve_writable_adds_skills_and_validates_notes(learnt: tuple[Path, Path]) -> None:
    skills, notes = learnt
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, *serve_args(skills, notes, "--writable", "--http", str(port))])
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, "the server exited"
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the server did not open its port"
            time.sleep(0.1)

        async def main() -> dict[str, Any]:
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, _), \
                    ClientSession(read, write) as session:
                return await exercise(session, writable=True)

        out = asyncio.run(main())
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    check_read_tools(out)
    assert {"skills_add", "notes_add"} <= set(out["tools"])
    assert '"added"' in out["added"] or "added" in out["added"]
    assert out["bad_note"].isError and "10 to 50 words" in text_of(out["bad_note"])
    assert "sql-median-of-column" in {s.name for s in SkillLibrary.open(skills).skills()}
