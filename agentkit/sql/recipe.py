"""The TRUST-SQL agent recipe: the four-phase instructions and `sql_agent(model, db)`.

    agent = sql_agent("openai:gpt-4o-mini", "Chinook.sqlite")
    result = agent.run(sql_task_prompt("Which artist has the most albums?"))
    result.trajectory.records.get(SQL)  # final SQL, proposal, end of the propose turn, phase labels

The schema is never shown up front; the tools label each turn with its phase and
`SQLRunRecorder` stores what training needs (the end of the propose turn for Dual-Track) as the
trajectory's `SQL` record (`agentkit.records`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit.agent import Agent
from agentkit.loop.extensions import Extension, RunContext
from agentkit.models.protocol import Model
from agentkit.records import SQL, SQLRecord
from agentkit.sql.database import Database
from agentkit.sql.rewards import final_sql, last_proposal, propose_end_turn
from agentkit.sql.toolkit import EmbedFn, SchemaToolkit
from agentkit.trajectory import Trajectory

SQL_INSTRUCTIONS = """\
You answer questions about a database whose schema you have not seen. Work in four phases, one phase per turn; \
you may go back to an earlier phase when you learn something new.
1. explore_schema: find the relevant tables and columns with list_tables, describe_table, search_columns, \
sample_rows and distinct_values (exact spellings of values matter).
2. propose_schema: call propose_schema with the tables, the columns (as {"Table": ["Column", ...]}) and the \
joins ("TableA.col = TableB.col") your query needs. Fix and propose again if anything comes back UNVERIFIED.
3. generate_sql: run candidate queries with run_query and check the rows make sense (at most 30 rows are shown).
4. confirm_answer: call confirm_answer with the one final SQL query; this ends the task.
Rules: the database is read-only; one SELECT statement per call; never use a table or column you have not seen \
in a tool result; return exactly the columns the question asks for."""

SQL_INSTRUCTIONS_SHOWN = """\
You answer questions about a database with SQL. The user message gives the question and the CREATE TABLE \
statements of the tables it most likely needs.
1. Write one SELECT query that answers the question, using only the tables and columns shown, and check it with \
run_query.
2. If the query fails or its rows look wrong, fix it (describe_table, sample_rows and distinct_values show more \
of the database) and run it again.
3. Call confirm_answer with the final query; this ends the task.
Return exactly the columns the question asks for."""

SQL_INSTRUCTIONS_SINGLE_SHOT = """\
You write SQLite queries. The user message gives a question and the CREATE TABLE statements of the database. \
Reply with one SELECT query that answers the question, in a ```sql block. Return exactly the columns the \
question asks for."""

SQL_MODEL = "local:qwen2.5-coder-1.5b-sql"
"""`agentkit sql`'s model: the embedded 1.5B with the default's tool LoRA trained further on the draft agent's own
verified SQL runs (`agentkit.models.embedded_adapters`); `local:default` keeps the tool LoRA, which calls tools
better (Why: docs/decisions.md#sql-rejection-sampling)."""

TASK_TEMPLATE = "Question: {question}"
EVIDENCE_TEMPLATE = "\nHint: {evidence}"


def sql_task_prompt(question: str, evidence: str | None = None) -> str:
    """The user message of one text-to-SQL task (the question, and BIRD-style evidence if any)."""
    text = TASK_TEMPLATE.format(question=question.strip())
    if evidence and evidence.strip():
        text += EVIDENCE_TEMPLATE.format(evidence=evidence.strip())
    return text


def sql_record(trajectory: Trajectory) -> dict[str, Any]:
    """What a finished SQL run leaves for training and inspection: final SQL, last proposal,
    the index of the turn that ends the propose phase, and the phase label of every turn."""
    return {
        "final_sql": final_sql(trajectory),
        "proposal": last_proposal(trajectory),
        "propose_end_turn": propose_end_turn(trajectory),
        "phases": [t.phase for t in trajectory.turns],
    }


class SQLRunRecorder:
    """Extension that stores `sql_record(trajectory)` as the trajectory's `SQL` record after each run
    and, given the toolkit, resets its per-run state (proposals, confirmed answer) before each run."""

    name = "sql_run"

    def __init__(self, toolkit: SchemaToolkit | None = None) -> None:
        self.toolkit = toolkit

    def before_run(self, run: RunContext) -> None:
        """Reset the toolkit's per-run state (when given one)."""
        if self.toolkit is not None:
            self.toolkit.reset()

    def after_run(self, run: RunContext) -> None:
        """Store the run's `SQL` record."""
        run.record(SQL, SQLRecord.model_validate(sql_record(run.trajectory)))


def sql_agent(model: Model | str, db: str | Path | Database | SchemaToolkit, *, embed: EmbedFn | None = None,
              max_steps: int = 24, max_rows: int = 30, timeout_s: float = 5.0,
              instructions: str = SQL_INSTRUCTIONS, extensions: Sequence[Extension] = (),
              **agent_options: Any) -> Agent:
    """An agent that answers questions over `db` with the four-phase TRUST-SQL protocol.

    Args:
        model: a `Model` or a model string.
        db: an SQLite path, a SQLAlchemy URL, a `Database`, or a ready `SchemaToolkit`.
        embed: texts -> normalised vectors for search_columns (lexical search without it).
        max_steps: most model turns.
        max_rows: rows shown per query result.
        timeout_s: time limit of each query.
        instructions: the system prompt (SQL_INSTRUCTIONS by default).
        extensions: more extensions (skills, notes); the SQL run recorder is always added.
        agent_options: passed on to `Agent` (settings, log, planner, ...).
    """
    kit = db if isinstance(db, SchemaToolkit) else SchemaToolkit(db, embed=embed, max_rows=max_rows,
                                                                 timeout_s=timeout_s)
    return Agent(model, tools=[kit], instructions=instructions, max_steps=max_steps,
                 extensions=[*extensions, SQLRunRecorder(kit)], **agent_options)
