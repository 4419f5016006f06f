"""Text compared by `=` that the database also stores in another letter case.

A column may hold one value as 'paid', 'Paid' and 'PAID'. A query that writes `status = 'paid'` then keeps
only the rows spelled exactly so, and its result looks plausible: nothing says rows were left out.
`case_gaps` finds such comparisons in a query (`column = 'text'`, `'text' = column`, `column IN ('a', 'b')`,
with or without a table or alias before the column) by asking the database, per compared column and value,
which spellings it stores; a comparison is a gap when the column holds the value in a case the query did not
write. A column already wrapped in LOWER() or UPPER() is not a bare column and is not checked.

    gaps = case_gaps(db, "SELECT COUNT(*) FROM invoice WHERE status = 'paid'")
    [g.render() for g in gaps]
    # ["invoice.status stores 'paid' also as 'Paid', 'PAID': `status = 'paid'` leaves those rows out; compare
    #   LOWER(status) = 'paid' to count every spelling"]

Bounded: the query is parsed once (sqlglot, in the database's dialect; an unreadable query has no gaps), at
most `MAX_COMPARISONS` comparisons are read and at most `MAX_PROBES` (table, column, text) looked up, each by one
read-only query under the caller's time limit that returns at most `MAX_SPELLINGS + 1` rows; a lookup that fails
is skipped, never guessed. A database keeps the gaps of up to `MAX_CACHED` queries it was asked about (the same
query is often run, then confirmed, or drafted several times), so it is asked about a query once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentkit.sql.database import Database, QueryError

MAX_COMPARISONS = 8
MAX_PROBES = 16
MAX_SPELLINGS = 4
MAX_SQL_CHARS = 20_000
MAX_CACHED = 1_000


@dataclass(frozen=True)
class CaseGap:
    """One comparison of `table.column` with `written` that misses the `stored` spellings of the same text."""

    table: str
    column: str
    written: str
    stored: tuple[str, ...]

    def render(self) -> str:
        """The gap as one line for the model."""
        literal = Database.literal
        shown = ", ".join(literal(s) for s in self.stored[:MAX_SPELLINGS])
        return (f"{self.table}.{self.column} stores {literal(self.written)} also as {shown}: "
                f"`{self.column} = {literal(self.written)}` leaves those rows out; compare "
                f"LOWER({self.column}) = {literal(self.written.lower())} to include every spelling")


def _parse(sql: str, dialect: str) -> Any:
    """The parsed query, or None when it is too long or cannot be read."""
    if len(sql) > MAX_SQL_CHARS:
        return None
    import sqlglot

    try:
        return sqlglot.parse_one(sql, read=dialect)
    except Exception:
        return None


def comparisons(tree: Any) -> list[tuple[str | None, str, str]]:
    """The (table or alias or None, column, text) of each bare column compared by `=` or `IN` with a text
    literal in the parsed query `tree`, in order, at most `MAX_COMPARISONS`."""
    from sqlglot import exp

    found: list[tuple[str | None, str, str]] = []

    def add(column: Any, value: Any) -> None:
        if isinstance(column, exp.Column) and isinstance(value, exp.Literal) and value.is_string:
            found.append((column.table or None, column.name, str(value.this)))

    for node in tree.find_all(exp.EQ, exp.In):
        if isinstance(node, exp.EQ):
            add(node.this, node.expression)
            add(node.expression, node.this)
        else:
            for value in node.expressions:
                add(node.this, value)
        if len(found) >= MAX_COMPARISONS:
            break
    return found[:MAX_COMPARISONS]


def _tables(tree: Any) -> dict[str, str]:
    """Each table name and alias of the parsed query (lower case) -> the table's name as written."""
    from sqlglot import exp

    names: dict[str, str] = {}
    for table in tree.find_all(exp.Table):
        names[table.name.lower()] = table.name
        if table.alias:
            names[table.alias.lower()] = table.name
    return names


def case_gaps(db: Database, sql: str, *, timeout_s: float = 2.0) -> list[CaseGap]:
    """The comparisons of `sql` whose column stores the compared text in another case too (see the module)."""
    cached: dict[str, list[CaseGap]] = db.cache.setdefault("case_gaps", {})
    if sql not in cached:
        if len(cached) >= MAX_CACHED:
            cached.clear()
        cached[sql] = _find_gaps(db, sql, timeout_s)
    return list(cached[sql])


def _find_gaps(db: Database, sql: str, timeout_s: float) -> list[CaseGap]:
    tree = _parse(sql, db.sqlglot_dialect)
    found = comparisons(tree) if tree is not None else []
    if not found:
        return []
    tables = _tables(tree)
    gaps: list[CaseGap] = []
    seen: set[tuple[str, str, str]] = set()
    for qualifier, column, text in found:
        if qualifier is not None:
            candidates = [tables[qualifier.lower()]] if qualifier.lower() in tables else []
        else:
            candidates = sorted(set(tables.values()))
        for name in candidates:
            real = db.resolve_table(name)
            if real is None:
                continue
            info = db.describe(real).column(column)
            if info is None or (real, info.name, text) in seen or len(seen) >= MAX_PROBES:
                continue
            seen.add((real, info.name, text))
            stored = _spellings(db, real, info.name, text, timeout_s)
            others = tuple(s for s in stored if s != text)
            if others:
                gaps.append(CaseGap(real, info.name, text, others))
    return gaps


def _spellings(db: Database, table: str, column: str, text: str, timeout_s: float) -> list[str]:
    """The distinct values of `table.column` equal to `text` but for letter case (at most MAX_SPELLINGS + 1)."""
    probe = (f"SELECT DISTINCT {db.quote(column)} FROM {db.quote(table)} "
             f"WHERE LOWER({db.quote(column)}) = LOWER({db.literal(text)})")
    try:
        result = db.query(probe, max_rows=MAX_SPELLINGS + 1, timeout_s=timeout_s)
    except QueryError:
        return []
    return [row[0] for row in result.rows if isinstance(row[0], str)]
