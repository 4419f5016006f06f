"""The mistake notebook: generalisable notes distilled from failures, shown to later runs.

    notebook = MistakeNotebook.open("~/.agentkit/notes")
    agent = Agent("local:smollm2-135m", extensions=[notebook])  # relevant notes go into the system prompt
    report = notebook.learn(tasks, reward_fn, agent)          # one batch step of Mistake Notebook Learning

The JSON file `notes.json` is the source of truth, always written atomically (temp file, fsync,
os.replace); the chromadb index beside it is derived from it and rebuilt whenever it disagrees.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.files import atomic_write
from agentkit.loop.extensions import RunContext
from agentkit.memory.embeddings import Embedder
from agentkit.memory.notes import NOTE_SCHEMA_VERSION, Note
from agentkit.memory.prompts import NOTES_INSTRUCTION, NOTES_TITLE
from agentkit.memory.vectors import VectorStore
from agentkit.records import NOTES, NOTES_RETRIEVAL_S, NotesRecord, NotesTiming, ShownNote
from agentkit.trajectory import NewerSchemaError

if TYPE_CHECKING:
    from agentkit.memory.learn import LearnReport

NOTEBOOK_FORMAT = "agentkit.notebook"
DEFAULT_THRESHOLD = 0.4
"""Least task–subject cosine for a note to be shown: the highest threshold within 10% of the best F1 of
"a relevant note is shown" on the shipped SQL tasks with the packaged MiniLM (the published ~0.7 never fires
with it). Why: docs/decisions.md#notes"""
log = logging.getLogger(__name__)


def _subject_hash(note: Note) -> str:
    return hashlib.sha256(note.subject.encode()).hexdigest()[:16]


class NotebookBusyError(RuntimeError):
    """A learn step is already running on this notebook (in this or another process)."""


class MistakeNotebook:
    """Notes from past mistakes, retrieved by cosine similarity between the task and each note's subject.

    It is an agent extension: `before_run` puts the relevant notes (cosine ≥ `threshold`, at most
    `top_k`) in the system prompt and records them on the trajectory (`agentkit.records.NOTES`); `after_run` does
    nothing — learning is an explicit `learn` step.
    """

    name = "notes"

    def __init__(self, file: Path, index: str, embedder: Embedder, *, threshold: float = DEFAULT_THRESHOLD,
                 top_k: int = 3, collection: str = "notes") -> None:
        self.file = file
        self.index_location = index
        self.embedder = embedder
        self.threshold = threshold
        self.top_k = top_k
        self.collection = collection
        self.notes: dict[str, Note] = {}
        self._store: VectorStore | None = None

    # -- opening and saving ---------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path, embedder: Embedder | None = None, *, threshold: float = DEFAULT_THRESHOLD,
             top_k: int = 3,
             index: str | Path | None = None) -> MistakeNotebook:
        """Open the notebook at `path`: a folder (holding notes.json and the index) or a .json file.

        `index` may point the derived index elsewhere, e.g. at a chromadb server URL.
        An interrupted `learn` (its backup still on disk) is rolled back here.
        """
        path = Path(path).expanduser()
        file = path if path.suffix == ".json" else path / "notes.json"
        if file.exists() and file.is_dir():
            raise ValueError(f"{file} is a folder, expected the notebook's JSON file")
        default_index = file.parent / (file.stem + ".index")
        notebook = cls(file, str(index or default_index), embedder or Embedder.default(),
                       threshold=threshold, top_k=top_k)
        backup = notebook.backup_file
        if backup.exists():
            try:
                with notebook.learn_lock():  # held: a learn step is running in another process
                    if backup.exists():
                        log.warning("rolling back an interrupted learn step on %s", file)
                        notebook.restore_bytes(backup.read_bytes() or None)  # empty: there was no file
                        backup.unlink()
            except NotebookBusyError:
                log.info("a learn step is in progress on %s; opening it as it is", file)
        for stale in file.parent.glob(f".{file.name}.*.tmp"):  # left by a writer killed mid-write
            try:
                if time.time() - stale.stat().st_mtime > 600:
                    stale.unlink()
            except OSError:
                pass
        notebook.notes = notebook._read()
        notebook._sync_index()
        return notebook

    @contextmanager
    def learn_lock(self) -> Iterator[None]:
        """Exclusive across processes for one learn step (released by the OS if the process dies)."""
        self.file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.file.with_name(self.file.name + ".lock"), "a+b") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise NotebookBusyError(f"another learn step is running on {self.file}") from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @property
    def backup_file(self) -> Path:
        """Where `learn` keeps the notebook as it was before the step, until the step is decided."""
        return self.file.with_name(self.file.name + ".learn-backup")

    def _read(self) -> dict[str, Note]:
        if not self.file.exists():
            return {}
        try:
            data = json.loads(self.file.read_bytes())
        except (ValueError, UnicodeDecodeError) as error:
            raise ValueError(f"notebook {self.file} is not valid JSON ({error}); fix or move it") from error
        if not isinstance(data, dict) or data.get("format") != NOTEBOOK_FORMAT:
            raise ValueError(f"{self.file} is not an agentkit notebook (no \"format\": \"{NOTEBOOK_FORMAT}\")")
        notes = {}
        for raw in data.get("notes", []):
            version = raw.get("schema_version", 0) if isinstance(raw, dict) else 0
            if isinstance(version, int) and version > NOTE_SCHEMA_VERSION:
                raise NewerSchemaError(f"{self.file} has notes of schema version {version}; "
                                       "upgrade agentkit to read them")
            note = Note.model_validate(raw)
            notes[note.id] = note
        return notes

    def to_bytes(self, notes: Iterable[Note] | None = None) -> bytes:
        """The notebook file's content for these notes (default: the current ones)."""
        notes = list(self.notes.values() if notes is None else notes)
        data = {"format": NOTEBOOK_FORMAT, "schema_version": NOTE_SCHEMA_VERSION,
                "notes": [n.model_dump(mode="json") for n in notes]}
        return (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode()

    def save(self) -> None:
        """Write the notes to the JSON file atomically, then bring the index in line."""
        atomic_write(self.file, self.to_bytes())
        self._sync_index()

    def snapshot(self) -> bytes | None:
        """The file's exact bytes (None when it does not exist yet), for a later `restore_bytes`."""
        return self.file.read_bytes() if self.file.exists() else None

    def restore_bytes(self, data: bytes | None) -> None:
        """Put the file back to `data` exactly (None: remove it), then reload and re-index."""
        if data is None:
            self.file.unlink(missing_ok=True)
        else:
            atomic_write(self.file, data)
        self.notes = self._read()
        if self._store is not None:
            self._sync_index()

    # -- the derived index ----------------------------------------------------------------------
    def _open_store(self) -> VectorStore:
        if self._store is None:
            self._store = VectorStore.open(self.index_location, self.collection, self.embedder)
        return self._store

    def _sync_index(self) -> None:
        """Make the chromadb index hold exactly the notes' subjects; rebuild it if it is unreadable."""
        try:
            store = self._open_store()
            stored = {r.id: r.metadata.get("subject_hash") for r in store.all()}
        except Exception as error:  # a corrupted local index is derived data: rebuild it
            if self.index_location.startswith(("http://", "https://")):
                raise
            log.warning("rebuilding the notes index at %s (%s)", self.index_location, error)
            self.close()
            shutil.rmtree(self.index_location, ignore_errors=True)
            store, stored = self._open_store(), {}
        wanted = {n.id: _subject_hash(n) for n in self.notes.values()}
        stale = [i for i in stored if i not in wanted]
        changed = [self.notes[i] for i, h in wanted.items() if stored.get(i) != h]
        if stale:
            store.delete(stale)
        if changed:
            store.upsert([n.id for n in changed], [n.subject for n in changed],
                         [{"subject_hash": _subject_hash(n)} for n in changed])

    def close(self) -> None:
        """Release the index (the JSON file is never held open)."""
        if self._store is not None:
            store, self._store = self._store, None
            try:
                store.close()
            except Exception as error:  # closing a broken client must not hide the original problem
                log.warning("closing the notes index failed: %s", error)

    def rebuild_index(self) -> None:
        """Drop and rebuild the index from the JSON file."""
        store = self._open_store()
        store.clear()
        self._sync_index()

    # -- editing --------------------------------------------------------------------------------
    def add(self, notes: Note | Sequence[Note]) -> None:
        """Add (or replace, by id) notes and save."""
        for note in [notes] if isinstance(notes, Note) else notes:
            self.notes[note.id] = note
        self.save()

    def remove(self, note_id: str) -> Note:
        """Remove a note by id (or unique id prefix) and save."""
        note = self.get(note_id)
        del self.notes[note.id]
        self.save()
        return note

    def get(self, note_id: str) -> Note:
        """A note by id or unique id prefix."""
        if note_id in self.notes:
            return self.notes[note_id]
        matches = [n for i, n in self.notes.items() if i.startswith(note_id)]
        if len(matches) != 1:
            raise KeyError(f"no note {note_id!r}" if not matches else f"note id prefix {note_id!r} is ambiguous")
        return matches[0]

    def __len__(self) -> int:
        return len(self.notes)

    def __iter__(self) -> Iterator[Note]:
        return iter(list(self.notes.values()))

    # -- retrieval ------------------------------------------------------------------------------
    def search(self, text: str, k: int | None = None, threshold: float | None = None) -> list[tuple[Note, float]]:
        """Notes whose subject has cosine ≥ threshold with `text`, best first, at most k."""
        if not self.notes:
            return []
        k = self.top_k if k is None else k
        threshold = self.threshold if threshold is None else threshold
        hits = self._open_store().query(text, k=k)
        return [(self.notes[h.id], h.score) for h in hits if h.id in self.notes and h.score >= threshold]

    def similar_subjects(self, subject: str, threshold: float) -> list[tuple[Note, float]]:
        """Existing notes whose subject has cosine ≥ threshold with `subject`, best first."""
        return self.search(subject, k=max(1, len(self.notes)), threshold=threshold)

    def render(self, notes: Sequence[Note]) -> str:
        """The notes as one prompt section, with the instruction to judge each one's applicability."""
        parts = [NOTES_INSTRUCTION]
        parts += [f"### Note {i}\n{n.render()}" for i, n in enumerate(notes, start=1)]
        return "\n\n".join(parts)

    # -- the Extension protocol ------------------------------------------------------------------
    def before_run(self, run: RunContext) -> None:
        """Put the notes relevant to the task into context; recorded as `NOTES`."""
        start = time.perf_counter()
        found = self.search(run.task)
        elapsed = time.perf_counter() - start
        if found:
            run.add_context(self.name, NOTES_TITLE, self.render([n for n, _ in found]))
        run.record(NOTES, NotesRecord([ShownNote(id=n.id, subject=n.subject, score=round(s, 4)) for n, s in found]))
        run.record(NOTES_RETRIEVAL_S, NotesTiming(round(elapsed, 6)))

    def after_run(self, run: RunContext) -> None:
        """Nothing: the notebook learns in batch steps (`learn`), not after each run."""
        return None

    # -- learning -------------------------------------------------------------------------------
    def learn(self, tasks: Sequence[Any], reward_fn: Any, agent: Any, analyst: Any = None,
              **options: Any) -> LearnReport:
        """One batch step of Mistake Notebook Learning; see `agentkit.memory.learn.learn`."""
        from agentkit.memory.learn import learn

        return learn(self, tasks, reward_fn, agent, analyst=analyst, **options)

    def choose(self, results: Sequence[Any]) -> int:
        """Test-time scaling: the index of the preferred run among samples (see agentkit.memory.sampling)."""
        from agentkit.memory.sampling import choose

        return choose(results, self)

    def __repr__(self) -> str:
        return f"MistakeNotebook({str(self.file)!r}, notes={len(self.notes)})"
