"""Schema linking before the first turn: the tables a question most likely needs, as CREATE TABLE lines.

An agent given only exploration tools can spend its steps describing tables (the same one again and
again) before ever writing a query; given the relevant CREATE TABLEs up front it writes the SQL directly
(why: docs/decisions.md#schema-digest-and-value-links). `schema_digest` picks those tables for one question,
within a character budget: every table when the whole schema fits, else the tables whose names and columns
best match the question (by the toolkit's column search: embeddings when it has them, words otherwise),
each followed by the tables its foreign keys reach, and the names of the rest so the exploration tools can
still find them; and, in a second section, the values the question names and the columns that hold them
(`agentkit.sql.values`).

    kit = SchemaToolkit("shop.sqlite")
    print(schema_digest(kit, "How many orders did each customer place?"))
    agent = Agent(model, [kit], extensions=[SchemaShown(kit, "tables")])   # what `sql_agent` attaches
"""

from __future__ import annotations

from collections.abc import Sequence

from agentkit.loop.extensions import RunContext
from agentkit.sql.database import TableInfo
from agentkit.sql.prompts import question_of
from agentkit.sql.toolkit import SchemaToolkit, name_tokens
from agentkit.sql.values import VALUES_TITLE, find_values

DIGEST_TITLE = "The database's tables (CREATE TABLE statements; use exactly these names)"
DEFAULT_MAX_CHARS = 3000
# What an SQL episode shows up front: the likely tables and the values the question names ("digest"), the
# tables only ("tables"), or nothing, so the agent finds the schema with the tools ("hidden").
# The whole schema, however long ("full"), is what a single prompt with no tools is given.
SCHEMA_MODES = ("digest", "tables", "full", "hidden")


def create_table(info: TableInfo) -> str:
    """One table as a compact CREATE TABLE statement, foreign keys inline."""
    refs = {c: f"{fk.ref_table}({rc})" for fk in info.foreign_keys
            for c, rc in zip(fk.columns, fk.ref_columns, strict=False)}
    cols = []
    for c in info.columns:
        parts = [_quote(c.name), c.type or ""]
        if c.primary_key:
            parts.append("PRIMARY KEY")
        if c.name in refs:
            parts.append(f"REFERENCES {refs[c.name]}")
        cols.append(" ".join(p for p in parts if p))
    return f"CREATE TABLE {_quote(info.name)} ({', '.join(cols)});"


def rank_tables(kit: SchemaToolkit, question: str) -> list[str]:
    """The database's tables, most relevant to `question` first (ties keep the database's order)."""
    names = kit.db.table_names()
    score = dict.fromkeys(names, 0.0)
    words = set(name_tokens(question))
    words |= {w.rstrip("s") for w in words} | {w + "s" for w in words}  # "customers" names Customer
    for name in names:
        tokens = set(name_tokens(name))
        if tokens and tokens <= words:
            score[name] += 1.0
    found, _ = kit.search(question, k=min(50, 5 * len(names)))
    for rank, (value, table, _column) in enumerate(found):
        if table in score:
            score[table] += max(float(value), 0.0) / (1 + rank)
    order = {n: i for i, n in enumerate(names)}
    return sorted(names, key=lambda n: (-score[n], order[n]))


def full_schema(kit: SchemaToolkit) -> str:
    """Every table's CREATE TABLE statement, in the database's order."""
    return "\n".join(create_table(kit.db.describe(n)) for n in kit.db.table_names())


def schema_digest(kit: SchemaToolkit, question: str, *, max_chars: int = DEFAULT_MAX_CHARS,
                  prefer: Sequence[str] = ()) -> str:
    """CREATE TABLEs for the tables `question` most likely needs, at most `max_chars` (about 4 chars a token).

    The whole schema when it fits; otherwise the tables in `prefer` (those holding a value the question
    names), then the best-ranked tables, each followed by the tables its foreign keys reference, then one
    line naming the tables left out."""
    names = kit.db.table_names()
    infos = {n: kit.db.describe(n) for n in names}
    if "create_tables" not in kit.db.cache:  # once per database, shared by its episodes
        kit.db.cache["create_tables"] = {n: create_table(infos[n]) for n in names}
    statements: dict[str, str] = kit.db.cache["create_tables"]
    if sum(len(s) + 1 for s in statements.values()) <= max_chars:
        return "\n".join(statements[n] for n in names)
    chosen: list[str] = []
    used = 0
    ranked = rank_tables(kit, question)
    for name in [*(t for t in prefer if t in infos), *ranked]:
        group = [name, *(fk.ref_table for fk in infos[name].foreign_keys if fk.ref_table in infos)]
        for table in group:
            if table in chosen or used + len(statements[table]) + 1 > max_chars:
                continue
            chosen.append(table)
            used += len(statements[table]) + 1
        if used >= max_chars:
            break
    rest = [n for n in names if n not in chosen]
    lines = [statements[n] for n in chosen]
    if rest:
        shown = ", ".join(rest[:60]) + (f" and {len(rest) - 60} more" if len(rest) > 60 else "")
        lines.append(f"-- Other tables (describe_table shows their columns): {shown}")
    return "\n".join(lines)


def _quote(name: str) -> str:
    return name if name.replace("_", "").isalnum() and not name[:1].isdigit() else f'"{name}"'


def schema_context(kit: SchemaToolkit, question: str, mode: str = "digest", *,
                   max_chars: int = DEFAULT_MAX_CHARS) -> dict[str, str]:
    """The context sections an episode opens with under schema `mode` (one of `SCHEMA_MODES`), for
    `Agent.run(..., context=)`: {title: CREATE TABLEs} and, in "digest" mode, the values the question names
    with the columns holding them (their tables first when the digest must be cut)."""
    if mode not in SCHEMA_MODES:
        raise ValueError(f"schema must be one of {', '.join(SCHEMA_MODES)}, not {mode!r}")
    if mode == "hidden":
        return {}
    if mode == "full":
        return {DIGEST_TITLE: full_schema(kit)}
    links = find_values(kit, question) if mode == "digest" else []
    prefer = list(dict.fromkeys(table for link in links for table, _ in link.columns))
    context = {DIGEST_TITLE: schema_digest(kit, question, max_chars=max_chars, prefer=prefer)}
    if links:
        context[VALUES_TITLE] = "\n".join(link.render() for link in links)
    return context


class SchemaShown:
    """Extension that opens every run with `schema_context(kit, question, mode)` (the question read from the run's
    task, `agentkit.sql.prompts.question_of`), as `Agent.run(..., context=)` would; `sql_agent` attaches it first,
    so later extensions (worked examples) see the schema."""

    name = "schema"

    def __init__(self, kit: SchemaToolkit, mode: str = "tables", *, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        if mode not in SCHEMA_MODES:
            raise ValueError(f"schema must be one of {', '.join(SCHEMA_MODES)}, not {mode!r}")
        self.kit, self.mode, self.max_chars = kit, mode, max_chars

    def before_run(self, run: RunContext) -> None:
        """Add the schema sections for the run's question."""
        for title, text in schema_context(self.kit, question_of(run.task), self.mode,
                                          max_chars=self.max_chars).items():
            run.add_context(self.name, title, text)

    def after_run(self, run: RunContext) -> None:
        """Nothing to learn."""
