"""The question templates over foreign keys: joins, per-parent counts, "the most", HAVING, "without any",
"both X and Y" and "X but not Y", three-table chains and many-to-many questions through link tables, in
the order `JOIN_TEMPLATES` runs them.
"""

from __future__ import annotations

from collections.abc import Iterator

from agentkit.sql.taskgen.spec import Col, Table
from agentkit.sql.taskgen.template_base import (
    HARD,
    MEDIUM,
    Ctx,
    Question,
    Template,
    an,
    category_condition,
    category_value,
    count_noun,
    lit,
    spoken,
)

# -- a foreign key -----------------------------------------------------------------------------------------

def _join(ctx: Ctx, child: Table, fk: Col, parent: Table, c: str = "c", p: str = "p") -> str:
    return (f"{ctx.t(child)} AS {c} JOIN {ctx.t(parent)} AS {p} ON {c}.{ctx.c(fk)} = {p}.{ctx.id(parent)}")


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


def filter_by_parent(ctx: Ctx) -> Iterator[Question]:
    """Child rows, or the total of a child measure, filtered by a parent's category (a join)."""
    for child, fk, parent in ctx.fks():
        for pc in parent.of_kind("category"):
            value = category_value(ctx, parent, pc)
            if value is None:
                continue
            cond = category_condition(ctx, pc, value, "p")
            if child.label is not None:
                q = ctx.say(f"List the {child.label.words} of the {child.nouns} whose {fk.words} has {pc.words} "
                            f"{spoken(pc, value)}.",
                            f"Which {child.nouns} have {an(fk.words)} with {pc.words} {spoken(pc, value)}? "
                            f"Give their {child.label.words}.")
                sql = f"SELECT c.{ctx.c(child.label)} FROM {_join(ctx, child, fk, parent)} WHERE {cond}"
                yield Question(q, sql, "join-filter", MEDIUM)
            m = next((x for x in child.of_kind("measure") if x.additive), None)
            if m is not None:
                q = ctx.say(f"What is the total {m.words} of the {child.nouns} whose {fk.words} has {pc.words} "
                            f"{spoken(pc, value)}?",
                            f"Sum the {m.words} over all {child.nouns} of {parent.nouns} with {pc.words} "
                            f"{spoken(pc, value)}.")
                yield Question(q, f"SELECT SUM(c.{ctx.c(m)}) FROM {_join(ctx, child, fk, parent)} WHERE {cond}",
                               "join-aggregate", MEDIUM)


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
            value = category_value(ctx, child, col)
            if value is None:
                continue
            q = ctx.say(f"Which {parent.nouns} have no {child.nouns} with {col.words} {spoken(col, value)}? Give "
                        f"their {label.words}.",
                        f"List the {label.words} of {parent.nouns} without any {child.noun} whose {col.words} is "
                        f"{spoken(col, value)}.")
            sql = (f"SELECT {ctx.c(label)} FROM {ctx.t(parent)} WHERE {ctx.id(parent)} NOT IN (SELECT {f} FROM {ct} "
                   f"WHERE {f} IS NOT NULL AND {category_condition(ctx, col, value)})")
        else:
            q = ctx.say(f"Which {parent.nouns} have no {child.nouns} at all? Give their {label.words}.",
                        f"List the {label.words} of {parent.nouns} without any {child.nouns}.")
            sql = (f"SELECT {ctx.c(label)} FROM {ctx.t(parent)} WHERE {ctx.id(parent)} NOT IN (SELECT {f} FROM {ct} "
                   f"WHERE {f} IS NOT NULL)")
        yield Question(q, sql, "negation", HARD)


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
            first = part.format(cond=category_condition(ctx, col, a, "c"))
            second = part.format(cond=category_condition(ctx, col, b, "c"))
            if ctx.rng.random() < 0.5:
                q = ctx.say(f"Which {parent.nouns} have both {an(child.noun)} with {col.words} {spoken(col, a)} and "
                            f"one with {col.words} {spoken(col, b)}? Give their {label.words}.",
                            f"List the {label.words} of {parent.nouns} that have {child.nouns} with {col.words} "
                            f"{spoken(col, a)} as well as {child.nouns} with {col.words} {spoken(col, b)}.")
                yield Question(q, f"{first} INTERSECT {second}", "both", HARD)
            else:
                q = ctx.say(f"Which {parent.nouns} have {an(child.noun)} with {col.words} {spoken(col, a)} but none "
                            f"with {col.words} {spoken(col, b)}? Give their {label.words}.",
                            f"List the {label.words} of {parent.nouns} that have {child.nouns} with {col.words} "
                            f"{spoken(col, a)} and no {child.nouns} with {col.words} {spoken(col, b)}.")
                yield Question(q, f"{first} EXCEPT {second}", "except", HARD)


# -- chains and link tables --------------------------------------------------------------------------------

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
                value = category_value(ctx, child, col)
                if value is None:
                    continue
                q = ctx.say(f"Which {grand.nouns} have at least one {child.noun} with {col.words} "
                            f"{spoken(col, value)} (through their {parent.nouns})? Give their {label.words}.",
                            f"List the {label.words} of {grand.nouns} whose {parent.nouns} have {an(child.noun)} "
                            f"with {col.words} {spoken(col, value)}.")
                sql = (f"SELECT DISTINCT g.{ctx.c(label)} FROM {join} WHERE {category_condition(ctx, col, value, 'c')}")
                yield Question(q, sql, "chain-filter", HARD)


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


JOIN_TEMPLATES: tuple[Template, ...] = (
    count_for_parent, filter_by_parent, per_parent, parent_with_most, more_than, without_any, both_and_but_not,
    chain, link_table,
)
