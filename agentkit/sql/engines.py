"""Other engines through SQLAlchemy URLs, read-only.

Every query passes the same statement guard as SQLite, then runs inside a transaction that is declared
read-only where the dialect supports it (`SET TRANSACTION READ ONLY`: PostgreSQL, MySQL/MariaDB, Oracle)
and is always rolled back. PostgreSQL and MySQL also get a statement timeout. `sqlite:///PATH` URLs
open the file through `connect_sqlite_read_only`, so they get the SQLite protections too.
Connect other engines with a database user that can only read: that is the boundary the server enforces.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import nullcontext
from typing import Any

from agentkit.sql.database import (
    PROGRESS_OPCODES,
    ColumnInfo,
    Database,
    FetchedRows,
    ForeignKey,
    QueryError,
    TableInfo,
    _explain_sqlite_error,
    fetch_bounded,
    interrupt_at,
    sqlite_identity,
)
from agentkit.sql.sqlite_safety import connect_sqlite_read_only

_READ_ONLY_TRANSACTION = {"postgresql", "mysql", "mariadb", "oracle"}


class SQLAlchemyDatabase(Database):
    """A database behind a SQLAlchemy URL, queried in read-only transactions."""

    def __init__(self, url: str) -> None:
        from sqlalchemy import create_engine
        from sqlalchemy.engine import make_url

        self.url = make_url(url)
        backend = self.url.get_backend_name()
        dialect = {"postgresql": "postgres", "mssql": "tsql"}.get(backend, backend)
        super().__init__(dialect=dialect)
        if backend == "sqlite":
            path = self.url.database
            if not path or path == ":memory:":
                raise ValueError("a sqlite URL needs a file path: sqlite:///path/to/file.sqlite")
            conn = connect_sqlite_read_only(path)  # fails early and clearly for a missing file
            conn.close()
            self.engine = create_engine("sqlite://", creator=lambda: connect_sqlite_read_only(path))
            self._sqlite_path = path
        else:
            self.engine = create_engine(self.url, pool_pre_ping=True)
            self._identity = self.url.render_as_string(hide_password=True)
        self._inspector: Any = None

    def _compute_identity(self) -> str:
        return sqlite_identity(self._sqlite_path)

    def close(self) -> None:
        """Dispose of the engine and its pooled connections."""
        self.engine.dispose()

    def _inspect(self) -> Any:
        if self._inspector is None:
            from sqlalchemy import inspect

            self._inspector = inspect(self.engine)
        return self._inspector

    def _load_table_names(self) -> list[str]:
        insp = self._inspect()
        return list(insp.get_table_names()) + list(insp.get_view_names())

    def _load_table(self, name: str) -> TableInfo:
        insp = self._inspect()
        pk = set((insp.get_pk_constraint(name) or {}).get("constrained_columns") or [])
        columns = tuple(
            ColumnInfo(name=c["name"], type=str(c.get("type", "")), nullable=bool(c.get("nullable", True)),
                       primary_key=c["name"] in pk, comment=c.get("comment") or "")
            for c in insp.get_columns(name)
        )
        fks = tuple(
            ForeignKey(tuple(fk["constrained_columns"]), fk["referred_table"], tuple(fk["referred_columns"]))
            for fk in insp.get_foreign_keys(name)
        )
        try:
            comment = (insp.get_table_comment(name) or {}).get("text") or ""
        except NotImplementedError:
            comment = ""
        return TableInfo(name, columns, fks, comment)

    def _execute(self, sql: str, max_rows: int, timeout_s: float) -> FetchedRows:
        from sqlalchemy.exc import DBAPIError, SQLAlchemyError

        backend = self.url.get_backend_name()
        expired = False
        with self.engine.connect() as conn:
            trans = conn.begin()
            try:
                if backend in _READ_ONLY_TRANSACTION:
                    conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                if backend == "postgresql":
                    conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(timeout_s * 1000)}")
                elif backend in ("mysql", "mariadb"):
                    conn.exec_driver_sql(f"SET SESSION MAX_EXECUTION_TIME = {int(timeout_s * 1000)}")
                raw = conn.connection.driver_connection if backend == "sqlite" else None
                if raw is not None:
                    deadline = time.monotonic() + timeout_s
                    raw.budget.start(deadline)
                    raw.set_progress_handler(lambda: int(time.monotonic() > deadline), PROGRESS_OPCODES)
                try:
                    with interrupt_at(raw, timeout_s) if raw is not None else nullcontext():
                        # no_parameters: the DBAPI gets the text as is (no %-formatting of LIKE '%x%').
                        result = conn.execution_options(no_parameters=True).exec_driver_sql(sql)
                        try:
                            fetched = fetch_bounded(result, list(result.keys()), max_rows)
                        finally:
                            result.close()
                finally:
                    if raw is not None:
                        raw.set_progress_handler(None, 0)
                        expired = raw.budget.expired
                        raw.budget.start(float("inf"))
            except DBAPIError as exc:
                orig = exc.orig
                if isinstance(orig, sqlite3.Error):
                    raise QueryError(_explain_sqlite_error(orig, timeout_s, expired)) from None
                raise QueryError(f"SQL error: {orig}") from None
            except SQLAlchemyError as exc:
                raise QueryError(f"SQL error: {exc}") from None
            except MemoryError:  # SQLite's hard heap limit
                raise QueryError(_explain_sqlite_error(sqlite3.Error("out of memory"), timeout_s)) from None
            finally:
                trans.rollback()
        return fetched
