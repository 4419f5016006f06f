"""The question templates over one table: counts, filters, aggregates, dates and ages, top-k, ties,
GROUP BY, the most common value, "above the average" and sorted lists, in the order `TABLE_TEMPLATES` runs them.
"""

from __future__ import annotations

from collections.abc import Iterator

from agentkit.sql.taskgen.template_base import (
    EASY,
    HARD,
    MEDIUM,
    Ctx,
    Question,
    Template,
    an,
    category_condition,
    category_value,
    nice_number,
    spoken,
)


def count_all(ctx: Ctx) -> Iterator[Question]:
    """How many rows a table has."""
    for t in ctx.domain.tables:
        q = ctx.say(f"How many {t.nouns} are there?", f"What is the total number of {t.nouns}?",
                    f"Count the {t.nouns}.")
        yield Question(q, f"SELECT COUNT(*) FROM {ctx.t(t)}", "count", EASY)


def count_category(ctx: Ctx) -> Iterator[Question]:
    """How many rows have a category value (any letter case where the column mixes cases)."""
    for t in ctx.domain.tables:
        for col in t.of_kind("category"):
            value = category_value(ctx, t, col)
            if value is None:
                continue
            q = ctx.say(f"How many {t.nouns} have {col.words} {spoken(col, value)}?",
                        f"Count the {t.nouns} whose {col.words} is {spoken(col, value)}.",
                        f"What is the number of {t.nouns} with {col.words} {spoken(col, value)}?")
            yield Question(q, f"SELECT COUNT(*) FROM {ctx.t(t)} WHERE {category_condition(ctx, col, value)}",
                           "count-filter", EASY)


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
            x = nice_number(values[int(len(values) * ctx.rng.uniform(0.75, 0.92))])
            above = ctx.rng.random() < 0.6
            op, word = (">", ctx.say("above", "greater than", "more than")) if above else \
                ("<", ctx.say("below", "less than", "under"))
            q = ctx.say(f"List the {label.words} of the {t.nouns} whose {m.words} is {word} {x}.",
                        f"Which {t.nouns} have {an(m.words)} {word} {x}? Give their {label.words}.")
            if not above:
                x = nice_number(values[int(len(values) * ctx.rng.uniform(0.08, 0.25))])
                q = ctx.say(f"List the {label.words} of the {t.nouns} whose {m.words} is {word} {x}.",
                            f"Which {t.nouns} have {an(m.words)} {word} {x}? Give their {label.words}.")
            yield Question(q, f"SELECT {ctx.c(label)} FROM {ctx.t(t)} WHERE {ctx.c(m)} {op} {x}",
                           "list-filter", EASY)


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


def missing(ctx: Ctx) -> Iterator[Question]:
    """How many rows have no value in a column that allows NULL."""
    for t in ctx.domain.tables:
        for col in t.columns:
            if col.null_rate <= 0 or col.kind == "fk":
                continue
            q = ctx.say(f"How many {t.nouns} have no {col.words} recorded?",
                        f"For how many {t.nouns} is the {col.words} missing?")
            yield Question(q, f"SELECT COUNT(*) FROM {ctx.t(t)} WHERE {ctx.c(col)} IS NULL", "null", EASY)


def distinct_values(ctx: Ctx) -> Iterator[Question]:
    """How many different values a category column holds."""
    for t in ctx.domain.tables:
        for col in t.of_kind("category"):
            if col.case_variants:
                continue
            q = ctx.say(f"How many different {col.words} values do the {t.nouns} have?",
                        f"How many distinct {col.words} values appear among the {t.nouns}?")
            yield Question(q, f"SELECT COUNT(DISTINCT {ctx.c(col)}) FROM {ctx.t(t)}", "distinct", EASY)


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
                value = category_value(ctx, t, col)
                if value is None:
                    continue
                cond = category_condition(ctx, col, value)
                q = ctx.say(f"Among the {t.nouns} with {col.words} {spoken(col, value)}, which have {an(m.words)} "
                            f"above the average {m.words} of all {t.nouns}? Give their {label.words}.",
                            f"List the {label.words} of {t.nouns} with {col.words} {spoken(col, value)} whose "
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


def sorted_names(ctx: Ctx) -> Iterator[Question]:
    """The labels of the rows with a category value, in alphabetical order."""
    for t in ctx.domain.tables:
        label = t.label
        if label is None:
            continue
        for col in t.of_kind("category"):
            value = category_value(ctx, t, col)
            if value is None:
                continue
            q = ctx.say(f"List the {label.words} of the {t.nouns} with {col.words} {spoken(col, value)}, in "
                        "alphabetical order.",
                        f"Give, sorted from A to Z, the {label.words} of every {t.noun} whose {col.words} is "
                        f"{spoken(col, value)}.")
            yield Question(q, f"SELECT {ctx.c(label)} FROM {ctx.t(t)} WHERE {category_condition(ctx, col, value)} "
                              f"ORDER BY {ctx.c(label)}", "order", EASY)


TABLE_TEMPLATES: tuple[Template, ...] = (
    count_all, count_category, list_above, aggregate, missing, distinct_values, in_year, older_than, top_k,
    best_with_ties, per_category, most_common, above_average, sorted_names,
)
