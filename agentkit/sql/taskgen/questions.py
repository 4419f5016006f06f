"""Questions with gold SQL for a generated database, from templates over its declared structure.

    from agentkit.sql.taskgen.questions import candidates
    for q in candidates(domain, conn, rng):   # every question the templates can ask of this database
        print(q.kind, q.difficulty, q.question, q.sql)

Templates read the domain's declaration, not its name: a table with a label and a measure gets
filters, aggregates, top-k and "above the average"; a foreign key gets joins, per-parent counts,
"the most", HAVING, "without any", "both X and Y" and "X but not Y"; a chain of two keys gets three-table
joins; a link table (two keys, no label) gets many-to-many questions over three or four tables. Values in
questions are drawn from the rows, so every question has an answer; `agentkit.sql.taskgen.build` then
executes each gold query and keeps only those whose result is deterministic and non-trivial.
Each template words its question in a few ways (chosen by the seed), so no one phrasing is learned.
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


def _nice(x: float) -> int | float:
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
TEMPLATES: list[Template] = []


def template(fn: Template) -> Template:
    """Register a template."""
    TEMPLATES.append(fn)
    return fn


def _cat_cond(ctx: Ctx, col: Col, value: str, alias: str = "") -> str:
    name = f"{alias}.{ctx.c(col)}" if alias else ctx.c(col)
    if col.case_variants:
        return f"LOWER({name}) = {lit(value.lower())}"
    return f"{name} = {lit(value)}"


def _cat_value(ctx: Ctx, table: Table, col: Col) -> str | None:
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


def _said(col: Col, value: str) -> str:
    """How a question writes a category value: in quotes as stored, or plainly when the column's case varies."""
    return value.lower() if col.case_variants else f"'{value}'"


# -- one table -------------------------------------------------------------------------------------------

@template
def count_all(ctx: Ctx) -> Iterator[Question]:
    """How many rows a table has."""
    for t in ctx.domain.tables:
        q = ctx.say(f"How many {t.nouns} are there?", f"What is the total number of {t.nouns}?",
                    f"Count the {t.nouns}.")
        yield Question(q, f"SELECT COUNT(*) FROM {ctx.t(t)}", "count", EASY)


@template
def count_category(ctx: Ctx) -> Iterator[Question]:
    """How many rows have a category value (any letter case where the column mixes cases)."""
    for t in ctx.domain.tables:
        for col in t.of_kind("category"):
            value = _cat_value(ctx, t, col)
            if value is None:
                continue
            q = ctx.say(f"How many {t.nouns} have {col.words} {_said(col, value)}?",
                        f"Count the {t.nouns} whose {col.words} is {_said(col, value)}.",
                        f"What is the number of {t.nouns} with {col.words} {_said(col, value)}?")
            yield Question(q, f"SELECT COUNT(*) FROM {ctx.t(t)} WHERE {_cat_cond(ctx, col, value)}",
                           "count-filter", EASY)


@template
def list_above(ctx: Ctx) -> Iterator[Question]:
    """The labels of rows whose measure is above (or below) a threshold near the top (or bottom)."""
    for t in ctx.domain.tables:
        label = t.label
        if label is None:
            continue
        for m in t.of_kind("measure"):
            values = sorted(r[0] for r in ctx.rows(f"SELECT {ctx.c(m)} FROM {ctx.t(t)} WHERE {ctx.c(m)} IS NOT NULL"))
            if len(values) < 8:
                continue
            x = _nice(values[int(len(values) * ctx.rng.uniform(0.75, 0.92))])
            above = ctx.rng.random() < 0.6
            op, word = (">", ctx.say("above", "greater than", "more than")) if above else \
                ("<", ctx.say("below", "less than", "under"))
            q = ctx.say(f"List the {label.words} of the {t.nouns} whose {m.words} is {word} {x}.",
                        f"Which {t.nouns} have {an(m.words)} {word} {x}? Give their {label.words}.")
            if not above:
                x = _nice(values[int(len(values) * ctx.rng.uniform(0.08, 0.25))])
                q = ctx.say(f"List the {label.words} of the {t.nouns} whose {m.words} is {word} {x}.",
                            f"Which {t.nouns} have {an(m.words)} {word} {x}? Give their {label.words}.")
            yield Question(q, f"SELECT {ctx.c(label)} FROM {ctx.t(t)} WHERE {ctx.c(m)} {op} {x}",
                           "list-filter", EASY)


@template
def aggregate(ctx: Ctx) -> Iterator[Question]:
    """The average, highest, lowest or (for additive measures) total of a measure."""
    for t in ctx.domain.tables:
        for m in t.of_kind("measure"):
            fns = [("AVG", "average"), ("MAX", "highest"), ("MIN", "lowest")]
            fns += [("SUM", "total")] if m.additive else []
            fn, word = ctx.rng.choice(fns)
            q = ctx.say(f"What is the {word} {m.words} of all {t.nouns}?",
                        f"Across all {t.nouns}, what is the {word} {m.words}?")
            yield Question(q, f"SELECT {fn}({ctx.c(m)}) FROM {ctx.t(t)}", "aggregate", EASY)


@template
def missing(ctx: Ctx) -> Iterator[Question]:
    """How many rows have no value in a column that allows NULL."""
    for t in ctx.domain.tables:
        for col in t.columns:
            if col.null_rate <= 0 or col.kind == "fk":
                continue
            q = ctx.say(f"How many {t.nouns} have no {col.words} recorded?",
                        f"For how many {t.nouns} is the {col.words} missing?")
            yield Question(q, f"SELECT COUNT(*) FROM {ctx.t(t)} WHERE {ctx.c(col)} IS NULL", "null", EASY)


@template
def distinct_values(ctx: Ctx) -> Iterator[Question]:
    """How many different values a category column holds."""
    for t in ctx.domain.tables:
        for col in t.of_kind("category"):
            if col.case_variants:
                continue
            q = ctx.say(f"How many different {col.words} values do the {t.nouns} have?",
                        f"How many distinct {col.words} values appear among the {t.nouns}?")
            yield Question(q, f"SELECT COUNT(DISTINCT {ctx.c(col)}) FROM {ctx.t(t)}", "distinct", EASY)


@template
def in_year(ctx: Ctx) -> Iterator[Question]:
    """How many rows have a date in a given year."""
    for t in ctx.domain.tables:
        for d in t.of_kind("date"):
            year = ctx.pick(t, d)
            if year is None:
                continue
            year = str(year)[:4]
            q = ctx.say(f"How many {t.nouns} have {an(d.words)} in {year}?",
                        f"Count the {t.nouns} whose {d.words} falls in the year {year}.")
            yield Question(q, f"SELECT COUNT(*) FROM {ctx.t(t)} WHERE strftime('%Y', {ctx.c(d)}) = '{year}'",
                           "date-year", MEDIUM)


@template
def older_than(ctx: Ctx) -> Iterator[Question]:
    """How many people were older than an age in the domain's year (a birth year column)."""
    today = ctx.domain.today
    for t in ctx.domain.tables:
        for b in t.of_kind("birth_year"):
            ages = sorted(today - r[0] for r in ctx.rows(f"SELECT {ctx.c(b)} FROM {ctx.t(t)} "
                                                          f"WHERE {ctx.c(b)} IS NOT NULL"))
            if len(ages) < 5:
                continue
            n = ages[int(len(ages) * ctx.rng.uniform(0.3, 0.8))]
            q = ctx.say(f"How many {t.nouns} were older than {n} in {today}?",
                        f"In {today}, how many {t.nouns} were more than {n} years old?")
            yield Question(q, f"SELECT COUNT(*) FROM {ctx.t(t)} WHERE {today} - {ctx.c(b)} > {n}", "age", MEDIUM)


@template
def top_k(ctx: Ctx) -> Iterator[Question]:
    """The labels of the k rows with the highest (or lowest) measure, in order (no tie at the cut)."""
    for t in ctx.domain.tables:
        label = t.label
        if label is None:
            continue
        for m in t.of_kind("measure"):
            k = ctx.rng.choice((3, 5))
            high = ctx.rng.random() < 0.6
            order = "DESC" if high else "ASC"
            values = [r[0] for r in ctx.rows(f"SELECT {ctx.c(m)} FROM {ctx.t(t)} WHERE {ctx.c(m)} IS NOT NULL "
                                             f"ORDER BY {ctx.c(m)} {order}")]
            if len(values) <= k or values[k - 1] == values[k]:
                continue
            word, first = ("highest", "highest first") if high else ("lowest", "lowest first")
            q = ctx.say(f"Which {k} {t.nouns} have the {word} {m.words}? List their {label.words}, {first}.",
                        f"List the {label.words} of the {k} {t.nouns} with the {word} {m.words}, {first}.")
            yield Question(q, f"SELECT {ctx.c(label)} FROM {ctx.t(t)} WHERE {ctx.c(m)} IS NOT NULL "
                              f"ORDER BY {ctx.c(m)} {order} LIMIT {k}", "top-k", MEDIUM)


@template
def best_with_ties(ctx: Ctx) -> Iterator[Question]:
    """The labels of every row with the highest or lowest measure or date (ties included)."""
    for t in ctx.domain.tables:
        label = t.label
        if label is None:
            continue
        for m in [*t.of_kind("measure"), *t.of_kind("date")]:
            high = ctx.rng.random() < 0.5
            fn = "MAX" if high else "MIN"
            words = ("latest", "earliest") if m.kind == "date" else ("highest", "lowest")
            word = words[0] if high else words[1]
            q = ctx.say(f"Which {t.noun} has the {word} {m.words}? Give {t.its} {label.words} (all of them if "
                        "several tie).",
                        f"What is the {label.words} of the {t.noun} with the {word} {m.words}? If there is a tie, "
                        "list every one.")
            yield Question(q, f"SELECT {ctx.c(label)} FROM {ctx.t(t)} WHERE {ctx.c(m)} = "
                              f"(SELECT {fn}({ctx.c(m)}) FROM {ctx.t(t)})", "superlative", MEDIUM)


@template
def per_category(ctx: Ctx) -> Iterator[Question]:
    """Counts and averages per category value (GROUP BY)."""
    for t in ctx.domain.tables:
        for col in t.of_kind("category"):
            if col.case_variants or col.null_rate > 0:
                continue
            q = ctx.say(f"For each {col.words}, how many {t.nouns} are there? Give the {col.words} and the count.",
                        f"Count the {t.nouns} per {col.words}: return each {col.words} with its number of "
                        f"{t.nouns}.")
            yield Question(q, f"SELECT {ctx.c(col)}, COUNT(*) FROM {ctx.t(t)} GROUP BY {ctx.c(col)}",
                           "group-count", MEDIUM)
            m = next(iter(t.of_kind("measure")), None)
            if m is not None:
                q = ctx.say(f"What is the average {m.words} of the {t.nouns} for each {col.words}? Give the "
                            f"{col.words} and the average.",
                            f"For every {col.words}, report the {col.words} and the mean {m.words} of its "
                            f"{t.nouns}.")
                yield Question(q, f"SELECT {ctx.c(col)}, AVG({ctx.c(m)}) FROM {ctx.t(t)} GROUP BY {ctx.c(col)}",
                               "group-aggregate", MEDIUM)


@template
def most_common(ctx: Ctx) -> Iterator[Question]:
    """The most common value of a category, every one that ties."""
    for t in ctx.domain.tables:
        for col in t.of_kind("category"):
            if col.case_variants:
                continue
            c, tt = ctx.c(col), ctx.t(t)
            q = ctx.say(f"Which {col.words} is the most common among the {t.nouns}? List all if tied.",
                        f"What {col.words} do the most {t.nouns} have (every one, if several tie)?")
            yield Question(q, f"SELECT {c} FROM {tt} WHERE {c} IS NOT NULL GROUP BY {c} HAVING COUNT(*) = "
                              f"(SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM {tt} WHERE {c} IS NOT NULL "
                              f"GROUP BY {c}))", "most-common", HARD)


@template
def above_average(ctx: Ctx) -> Iterator[Question]:
    """Rows whose measure is above the table's average (a nested query), optionally filtered."""
    for t in ctx.domain.tables:
        label = t.label
        if label is None:
            continue
        for m in t.of_kind("measure"):
            cats = t.of_kind("category")
            if cats and ctx.rng.random() < 0.6:
                col = ctx.rng.choice(cats)
                value = _cat_value(ctx, t, col)
                if value is None:
                    continue
                cond = _cat_cond(ctx, col, value)
                q = ctx.say(f"Among the {t.nouns} with {col.words} {_said(col, value)}, which have {an(m.words)} "
                            f"above the average {m.words} of all {t.nouns}? Give their {label.words}.",
                            f"List the {label.words} of {t.nouns} with {col.words} {_said(col, value)} whose "
                            f"{m.words} is higher than the overall average.")
                sql = (f"SELECT {ctx.c(label)} FROM {ctx.t(t)} WHERE {cond} AND {ctx.c(m)} > "
                       f"(SELECT AVG({ctx.c(m)}) FROM {ctx.t(t)})")
            else:
                q = ctx.say(f"Which {t.nouns} have {an(m.words)} above the average? Give their {label.words}.",
                            f"List the {label.words} of the {t.nouns} whose {m.words} exceeds the average "
                            f"{m.words}.")
                sql = (f"SELECT {ctx.c(label)} FROM {ctx.t(t)} WHERE {ctx.c(m)} > "
                       f"(SELECT AVG({ctx.c(m)}) FROM {ctx.t(t)})")
            yield Question(q, sql, "nested", HARD)


@template
def sorted_names(ctx: Ctx) -> Iterator[Question]:
    """The labels of the rows with a category value, in alphabetical order."""
    for t in ctx.domain.tables:
        label = t.label
        if label is None:
            continue
        for col in t.of_kind("category"):
            value = _cat_value(ctx, t, col)
            if value is None:
                continue
            q = ctx.say(f"List the {label.words} of the {t.nouns} with {col.words} {_said(col, value)}, in "
                        "alphabetical order.",
                        f"Give, sorted from A to Z, the {label.words} of every {t.noun} whose {col.words} is "
                        f"{_said(col, value)}.")
            yield Question(q, f"SELECT {ctx.c(label)} FROM {ctx.t(t)} WHERE {_cat_cond(ctx, col, value)} "
                              f"ORDER BY {ctx.c(label)}", "order", EASY)


# -- a foreign key -----------------------------------------------------------------------------------------

def _join(ctx: Ctx, child: Table, fk: Col, parent: Table, c: str = "c", p: str = "p") -> str:
    return (f"{ctx.t(child)} AS {c} JOIN {ctx.t(parent)} AS {p} ON {c}.{ctx.c(fk)} = {p}.{ctx.id(parent)}")


@template
def count_for_parent(ctx: Ctx) -> Iterator[Question]:
    """How many child rows point at a named parent (a join)."""
    for child, fk, parent in ctx.fks():
        label = parent.label
        if label is None:
            continue
        name = ctx.pick(parent, label, f"{ctx.id(parent)} IN (SELECT {ctx.c(fk)} FROM {ctx.t(child)})")
        if name is None:
            continue
        q = ctx.say(f"How many {child.nouns} have {fk.words or parent.noun} '{name}'?",
                    f"How many {child.nouns} are linked to the {parent.noun} '{name}'?",
                    f"Count the {child.nouns} of the {parent.noun} '{name}'.")
        yield Question(q, f"SELECT COUNT(*) FROM {_join(ctx, child, fk, parent)} "
                          f"WHERE p.{ctx.c(label)} = {lit(name)}", "join-count", MEDIUM)


@template
def filter_by_parent(ctx: Ctx) -> Iterator[Question]:
    """Child rows, or the total of a child measure, filtered by a parent's category (a join)."""
    for child, fk, parent in ctx.fks():
        for pc in parent.of_kind("category"):
            value = _cat_value(ctx, parent, pc)
            if value is None:
                continue
            cond = _cat_cond(ctx, pc, value, "p")
            if child.label is not None:
                q = ctx.say(f"List the {child.label.words} of the {child.nouns} whose {fk.words} has {pc.words} "
                            f"{_said(pc, value)}.",
                            f"Which {child.nouns} have {an(fk.words)} with {pc.words} {_said(pc, value)}? "
                            f"Give their {child.label.words}.")
                sql = f"SELECT c.{ctx.c(child.label)} FROM {_join(ctx, child, fk, parent)} WHERE {cond}"
                yield Question(q, sql, "join-filter", MEDIUM)
            m = next((x for x in child.of_kind("measure") if x.additive), None)
            if m is not None:
                q = ctx.say(f"What is the total {m.words} of the {child.nouns} whose {fk.words} has {pc.words} "
                            f"{_said(pc, value)}?",
                            f"Sum the {m.words} over all {child.nouns} of {parent.nouns} with {pc.words} "
                            f"{_said(pc, value)}.")
                yield Question(q, f"SELECT SUM(c.{ctx.c(m)}) FROM {_join(ctx, child, fk, parent)} WHERE {cond}",
                               "join-aggregate", MEDIUM)


@template
def per_parent(ctx: Ctx) -> Iterator[Question]:
    """Child counts per parent: over an inner join, or a LEFT JOIN that keeps parents with none."""
    for child, fk, parent in ctx.fks():
        label = parent.label
        if label is None:
            continue
        if ctx.rng.random() < 0.5:
            they = "they have" if parent.its == "their" else "it has"
            q = ctx.say(f"For each {parent.noun} that has {child.nouns}, give {parent.its} {label.words} and how "
                        f"many {child.nouns} {they}.",
                        f"How many {child.nouns} does each {parent.noun} have? Return the {parent.noun}'s "
                        f"{label.words} and the count, leaving out {parent.nouns} with none.")
            yield Question(q, f"SELECT p.{ctx.c(label)}, COUNT(*) FROM {_join(ctx, child, fk, parent)} "
                              f"GROUP BY p.{ctx.id(parent)}", "join-group", MEDIUM)
        else:
            they = "they have" if parent.its == "their" else "it has"
            q = ctx.say(f"For every {parent.noun}, including those with none, give {parent.its} {label.words} and "
                        f"{parent.its} number of {child.nouns}.",
                        f"List each {parent.noun}'s {label.words} with how many {child.nouns} {they} (0 when there "
                        "are none).")
            yield Question(q, f"SELECT p.{ctx.c(label)}, COUNT(c.{ctx.id(child)}) FROM {ctx.t(parent)} AS p "
                              f"LEFT JOIN {ctx.t(child)} AS c ON c.{ctx.c(fk)} = p.{ctx.id(parent)} "
                              f"GROUP BY p.{ctx.id(parent)}", "left-join-group", HARD)


@template
def parent_with_most(ctx: Ctx) -> Iterator[Question]:
    """The parent with the most children, every one that ties."""
    for child, fk, parent in ctx.fks():
        label = parent.label
        if label is None:
            continue
        f, ct = ctx.c(fk), ctx.t(child)
        q = ctx.say(f"Which {parent.noun} has the most {child.nouns}? Give {parent.its} {label.words} (all of them "
                    "if tied).",
                    f"Name the {parent.noun} with the largest number of {child.nouns}; list every one that ties.")
        yield Question(q, f"SELECT p.{ctx.c(label)} FROM {_join(ctx, child, fk, parent)} GROUP BY "
                          f"p.{ctx.id(parent)} HAVING COUNT(*) = (SELECT MAX(n) FROM (SELECT COUNT(*) AS n "
                          f"FROM {ct} WHERE {f} IS NOT NULL GROUP BY {f}))", "join-superlative", HARD)


@template
def more_than(ctx: Ctx) -> Iterator[Question]:
    """Parents with more than n children (GROUP BY ... HAVING)."""
    for child, fk, parent in ctx.fks():
        label = parent.label
        if label is None:
            continue
        counts = sorted(r[0] for r in ctx.rows(f"SELECT COUNT(*) FROM {ctx.t(child)} WHERE {ctx.c(fk)} IS NOT NULL "
                                               f"GROUP BY {ctx.c(fk)}"))
        if len(counts) < 3:
            continue
        n = counts[int(len(counts) * ctx.rng.uniform(0.5, 0.85))]
        q = ctx.say(f"Which {parent.nouns} have more than {count_noun(n, child)}? Give their {label.words}.",
                    f"List the {label.words} of {parent.nouns} with over {count_noun(n, child)}.")
        yield Question(q, f"SELECT p.{ctx.c(label)} FROM {_join(ctx, child, fk, parent)} GROUP BY "
                          f"p.{ctx.id(parent)} HAVING COUNT(*) > {n}", "having", HARD)


@template
def without_any(ctx: Ctx) -> Iterator[Question]:
    """Parents with no children at all, or none with a category value (NOT IN)."""
    for child, fk, parent in ctx.fks():
        label = parent.label
        if label is None:
            continue
        f, ct = ctx.c(fk), ctx.t(child)
        cats = child.of_kind("category")
        if cats and ctx.rng.random() < 0.5:
            col = ctx.rng.choice(cats)
            value = _cat_value(ctx, child, col)
            if value is None:
                continue
            q = ctx.say(f"Which {parent.nouns} have no {child.nouns} with {col.words} {_said(col, value)}? Give "
                        f"their {label.words}.",
                        f"List the {label.words} of {parent.nouns} without any {child.noun} whose {col.words} is "
                        f"{_said(col, value)}.")
            sql = (f"SELECT {ctx.c(label)} FROM {ctx.t(parent)} WHERE {ctx.id(parent)} NOT IN (SELECT {f} FROM {ct} "
                   f"WHERE {f} IS NOT NULL AND {_cat_cond(ctx, col, value)})")
        else:
            q = ctx.say(f"Which {parent.nouns} have no {child.nouns} at all? Give their {label.words}.",
                        f"List the {label.words} of {parent.nouns} without any {child.nouns}.")
            sql = (f"SELECT {ctx.c(label)} FROM {ctx.t(parent)} WHERE {ctx.id(parent)} NOT IN (SELECT {f} FROM {ct} "
                   f"WHERE {f} IS NOT NULL)")
        yield Question(q, sql, "negation", HARD)


@template
def both_and_but_not(ctx: Ctx) -> Iterator[Question]:
    """Parents with children of both values (INTERSECT) or of one but not the other (EXCEPT)."""
    for child, fk, parent in ctx.fks():
        label = parent.label
        if label is None:
            continue
        for col in child.of_kind("category"):
            if len(col.values) < 2:
                continue
            a, b = ctx.rng.sample(list(col.values), 2)
            if not col.case_variants:
                held = {r[0] for r in ctx.rows(f"SELECT DISTINCT {ctx.c(col)} FROM {ctx.t(child)}")}
                if a not in held or b not in held:
                    continue
            part = (f"SELECT p.{ctx.c(label)} FROM {_join(ctx, child, fk, parent)} WHERE "
                    "{cond}")
            first = part.format(cond=_cat_cond(ctx, col, a, "c"))
            second = part.format(cond=_cat_cond(ctx, col, b, "c"))
            if ctx.rng.random() < 0.5:
                q = ctx.say(f"Which {parent.nouns} have both {an(child.noun)} with {col.words} {_said(col, a)} and "
                            f"one with {col.words} {_said(col, b)}? Give their {label.words}.",
                            f"List the {label.words} of {parent.nouns} that have {child.nouns} with {col.words} "
                            f"{_said(col, a)} as well as {child.nouns} with {col.words} {_said(col, b)}.")
                yield Question(q, f"{first} INTERSECT {second}", "both", HARD)
            else:
                q = ctx.say(f"Which {parent.nouns} have {an(child.noun)} with {col.words} {_said(col, a)} but none "
                            f"with {col.words} {_said(col, b)}? Give their {label.words}.",
                            f"List the {label.words} of {parent.nouns} that have {child.nouns} with {col.words} "
                            f"{_said(col, a)} and no {child.nouns} with {col.words} {_said(col, b)}.")
                yield Question(q, f"{first} EXCEPT {second}", "except", HARD)


# -- chains and link tables --------------------------------------------------------------------------------

@template
def chain(ctx: Ctx) -> Iterator[Question]:
    """Three-table questions along a chain of two foreign keys: counts, totals, and filters."""
    for child, fk, parent in ctx.fks():
        for pfk in parent.of_kind("fk"):
            grand = ctx.domain.table(pfk.ref)
            label = grand.label
            if label is None:
                continue
            join = (f"{ctx.t(child)} AS c JOIN {ctx.t(parent)} AS p ON c.{ctx.c(fk)} = p.{ctx.id(parent)} "
                    f"JOIN {ctx.t(grand)} AS g ON p.{ctx.c(pfk)} = g.{ctx.id(grand)}")
            names = [r[0] for r in ctx.rows(f"SELECT DISTINCT g.{ctx.c(label)} FROM {join} ORDER BY 1")]
            if not names:
                continue
            name = ctx.rng.choice(names)
            m = next((x for x in child.of_kind("measure") if x.additive), None)
            if m is not None and ctx.rng.random() < 0.5:
                q = ctx.say(f"What is the total {m.words} of the {child.nouns} of {parent.nouns} whose "
                            f"{pfk.words} is '{name}'?",
                            f"Add up the {m.words} of all {child.nouns} belonging to {parent.nouns} of the "
                            f"{grand.noun} '{name}'.")
                sql = f"SELECT SUM(c.{ctx.c(m)}) FROM {join} WHERE g.{ctx.c(label)} = {lit(name)}"
                yield Question(q, sql, "chain-aggregate", HARD)
            else:
                q = ctx.say(f"How many {child.nouns} are there for {parent.nouns} whose {pfk.words} is '{name}'?",
                            f"Count the {child.nouns} that belong to {parent.nouns} of the {grand.noun} '{name}'.")
                sql = f"SELECT COUNT(*) FROM {join} WHERE g.{ctx.c(label)} = {lit(name)}"
                yield Question(q, sql, "chain-count", HARD)
            cats = child.of_kind("category")
            if cats:
                col = ctx.rng.choice(cats)
                value = _cat_value(ctx, child, col)
                if value is None:
                    continue
                q = ctx.say(f"Which {grand.nouns} have at least one {child.noun} with {col.words} "
                            f"{_said(col, value)} (through their {parent.nouns})? Give their {label.words}.",
                            f"List the {label.words} of {grand.nouns} whose {parent.nouns} have {an(child.noun)} "
                            f"with {col.words} {_said(col, value)}.")
                sql = (f"SELECT DISTINCT g.{ctx.c(label)} FROM {join} WHERE {_cat_cond(ctx, col, value, 'c')}")
                yield Question(q, sql, "chain-filter", HARD)


@template
def link_table(ctx: Ctx) -> Iterator[Question]:
    """Many-to-many questions through a link table, over three or four tables."""
    for link in ctx.domain.tables:
        keys = link.of_kind("fk")
        if len(keys) != 2 or link.label is not None:
            continue
        for ka, kb in ((keys[0], keys[1]), (keys[1], keys[0])):
            a, b = ctx.domain.table(ka.ref), ctx.domain.table(kb.ref)
            if a.label is None or b.label is None:
                continue
            join = (f"{ctx.t(a)} AS a JOIN {ctx.t(link)} AS l ON l.{ctx.c(ka)} = a.{ctx.id(a)} "
                    f"JOIN {ctx.t(b)} AS b ON l.{ctx.c(kb)} = b.{ctx.id(b)}")
            names = [r[0] for r in ctx.rows(f"SELECT DISTINCT b.{ctx.c(b.label)} FROM {join} ORDER BY 1")]
            if names:
                name = ctx.rng.choice(names)
                q = ctx.say(f"Which {a.nouns} have {an(link.noun)} with the {b.noun} '{name}'? Give their "
                            f"{a.label.words}.",
                            f"List the {a.label.words} of every {a.noun} linked to the {b.noun} '{name}' by "
                            f"{an(link.noun)}.")
                yield Question(q, f"SELECT DISTINCT a.{ctx.c(a.label)} FROM {join} WHERE b.{ctx.c(b.label)} = "
                                  f"{lit(name)}", "many-to-many", HARD)
            for bfk in b.of_kind("fk"):
                c = ctx.domain.table(bfk.ref)
                if c.label is None:
                    continue
                join4 = join + f" JOIN {ctx.t(c)} AS x ON b.{ctx.c(bfk)} = x.{ctx.id(c)}"
                names = [r[0] for r in ctx.rows(f"SELECT DISTINCT x.{ctx.c(c.label)} FROM {join4} ORDER BY 1")]
                if not names:
                    continue
                name = ctx.rng.choice(names)
                q = ctx.say(f"How many different {a.nouns} have {an(link.noun)} with {an(b.noun)} whose {bfk.words} is "
                            f"'{name}'?",
                            f"Count the distinct {a.nouns} linked by {link.nouns} to {b.nouns} of the {c.noun} "
                            f"'{name}'.")
                yield Question(q, f"SELECT COUNT(DISTINCT a.{ctx.id(a)}) FROM {join4} WHERE x.{ctx.c(c.label)} = "
                                  f"{lit(name)}", "four-tables", HARD)


def candidates(domain: Domain, conn: sqlite3.Connection, rng: random.Random) -> list[Question]:
    """Every question the templates ask of the domain's database (unchecked; see `build.check_gold`)."""
    ctx = Ctx(domain, conn, rng)
    out: list[Question] = []
    for fn in TEMPLATES:
        out.extend(fn(ctx))
    return out
