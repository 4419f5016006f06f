"""TRUST-SQL rewards, as functions of a finished trajectory and the gold SQL.

- execution: 1.0 if the confirmed SQL's result set matches the gold one, 0.2 if it runs but differs,
  0 if there is no confirmed SQL or it fails. Rows are compared as a multiset unless the gold query
  has a top-level ORDER BY; numbers compare with a small tolerance (1 == 1.0, 3.9600000000000004 == 3.96);
  columns compare by position.
- format: 0.1 if every model turn is well formed (parsable, known tools, valid arguments, one phase
  per turn) and all four phases occur.
- schema: 0.4·F(tables) + 0.6·F(columns) between the last proposed schema and the tables/columns the
  gold SQL uses (parsed with sqlglot), F being exact match, F1, precision or recall.

`score_sql_trajectory` returns all of them plus "answer" = execution + format (the outcome track of
Dual-Track GRPO) and "reward" (the total a plain trainer or an eval reads; "answer" by default).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from agentkit.messages import ToolCall
from agentkit.sql.database import Database, QueryError, QueryResult
from agentkit.sql.extract import sql_in_text
from agentkit.sql.toolkit import PHASES, PROPOSE, TOOL_PHASES, has_order_by
from agentkit.trajectory import Trajectory

SchemaVariant = Literal["exact", "f1", "precision", "recall"]
SCHEMA_VARIANTS: tuple[str, ...] = ("exact", "f1", "precision", "recall")
EXECUTION_MATCH, EXECUTION_WRONG, EXECUTION_ERROR = 1.0, 0.2, 0.0
FORMAT_REWARD = 0.1
TABLE_WEIGHT, COLUMN_WEIGHT = 0.4, 0.6
GOLD_MAX_ROWS = 100_000
REL_TOL, ABS_TOL = 1e-6, 1e-9


# -- result sets ----------------------------------------------------------------------------------------

def _norm(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, Decimal):
        return float(value)
    return value


def _sort_key(row: Sequence[Any]) -> tuple[Any, ...]:
    key = []
    for v in row:
        v = _norm(v)
        if v is None:
            key.append((0, 0.0, ""))
        elif isinstance(v, int | float):
            key.append((1, round(float(v), 6), ""))
        else:
            key.append((2, 0.0, v.hex() if isinstance(v, bytes) else str(v)))
    return tuple(key)


def values_equal(a: Any, b: Any) -> bool:
    """Equal, with numbers compared by value within a small tolerance."""
    a, b = _norm(a), _norm(b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return bool(a == b)


def results_match(predicted: Sequence[Sequence[Any]], gold: Sequence[Sequence[Any]], *, ordered: bool = False) -> bool:
    """Whether two result sets are the same rows (in order when `ordered`, else as multisets)."""
    if len(predicted) != len(gold):
        return False
    if any(len(p) != len(g) for p, g in zip(predicted, gold, strict=True)):
        return False
    if not ordered:
        predicted, gold = sorted(predicted, key=_sort_key), sorted(gold, key=_sort_key)
    return all(values_equal(a, b) for p, g in zip(predicted, gold, strict=True) for a, b in zip(p, g, strict=True))


def execution_reward(predicted_sql: str | None, gold_sql: str, db: Database, *,
                     gold_result: QueryResult | None = None, timeout_s: float = 10.0) -> float:
    """1.0 if `predicted_sql` returns the gold result set, 0.2 if it runs but differs, 0.0 otherwise."""
    if not predicted_sql:
        return EXECUTION_ERROR
    try:
        predicted = db.query(predicted_sql, max_rows=GOLD_MAX_ROWS, timeout_s=timeout_s)
    except QueryError:
        return EXECUTION_ERROR
    gold = gold_result or db.query(gold_sql, max_rows=GOLD_MAX_ROWS, timeout_s=timeout_s)
    same = results_match(predicted.rows, gold.rows, ordered=has_order_by(gold_sql, db.sqlglot_dialect))
    return EXECUTION_MATCH if same and not predicted.truncated else EXECUTION_WRONG


# -- schema items -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SchemaItems:
    """Lower-case table names and "table.column" names."""

    tables: frozenset[str]
    columns: frozenset[str]


def gold_schema_items(sql: str, schema: dict[str, list[str]] | None = None, dialect: str = "sqlite") -> SchemaItems:
    """The base tables and columns an SQL query uses (CTEs and subquery aliases resolved), via sqlglot.

    With `schema` ({table: [columns]}) unqualified columns are attributed to their tables and `*` is
    expanded; without it only qualified columns and single-table queries are resolved. Raises
    ValueError when sqlglot cannot parse the SQL.
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.optimizer.qualify import qualify
    from sqlglot.optimizer.scope import traverse_scope

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.ParseError as exc:
        raise ValueError(f"cannot parse the SQL to find its tables and columns: {exc}") from None
    lowered = {t.lower(): {c.lower(): "TEXT" for c in cols} for t, cols in (schema or {}).items()}
    as_schema: dict[str, object] = dict(lowered)  # sqlglot's mapping type: table -> {column: type}
    try:
        tree = qualify(tree, schema=as_schema or None, dialect=dialect, validate_qualify_columns=False,
                       quote_identifiers=False)
    except Exception:
        tree = sqlglot.parse_one(sql, read=dialect)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    tables = {t.name.lower() for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes}
    columns: set[str] = set()
    for scope in traverse_scope(tree):
        base = {alias.lower(): src.name.lower() for alias, src in scope.sources.items()
                if isinstance(src, exp.Table) and src.name.lower() not in ctes}
        for col in scope.columns:
            name = col.name.lower()
            if not name or name == "*":
                continue
            owner = base.get(col.table.lower()) if col.table else None
            if owner is None and not col.table:
                candidates = [t for t in base.values() if not lowered or name in lowered.get(t, {})]
                owner = candidates[0] if len(set(candidates)) == 1 else None
            if owner is not None:
                columns.add(f"{owner}.{name}")
    return SchemaItems(frozenset(tables), frozenset(columns))


def _clean(name: str) -> str:
    return name.strip().strip('"`[]').strip().lower()


def proposal_items(arguments: dict[str, Any]) -> SchemaItems:
    """The tables and columns named by a propose_schema call (joins count their columns)."""
    tables = {_clean(str(t)) for t in arguments.get("tables") or []}
    columns: set[str] = set()
    raw = arguments.get("columns") or {}
    pairs: Iterable[tuple[str, Any]] = raw.items() if isinstance(raw, dict) else [("", raw)]
    for t, cols in pairs:
        for c in cols if isinstance(cols, list | tuple) else [cols]:
            owner, dot, bare = str(c).rpartition(".")
            table = _clean(owner if dot and owner else t)
            if table:
                columns.add(f"{table}.{_clean(bare if dot else str(c))}")
    for j in arguments.get("joins") or []:
        text = f"{j.get('left', '')} = {j.get('right', '')}" if isinstance(j, dict) else str(j)
        for side in text.split("="):
            owner, dot, bare = side.strip().rpartition(".")
            if dot and owner:
                table = _clean(owner)
                tables.add(table)
                columns.add(f"{table}.{_clean(bare)}")
    return SchemaItems(frozenset(tables), frozenset(columns))


def set_score(predicted: Iterable[str], gold: Iterable[str], variant: SchemaVariant | str = "f1") -> float:
    """Exact match, F1, precision or recall of a predicted set against a gold set (both empty: 1.0)."""
    p, g = set(predicted), set(gold)
    if variant not in SCHEMA_VARIANTS:
        raise ValueError(f"unknown schema reward variant {variant!r}; use one of {', '.join(SCHEMA_VARIANTS)}")
    if not p and not g:
        return 1.0
    if variant == "exact":
        return float(p == g)
    hits = len(p & g)
    precision = hits / len(p) if p else 0.0
    recall = hits / len(g) if g else 1.0
    if variant == "precision":
        return precision
    if variant == "recall":
        return recall
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def schema_reward(proposed: SchemaItems | None, gold: SchemaItems, variant: SchemaVariant | str = "f1") -> float:
    """0.4·F(tables) + 0.6·F(columns); 0 when nothing was proposed."""
    if proposed is None:
        return 0.0
    return TABLE_WEIGHT * set_score(proposed.tables, gold.tables, variant) + \
        COLUMN_WEIGHT * set_score(proposed.columns, gold.columns, variant)


# -- reading the trajectory ------------------------------------------------------------------------------

def _answered_calls(trajectory: Trajectory, name: str) -> list[tuple[ToolCall, bool]]:
    """(call, succeeded) for every call of tool `name`, in order."""
    errors = {m.tool_call_id: m.is_error for m in trajectory.messages if m.role == "tool"}
    return [(c, c.id in errors and not errors[c.id])
            for m in trajectory.messages if m.role == "assistant" for c in m.tool_calls if c.name == name]


FIXES = "shape_checks"
"""The trajectory record (extras) of the queries a learned check fixed before they ran (`agentkit.memory.shape_checks`):
{"fixed": [{"sql": the model's query, "ran": the query that ran}, ...]}."""


def final_sql(trajectory: Trajectory) -> str | None:
    """The SQL that ran for the last successful confirm_answer call (the model's, or a check's fix of it); in a
    run that called no tool at all (the single-shot baseline), the query its answer text gives; else None."""
    done = [c for c, ok in _answered_calls(trajectory, "confirm_answer") if ok]
    sql = done[-1].arguments.get("sql") if done else None
    if not done and not any(m.tool_calls for m in trajectory.messages if m.role == "assistant"):
        return sql_in_text(trajectory.answer)
    for fix in trajectory.extras.get(FIXES, {}).get("fixed", []):
        if isinstance(fix, dict) and fix.get("sql") == sql and isinstance(fix.get("ran"), str):
            sql = fix["ran"]
    return sql if isinstance(sql, str) else None


def last_proposal(trajectory: Trajectory) -> dict[str, Any] | None:
    """The arguments of the last accepted propose_schema call, or None."""
    done = [c for c, ok in _answered_calls(trajectory, "propose_schema") if ok]
    return dict(done[-1].arguments) if done else None


def propose_end_turn(trajectory: Trajectory) -> int | None:
    """Index of the last turn labelled propose_schema: Dual-Track's schema advantage applies up to its end."""
    turns = trajectory.turns_in(PROPOSE)
    return turns[-1].index if turns else None


def format_reward(trajectory: Trajectory, tool_names: Iterable[str] | None = None) -> float:
    """0.1 when every main-context turn is well formed and the four phases all occur, else 0."""
    known = set(tool_names) if tool_names is not None else set(TOOL_PHASES)
    turns = [t for t in trajectory.turns if t.context == "main"]
    if not turns:
        return 0.0
    phase_of = TOOL_PHASES
    for t in turns:
        out = t.output
        if out.parse_error or not out.tool_calls:
            return 0.0
        if any(c.name not in known for c in out.tool_calls):
            return 0.0
        if len({phase_of.get(c.name) for c in out.tool_calls}) > 1:
            return 0.0
    bad = ("Invalid arguments for", "Unknown tool")
    if any(m.role == "tool" and m.is_error and m.content.startswith(bad) for m in trajectory.messages):
        return 0.0
    seen = {t.phase for t in turns}
    return FORMAT_REWARD if all(p in seen for p in PHASES) and final_sql(trajectory) else 0.0


def score_sql_trajectory(trajectory: Trajectory, gold_sql: str, db: Database, *,
                         schema_variant: SchemaVariant | str = "f1", gold_result: QueryResult | None = None,
                         gold_items: SchemaItems | None = None, total: str = "answer") -> dict[str, float]:
    """All reward components of one SQL episode.

    Returns {"execution", "format", "schema", "answer" (= execution + format), "reward"}; "reward" is
    "answer" when `total="answer"` (default) or execution + format + schema when `total="all"`.
    """
    if total not in ("answer", "all"):
        raise ValueError("total must be 'answer' or 'all'")
    execution = execution_reward(final_sql(trajectory), gold_sql, db, gold_result=gold_result)
    fmt = format_reward(trajectory)
    proposal = last_proposal(trajectory)
    if gold_items is None:
        gold_items = gold_schema_items(gold_sql, db.schema(), db.sqlglot_dialect)
    schema = schema_reward(proposal_items(proposal) if proposal is not None else None, gold_items, schema_variant)
    answer = execution + fmt
    return {"execution": execution, "format": fmt, "schema": schema, "answer": answer,
            "reward": answer if total == "answer" else answer + schema}
