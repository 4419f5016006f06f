"""Typed descriptions of a generated database: its tables, their columns and how questions name them.

A `Domain` is what a domain file declares; `agentkit.sql.taskgen.fill` turns it into rows and
`agentkit.sql.taskgen.questions` into questions with gold SQL. Column kinds say what a column holds and so
which questions can be asked of it:

    Col("name", "label", pool="person")                  # names a row; unique; asked for in answers
    Col("city", "category", values=("Oslo", "Bergen"))   # a small vocabulary: filters and GROUP BY
    Col("status", "category", values=(...), case_variants=True)  # stored as 'paid', 'Paid', 'PAID'
    Col("salary", "measure", low=30000, high=90000, unit="money")  # numbers: filters, AVG/MAX, top-k
    Col("hired_on", "date", low=2015, high=2024)         # 'YYYY-MM-DD' text: year filters, earliest/latest
    Col("birth_year", "birth_year", low=1950, high=2005) # questions say "age" and "older than"
    Col("email", "text", pool="email", null_rate=0.3)    # free text, sometimes missing: IS NULL questions
    Col("dept_id", "fk", ref="department", phrase="department")  # a foreign key to department's id

Every table gets an integer primary key named by the domain's naming style; `label` is the column
answers name rows by (a table without one is a link table or an event table whose rows are counted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ColKind = Literal["label", "category", "measure", "date", "birth_year", "text", "flag", "fk"]
Unit = Literal["", "money", "int", "real"]
Style = Literal["snake", "camel"]


@dataclass(frozen=True)
class Col:
    """One column: its SQL name (in snake_case; the domain's style may rename it), kind and phrasing.

    phrase: how a question names the column ("hire date", "home city"); defaults to the name in words.
    values: a category's vocabulary (first values are more frequent), or a text/label value pool override.
    pool: the generator of label/text values (see `agentkit.sql.taskgen.fill.POOLS`).
    low/high: the range of a measure, date (years) or birth year. unit: how a measure is stored.
    null_rate: the share of rows with NULL. case_variants: category text stored in mixed case.
    additive: whether a measure's total means something (False for a year, a rate, a score: no SUM questions).
    ref: for a foreign key, the referenced table's name. optional_parent: share of parents with no child
    rows pointing at them (so "without any" questions have answers).
    """

    name: str
    kind: ColKind
    phrase: str = ""
    values: tuple[str, ...] = ()
    pool: str = ""
    low: float = 0.0
    high: float = 100.0
    unit: Unit = "int"
    null_rate: float = 0.0
    case_variants: bool = False
    ref: str = ""
    optional_parent: float = 0.2
    additive: bool = True

    @property
    def words(self) -> str:
        """The column as a question says it (a foreign key without a phrase: its name less "_id")."""
        if self.phrase:
            return self.phrase
        name = self.name.removesuffix("_id") if self.kind == "fk" else self.name
        return name.replace("_", " ")


@dataclass(frozen=True)
class Table:
    """One table: its SQL name, the noun questions use for a row, its columns and how many rows it gets."""

    name: str
    noun: str
    columns: tuple[Col, ...]
    rows: int = 40
    plural: str = ""

    @property
    def nouns(self) -> str:
        """The plural noun ("patients")."""
        if self.plural:
            return self.plural
        if self.noun.endswith(("s", "x", "ch", "sh")):
            return self.noun + "es"
        if self.noun.endswith("y") and self.noun[-2:-1] not in "aeiou":
            return self.noun[:-1] + "ies"
        return self.noun + "s"

    @property
    def label(self) -> Col | None:
        """The column answers name a row by, if the table has one."""
        return next((c for c in self.columns if c.kind == "label"), None)

    @property
    def its(self) -> str:
        """The possessive a question uses for one row: "their" for people, "its" otherwise."""
        label = self.label
        return "their" if label is not None and label.pool == "person" else "its"

    def of_kind(self, *kinds: ColKind) -> list[Col]:
        """The columns of the given kinds, in declared order."""
        return [c for c in self.columns if c.kind in kinds]


@dataclass(frozen=True)
class Domain:
    """A database to generate: a name (its db_id), a sentence on what it holds, its tables (parents before
    the tables that point at them), the year questions about age count from, and the naming style."""

    name: str
    about: str
    tables: tuple[Table, ...]
    today: int = 2025
    style: Style = "snake"
    extra: dict[str, str] = field(default_factory=dict)

    def table(self, name: str) -> Table:
        """The table called `name` (as declared); KeyError naming the domain if absent."""
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(f"domain {self.name!r} has no table {name!r}")

    def check(self) -> None:
        """Raise ValueError if the declaration is inconsistent (a foreign key to an unknown or later table,
        a category without values, a duplicate table or column name)."""
        seen: set[str] = set()
        for t in self.tables:
            if t.name in seen:
                raise ValueError(f"{self.name}: table {t.name!r} declared twice")
            names = [c.name for c in t.columns]
            if len(set(names)) != len(names):
                raise ValueError(f"{self.name}.{t.name}: a column name appears twice")
            for c in t.columns:
                if c.kind == "fk" and c.ref not in seen:
                    raise ValueError(f"{self.name}.{t.name}.{c.name}: foreign key to {c.ref!r}, which is not "
                                     "declared before it")
                if c.kind == "category" and len(c.values) < 2:
                    raise ValueError(f"{self.name}.{t.name}.{c.name}: a category needs at least two values")
                if c.kind in ("label", "text") and not (c.pool or c.values):
                    raise ValueError(f"{self.name}.{t.name}.{c.name}: a {c.kind} column needs a pool or values")
            seen.add(t.name)


def sql_name(name: str, style: Style) -> str:
    """A declared snake_case name in the domain's style: 'birth_year' -> 'BirthYear' when camel."""
    if style == "snake":
        return name
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def table_sql_name(table: Table, style: Style) -> str:
    """The SQL name of a table in the domain's style."""
    return sql_name(table.name, style)


def id_column(table: Table, style: Style) -> str:
    """The primary key's SQL name: 'id' in snake style, 'PatientId' in camel style."""
    return "id" if style == "snake" else sql_name(table.name, style) + "Id"
