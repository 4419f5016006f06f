"""COUNT(*) over a LEFT JOIN, which counts a row with no match as 1.

`SELECT b.name, COUNT(*) FROM brand AS b LEFT JOIN bike AS k ON k.brand_id = b.id GROUP BY b.id` gives a brand
with no bike a count of 1: the LEFT JOIN keeps that brand as one row with NULL in bike's columns, and COUNT(*)
counts rows. COUNT(k.brand_id) counts only matched rows, so the same brand gets 0. The query runs, and its
result looks plausible.

`count_gap` finds such a query and says so only when it matters: the outermost SELECT has one LEFT JOIN and
a GROUP BY, counts with COUNT(*) or COUNT(1), and does not keep only the unmatched rows (`WHERE k.id IS NULL`, where
COUNT(*) counts exactly those); the query is written again with each such count on the joined
table's column from the join condition, both are run, and a gap is reported only when their results differ (when
every group has a match, COUNT(*) is right).

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


def count_gap(db: Database, sql: str, *, timeout_s: float = 2.0) -> CountGap | None:
    """The gap of `sql` (see the module), or None when it has none or cannot be checked."""
    cached: dict[str, CountGap | None] = db.cache.setdefault("count_gaps", {})
    if sql not in cached:
        if len(cached) >= MAX_CACHED:
            cached.clear()
        cached[sql] = _find_gap(db, sql, timeout_s)
    return cached[sql]


def recount(sql: str, dialect: str = "sqlite") -> tuple[str, str, str] | None:
    """(`sql` with its COUNT(*)s on the joined table's join column, that table, that column) when the outermost
    SELECT has exactly one LEFT JOIN, a GROUP BY and a COUNT(*) or COUNT(1), and its WHERE tests no column of the
    joined table for NULL; else None."""
    if len(sql) > MAX_SQL_CHARS:
        return None
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:
        return None
    if not isinstance(tree, exp.Select) or not tree.args.get("group"):
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


def _find_gap(db: Database, sql: str, timeout_s: float) -> CountGap | None:
    found = recount(sql, db.sqlglot_dialect)
    if found is None:
        return None
    fixed, table, column = found
    try:
        before = db.query(sql, max_rows=MAX_ROWS, timeout_s=timeout_s)
        after = db.query(fixed, max_rows=MAX_ROWS, timeout_s=timeout_s)
    except QueryError:
        return None
    if before.truncated or after.truncated or len(before.rows) != len(after.rows):
        return None
    changed = sum((Counter(map(repr, before.rows)) - Counter(map(repr, after.rows))).values())
    if not changed:
        return None
    return CountGap(table, column, changed, len(before.rows), fixed)


__all__ = ["CountGap", "count_gap", "recount"]
