"""A hint under a "no such column" error: where the column the query named really is.

An error that only says what is missing ("no such column: T2.Email") leaves a model to guess, and models
often send the same query again. The schema knows more: which table the alias stands for, which tables do
have the column, whether the "column" was a text value in double quotes. The hint goes on a second line, so
the error's first line (what repairs and notes key on) is unchanged. It helps models that read their errors.
Why: docs/decisions.md#column-hints
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence

MAX_NAMED = 5
"""Tables (or similar columns) a hint names at most."""
MAX_COLUMNS = 15
"""Columns of one table a hint lists at most."""

_MISSING = (re.compile(r"no such column: ([^\s]+)"),  # SQLite
            re.compile(r'column "?([\w.]+)"? does not exist'))  # PostgreSQL


def missing_column(error: str) -> tuple[str | None, str] | None:
    """(qualifier or None, column) of a "no such column" error; None for any other error."""
    for pattern in _MISSING:
        found = pattern.search(error)
        if found:
            qualifier, _, column = found.group(1).strip('"`[]').rpartition(".")
            return qualifier.strip('"`[]') or None, column.strip('"`[]')
    return None


def table_names_in(sql: str, dialect: str = "sqlite") -> dict[str, str] | None:
    """Alias or name (lower case) -> table name, for every table the query reads ("" for the name of a
    CTE or a subquery); None when sqlglot cannot parse it."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (sqlglot.errors.SqlglotError, RecursionError, ValueError):  # hostile nesting included
        return None
    derived = {node.alias.lower() for node in tree.find_all(exp.CTE, exp.Subquery) if node.alias}
    names = dict.fromkeys(derived, "")
    for table in tree.find_all(exp.Table):
        real = "" if table.name.lower() in derived else table.name  # a CTE read as a table is still derived
        names[table.name.lower()] = real
        if table.alias:
            names[table.alias.lower()] = real
    return names


def _listed(names: Sequence[str], most: int = MAX_NAMED) -> str:
    more = len(names) - most
    return ", ".join(names[:most]) + (f" and {more} more" if more > 0 else "")


def column_hint(sql: str, error: str, schema: Mapping[str, Sequence[str]], dialect: str = "sqlite") -> str | None:
    """One line saying where the column of a "no such column" `error` is, from `schema` ({table: [column]});
    None for another error or when the schema says nothing useful."""
    missing = missing_column(error)
    if missing is None:
        return None
    qualifier, column = missing
    tables = {t.lower(): t for t in schema}
    owners = [t for t, cols in schema.items() if column.lower() in (c.lower() for c in cols)]
    if owners:  # named as the schema spells it
        column = next(c for c in schema[owners[0]] if c.lower() == column.lower())
    if qualifier is not None:
        named_in = table_names_in(sql, dialect)
        if named_in is None or named_in.get(qualifier.lower()) == "":
            return None  # unreadable here, or a CTE or subquery: its columns are the query's own
        table = named_in.get(qualifier.lower()) or tables.get(qualifier.lower())
        real = tables.get(table.lower()) if table else None
        found_in = f"{column} is a column of {_listed(owners)}" if owners else ""
        if real is None:
            return f"{qualifier} is not a table or alias of this query" + (f"; {found_in}." if found_in else ".")
        its_columns = f"its columns: {_listed(list(schema[real]), MAX_COLUMNS)}"
        if qualifier.lower() not in named_in:  # a table the query does not read
            where = f"join it to use {real}.{column}" if real in owners else found_in or its_columns
            return f"{real} is not in this query's FROM or JOIN; {where}."
        if real in owners:
            return None  # the table has it: the error is about scope, which the schema does not tell
        named = real if qualifier.lower() == real.lower() else f"{qualifier} is {real}, which"
        return f"{named} has no column {column}; {found_in or its_columns}."
    if owners:
        return f"{column} is a column of {_listed(owners)}: name that table in FROM or JOIN, or qualify the column."
    if re.search(rf'"{re.escape(column)}"', sql):
        return f"\"{column}\" in double quotes is a column name; a text value is written in single quotes: '{column}'."
    everywhere = {f"{t}.{c}": c.lower() for t, cols in schema.items() for c in cols}
    close = set(difflib.get_close_matches(column.lower(), set(everywhere.values()), n=MAX_NAMED))
    near = [name for name, c in everywhere.items() if c in close]
    return f"No table has a column {column}; similar columns: {_listed(near)}." if near else None
