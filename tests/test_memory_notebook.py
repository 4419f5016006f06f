"""The mistake notebook: note schema and rendering, the JSON file and its index, retrieval, the extension."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentkit import Agent
from agentkit.memory.embeddings import Embedder
from agentkit.memory.notebook import NOTEBOOK_FORMAT, MistakeNotebook, Note
from agentkit.memory.prompts import NOTES_INSTRUCTION, NOTES_TITLE
from agentkit.testing import ScriptedModel

GENRE_SUBJECT = ("Counting how many tracks are in each genre of the music store database; "
                 "needs GROUP BY genre with COUNT of tracks")
COUNTRY_SUBJECT = ("SQL over a music store: listing the customers from a given country, which needs a "
                   "WHERE filter on the Country column of Customer")


def make_note(subject: str = GENRE_SUBJECT, **changes: object) -> Note:
    data: dict[str, object] = {
        "subject": subject,
        "corrected_examples": ["Q: tracks per genre. Wrong: COUNT(*) FROM Track. Right: GROUP BY GenreId"],
        "correct_approach": "Join Track to Genre, GROUP BY the genre, COUNT the tracks.",
        "mistake_summary": "Counted all tracks instead of per group.",
        "generalisable_strategy": "Per-group questions need GROUP BY on the group key.",
        "anti_patterns": ["COUNT(*) without GROUP BY for a per-group question"],
    }
    data.update(changes)
    return Note.model_validate(data)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.default()


def test_note_schema_requires_every_section_and_a_10_to_50_word_subject() -> None:
    note = make_note()
    assert note.schema_version == 1 and note.id.startswith("note_")
    with pytest.raises(ValidationError, match="10 to 50 words"):
        make_note(subject="too short a subject")
    with pytest.raises(ValidationError, match="10 to 50 words"):
        make_note(subject=" ".join(["word"] * 51))
    with pytest.raises(ValidationError, match="anti-pattern"):
        make_note(anti_patterns=[])
    with pytest.raises(ValidationError, match="corrected example"):
        make_note(corrected_examples=[" "])
    with pytest.raises(ValidationError, match="must not be empty"):
        make_note(correct_approach="")
    # Analysts send dict examples and string anti-patterns; both are normalised; at most 3 examples.
    loose = make_note(corrected_examples=[{"task": "t", "wrong": "w", "correct": "c"}] * 5, anti_patterns="x")
    assert loose.corrected_examples[0] == "task: t; wrong: w; correct: c" and len(loose.corrected_examples) == 3
    assert loose.anti_patterns == ["x"]


def test_rendering_has_every_section_and_stays_within_about_250_words() -> None:
    text = make_note().render()
    for heading in ("Subject:", "Mistake:", "Correct approach:", "Strategy:", "Do not:", "Corrected example"):
        assert heading in text
    assert "GROUP BY" in text
    long = make_note(correct_approach=" ".join(["join"] * 300), corrected_examples=["e " * 120] * 3,
                     anti_patterns=["never " * 80])
    rendered = long.render()
    assert len(rendered.split()) <= 260
    assert "Do not:" in rendered and "…" in rendered


def test_file_is_the_source_of_truth_and_the_index_is_rebuilt(tmp_path: Path, embedder: Embedder) -> None:
    book = MistakeNotebook.open(tmp_path / "notes", embedder, threshold=0.5)
    genre, country = make_note(), make_note(COUNTRY_SUBJECT)
    book.add([genre, country])
    data = json.loads((tmp_path / "notes" / "notes.json").read_text())
    assert data["format"] == NOTEBOOK_FORMAT and [n["id"] for n in data["notes"]] == [genre.id, country.id]
    assert not list((tmp_path / "notes").glob(".notes.json.*.tmp"))  # no temp file left behind

    # Losing the derived index loses nothing: it is rebuilt from the JSON file on open.
    book.close()
    shutil.rmtree(tmp_path / "notes" / "notes.index")
    reopened = MistakeNotebook.open(tmp_path / "notes", embedder, threshold=0.5)
    assert [n.id for n, _ in reopened.search("How many tracks are in each genre?")] == [genre.id]
    # An index that disagrees with the file (a note removed behind its back) is brought in line.
    data["notes"] = data["notes"][:1]
    (tmp_path / "notes" / "notes.json").write_text(json.dumps(data))
    reopened.close()
    again = MistakeNotebook.open(tmp_path / "notes", embedder, threshold=0.0)
    assert [n.id for n, _ in again.search("customers from Brazil", k=5)] == [genre.id]
    assert again.get(genre.id[:9]).id == genre.id
    removed = again.remove(genre.id)
    assert removed.id == genre.id and len(MistakeNotebook.open(tmp_path / "notes", embedder)) == 0


def test_bad_files_get_clear_errors(tmp_path: Path, embedder: Embedder) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        MistakeNotebook.open(tmp_path / "bad.json", embedder)
    (tmp_path / "other.json").write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not an agentkit notebook"):
        MistakeNotebook.open(tmp_path / "other.json", embedder)
    (tmp_path / "newer.json").write_text(json.dumps({"format": NOTEBOOK_FORMAT, "notes": [
        {**make_note().model_dump(), "schema_version": 99}]}))
    with pytest.raises(ValueError, match="upgrade agentkit"):
        MistakeNotebook.open(tmp_path / "newer.json", embedder)
    assert (tmp_path / "bad.json").read_text() == "{not json"  # nothing lost


def test_retrieval_threshold_and_top_k(tmp_path: Path, embedder: Embedder) -> None:
    book = MistakeNotebook.open(tmp_path / "n.json", embedder)  # the default threshold, 0.4
    assert book.threshold == 0.4 and book.top_k == 3
    genre = make_note()
    book.add([genre, make_note(COUNTRY_SUBJECT)])
    scored = book.search("How many tracks are in each genre?", threshold=-1.0)
    assert scored[0][0].id == genre.id
    top_score = scored[0][1]
    assert top_score > scored[1][1]
    just_below = book.search("How many tracks are in each genre?", threshold=top_score - 1e-3)
    assert [n.id for n, _ in just_below] == [genre.id]
    assert book.search("How many tracks are in each genre?", threshold=top_score + 1e-3) == []
    assert book.search("What is the capital of France?") == []  # unrelated: below 0.4
    assert len(book.search("music store", k=1, threshold=-1.0)) == 1


def test_extension_puts_relevant_notes_in_the_system_prompt_and_records_them(tmp_path: Path,
                                                                             embedder: Embedder) -> None:
    book = MistakeNotebook.open(tmp_path / "notes", embedder, threshold=0.5)
    genre = make_note()
    book.add([genre, make_note(COUNTRY_SUBJECT)])
    model = ScriptedModel(["42", "Paris"])
    agent = Agent(model, extensions=[book])
    result = agent.run("How many tracks are in each genre?")
    system = model.requests[0][0].content
    assert NOTES_TITLE in system and NOTES_INSTRUCTION in system and "GROUP BY genre" in system
    assert COUNTRY_SUBJECT not in system
    shown = result.trajectory.extras["notes"]
    assert [n["id"] for n in shown] == [genre.id] and 0.5 <= shown[0]["score"] <= 1.0
    assert result.trajectory.extras["notes_retrieval_s"] >= 0.0

    unrelated = agent.run("What is the capital of France?")
    assert NOTES_TITLE not in model.requests[1][0].content
    assert unrelated.trajectory.extras["notes"] == []
    assert len(book) == 2  # after_run learns nothing by itself
