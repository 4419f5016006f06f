"""Open a read-only database from what the user names: a file path, a SQLAlchemy URL, or a Database."""

from __future__ import annotations

from pathlib import Path

from agentkit.sql.database import Database, SQLiteDatabase
from agentkit.sql.engines import SQLAlchemyDatabase


def open_database(target: str | Path | Database) -> Database:
    """A read-only `Database` from a file path, a SQLAlchemy URL ("dialect://..."), or a Database."""
    if isinstance(target, Database):
        return target
    text = str(target)
    if "://" in text:
        return SQLAlchemyDatabase(text)
    return SQLiteDatabase(text)
