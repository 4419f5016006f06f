"""The SQL mistake analyst: a failed query compared with the gold one, clause by clause, and the notes it
writes, learned through a real notebook on the shipped clinic database."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentkit.environments.base import Task
from agentkit.environments.sql import CLINIC_DB, CLINIC_TASKS, SQLEnvironment
from agentkit.memory.notes import FailureAnalyst
from agentkit.memory.prompts import NOTES_TITLE
from agentkit.memory.sql_analyst import LESSONS, SQLDiffAnalyst, differences, last_sql
from agentkit.messages import Message, ToolCall
from agentkit.testing import FunctionModel
from agentkit.trajectory import Trajectory


@pytest.mark.parametrize(("predicted", "gold", "lessons"), [
    ("SELECT DISTINCT Country FROM Customer LIMIT 2", "SELECT DISTINCT Country FROM Customer ORDER BY Country",
     ["extra_limit"]),
    ("SELECT COUNT(*) FROM Customer WHERE Company = ?", "SELECT COUNT(*) FROM Customer WHERE Company IS NOT NULL",
     ["null_test", "placeholder"]),
    ("SELECT InvoiceId FROM Invoice", "SELECT SUM(Total) FROM Invoice", ["aggregate"]),
    ("SELECT COUNT(*) FROM Track", "SELECT GenreId, COUNT(*) FROM Track GROUP BY GenreId", ["group_by"]),
    ("SELECT Name FROM Artist", "SELECT Name FROM Artist ORDER BY Followers DESC LIMIT 1", ["superlative"]),
    ("SELECT Country FROM Customer", "SELECT DISTINCT Country FROM Customer", ["distinct"]),
    ("SELECT Name FROM Track WHERE AlbumId = 1",
     "SELECT Track.Name FROM Track JOIN Album ON Track.AlbumId = Album.AlbumId WHERE Album.Title = 'X'", ["join"]),
])
def test_each_clause_level_difference_names_its_lesson(predicted: str, gold: str, lessons: list[str]) -> None:
    assert differences(predicted, gold) == lessons
    assert set(lessons) <= set(LESSONS)


def test_equal_queries_and_text_inside_literals_name_nothing() -> None:
    same = "SELECT Name FROM Doctor WHERE Note = 'call? LIMIT 2 GROUP BY' ORDER BY Name"
    assert differences(same, same) == []
    assert differences("select name from doctor where note = 'x?'", "SELECT Name FROM Doctor WHERE Note = 'y'") == []
    assert differences(None, "SELECT 1") == []  # the run wrote no query: nothing to compare


def run_with(*calls: tuple[str, str]) -> Trajectory:
    trajectory = Trajectory(task="q")
    for i, (name, sql) in enumerate(calls):
        call = ToolCall(id=f"c{i}", name=name, arguments={"sql": sql})
        trajectory.messages += [Message.assistant(tool_calls=[call]), Message.tool(call, "ok")]
    return trajectory


def test_the_analyst_reads_the_last_query_of_a_run_and_the_task_s_gold_query() -> None:
    analyst = SQLDiffAnalyst()
    assert isinstance(analyst, FailureAnalyst)
    run = run_with(("run_query", "SELECT Name FROM Doctor"), ("confirm_answer", "SELECT Name FROM Doctor LIMIT 1"))
    assert last_sql(run) == "SELECT Name FROM Doctor LIMIT 1"
    task = Task(id="t", prompt="List the doctors' names.", data={"question": "List the doctors' names.",
                                                                 "gold_sql": "SELECT Name FROM Doctor"})
    assert analyst.labels(task, run) == ["extra_limit"]
    assert analyst.labels(Task(id="u", prompt="no gold"), run) == []
    assert analyst.labels(task, None) == []  # a run that crashed


def test_a_note_quotes_its_questions_and_pairs_them_with_the_gold_query() -> None:
    long_question = "List the names of the doctors " + "who work in the clinic " * 10
    tasks = [Task(id=f"t{i}", prompt=q, data={"question": q, "gold_sql": "SELECT Name FROM Doctor"})
             for i, q in enumerate(["List the doctors' names.", long_question])]
    runs = [run_with(("confirm_answer", "SELECT Name FROM Doctor LIMIT 1")) for _ in tasks]
    note = SQLDiffAnalyst().note("extra_limit", list(zip(tasks, runs, strict=True)))
    assert note.subject.startswith(LESSONS["extra_limit"].kind) and "List the doctors' names." in note.subject
    assert len(note.subject.split()) <= 50  # a note's subject is 10 to 50 words: long questions are cut
    assert note.corrected_examples[0] == "List the doctors' names. → SELECT Name FROM Doctor"
    assert note.anti_patterns == [f"{LESSONS['extra_limit'].avoid}, as in: SELECT Name FROM Doctor LIMIT 1"]
    assert note.source_tasks == ["t0", "t1"] and note.correct_approach == LESSONS["extra_limit"].approach


def test_a_notebook_learns_from_the_analyst_without_an_analyst_model(tmp_path: Path) -> None:
    """Clinic questions answered with a LIMIT they did not ask for, unless a note is shown: the analyst names
    the LIMIT, the note is written without any model call, helps on the batch, is kept, and is then shown
    to a similar question the batch did not hold."""
    from agentkit import Agent
    from agentkit.memory.embeddings import Embedder
    from agentkit.memory.notebook import MistakeNotebook

    records = {r["id"]: r for r in map(json.loads, CLINIC_TASKS.read_text().splitlines())}
    env = SQLEnvironment(db=CLINIC_DB, tasks=[records["clinic-004"], records["clinic-009"]], name="clinic")
    gold = {t.prompt: t.data["gold_sql"] for t in env.tasks()}
    asked: list[str] = []

    def reply(messages: Sequence[Message], tools: Any) -> Message:
        asked.append(messages[0].content[:40])
        prompt = next(p for p in gold if p in messages[-1].content)
        shown = NOTES_TITLE in "\n".join(m.content for m in messages)
        sql = gold[prompt] if shown else gold[prompt] + " LIMIT 1"
        return Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": sql})])

    episodes: dict[str, Any] = {}

    def agent_for(task: Task) -> Agent:
        episodes[task.id] = env.reset(task)
        return Agent(FunctionModel(reply), list(episodes[task.id].tools), max_steps=2)

    def reward(task: Task, trajectory: Trajectory) -> float:
        episode = episodes.pop(task.id)
        try:
            return float(episode.score(trajectory)["reward"] >= 1.0)
        finally:
            episode.close()

    book = MistakeNotebook.open(tmp_path / "notes", Embedder.default(), threshold=0.4)
    report = book.learn(env.tasks(), reward, agent_for, analyst=SQLDiffAnalyst())
    assert report.baseline == {"clinic-004": 0.0, "clinic-009": 0.0}  # both cut to one row
    assert report.clusters == {"extra_limit": ["clinic-004", "clinic-009"]}
    assert report.accepted and report.after == {"clinic-004": 1.0, "clinic-009": 1.0}
    assert len(asked) == 4  # two runs without the note, two with it: no analyst call
    (note,) = list(book)
    assert note.mistake_summary == LESSONS["extra_limit"].mistake
    assert book.search("List the names of the doctors hired before 2010.")  # a question it was not learned on
    book.close()
