"""Mistake Notebook Learning, one batch step: clustering, note writing, merging, accept or roll back."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from memory_learn_fixtures import COUNT_SUBJECT, TASKS, agent_model, analyst_model, note_json, reward

from agentkit import Agent
from agentkit.memory.embeddings import Embedder
from agentkit.memory.learn import as_tasks, parse_json_object
from agentkit.memory.notebook import MistakeNotebook, Note, NotebookBusyError
from agentkit.memory.sampling import best_of_n
from agentkit.testing import FunctionModel, ScriptedModel

FIXTURES = Path(__file__).with_name("memory_learn_fixtures.py")
OTHER_SUBJECT = ("SQL over a music store database: listing the customers who live in a given country, "
                 "which needs a WHERE filter on the Country column")


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.default()


def open_book(path: Path, embedder: Embedder) -> MistakeNotebook:
    return MistakeNotebook.open(path, embedder, threshold=0.5)


def test_failures_are_clustered_by_label_and_a_helpful_note_is_accepted(tmp_path: Path, embedder: Embedder) -> None:
    book = open_book(tmp_path / "notes", embedder)
    analyst = analyst_model()
    report = book.learn(TASKS, reward, Agent(agent_model()), analyst=analyst)

    assert report.baseline == {"genre": 0.0, "artist": 0.0, "brazil": 1.0}
    assert report.failures == 2
    # The analyst reused the first label for the second failure: one cluster, one note.
    assert report.clusters == {COUNT_SUBJECT: ["genre", "artist"]}
    assert len(report.notes_added) == 1 and report.notes_merged == []
    assert report.after == {"genre": 1.0, "artist": 1.0, "brazil": 1.0}
    assert (report.wins, report.ties, report.losses) == (2, 1, 0)
    assert report.accepted and not report.rolled_back
    assert report.success_before == pytest.approx(1 / 3) and report.success_after == 1.0
    assert "W/T/L 2/1/0: accepted" in report.summary()

    reopened = open_book(tmp_path / "notes", embedder)
    (note,) = list(reopened)
    assert note.subject == COUNT_SUBJECT and note.source_tasks == ["genre", "artist"]
    assert len(note.source_trajectories) == 2
    assert not book.backup_file.exists()
    # The note-writing prompt carried the error contexts and the reference answers.
    note_prompt = analyst.requests[-1][1].content
    assert "How many albums does each artist have?" in note_prompt and "final answer: '0'" in note_prompt
    assert "per-genre counts" in note_prompt
    # A second step on the same batch finds no failures and changes nothing.
    again = reopened.learn(TASKS, reward, Agent(agent_model()), analyst=analyst_model())
    assert again.failures == 0 and not again.accepted and len(reopened) == 1


def test_a_step_answers_its_batch_concurrently_with_the_same_outcome(tmp_path: Path, embedder: Embedder) -> None:
    book = open_book(tmp_path / "notes", embedder)
    barrier, waited = threading.Barrier(2, timeout=10), set()

    def agent_for(task):  # type: ignore[no-untyped-def]
        if task.id in ("genre", "artist") and task.id not in waited:  # the first two run at the same time
            waited.add(task.id)
            barrier.wait()
        return Agent(agent_model())

    report = book.learn(TASKS, reward, agent_for, analyst=analyst_model(), concurrency=2)
    assert waited == {"genre", "artist"}
    assert report.baseline == {"genre": 0.0, "artist": 0.0, "brazil": 1.0}
    assert list(report.after) == ["genre", "artist", "brazil"] and report.accepted
    assert (report.wins, report.ties, report.losses) == (2, 1, 0)


def test_similar_labels_form_one_cluster_even_when_the_analyst_does_not_reuse(tmp_path: Path,
                                                                              embedder: Embedder) -> None:
    near = COUNT_SUBJECT.replace("which needs", "which requires")
    assert float(embedder.embed([near])[0] @ embedder.embed([COUNT_SUBJECT])[0]) >= 0.9
    book = open_book(tmp_path / "n.json", embedder)
    report = book.learn(TASKS, reward, Agent(agent_model()),
                        analyst=analyst_model([COUNT_SUBJECT, near], label_reuse=False))
    assert report.clusters == {COUNT_SUBJECT: ["genre", "artist"]}

    book2 = open_book(tmp_path / "m.json", embedder)
    report2 = book2.learn(TASKS, reward, Agent(agent_model()),
                          analyst=analyst_model([COUNT_SUBJECT, OTHER_SUBJECT], label_reuse=False))
    assert set(report2.clusters) == {COUNT_SUBJECT, OTHER_SUBJECT}
    assert len(report2.notes_added) == 2


def test_a_note_on_a_known_subject_is_merged_not_duplicated(tmp_path: Path, embedder: Embedder) -> None:
    book = open_book(tmp_path / "notes", embedder)
    existing = Note(subject=COUNT_SUBJECT.replace("which needs", "which requires"),
                    corrected_examples=["old example"], correct_approach="old approach",
                    mistake_summary="old summary", generalisable_strategy="old strategy",
                    anti_patterns=["an old anti-pattern"])
    book.add(existing)
    # With the old note shown the agent still fails (its text has no GROUP BY); the merged one helps.
    report = book.learn(TASKS, reward, Agent(agent_model()), analyst=analyst_model(label_reuse=False))
    assert report.notes_merged == [existing.id] and report.notes_added == []
    assert report.accepted
    (merged,) = list(open_book(tmp_path / "notes", embedder))
    assert merged.id == existing.id and merged.subject == existing.subject
    assert merged.anti_patterns == ["answering a per-group question with a single total", "an old anti-pattern"]
    assert merged.corrected_examples[-1] == "old example" and "GROUP BY" in merged.generalisable_strategy


@pytest.mark.parametrize("had_file", [True, False])
def test_a_note_that_does_not_help_is_rolled_back_byte_identically(tmp_path: Path, embedder: Embedder,
                                                                  had_file: bool) -> None:
    book = open_book(tmp_path / "notes", embedder)
    if had_file:
        book.add(Note(subject=OTHER_SUBJECT, corrected_examples=["e"], correct_approach="a",
                      mistake_summary="m", generalisable_strategy="s", anti_patterns=["x"]))
    before = book.file.read_bytes() if had_file else None
    report = book.learn(TASKS, reward, Agent(agent_model(uses_notes=False)), analyst=analyst_model(label_reuse=False))
    assert len(report.notes_added) == 1 and (report.wins, report.losses) == (0, 0)
    assert report.rolled_back and not report.accepted
    if had_file:
        assert book.file.read_bytes() == before
    else:
        assert not book.file.exists()
    assert not book.backup_file.exists()
    assert len(book) == (1 if had_file else 0)
    assert book.search("How many tracks are in each genre?", threshold=-1.0) == [] if not had_file else True


def test_malformed_analyst_output_is_retried_then_the_cluster_is_skipped(tmp_path: Path, embedder: Embedder,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    book = open_book(tmp_path / "notes", embedder)
    analyst = analyst_model(note="I think the agent should try harder.")
    with caplog.at_level(logging.WARNING):
        report = book.learn(TASKS, reward, Agent(agent_model()), analyst=analyst, max_retries=2)
    assert report.notes_added == [] and not report.accepted and not report.rolled_back
    assert any("unusable after 3 tries" in s and "no JSON object" in s for s in report.skipped)
    assert "skipping cluster" in caplog.text
    assert sum("Write one note" in r[1].content for r in analyst.requests) == 3
    assert not book.file.exists()

    # Missing sections are reported back to the analyst, who fixes them on the retry.
    replies = iter([note_json(anti_patterns=None).replace(', "anti_patterns": null', ""), note_json()])
    fixing = analyst_model()
    label_only = fixing.fn

    def fn(messages, tools):  # type: ignore[no-untyped-def]
        return label_only(messages, tools) if "Name the subject" in messages[1].content else next(replies)

    report = book.learn(TASKS, reward, Agent(agent_model()), analyst=FunctionModel(fn))
    assert report.accepted and len(book) == 1
    bad_subject = book.learn([{"id": "x", "prompt": "How many tracks are in each genre?", "expected": "?"}],
                             reward, Agent(agent_model()), analyst=analyst_model(["too short"], label_reuse=False))
    assert bad_subject.clusters == {} and "10 to 50 words" in bad_subject.skipped[0]


def test_a_note_that_copies_the_template_is_sent_back_and_copied_items_are_dropped(tmp_path: Path,
                                                                                   embedder: Embedder) -> None:
    from agentkit.memory.prompts import NOTE_PLACEHOLDERS

    copied = note_json(correct_approach="how to solve tasks of this subject, step by step")
    mixed = note_json(anti_patterns=["specific things NOT to do (at least one)", "answering with a single total"])
    replies = iter([copied, mixed])
    labels = analyst_model().fn

    def fn(messages, tools):  # type: ignore[no-untyped-def]
        return labels(messages, tools) if "Name the subject" in messages[1].content else next(replies)

    analyst = FunctionModel(fn)
    book = open_book(tmp_path / "notes", embedder)
    report = book.learn(TASKS, reward, Agent(agent_model()), analyst=analyst)
    assert report.accepted and "correct_approach only repeats the template" in analyst.requests[-1][-1].content
    (note,) = list(book)
    assert note.anti_patterns == ["answering with a single total"]
    assert not any(p in note.render() for p in NOTE_PLACEHOLDERS)


def test_task_inputs_and_json_parsing() -> None:
    tasks = as_tasks([{"id": 1, "question": "q?", "sql": "SELECT 1"}])
    assert tasks[0].id == "1" and tasks[0].prompt == "q?" and tasks[0].data == {"question": "q?", "sql": "SELECT 1"}
    with pytest.raises(ValueError, match="no 'prompt'"):
        as_tasks([{"id": "a"}])
    with pytest.raises(ValueError, match="unique"):
        as_tasks([{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}])
    assert parse_json_object('noise {"a": "}{", "b": {"c": 1}} tail {"d": 2}') == {"a": "}{", "b": {"c": 1}}
    with pytest.raises(ValueError):
        parse_json_object("[1, 2]")


def test_best_of_n_prefers_candidates_unlike_the_anti_patterns(tmp_path: Path, embedder: Embedder) -> None:
    book = open_book(tmp_path / "notes", embedder)
    book.add(Note(subject=COUNT_SUBJECT, corrected_examples=["e"], correct_approach="GROUP BY",
                  mistake_summary="m", generalisable_strategy="s",
                  anti_patterns=["SELECT COUNT(*) FROM Track without GROUP BY"]))
    bad = "SELECT COUNT(*) FROM Track"
    good = "SELECT GenreId, COUNT(*) FROM Track GROUP BY GenreId"
    model = ScriptedModel([bad, good, bad])
    result = best_of_n(Agent(model), "How many tracks are in each genre?", 3, book)
    info = result.trajectory.extras["samples"]
    assert result.answer == good and info["chosen"] == 1 and info["anti_patterns"] == 1
    sims = [c["anti_pattern_similarity"] for c in info["candidates"]]
    assert sims[1] < sims[0] == sims[2]
    # Without notes shown, the majority answer wins.
    result = best_of_n(Agent(ScriptedModel(["Paris", "Lyon", "paris."])), "Capital of France?", 3, book)
    assert result.answer == "Paris" and result.trajectory.extras["samples"]["anti_patterns"] == 0


def test_a_running_step_is_not_rolled_back_by_another_opener(tmp_path: Path, embedder: Embedder) -> None:
    book = open_book(tmp_path / "notes", embedder)
    book.add(Note(subject=OTHER_SUBJECT, corrected_examples=["e"], correct_approach="a", mistake_summary="m",
                  generalisable_strategy="s", anti_patterns=["x"]))
    old = book.file.read_bytes()
    with book.learn_lock():  # as during a learn step: backup written, new notes inserted
        book.backup_file.write_bytes(old)
        book.add(Note(subject=COUNT_SUBJECT, corrected_examples=["e"], correct_approach="a", mistake_summary="m",
                      generalisable_strategy="s", anti_patterns=["x"]))
        during = open_book(tmp_path / "notes", embedder)
        assert len(during) == 2 and book.backup_file.exists()  # left alone: the step is live
        with pytest.raises(NotebookBusyError, match="another learn step"):
            during.learn(TASKS, reward, Agent(agent_model()), analyst=analyst_model())
    after = open_book(tmp_path / "notes", embedder)  # the step died undecided: rolled back
    assert len(after) == 1 and book.file.read_bytes() == old and not book.backup_file.exists()


def _notes(data: bytes) -> list[dict]:
    return json.loads(data)["notes"]


@pytest.mark.slow
def test_killing_learn_at_random_points_leaves_the_old_or_the_new_notebook(tmp_path: Path,
                                                                          embedder: Embedder) -> None:
    """A real SIGKILL at random moments of learn steps: the file always parses and is old or new."""
    seed = Note(subject=OTHER_SUBJECT, corrected_examples=["e"], correct_approach="a", mistake_summary="m",
                generalisable_strategy="s", anti_patterns=["x"])
    seeder = MistakeNotebook.open(tmp_path / "seed", embedder)
    seeder.notes = {seed.id: seed}
    old = seeder.to_bytes()
    kills = 5
    run = subprocess.run([sys.executable, str(FIXTURES), str(tmp_path / "steps"), str(kills), old.decode()],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    outcomes = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(outcomes) == kills + 1
    assert outcomes[0]["exit"] == 0  # the uninterrupted step learnt and kept the note
    states = []
    for outcome in outcomes:
        folder = Path(outcome["folder"])
        data = (folder / "notes.json").read_bytes()
        notes = _notes(data)  # always parses
        if data != old:  # the new notebook: the old note untouched plus exactly the learnt one
            assert notes[0] == _notes(old)[0] and [n["subject"] for n in notes[1:]] == [COUNT_SUBJECT]
            Note.model_validate(notes[1])
        undecided = (folder / "notes.json.learn-backup").exists()
        states.append("old" if data == old else ("new, undecided" if undecided else "new"))
        reopened = MistakeNotebook.open(folder, embedder, threshold=0.5)  # rolls back an undecided step
        assert not reopened.backup_file.exists()
        assert (folder / "notes.json").read_bytes() == (data if states[-1] == "new" else old)
        assert len(reopened) == (2 if states[-1] == "new" else 1)
        reopened.close()
    assert states[0] == "new"
