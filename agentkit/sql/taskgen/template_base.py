"""What the question templates are built from: the `Question` record, the `Ctx` they read a database
through, and helpers that write SQL literals and word the questions.

A template is a function from a `Ctx` to the `Question`s it asks (`Template`); the templates are in
`agentkit.sql.taskgen.table_templates` and `agentkit.sql.taskgen.join_templates`, and
`agentkit.sql.taskgen.questions.candidates` runs them all.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from agentkit.sql.taskgen.spec import Col, Domain, Table, id_column, sql_name, table_sql_name

EASY, MEDIUM, HARD = "easy", "medium", "hard"


@dataclass(frozen=True)
class Question:
    """A question, its gold SQL, the template it came from and its difficulty."""

    question: str
    sql: str
    kind: str
    difficulty: str


def lit(value: Any) -> str:
    """A SQL literal for a Python value (strings quoted with doubled single quotes)."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def nice_number(x: float) -> int | float:
    """A round threshold near x, as a person would write it."""
    if abs(x) >= 1000:
        return int(round(x, -2))
    if abs(x) >= 100:
        return int(round(x, -1))
    if abs(x) >= 10:
        return round(x)
    return round(x, 1)


class Ctx:
    """The domain, an open connection to its database and the seeded generator templates draw from."""

    def __init__(self, domain: Domain, conn: sqlite3.Connection, rng: random.Random) -> None:
        self.domain = domain
        self.conn = conn
        self.rng = rng

    def t(self, table: Table) -> str:
        """The table's SQL name."""
        return table_sql_name(table, self.domain.style)

    def c(self, col: Col) -> str:
        """The column's SQL name."""
        return sql_name(col.name, self.domain.style)

    def id(self, table: Table) -> str:
        """The table's primary key column."""
        return id_column(table, self.domain.style)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """All rows of a query."""
        return self.conn.execute(sql).fetchall()

    def pick(self, table: Table, col: Col, where: str = "") -> Any:
        """A random non-NULL value the column holds (None if it holds none)."""
        cond = f"{self.c(col)} IS NOT NULL" + (f" AND {where}" if where else "")
        values = [r[0] for r in self.rows(f"SELECT DISTINCT {self.c(col)} FROM {self.t(table)} WHERE {cond} "
                                          f"ORDER BY 1")]
        return self.rng.choice(values) if values else None

    def say(self, *forms: str) -> str:
        """One of several wordings."""
        return self.rng.choice(forms)

    def fks(self) -> Iterator[tuple[Table, Col, Table]]:
        """(child, foreign key, parent) for every foreign key of the domain."""
        for child in self.domain.tables:
            for col in child.of_kind("fk"):
                yield child, col, self.domain.table(col.ref)


Template = Callable[[Ctx], Iterator[Question]]


def category_condition(ctx: Ctx, col: Col, value: str, alias: str = "") -> str:
    """The SQL condition that `col` (of `alias` when given) holds `value`: case-blind when the column's case varies."""
    name = f"{alias}.{ctx.c(col)}" if alias else ctx.c(col)
    if col.case_variants:
        return f"LOWER({name}) = {lit(value.lower())}"
    return f"{name} = {lit(value)}"


def category_value(ctx: Ctx, table: Table, col: Col) -> str | None:
    """A category value to ask about: the canonical spelling for mixed-case columns."""
    if col.case_variants:
        return ctx.rng.choice(col.values)
    value = ctx.pick(table, col)
    return None if value is None else str(value)


def an(noun: str) -> str:
    """The noun with its indefinite article ("an order line", "a unit price", "an hourly rate")."""
    low = noun.lower()
    vowel = low[:1] in "aeiou" and not low.startswith(("uni", "use", "usu", "one", "eu"))
    return ("an " if vowel or low.startswith(("hour", "honest", "heir")) else "a ") + noun


def count_noun(n: int, table: Table) -> str:
    """"1 loan" or "3 loans"."""
    return f"{n} {table.noun if n == 1 else table.nouns}"


def spoken(col: Col, value: str) -> str:
    """How a question writes a category value: in quotes as stored, or plainly when the column's case varies."""
    return value.lower() if col.case_variants else f"'{value}'"
