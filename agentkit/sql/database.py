"""Read-only database access for schema exploration: metadata, and queries with row and time caps.

    db = open_database("Chinook.sqlite")              # or a SQLAlchemy URL: "postgresql://..."
    db.table_names(); db.describe("Album")
    print(db.query("SELECT * FROM Album", max_rows=5).render())

Three layers keep the database unchanged and every query bounded:
1. the statement guard (`agentkit.sql.guard`): one statement, starting SELECT/WITH/VALUES, no write words,
   nothing SQLite would read differently ($$ strings, quoted function names);
2. the connection (`agentkit.sql.sqlite_safety`): SQLite is opened with a `mode=ro` URI, `PRAGMA
   query_only`, an authorizer that allows reading and an allowlist of functions only, limits on value
   size, statement size, result columns and SQLite's heap, and bounded versions of the built-ins whose
   single call could run for minutes; other engines run each query in a transaction declared
   `READ ONLY` where the dialect has it, always rolled back (give such engines a read-only database
   user too: that is the real boundary there);
3. caps: at most `max_rows` rows and `MAX_RESULT_BYTES` of values are fetched, and SQLite queries are
   stopped after `timeout_s` (a progress handler, a timer calling `Connection.interrupt()`, and the
   bounded functions' own check); each query takes its own pooled connection, so one still being
   stopped never holds up the next (PostgreSQL/MySQL get a statement timeout).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.sql.guard import StatementRefused, check_statement
from agentkit.sql.hints import column_hint, missing_column
from agentkit.sql.sqlite_safety import (  # noqa: F401  (re-exported: the SQLite connection lives there)
    MAX_VALUE_BYTES,
    BoundedConnection,
    connect_sqlite_read_only,
    read_only_authorizer,
)

DEFAULT_MAX_ROWS = 30
DEFAULT_TIMEOUT_S = 5.0
MAX_RESULT_BYTES = 4_000_000  # values fetched for one query (the model sees 80 characters a cell)
FETCH_CHUNK = 8
CELL_CHARS = 80
PROGRESS_OPCODES = 250  # how often (in SQLite VM steps) the time limit is checked


class QueryError(RuntimeError):
    """A query could not run (refused, invalid, interrupted); the message is meant for the model."""


@dataclass
class FetchedRows:
    """What an engine fetched: columns, rows (at most the cap), whether more existed, and whether the
    fetch stopped at the result-size cap."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    cut_bytes: bool = False


@dataclass(frozen=True)
class ColumnInfo:
    """One column: name, declared type, whether it is (part of) the primary key, an optional comment."""

    name: str
    type: str = ""
    nullable: bool = True
    primary_key: bool = False
    comment: str = ""


@dataclass(frozen=True)
class ForeignKey:
    """`columns` of this table reference `ref_columns` of `ref_table`."""

    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]


@dataclass(frozen=True)
class TableInfo:
    """What `describe` knows about one table."""

    name: str
    columns: tuple[ColumnInfo, ...]
    foreign_keys: tuple[ForeignKey, ...] = ()
    comment: str = ""

    def column(self, name: str) -> ColumnInfo | None:
        """The column named `name` (case-insensitive), or None."""
        low = name.lower()
        return next((c for c in self.columns if c.name.lower() == low), None)


@dataclass
class QueryResult:
    """Rows of one query (at most the cap), their column names, and whether more rows existed."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    elapsed_s: float = 0.0
    sql: str = ""
    cut_bytes: bool = False

    def render(self, max_cell_chars: int = CELL_CHARS) -> str:
        """A compact text table with a header line and a row count."""

        def cell(value: Any) -> str:
            text = "NULL" if value is None else (f"<{len(value)} bytes>" if isinstance(value, bytes) else str(value))
            text = text.replace("\n", " ").replace("|", "/")
            return text if len(text) <= max_cell_chars else text[: max_cell_chars - 1] + "…"

        lines = [" | ".join(self.columns)] if self.columns else []
        lines += [" | ".join(cell(v) for v in row) for row in self.rows]
        n = len(self.rows)
        if self.cut_bytes:
            lines.append(f"({n} rows shown; the result was cut at {MAX_RESULT_BYTES} bytes: select fewer or "
                         "narrower columns, or aggregate)")
        elif self.truncated:
            lines.append(f"({n} rows shown; there are more: aggregate, filter or add LIMIT)")
        else:
            lines.append(f"({n} row{'s' if n != 1 else ''})")
        return "\n".join(lines)


class Database:
    """A read-only database. Subclasses implement the engine; this class holds the shared logic.

    `dialect` names the SQL dialect (sqlglot's names), `identity` the database for caches.
    """

    def __init__(self, dialect: str, identity: str = "") -> None:
        self.dialect = dialect
        self._identity = identity
        self._tables: list[str] | None = None
        self._described: dict[str, TableInfo] = {}
        self.cache: dict[Any, Any] = {}  # derived data shared by toolkits over this database (search index)

    @property
    def identity(self) -> str:
        """A stable name for this database's content (for exploration caches), computed on first use."""
        if not self._identity:
            self._identity = self._compute_identity()
        return self._identity

    def _compute_identity(self) -> str:
        return f"{self.dialect}:{id(self)}"

    # -- metadata ----------------------------------------------------------------------------------
    def table_names(self) -> list[str]:
        """All table (and view) names, sorted case-insensitively."""
        if self._tables is None:
            self._tables = sorted(self._load_table_names(), key=str.lower)
        return list(self._tables)

    def resolve_table(self, name: str) -> str | None:
        """The real name of table `name` (case-insensitive, quotes and brackets ignored), or None."""
        low = name.strip().strip('"`[]').lower()
        return next((t for t in self.table_names() if t.lower() == low), None)

    def describe(self, table: str) -> TableInfo:
        """Columns, types, keys and foreign keys of `table`. Raises KeyError for an unknown table."""
        real = self.resolve_table(table)
        if real is None:
            raise KeyError(table)
        if real not in self._described:
            self._described[real] = self._load_table(real)
        return self._described[real]

    def schema(self) -> dict[str, list[str]]:
        """{table: [column, ...]} for every table (for sqlglot and schema checks)."""
        return {t: [c.name for c in self.describe(t).columns] for t in self.table_names()}

    def quote(self, name: str) -> str:
        """`name` quoted as an identifier."""
        return '"' + name.replace('"', '""') + '"'

    @property
    def sqlglot_dialect(self) -> str:
        """The sqlglot dialect to parse this database's SQL with (sqlite when unsure)."""
        return self.dialect if self.dialect in {"sqlite", "postgres", "mysql", "tsql", "oracle", "duckdb"} else "sqlite"

    @staticmethod
    def literal(text: str) -> str:
        """`text` as an SQL string literal."""
        return "'" + text.replace("'", "''") + "'"

    # -- queries -----------------------------------------------------------------------------------
    def query(self, sql: str, *, max_rows: int = DEFAULT_MAX_ROWS, timeout_s: float = DEFAULT_TIMEOUT_S) -> QueryResult:
        """Run one guarded read-only statement; raise QueryError with a clear message if it cannot."""
        try:
            statement = check_statement(sql)
        except StatementRefused as exc:
            raise QueryError(f"Refused: {exc}.") from None
        if max_rows < 0:
            raise QueryError("max_rows must be 0 or more")
        start = time.perf_counter()
        try:
            got = self._execute(statement, max_rows, timeout_s)
        except QueryError as exc:  # a missing column: say where it is (the schema is read only then)
            hint = column_hint(statement, str(exc), self.schema(), self.dialect) if missing_column(str(exc)) else None
            if hint is None:
                raise
            raise QueryError(f"{exc}\n{hint}") from None
        return QueryResult(got.columns, got.rows, got.truncated, time.perf_counter() - start, statement, got.cut_bytes)

    def close(self) -> None:
        """Release the connection."""

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- engine hooks ------------------------------------------------------------------------------
    def _load_table_names(self) -> list[str]:
        raise NotImplementedError(f"{type(self).__name__} must implement _load_table_names (one per engine)")

    def _load_table(self, name: str) -> TableInfo:
        raise NotImplementedError(f"{type(self).__name__} must implement _load_table (one per engine)")

    def _execute(self, sql: str, max_rows: int, timeout_s: float) -> FetchedRows:
        raise NotImplementedError(f"{type(self).__name__} must implement _execute (one per engine)")


# -- SQLite ------------------------------------------------------------------------------------------

MAX_CONNECTIONS = 4  # per database: a query still being stopped never blocks the next one


class SQLiteDatabase(Database):
    """An SQLite file through the standard library, opened read-only.

    Each query takes a connection of its own from a small pool, so a query that is still being
    stopped (by its time limit) holds no lock the next query needs. A timer interrupts a query at its
    deadline (`Connection.interrupt`), besides the progress handler that checks the time between VM
    steps; single function calls are bounded by `agentkit.sql.sqlite_safety`.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__(dialect="sqlite")
        self.path = Path(path)
        self._idle: list[BoundedConnection] = [connect_sqlite_read_only(self.path)]
        self._open = 1
        self._pool_lock = threading.Lock()
        self._closed = False

    def _compute_identity(self) -> str:
        return sqlite_identity(self.path)

    def close(self) -> None:
        """Close the idle connections (one in use closes when its query ends); later queries raise `QueryError`."""
        with self._pool_lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    @contextmanager
    def _connection(self) -> Iterator[BoundedConnection]:
        with self._pool_lock:
            if self._closed:
                raise QueryError("the database is closed")
            if self._idle:
                conn = self._idle.pop()
            elif self._open < MAX_CONNECTIONS:
                conn = None
                self._open += 1
            else:
                raise QueryError(f"the database is busy: {self._open} earlier queries are still being stopped; "
                                 "try again in a moment")
        if conn is None:
            try:
                conn = connect_sqlite_read_only(self.path)
            except BaseException:
                with self._pool_lock:
                    self._open -= 1
                raise
        try:
            yield conn
        finally:
            with self._pool_lock:
                if self._closed:
                    conn.close()
                else:
                    self._idle.append(conn)

    def _meta(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._connection() as conn:
            return conn.execute(sql, params).fetchall()

    def _load_table_names(self) -> list[str]:
        rows = self._meta("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                          "AND name NOT LIKE 'sqlite_%'")
        return [r[0] for r in rows]

    def _load_table(self, name: str) -> TableInfo:
        quoted = self.quote(name)
        cols = self._meta(f"PRAGMA table_info({quoted})")
        columns = tuple(ColumnInfo(name=r[1], type=r[2] or "", nullable=not r[3], primary_key=bool(r[5]))
                        for r in cols)
        groups: dict[int, list[tuple[Any, ...]]] = {}
        for r in self._meta(f"PRAGMA foreign_key_list({quoted})"):
            groups.setdefault(r[0], []).append(r)
        fks = []
        for rows in groups.values():
            rows.sort(key=lambda r: r[1])
            ref_table = rows[0][2]
            ref_cols = [r[4] for r in rows]
            if any(c is None for c in ref_cols):  # FK to the referenced table's primary key
                ref_info = self._meta(f"PRAGMA table_info({self.quote(ref_table)})")
                ref_cols = [r[1] for r in sorted(ref_info, key=lambda r: r[5]) if r[5]]
            fks.append(ForeignKey(tuple(r[3] for r in rows), ref_table, tuple(ref_cols)))
        return TableInfo(name, columns, tuple(fks))

    def _execute(self, sql: str, max_rows: int, timeout_s: float) -> FetchedRows:
        with self._connection() as conn, interrupt_at(conn, timeout_s):
            deadline = time.monotonic() + timeout_s
            conn.budget.start(deadline)  # checked by the bounded functions
            conn.set_progress_handler(lambda: int(time.monotonic() > deadline), PROGRESS_OPCODES)
            try:
                cursor = conn.execute(sql)
                try:
                    return fetch_bounded(cursor, [d[0] for d in cursor.description or ()], max_rows)
                finally:
                    cursor.close()
            except sqlite3.Error as exc:
                raise QueryError(_explain_sqlite_error(exc, timeout_s, conn.budget.expired)) from None
            except UnicodeDecodeError:  # SQLite's error message quotes bytes of the query's values that are not UTF-8
                raise QueryError("SQL error: the query failed, and SQLite's message quotes bytes that are not "
                                 "text (a blob used as text?)") from None
            except MemoryError:  # SQLite's hard heap limit
                raise QueryError(_explain_sqlite_error(sqlite3.Error("out of memory"), timeout_s)) from None
            finally:
                conn.set_progress_handler(None, 0)
                conn.budget.start(float("inf"))


@contextmanager
def interrupt_at(conn: sqlite3.Connection, timeout_s: float) -> Iterator[None]:
    """Call `conn.interrupt()` if the block is still running after `timeout_s` (never after it left)."""
    state = threading.Lock()
    running = [True]

    def fire() -> None:
        with state:
            if running[0]:
                conn.interrupt()

    timer = threading.Timer(timeout_s, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with state:
            running[0] = False


def fetch_bounded(cursor: Any, columns: list[str], max_rows: int) -> FetchedRows:
    """At most `max_rows` rows (one more to know if there were more) and at most `MAX_RESULT_BYTES`
    of values, fetched a few rows at a time; `cursor` is a DB-API cursor or a SQLAlchemy result."""
    rows: list[tuple[Any, ...]] = []
    size, cut = 0, False
    want = max_rows + 1 if max_rows else 1
    while len(rows) < want and not cut:
        chunk = cursor.fetchmany(min(FETCH_CHUNK, want - len(rows)))
        if not chunk:
            break
        for row in chunk:
            size += sum(len(v) if isinstance(v, str | bytes) else 8 for v in row)
            if size > MAX_RESULT_BYTES:
                if not rows:
                    raise QueryError(f"Query error: one row of the result holds over {MAX_RESULT_BYTES} bytes; "
                                     "select fewer or narrower columns (substr, length).")
                cut = True
                break
            rows.append(tuple(row))
    return FetchedRows(columns, rows[:max_rows], cut or len(rows) > max_rows, cut)


def _explain_sqlite_error(exc: sqlite3.Error, timeout_s: float, expired: bool = False) -> str:
    text = str(exc)
    if text == "interrupted" or expired:
        return (f"Query stopped: it ran longer than the {timeout_s:g} s limit "
                "(a huge join or a runaway recursive query?). Filter or aggregate sooner.")
    if "not authorized" in text or "prohibited" in text:
        return f"Refused: the database is read-only ({text})."
    if "readonly" in text or "read-only" in text:
        return f"Refused: the database is read-only ({text})."
    if "one statement at a time" in text:
        return "Refused: only one statement per call is allowed."
    if not text or "out of memory" in text:
        return ("Query error: the query needs more memory than allowed; select fewer or narrower columns, "
                "or aggregate.")
    if "too big" in text or "user-defined function raised exception" in text:
        return f"Query error: string or blob too big (values are limited to {MAX_VALUE_BYTES} bytes)."
    if "too complex" in text or "too long" in text or "too many" in text:
        return f"Query error: {text} (simplify the query)."
    if "number of bindings" in text:
        return (f"SQL error: {text}\nThe query has a ? placeholder, and queries run without parameters: "
                "write the value itself (Country = 'Canada').")
    if text.startswith("misuse of aggregate"):
        return (f"SQL error: {text}\nAn aggregate cannot be used in WHERE, nor in ORDER BY of a query without "
                "GROUP BY: group the rows (GROUP BY), filter the groups with HAVING.")
    return f"SQL error: {text}"


FULL_DIGEST_BYTES = 64 << 20


def sqlite_identity(path: str | Path) -> str:
    """"sqlite:NAME:DIGEST": the full SHA-256 for files up to 64 MB; for bigger ones (BIRD databases run
    to gigabytes) a digest of the size and the first and last 4 MB."""
    file = Path(path)
    size = file.stat().st_size
    if size <= FULL_DIGEST_BYTES:
        return f"sqlite:{file.name}:{file_digest(file)[:16]}"
    h = hashlib.sha256(str(size).encode())
    with open(file, "rb") as f:
        h.update(f.read(4 << 20))
        f.seek(max(size - (4 << 20), 0))
        h.update(f.read(4 << 20))
    return f"sqlite:{file.name}:{h.hexdigest()[:16]}"


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (used for identities and to prove a database was not changed)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

