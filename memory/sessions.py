"""Chat sessions kept in SQLite, so `agentkit chat --session NAME` resumes after a restart.

    store = SessionStore()                                  # $AGENTKIT_HOME/sessions.db
    store.save("work", messages, model="local:smollm2-135m")
    session = store.load("work")                             # Session(name, messages, ...)

One row per session in `sessions`, one row per message (JSON) in `messages`; WAL mode, and every save
is one transaction, so a crash leaves the previous version of the session intact.

Reading a session file someone else wrote (or one that was damaged) is bounded: a stored message longer
than `MAX_MESSAGE_CHARS`, or one that is not a valid message, is skipped with a warning; metadata longer
than `MAX_METADATA_CHARS`, nested deeper than `agentkit.jsontext.MAX_JSON_DEPTH` or not an object reads as
empty. Neither is loaded into memory whole before its length is checked.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit.home import agentkit_home
from agentkit.jsontext import loads_bounded
from agentkit.messages import Message
from agentkit.trajectory import NewerSchemaError

SESSIONS_SCHEMA_VERSION = 1
MAX_MESSAGE_CHARS = 4_000_000
"""The longest stored message (its JSON, in characters) read back; a longer one is skipped."""
MAX_METADATA_CHARS = 1_000_000
"""The longest stored session metadata (JSON) read back; a longer one reads as {}."""
log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    name TEXT PRIMARY KEY,
    model TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    session TEXT NOT NULL REFERENCES sessions(name) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (session, position)
);
"""


@dataclass
class SessionInfo:
    """A session without its messages."""

    name: str
    model: str
    created_at: float
    updated_at: float
    n_messages: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Session:
    """A saved conversation: its messages (no system message needed) and what it ran on."""

    name: str
    messages: list[Message]
    model: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0
    updated_at: float = 0.0


def default_sessions_path() -> Path:
    """`$AGENTKIT_HOME/sessions.db`."""
    return agentkit_home() / "sessions.db"


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise ValueError("a session name must be a non-empty string of at most 200 characters")
    return name.strip()


class SessionStore:
    """Save, load, list and delete chat sessions by name in one SQLite file."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path).expanduser() if path else default_sessions_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            db.execute(f"PRAGMA user_version={SESSIONS_SCHEMA_VERSION}")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA foreign_keys=ON")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SESSIONS_SCHEMA_VERSION:
                raise NewerSchemaError(f"{self.path} was written by a newer agentkit (schema {version}); "
                                       "upgrade to read it")
            with db:  # one transaction
                yield db
        finally:
            db.close()

    def save(self, name: str, messages: Sequence[Message], *, model: str = "",
             metadata: dict[str, Any] | None = None) -> None:
        """Store the whole conversation under `name`, replacing what was there (one transaction)."""
        name = _check_name(name)
        rows = [(name, i, m.model_dump_json()) for i, m in enumerate(messages) if m.role != "system"]
        now = time.time()
        with self._connect() as db:
            db.execute(
                "INSERT INTO sessions(name, model, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET model=excluded.model, metadata=excluded.metadata, "
                "updated_at=excluded.updated_at",
                (name, model, json.dumps(metadata or {}), now, now),
            )
            db.execute("DELETE FROM messages WHERE session = ?", (name,))
            db.executemany("INSERT INTO messages(session, position, message) VALUES (?, ?, ?)", rows)

    def append(self, name: str, messages: Sequence[Message], *, model: str | None = None) -> None:
        """Add messages at the end of a session (created if new)."""
        name = _check_name(name)
        now = time.time()
        with self._connect() as db:
            db.execute(
                "INSERT INTO sessions(name, model, created_at, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET updated_at=excluded.updated_at",
                (name, model or "", now, now),
            )
            if model:
                db.execute("UPDATE sessions SET model = ? WHERE name = ?", (model, name))
            start = db.execute("SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE session = ?",
                               (name,)).fetchone()[0]
            db.executemany("INSERT INTO messages(session, position, message) VALUES (?, ?, ?)",
                           [(name, start + i, m.model_dump_json())
                            for i, m in enumerate(m for m in messages if m.role != "system")])

    def load(self, name: str) -> Session:
        """The session called `name` (KeyError if there is none)."""
        name = _check_name(name)
        with self._connect() as db:
            row = db.execute("SELECT model, CASE WHEN length(metadata) <= ? THEN metadata END, created_at, updated_at "
                             "FROM sessions WHERE name = ?", (MAX_METADATA_CHARS, name)).fetchone()
            if row is None:
                raise KeyError(f"no session named {name!r}")
            raw = db.execute("SELECT position, CASE WHEN length(message) <= ? THEN message END, length(message) "
                             "FROM messages WHERE session = ? ORDER BY position",
                             (MAX_MESSAGE_CHARS, name)).fetchall()
        messages = [m for position, text, size in raw if (m := self._message(name, position, text, size)) is not None]
        return Session(name=name, messages=messages, model=row[0], metadata=_metadata(row[1]),
                       created_at=row[2], updated_at=row[3])

    def _message(self, name: str, position: int, text: Any, size: int) -> Message | None:
        """A stored message, or None (with a warning) when it is too long or not a valid message."""
        if text is None:
            log.warning("%s: session %r, message %d skipped: %s characters (at most %d)", self.path, name,
                        position, size, MAX_MESSAGE_CHARS)
            return None
        try:
            return Message.model_validate_json(text)
        except ValueError as exc:  # pydantic's ValidationError is one
            log.warning("%s: session %r, message %d skipped: not a valid message (%s)", self.path, name, position,
                        type(exc).__name__)
            return None

    def exists(self, name: str) -> bool:
        """Whether a session called `name` is stored."""
        with self._connect() as db:
            return db.execute("SELECT 1 FROM sessions WHERE name = ?", (_check_name(name),)).fetchone() is not None

    def list(self) -> list[SessionInfo]:
        """Every session, most recently updated first."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT s.name, s.model, s.created_at, s.updated_at, "
                f"CASE WHEN length(s.metadata) <= {MAX_METADATA_CHARS} THEN s.metadata END, COUNT(m.position) "
                "FROM sessions s LEFT JOIN messages m ON m.session = s.name "
                "GROUP BY s.name ORDER BY s.updated_at DESC").fetchall()
        return [SessionInfo(name=r[0], model=r[1], created_at=r[2], updated_at=r[3], n_messages=r[5],
                            metadata=_metadata(r[4])) for r in rows]

    def delete(self, name: str) -> bool:
        """Remove a session; returns whether it existed."""
        with self._connect() as db:
            cursor = db.execute("DELETE FROM sessions WHERE name = ?", (_check_name(name),))
            db.execute("DELETE FROM messages WHERE session = ?", (name.strip(),))
            return cursor.rowcount > 0


def _metadata(text: Any) -> dict[str, Any]:
    """Stored session metadata as a dict: {} (with a warning) when it was too long, is not bounded JSON, or is
    not an object."""
    if text is None:
        log.warning("session metadata longer than %d characters was not read", MAX_METADATA_CHARS)
        return {}
    try:
        value = loads_bounded(text)
    except ValueError as exc:
        log.warning("session metadata was not read: %s", exc)
        return {}
    return value if isinstance(value, dict) else {}


def chat_persistence(name: str, model: str = "", store: SessionStore | None = None
                     ) -> tuple[list[Message], Callable[[Any, Any], None]]:
    """For `agentkit chat --session NAME`: the saved history to resume from (empty for a new session)
    and an `on_turn(chat_session, result)` hook that saves the chat's history after every turn."""
    store = store or SessionStore()
    name = _check_name(name)
    history = store.load(name).messages if store.exists(name) else []

    def on_turn(chat_session: Any, result: Any) -> None:
        store.save(name, list(chat_session.history), model=model)

    return history, on_turn
