"""SchemaToolkit: the tools an agent uses to explore an unknown database and answer with SQL.

Each tool is read-only and carries the TRUST-SQL phase that labels the model turn calling it:
list_tables, describe_table, sample_rows, search_columns and distinct_values are
`explore_schema`; propose_schema is `propose_schema`; run_query is `generate_sql`; confirm_answer is
`confirm_answer` and final (its output ends the run).

    kit = SchemaToolkit("Chinook.sqlite")                 # embed=Embedder.default().embed for search
    agent = Agent(model, tools=[kit])

One static check is optional (`check_limit=True`, `agentkit sql --check-limit`; off by default): a LIMIT
that closes a query whose outermost SELECT has no ORDER BY keeps arbitrary rows, so confirm_answer refuses
such a query once, saying why; confirming the same query again runs it (the question may want any N rows).
Why: docs/decisions.md#limit-check

A second one is optional too (`check_case=True`; `agentkit sql` turns it on, `--no-check-case` off): a column compared
by `=` with text that the database also stores in another letter case (`status = 'paid'` where 'Paid' rows
exist, `agentkit.sql.spellings`) leaves rows out, so run_query shows a note above its result and confirm_answer
refuses such a query once, naming the spellings; confirming the same query again runs it.
Why: docs/decisions.md#case-check

A third (`check_count=True`; off by default): COUNT(*) after a LEFT JOIN counts a row with no match as 1; when
counting the joined table's join column instead changes the result (`agentkit.sql.outer_count`), run_query shows
a note and confirm_answer refuses the query once, showing it rewritten; confirming the same query again runs it.
Why: docs/decisions.md#count-check
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit.sql.connect import open_database
from agentkit.sql.database import Database, QueryError, QueryResult, TableInfo
from agentkit.tools import Tool, Toolkit, tool

EXPLORE, PROPOSE, GENERATE, CONFIRM = "explore_schema", "propose_schema", "generate_sql", "confirm_answer"
PHASES = (EXPLORE, PROPOSE, GENERATE, CONFIRM)
TOOL_PHASES = {
    "list_tables": EXPLORE, "describe_table": EXPLORE, "sample_rows": EXPLORE, "search_columns": EXPLORE,
    "distinct_values": EXPLORE, "propose_schema": PROPOSE, "run_query": GENERATE, "confirm_answer": CONFIRM,
}

EmbedFn = Callable[[list[str]], Any]  # texts -> (n, d) array of L2-normalised vectors


@dataclass
class SchemaProposal:
    """A proposed schema subset after checking: real names where verified, flags for the rest."""

    tables: list[str] = field(default_factory=list)
    columns: dict[str, list[str]] = field(default_factory=dict)
    joins: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        """True when every table, column and join named exists in the database."""
        return not self.unverified

    def as_json(self) -> dict[str, Any]:
        """The proposal as JSON-able data (tables, columns, joins, unverified names)."""
        return {"tables": self.tables, "columns": self.columns, "joins": self.joins, "unverified": self.unverified}


_NAME = re.compile(r"[\w$\"`\[\] ]+")
_STRINGS = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"")
_LAST_LIMIT = re.compile(r"\s+LIMIT\s+\d+(?:\s*(?:,|OFFSET)\s*\d+)?\s*;?\s*$", re.IGNORECASE)
UNORDERED_LIMIT = ("confirm_answer refused this query once: its LIMIT cuts rows that no ORDER BY ranks, so which rows "
                   "it keeps is arbitrary. Add the ORDER BY that picks the rows the question asks for, or drop the "
                   "LIMIT if the question wants every row; confirm the same query again to keep it as it is.")
CASE_GAP = ("confirm_answer refused this query once: {notes}. Fix the comparison, or confirm the same query again "
            "to keep it as it is.")
COUNT_GAP = ("confirm_answer refused this query once: {note}. Confirm the corrected query, or confirm the same query "
             "again to keep it as it is.")


def blank_strings(sql: str) -> str:
    """`sql` with the inside of its string literals blanked (same length, so positions still match)."""
    return _STRINGS.sub(lambda m: m.group()[0] + " " * (len(m.group()) - 2) + m.group()[-1], sql)


def without_limit(sql: str) -> str | None:
    """The query without its LIMIT when that is its last clause (outside string literals); else None."""
    found = _LAST_LIMIT.search(blank_strings(sql))
    return sql[:found.start()] if found else None


def has_order_by(sql: str, dialect: str = "sqlite") -> bool:
    """Whether the outermost query of `sql` has an ORDER BY (then row order matters)."""
    import sqlglot

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:
        return "order by" in " ".join(sql.lower().split())
    return tree is not None and tree.args.get("order") is not None


def unordered_limit(sql: str) -> bool:
    """Whether a LIMIT closes `sql` while its outermost SELECT has no ORDER BY (the LIMIT keeps arbitrary rows)."""
    return without_limit(sql) is not None and not has_order_by(sql)
MAX_JOIN_CHARS = 400


def parse_join(text: str) -> tuple[str, str, str, str] | None:
    """"TableA.col = TableB.col" as (TableA, col, TableB, col), or None. Linear: split on "=" and ".",
    no backtracking pattern; longer than MAX_JOIN_CHARS is None."""
    if len(text) > MAX_JOIN_CHARS or text.count("=") != 1:
        return None
    parts: list[str] = []
    for side in text.split("="):
        if side.count(".") != 1:
            return None
        parts += [p.strip() for p in side.split(".")]
    if not all(p and _NAME.fullmatch(p) for p in parts):
        return None
    return parts[0], parts[1], parts[2], parts[3]


def name_tokens(text: str) -> list[str]:
    """Lower-case word pieces of an identifier or phrase: "InvoiceLine.UnitPrice" -> invoice, line, unit, price."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return [t for t in re.split(r"[^a-z0-9]+", spaced.lower()) if t]


def _stem(token: str) -> str:
    for suffix in ("ies", "es", "s"):
        if token.endswith(suffix) and len(token) > len(suffix) + 2:
            return token[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return token


class SchemaToolkit(Toolkit):
    """Read-only schema-exploration tools over one database (a path, SQLAlchemy URL or `Database`).

    Args:
        db: the database.
        embed: optional `texts -> normalised vectors` used by search_columns; without it the search
            is lexical (word overlap) and says so.
        max_rows: rows shown by run_query, confirm_answer and sample_rows (TRUST-SQL shows at most 30).
        timeout_s: time limit of each query.
        page_size: tables per page of list_tables.
        check_limit: confirm_answer refuses, once per query, a LIMIT that cuts unordered rows (see the module).
        check_case: run_query notes, and confirm_answer refuses once per query, text compared by `=` that the
            database also stores in another letter case (see the module).
        check_count: run_query notes, and confirm_answer refuses once per query, a COUNT(*) after a LEFT JOIN that
            counts unmatched rows as 1 (see the module).
    """

    name = "sql"

    def __init__(self, db: str | Path | Database, *, embed: EmbedFn | None = None, max_rows: int = 30,
                 timeout_s: float = 5.0, page_size: int = 50, check_limit: bool = False,
                 check_case: bool = False, check_count: bool = False) -> None:
        self.db = open_database(db)
        self.check_limit = check_limit
        self.check_case = check_case
        self.check_count = check_count
        self.refused: set[str] = set()
        self.embed = embed
        self.max_rows = max_rows
        self.timeout_s = timeout_s
        self.page_size = page_size
        self.proposals: list[SchemaProposal] = []
        self.final: QueryResult | None = None
        super().__init__(self._build(), name="sql")

    def reset(self) -> None:
        """Forget the proposals, the confirmed answer and the refused queries of the previous run."""
        self.proposals = []
        self.final = None
        self.refused = set()

    # -- shared helpers ------------------------------------------------------------------------------
    def table(self, name: str) -> TableInfo:
        """Describe `name`, or raise ValueError naming close matches."""
        try:
            return self.db.describe(name)
        except KeyError:
            close = difflib.get_close_matches(name, self.db.table_names(), n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(close)}?" if close else " Use list_tables to see the tables."
            raise ValueError(f"there is no table {name!r}.{hint}") from None

    def column(self, table: TableInfo, name: str) -> str:
        """The real name of column `name` of `table`, or raise ValueError naming the columns."""
        col = table.column(name.strip().strip('"`[]'))
        if col is None:
            raise ValueError(f"table {table.name} has no column {name!r}; its columns: "
                             f"{', '.join(c.name for c in table.columns)}")
        return col.name

    def query(self, sql: str) -> QueryResult:
        """Run `sql` with this kit's row cap and time limit."""
        return self.db.query(sql, max_rows=self.max_rows, timeout_s=self.timeout_s)

    def case_notes(self, sql: str) -> list[str]:
        """With `check_case`, one line per comparison of `sql` that misses stored spellings (else none)."""
        if not self.check_case:
            return []
        from agentkit.sql.spellings import case_gaps

        return [gap.render() for gap in case_gaps(self.db, sql, timeout_s=self.timeout_s)]

    def count_note(self, sql: str) -> str | None:
        """With `check_count`, the line saying how a COUNT(*) after a LEFT JOIN in `sql` miscounts (else None)."""
        if not self.check_count:
            return None
        from agentkit.sql.outer_count import count_gap

        gap = count_gap(self.db, sql, timeout_s=self.timeout_s)
        return gap.render() if gap else None

    def check_proposal(self, tables: Sequence[str],
                       columns: Mapping[str, Sequence[str]] | Sequence[str] | None = None,
                       joins: Sequence[str | dict[str, str]] | None = None) -> SchemaProposal:
        """Check a proposed schema subset against the real schema; unknown names are flagged, not dropped."""
        out = SchemaProposal()

        def add_table(name: str) -> TableInfo | None:
            real = self.db.resolve_table(name)
            if real is None:
                flag = f"table {name}"
                if flag not in out.unverified:
                    out.unverified.append(flag)
                return None
            if real not in out.tables:
                out.tables.append(real)
            return self.db.describe(real)

        def add_column(table_name: str, col: str) -> str | None:
            info = add_table(table_name)
            if info is None:
                out.unverified.append(f"column {table_name}.{col}")
                return None
            real = info.column(col.strip().strip('"`[]'))
            if real is None:
                out.unverified.append(f"column {info.name}.{col}")
                return None
            cols = out.columns.setdefault(info.name, [])
            if real.name not in cols:
                cols.append(real.name)
            return f"{info.name}.{real.name}"

        for t in tables:
            add_table(str(t))
        pairs = columns.items() if isinstance(columns, Mapping) else [("", columns or [])]
        for t, cols in pairs:
            for c in cols if isinstance(cols, list | tuple) else [cols]:
                c = str(c)
                owner, dot, bare = c.rpartition(".")
                if not (dot and owner) and not t:
                    out.unverified.append(f"column {c} (name its table: 'Table.column')")
                    continue
                add_column(owner if dot and owner else t, bare if dot else c)
        for j in joins or []:
            text = f"{j.get('left', '')} = {j.get('right', '')}" if isinstance(j, dict) else str(j)
            m = parse_join(text)
            if m is None:
                shown = text if len(text) <= 80 else text[:77] + "..."
                out.unverified.append(f"join {shown!r} (write joins as 'TableA.col = TableB.col')")
                continue
            left = add_column(m[0], m[1])
            right = add_column(m[2], m[3])
            if left and right:
                out.joins.append(f"{left} = {right}")
                if not self._is_foreign_key(left, right):
                    out.notes.append(f"join {left} = {right} is not a declared foreign key (check the values match)")
        self.proposals.append(out)
        return out

    def _is_foreign_key(self, left: str, right: str) -> bool:
        (lt, lc), (rt, rc) = left.split(".", 1), right.split(".", 1)
        for a, ac, b, bc in ((lt, lc, rt, rc), (rt, rc, lt, lc)):
            for fk in self.db.describe(a).foreign_keys:
                pairs = zip(fk.columns, fk.ref_columns, strict=False)
                if fk.ref_table.lower() == b.lower() and any(x.lower() == ac.lower() and y.lower() == bc.lower()
                                                             for x, y in pairs):
                    return True
        return False

    def search(self, text: str, k: int = 10) -> tuple[list[tuple[float, str, str]], str]:
        """The k columns whose name phrase ("unit price of invoice line") and comment best match `text`,
        with the method used ("embedding" or "lexical")."""
        index = self._columns()
        if not index:
            return [], "none"
        if self.embed is not None:
            import numpy as np

            # One matrix per embedding function (bound methods of one embedder compare equal).
            stored: list[tuple[EmbedFn, Any]] = self.db.cache.setdefault("column_vectors", [])
            matrix = next((m for fn, m in stored if fn == self.embed), None)
            if matrix is None:
                matrix = np.asarray(self.embed([doc for _, _, doc in index]), dtype=np.float32)
                stored.append((self.embed, matrix))
            q = np.asarray(self.embed([text]), dtype=np.float32)[0]
            scores = matrix @ q
            order = np.argsort(-scores)[:k]
            return [(float(scores[i]), index[i][0], index[i][1]) for i in order], "embedding"
        query = {_stem(t) for t in name_tokens(text)}
        scored = []
        for table, column, doc in index:
            words = {_stem(t) for t in name_tokens(doc)}
            overlap = len(query & words)
            bonus = 0.5 if column.lower() in text.lower().replace(" ", "") else 0.0
            if overlap or bonus:
                scored.append((overlap / max(len(query), 1) + bonus, table, column))
        scored.sort(key=lambda s: (-s[0], s[1], s[2]))
        return scored[:k], "lexical"

    def _columns(self) -> list[tuple[str, str, str]]:
        """(table, column, searchable text) for every column, built once per database."""
        if "column_index" not in self.db.cache:
            index = []
            for t in self.db.table_names():
                info = self.db.describe(t)
                for c in info.columns:
                    # A short phrase embeds better than a dotted name: "unit price of invoice line".
                    doc = f"{' '.join(name_tokens(c.name))} of {' '.join(name_tokens(t))}"
                    index.append((t, c.name, f"{doc}: {c.comment}" if c.comment else doc))
            self.db.cache["column_index"] = index
        cached: list[tuple[str, str, str]] = self.db.cache["column_index"]
        return cached

    # -- the tools ----------------------------------------------------------------------------------
    def _build(self) -> list[Tool]:
        kit = self

        @tool(read_only=True, phase=EXPLORE)
        def list_tables(name_filter: str = "", page: int = 1) -> str:
            """List the tables of the database, a page at a time.

            Args:
                name_filter: only tables whose name contains this text (case-insensitive; * and ? are wildcards).
                page: which page of results (1 is the first).
            """
            names = kit.db.table_names()
            if name_filter:
                pattern = name_filter.lower()
                if not any(ch in pattern for ch in "*?["):
                    pattern = f"*{pattern}*"
                names = [n for n in names if fnmatch.fnmatchcase(n.lower(), pattern)]
            if not names:
                return f"No table matches {name_filter!r}." if name_filter else "The database has no tables."
            pages = (len(names) + kit.page_size - 1) // kit.page_size
            page = min(max(page, 1), pages)
            shown = names[(page - 1) * kit.page_size : page * kit.page_size]
            head = f"{len(names)} table{'s' if len(names) != 1 else ''}"
            head += f" matching {name_filter!r}" if name_filter else ""
            if pages > 1:
                head += f" (page {page} of {pages}; call list_tables with page={page + 1} for more)" if page < pages \
                    else f" (page {page} of {pages})"
            return head + ":\n" + "\n".join(shown)

        @tool(read_only=True, phase=EXPLORE)
        def describe_table(table: str) -> str:
            """Show a table's columns with their types, primary key and foreign keys.

            Args:
                table: the table name.
            """
            info = kit.table(table)
            fk_of = {c: f"{fk.ref_table}.{rc}" for fk in info.foreign_keys
                     for c, rc in zip(fk.columns, fk.ref_columns, strict=False)}
            lines = [f"Table {info.name} ({len(info.columns)} columns)" + (f": {info.comment}" if info.comment else "")]
            for c in info.columns:
                parts = [f"  {c.name}", c.type or "ANY"]
                if c.primary_key:
                    parts.append("PRIMARY KEY")
                if not c.nullable and not c.primary_key:
                    parts.append("NOT NULL")
                if c.name in fk_of:
                    parts.append(f"-> {fk_of[c.name]}")
                if c.comment:
                    parts.append(f"-- {c.comment}")
                lines.append(" ".join(parts))
            names = kit.db.table_names()
            if len(names) <= 300:
                refs = [f"{other}.{c}" for other in names if other != info.name
                        for fk in kit.db.describe(other).foreign_keys if fk.ref_table.lower() == info.name.lower()
                        for c in fk.columns]
                if refs:
                    lines.append("Referenced by: " + ", ".join(refs))
            return "\n".join(lines)

        @tool(read_only=True, phase=EXPLORE)
        def sample_rows(table: str, n: int = 5) -> str:
            """Show the first rows of a table.

            Args:
                table: the table name.
                n: how many rows (at most the row cap).
            """
            info = kit.table(table)
            n = max(1, min(n, kit.max_rows))
            return kit.query(f"SELECT * FROM {kit.db.quote(info.name)} LIMIT {n}").render()

        @tool(read_only=True, phase=EXPLORE)
        def search_columns(query: str, k: int = 10) -> str:
            """Find columns whose table/column names (and comments) match a description, best first.

            Args:
                query: what the column should hold, in words (e.g. "song length", "customer country").
                k: how many columns to return.
            """
            hits, method = kit.search(query, max(1, min(k, 50)))
            note = ("(matched by meaning: embedding search)" if method == "embedding"
                    else "(lexical match on name words: no embedding model was given)")
            if not hits:
                return f"No column matches {query!r} {note}."
            lines = [f"Columns for {query!r} {note}:"]
            for score, t, c in hits:
                col = kit.db.describe(t).column(c)
                lines.append(f"  {t}.{c} {col.type if col else ''} (score {score:.2f})")
            return "\n".join(lines)

        @tool(read_only=True, phase=EXPLORE)
        def distinct_values(table: str, column: str, limit: int = 20) -> str:
            """Show the distinct values of a column, most frequent first, with their counts.

            Args:
                table: the table name.
                column: the column name.
                limit: how many values to show (at most the row cap).
            """
            info = kit.table(table)
            col = kit.db.quote(kit.column(info, column))
            src = kit.db.quote(info.name)
            limit = max(1, min(limit, kit.max_rows))
            total = kit.query(f"SELECT COUNT(DISTINCT {col}) FROM {src}").rows[0][0]
            result = kit.query(f"SELECT {col}, COUNT(*) AS n FROM {src} GROUP BY {col} ORDER BY n DESC, {col} "
                               f"LIMIT {limit}")
            return f"{info.name}.{kit.column(info, column)}: {total} distinct non-null values\n" + result.render()

        @tool(read_only=True, phase=PROPOSE)
        def propose_schema(tables: list[str], columns: dict[str, list[str]] | list[str] | None = None,
                           joins: list[str] | None = None) -> str:
            """Commit to the part of the schema the answer needs; every name is checked against the database.

            Args:
                tables: the tables the query will use.
                columns: for each table, the columns the query will use: {"Table": ["Col", ...]}
                    (or a list of "Table.Col").
                joins: join conditions written as "TableA.col = TableB.col".
            """
            p = kit.check_proposal(tables, columns, joins)
            lines = ["Proposed schema, checked against the database:",
                     f"  tables: {', '.join(p.tables) or '(none verified)'}"]
            for t, cols in p.columns.items():
                lines.append(f"  {t}: {', '.join(cols)}")
            if p.joins:
                lines.append(f"  joins: {'; '.join(p.joins)}")
            if p.unverified:
                lines.append("UNVERIFIED (not in the database, fix before writing SQL): " + "; ".join(p.unverified))
            else:
                lines.append("All names verified.")
            lines += [f"Note: {n}" for n in p.notes]
            return "\n".join(lines)

        @tool(read_only=True, phase=GENERATE)
        def run_query(sql: str) -> str:
            """Run one read-only SQL query (SELECT/WITH) and show up to the row cap of its result.

            Args:
                sql: a single SELECT statement.
            """
            result = kit.query(sql)
            notes = [*kit.case_notes(sql), *filter(None, [kit.count_note(sql)])]
            return "".join(f"Note: {n}.\n" for n in notes) + result.render()

        @tool(read_only=True, phase=CONFIRM, final=True)
        def confirm_answer(sql: str) -> str:
            """Give the final SQL that answers the question; it is run once more and ends the task.

            Args:
                sql: the final single SELECT statement.
            """
            if kit.check_limit and sql.strip() not in kit.refused and unordered_limit(sql):
                kit.refused.add(sql.strip())
                raise ValueError(UNORDERED_LIMIT)
            if kit.check_case and f"case:{sql.strip()}" not in kit.refused:
                notes = kit.case_notes(sql)
                if notes:
                    kit.refused.add(f"case:{sql.strip()}")
                    raise ValueError(CASE_GAP.format(notes="; ".join(notes)))
            if kit.check_count and f"count:{sql.strip()}" not in kit.refused:
                note = kit.count_note(sql)
                if note:
                    kit.refused.add(f"count:{sql.strip()}")
                    raise ValueError(COUNT_GAP.format(note=note))
            result = kit.query(sql)
            kit.final = result
            return f"Final SQL:\n{result.sql}\n\nResult:\n{result.render()}"

        return [list_tables, describe_table, sample_rows, search_columns, distinct_values,
                propose_schema, run_query, confirm_answer]


__all__ = ["CASE_GAP", "CONFIRM", "COUNT_GAP", "EXPLORE", "GENERATE", "PHASES", "PROPOSE", "TOOL_PHASES",
           "UNORDERED_LIMIT", "QueryError", "SchemaProposal", "SchemaToolkit", "blank_strings", "has_order_by",
           "unordered_limit", "without_limit"]
