"""Learning from real use, without gold: the artefacts `agentkit learn` writes, from runs people rated.

    agentkit learn --from-runs chat.jsonl --db shop.sqlite --out learn-runs/shop
    agentkit chat --memory learn-runs/shop ...                    # the next morning

    from agentkit.memory.from_runs import learn_from_runs
    summary = learn_from_runs(["chat.jsonl"], "learn-runs/shop", db="shop.sqlite")

The logs are JSONL trajectories (the chat's `--log`, `agentkit sql --log`, or runs an application rated with
`agentkit.feedback.rate(..., log=...)`); each trajectory id counts once, as its last line
(`agentkit.trajectory.read_jsonl`). There is no task file and no gold query: a run's verdict
(`agentkit.feedback.feedback_of`: `/good`, `/bad [why]`, `rate`, or the person's approval decisions) is all
that says whether it was right.

- **experience**: a run rated good that confirmed an SQL query is a verified worked example
  (`agentkit.memory.experience`); a run rated bad is never admitted, and an example an earlier pass admitted
  from a run now rated bad is forgotten. A run's database is the one it recorded (a run with the experience
  attached records it) or `db`.
- **notes**: a run rated bad with a reason becomes a note of the mistake notebook: its question as the
  subject, the reason as the guidance, its answer as what not to do. These notes are not validated (there is
  nothing to validate them on without gold); `/good` runs never make notes.

The out folder may already hold artefacts (an earlier `--from-runs` pass, or a learn run): examples and notes
are added to them, each run once, and summary.json names what the folder holds, so `--memory OUT` and
`agentkit.memory.load_memory(OUT)` attach it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentkit.feedback import feedback_of
from agentkit.files import atomic_write
from agentkit.memory.experience import Experience, NotAdmitted, database_key_of, example_of
from agentkit.records import FeedbackRecord
from agentkit.sql.recipe import question_of
from agentkit.trajectory import Trajectory, read_jsonl

METHODS = ("experience", "notes")
SUMMARY = "summary.json"
KIND = "agentkit.from-runs"
NOTE_QUESTION_WORDS = 30


class FromRunsSummary(BaseModel):
    """What one pass over rated runs learned: how many runs were read and how they were rated, the examples
    admitted, why the other good runs were not, the notes written, and the artefacts' paths."""

    logs: list[str]
    runs: int = 0
    good: int = 0
    bad: int = 0
    unrated: int = 0
    admitted: list[str] = Field(default_factory=list)
    forgotten: list[str] = Field(default_factory=list)
    not_admitted: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    examples: int = 0
    artefacts: dict[str, str] = Field(default_factory=dict)


def note_of(run: Trajectory, verdict: FeedbackRecord) -> Any:
    """The mistake-notebook `Note` a bad run with a reason makes (None without a reason)."""
    from agentkit.memory.notes import Note
    from agentkit.sql.rewards import final_sql

    if verdict.good or not verdict.why:
        return None
    question = " ".join(question_of(run.task).split()[:NOTE_QUESTION_WORDS])
    given = final_sql(run) or (run.answer or "").strip() or "(no answer)"
    return Note(subject=f'Questions like "{question}", whose answer the user judged wrong and said why',
                corrected_examples=[f"{question} -> {verdict.why}"], correct_approach=verdict.why,
                mistake_summary=f"The answer given was wrong: {verdict.why}",
                generalisable_strategy=f"Before answering a question like this one, check: {verdict.why}",
                anti_patterns=[given[:500]], source_trajectories=[run.id],
                source_tasks=[run.task_id] if run.task_id else [])


def learn_from_runs(logs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *,
                    db: str | os.PathLike[str] | None = None, methods: Iterable[str] = METHODS,
                    min_similarity: float | None = None) -> FromRunsSummary:
    """Learn `methods` ("experience", "notes") from the rated runs of `logs` into the folder `out` (see the
    module); `db`: the database of runs that did not record theirs; `min_similarity`: the worked examples'
    question-cosine floor saved with them (default: the folder's, else `Experience`'s). Returns what was learned.

    Raises:
        ValueError: an unknown method, no logs, or a `db` without tables.
        FileNotFoundError: a log that does not exist.
    """
    methods = list(dict.fromkeys(methods))
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"--from-runs learns {', '.join(METHODS)}, not {', '.join(unknown) or 'nothing'}")
    if not logs:
        raise ValueError("no logs to learn from")
    for log in logs:
        if not Path(log).is_file():
            raise FileNotFoundError(f"no log at {log}")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    runs = read_jsonl(logs)
    key = database_key_of(db) if db is not None else None
    summary = FromRunsSummary(logs=[str(p) for p in logs], runs=len(runs))
    verdicts = [(run, feedback_of(run)) for run in runs]
    summary.good = sum(v is not None and v.good for _, v in verdicts)
    summary.bad = sum(v is not None and not v.good for _, v in verdicts)
    summary.unrated = sum(v is None for _, v in verdicts)
    if "experience" in methods:
        _learn_experience(verdicts, folder, key, summary, min_similarity)
    if "notes" in methods:
        _learn_notes(verdicts, folder, summary)
    _write_summary(folder, summary)
    return summary


def _learn_experience(verdicts: list[tuple[Trajectory, FeedbackRecord | None]], folder: Path, key: str | None,
                      summary: FromRunsSummary, min_similarity: float | None) -> None:
    path = folder / "experience.json"
    options: dict[str, Any] = {} if min_similarity is None else {"min_similarity": min_similarity}
    experience = Experience.load(path, **options) if path.exists() else Experience(**options)
    bad = {run.id for run, verdict in verdicts if verdict is not None and not verdict.good}
    summary.forgotten = [e.id for e in experience.examples if e.trajectory_id in bad]
    experience.examples = [e for e in experience.examples if e.trajectory_id not in bad]
    known = {e.trajectory_id for e in experience.examples}
    reasons: Counter[str] = Counter()
    for run, verdict in verdicts:
        if verdict is None or not verdict.good or run.id in known:
            continue
        try:
            summary.admitted.append(experience.add(example_of(run, key)).id)
        except NotAdmitted as why:
            reasons[str(why)] += 1
    summary.not_admitted = dict(reasons)
    summary.examples = len(experience)
    experience.save(path)
    summary.artefacts["experience"] = str(path)


def _learn_notes(verdicts: list[tuple[Trajectory, FeedbackRecord | None]], folder: Path,
                 summary: FromRunsSummary) -> None:
    from agentkit.memory.notebook import MistakeNotebook

    notebook = MistakeNotebook.open(folder / "notes")
    try:
        noted = {t for note in notebook for t in note.source_trajectories}
        notes = [n for run, verdict in verdicts if verdict is not None and run.id not in noted
                 and (n := note_of(run, verdict)) is not None]
        if notes:
            notebook.add(notes)
        summary.notes = [n.id for n in notes]
        if len(notebook):
            summary.artefacts["notes"] = str(folder / "notes")
    finally:
        notebook.close()


def _write_summary(folder: Path, summary: FromRunsSummary) -> None:
    """Name the artefacts in summary.json (a learn run's summary keeps its report, with these added)."""
    path = folder / SUMMARY
    data: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{path} is not a learn run's summary: {exc}") from exc
        data = loaded if isinstance(loaded, dict) else {}
    data.setdefault("kind", KIND)
    data["artefacts"] = {**data.get("artefacts", {}), **summary.artefacts}
    data["from_runs"] = summary.model_dump(mode="json")
    atomic_write(path, json.dumps(data, indent=1).encode())
