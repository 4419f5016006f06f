"""Per-group counts over a join that give a group with no match the wrong count, or leave it out.

Two faults, both of a query that runs and whose result looks plausible:

- COUNT(*) after a LEFT JOIN counts a row with no match as 1.
  `SELECT b.name, COUNT(*) FROM brand AS b LEFT JOIN bike AS k ON k.brand_id = b.id GROUP BY b.id` gives a brand
  with no bike a count of 1: the LEFT JOIN keeps that brand as one row with NULL in bike's columns, and COUNT(*)
  counts rows. COUNT(k.brand_id) counts only matched rows, so the same brand gets 0.
- A count over an inner join leaves out the groups with no match.
  `SELECT b.name, COUNT(*) FROM brand AS b JOIN bike AS k ON k.brand_id = b.id GROUP BY b.id` has no row for a
  brand with no bike. That is right when the question wants only brands that have bikes, and wrong when it wants
  every brand (with 0 where there is none): only the question can tell, so the note says both.

`count_gap` finds such a query and says so only when it matters. The first fault: the outermost SELECT has one
LEFT JOIN and a GROUP BY, counts with COUNT(*) or COUNT(1), and does not keep only the unmatched rows
(`WHERE k.id IS NULL`, where COUNT(*) counts exactly those). The second (`regroup`): the outermost SELECT joins two
tables with one inner join on one equality, groups by columns of one of them, and counts, with no other aggregate,
no HAVING, no LIMIT and no WHERE on the other table. Either query is written again (the count on the joined
table's column from the join condition; for the second, as a LEFT JOIN from the grouped table), both are run,
and a gap is reported only when the results differ: for the second, only when the rewrite keeps every row of the
result and adds some (when every group has a match, the two agree).

    gap = count_gap(db, "SELECT b.name, COUNT(*) FROM brand AS b LEFT JOIN bike AS k ON k.brand_id = b.id "
                        "GROUP BY b.id")
    gap.render()
    # "COUNT(*) after `LEFT JOIN bike` counts a row with no bike as 1 (2 of 5 result rows change);
    #  COUNT(k.brand_id) counts it as 0: SELECT b.name, COUNT(k.brand_id) FROM ..."

Bounded: the query is parsed once (sqlglot, in the database's dialect; an unreadable or over-long query has no
gap), and at most two read-only queries run, each under the caller's time limit and returning at most
`MAX_ROWS` rows; a query that fails gives no gap, never a guess. A database keeps the answers for up to
`MAX_CACHED` queries, so the same query (run, then confirmed) is checked once.
Why: docs/decisions.md#count-check
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from agentkit.sql.database import Database, QueryError

MAX_SQL_CHARS = 20_000
MAX_ROWS = 1_000
MAX_CACHED = 1_000


@dataclass(frozen=True)
class CountGap:
    """A query whose COUNT(*) after `LEFT JOIN table` changes `changed` of its `rows` result rows when it counts
    `column` instead; `fixed` is the query so written."""

    table: str
    column: str
    changed: int
    rows: int
    fixed: str

    def render(self) -> str:
        """The gap as one line for the model."""
        return (f"COUNT(*) after `LEFT JOIN {self.table}` counts a row with no {self.table} as 1 "
                f"({self.changed} of {self.rows} result rows change); COUNT({self.column}) counts it as 0: "
                f"{self.fixed}")


@dataclass(frozen=True)
class DroppedGroups:
    """A count over `JOIN table` grouped by `parent`'s columns that has no row for `dropped` groups with no match
    (the result has `rows` rows); `fixed` is the query written as a LEFT JOIN from `parent`, which counts them as 0."""

    table: str
    parent: str
    dropped: int
    rows: int
    fixed: str

    def render(self) -> str:
        """The gap as one line for the model: what the query leaves out, and both readings of the question."""
        rows = f"{self.dropped} row{'s' if self.dropped != 1 else ''}"
        return (f"`JOIN {self.table}` leaves out {rows} for {self.parent} with no {self.table} (the result has "
                f"{self.rows}). That is right if the question wants only {self.parent} that has {self.table}; if "
                f"it wants every {self.parent}, with 0 where there is none: {self.fixed}")


def count_gap(db: Database, sql: str, *, timeout_s: float = 2.0) -> CountGap | DroppedGroups | None:
    """The gap of `sql` (see the module), or None when it has none or cannot be checked."""
    cached: dict[str, CountGap | DroppedGroups | None] = db.cache.setdefault("count_gaps", {})
    if sql not in cached:
        if len(cached) >= MAX_CACHED:
            cached.clear()
        cached[sql] = _find_gap(db, sql, timeout_s)
    return cached[sql]


def recount(sql: str, dialect: str = "sqlite") -> tuple[str, str, str] | None:
    """(`sql` with its COUNT(*)s on the joined table's join column, that table, that column) when the outermost
    SELECT has exactly one LEFT JOIN, a GROUP BY and a COUNT(*) or COUNT(1), and its WHERE tests no column of the
    joined table for NULL; else None."""
    from sqlglot import exp

    tree = _grouped_select(sql, dialect)
    if tree is None:
        return None
    left = [j for j in tree.args.get("joins") or [] if str(j.side).upper() == "LEFT"]
    if len(left) != 1 or not isinstance(left[0].this, exp.Table):
        return None
    joined = left[0].this
    name = joined.alias_or_name
    on = left[0].args.get("on")
    side = [c for c in on.find_all(exp.Column) if c.table.lower() == name.lower()] if on is not None else []
    if not side or _keeps_unmatched(tree.args.get("where"), name):
        return None
    column = exp.column(side[0].name, table=name)
    counts = [c for c in tree.find_all(exp.Count) if _counts_rows(c) and _outermost(c, tree)]
    if not counts:
        return None
    for count in counts:
        count.set("this", column.copy())
    return tree.sql(dialect=dialect), joined.name, column.sql(dialect=dialect)


def _keeps_unmatched(where: Any, name: str) -> bool:
    """Whether the WHERE clause `where` tests a column of table or alias `name` with IS NULL (an anti-join)."""
    from sqlglot import exp

    if where is None:
        return False
    return any(isinstance(node.this, exp.Column) and node.this.table.lower() == name.lower()
               and isinstance(node.expression, exp.Null) for node in where.find_all(exp.Is))


def _counts_rows(count: Any) -> bool:
    """COUNT(*) or COUNT(1), without DISTINCT."""
    from sqlglot import exp

    arg = count.this
    return isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not arg.is_string and arg.this == "1")


def _outermost(node: Any, tree: Any) -> bool:
    """Whether `node` belongs to `tree` itself, not to a subquery inside it."""
    from sqlglot import exp

    parent = node.parent
    while parent is not None and parent is not tree:
        if isinstance(parent, exp.Select | exp.Subquery):
            return False
        parent = parent.parent
    return parent is tree


def regroup(sql: str, dialect: str = "sqlite") -> tuple[str, str, str] | None:
    """(`sql` as a LEFT JOIN from its grouped table with its counts on the joined table's join column, the joined
    table, the grouped table) when the outermost SELECT counts over one inner join of two tables as the module
    says; else None."""
    from sqlglot import exp

    tree = _grouped_select(sql, dialect)
    if tree is None or tree.args.get("having") or tree.args.get("limit"):
        return None
    joins = tree.args.get("joins") or []
    source = tree.args.get("from_") or tree.args.get("from")
    if len(joins) != 1 or source is None or not isinstance(source.this, exp.Table) \
            or not isinstance(joins[0].this, exp.Table) or joins[0].args.get("side") \
            or str(joins[0].args.get("kind") or "INNER").upper() != "INNER":
        return None
    join, first, second = joins[0], source.this, joins[0].this
    on = join.args.get("on")
    if not isinstance(on, exp.EQ) or not all(isinstance(c, exp.Column) for c in (on.this, on.expression)):
        return None
    names = {first.alias_or_name.lower(), second.alias_or_name.lower()}
    grouped = {c.table.lower() for e in tree.args["group"].expressions for c in e.find_all(exp.Column)}
    if len(grouped) != 1 or not grouped <= names:
        return None
    parent, child = (first, second) if grouped == {first.alias_or_name.lower()} else (second, first)
    child_name = child.alias_or_name.lower()
    keys = [c for c in (on.this, on.expression) if c.table.lower() == child_name]
    if len(keys) != 1 or {on.this.table.lower(), on.expression.table.lower()} != names:
        return None
    where = tree.args.get("where")
    if where is not None and any(c.table.lower() != parent.alias_or_name.lower() for c in where.find_all(exp.Column)):
        return None
    outer = [n for n in tree.find_all(exp.AggFunc) if _outermost(n, tree)]
    counts = [n for n in outer if isinstance(n, exp.Count)]
    if not counts or len(counts) != len(outer):
        return None
    column = exp.column(keys[0].name, table=child.alias_or_name)
    for count in counts:
        if _counts_rows(count):
            count.set("this", column.copy())
        elif not all(c.table.lower() == child_name for c in count.find_all(exp.Column)):
            return None
    if parent is second:
        source.set("this", second.copy())
        join.set("this", first.copy())
    join.set("kind", None)
    join.set("side", "LEFT")
    return tree.sql(dialect=dialect), child.name, parent.name


def _grouped_select(sql: str, dialect: str) -> Any:
    """The parsed `sql` when it is one SELECT with a GROUP BY and no longer than MAX_SQL_CHARS; else None."""
    if len(sql) > MAX_SQL_CHARS:
        return None
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:
        return None
    return tree if isinstance(tree, exp.Select) and tree.args.get("group") else None


def _both(db: Database, sql: str, fixed: str, timeout_s: float) -> tuple[Counter[str], Counter[str]] | None:
    """The result rows of `sql` and of `fixed` (as counts of their reprs), or None when either fails or is cut."""
    try:
        before = db.query(sql, max_rows=MAX_ROWS, timeout_s=timeout_s)
        after = db.query(fixed, max_rows=MAX_ROWS, timeout_s=timeout_s)
    except QueryError:
        return None
    if before.truncated or after.truncated:
        return None
    return Counter(map(repr, before.rows)), Counter(map(repr, after.rows))


def _find_gap(db: Database, sql: str, timeout_s: float) -> CountGap | DroppedGroups | None:
    found = recount(sql, db.sqlglot_dialect)
    if found is None:
        return _dropped_groups(db, sql, timeout_s)
    fixed, table, column = found
    rows = _both(db, sql, fixed, timeout_s)
    if rows is None or rows[0].total() != rows[1].total():
        return None
    changed = (rows[0] - rows[1]).total()
    return CountGap(table, column, changed, rows[0].total(), fixed) if changed else None


def _dropped_groups(db: Database, sql: str, timeout_s: float) -> DroppedGroups | None:
    found = regroup(sql, db.sqlglot_dialect)
    if found is None:
        return None
    fixed, table, parent = found
    rows = _both(db, sql, fixed, timeout_s)
    if rows is None or rows[0] - rows[1] or rows[1].total() <= rows[0].total():
        return None
    return DroppedGroups(table, parent, rows[1].total() - rows[0].total(), rows[0].total(), fixed)


__all__ = ["CountGap", "DroppedGroups", "count_gap", "recount", "regroup"]
