"""The SQL agent: `sql_agent(model, db)`, its model and the record of its runs (its prompts: `agentkit.sql.prompts`).

    agent = sql_agent(SQL_MODEL, "Chinook.sqlite")          # as `agentkit sql` answers: draft, 5 votes
    result = agent.run(sql_task_prompt("Which artist has the most albums?"))
    result.trajectory.records.get(SQL)  # final SQL, proposal, end of the propose turn, phase labels

    sql_agent("openai:gpt-4o-mini", "Chinook.sqlite", planner="react", schema="hidden")   # the TRUST-SQL recipe

By default the agent answers as `agentkit sql` does: the CREATE TABLEs are shown with the question, the query is
drafted in one completion first, five drafts vote by their results, and the loop repairs and confirms
(`agentkit.sql.draft`). With `planner="react", schema="hidden"` it follows TRUST-SQL's four phases and finds the
schema with its tools alone. The tools label each turn with its phase and `SQLRunRecorder` stores what training
needs (the end of the propose turn for Dual-Track) as the trajectory's `SQL` record (`agentkit.records`).
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
from agentkit.sql.prompts import (
    EVIDENCE_TEMPLATE,
    SQL_INSTRUCTIONS,
    SQL_INSTRUCTIONS_SHOWN,
    SQL_INSTRUCTIONS_SINGLE_SHOT,
    TASK_TEMPLATE,
    question_of,
    sql_task_prompt,
)
from agentkit.sql.rewards import final_sql, last_proposal, propose_end_turn
from agentkit.sql.toolkit import EmbedFn, SchemaToolkit
from agentkit.trajectory import Trajectory

SQL_MODEL = "local:qwen2.5-coder-1.5b-sql"
"""`agentkit sql`'s model: the embedded 1.5B with the default's tool LoRA trained further on the draft agent's own
verified SQL runs (`agentkit.models.embedded_adapters`); `local:default` keeps the tool LoRA, which calls tools
better (Why: docs/decisions.md#sql-rejection-sampling)."""


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


def sql_agent(model: Model | str, db: str | Path | Database | SchemaToolkit, *, planner: str | Any = "draft",
              schema: str | None = None, votes: int = 5, check_case: bool = True, embed: EmbedFn | None = None,
              max_steps: int = 8, max_rows: int = 30, timeout_s: float = 5.0, instructions: str | None = None,
              extensions: Sequence[Extension] = (), **agent_options: Any) -> Agent:
    """An agent that answers questions over `db` with SQL (see the module); ask it with `sql_task_prompt`.

    Args:
        model: a `Model` or a model string (`SQL_MODEL` is `agentkit sql`'s).
        db: an SQLite path, a SQLAlchemy URL, a `Database`, or a ready `SchemaToolkit` (used as it is).
        planner: "draft" (the query drafted first, `votes` drafts voting), "react", or a planner object.
        schema: what each run is shown with its question (`agentkit.sql.digest.SCHEMA_MODES`): "tables" (the
            CREATE TABLEs; the default with "draft"), "digest" (those the question likely needs and the values it
            names; the default otherwise), "full", or "hidden" (the tools alone find it).
        votes: with "draft", how many drafts vote by their results (1: the greedy draft alone).
        check_case: the toolkit's letter-case check (`SchemaToolkit(check_case=True)`), when `db` is not a toolkit.
        embed: texts -> normalised vectors for search_columns (lexical search without it).
        max_steps: most model turns of the loop.
        max_rows: rows shown per query result.
        timeout_s: time limit of each query.
        instructions: the system prompt (default: SQL_INSTRUCTIONS with the schema hidden, else
            SQL_INSTRUCTIONS_SHOWN).
        extensions: more extensions (experience, skills, notes); they run after the schema is shown, and the SQL
            run recorder is always added.
        agent_options: passed on to `Agent` (settings, log, ...).
    """
    from agentkit.sql.digest import SCHEMA_MODES, SchemaShown

    drafts = planner == "draft" or getattr(planner, "name", None) == "draft"
    if planner == "draft":
        from agentkit.sql.draft import SQLDraftPlanner

        planner = SQLDraftPlanner(votes=votes)
    schema = schema or ("tables" if drafts else "digest")
    if schema not in SCHEMA_MODES:
        raise ValueError(f"schema must be one of {', '.join(SCHEMA_MODES)}, not {schema!r}")
    kit = db if isinstance(db, SchemaToolkit) else SchemaToolkit(db, embed=embed, max_rows=max_rows,
                                                                 timeout_s=timeout_s, check_case=check_case)
    shown = [] if schema == "hidden" else [SchemaShown(kit, schema)]
    if instructions is None:
        instructions = SQL_INSTRUCTIONS if schema == "hidden" else SQL_INSTRUCTIONS_SHOWN
    return Agent(model, tools=[kit], instructions=instructions, max_steps=max_steps, planner=planner,
                 extensions=[*shown, *extensions, SQLRunRecorder(kit)], **agent_options)


__all__ = ["EVIDENCE_TEMPLATE", "SQL_INSTRUCTIONS", "SQL_INSTRUCTIONS_SHOWN", "SQL_INSTRUCTIONS_SINGLE_SHOT",
           "SQL_MODEL", "TASK_TEMPLATE", "SQLRunRecorder", "question_of", "sql_agent", "sql_record", "sql_task_prompt"]
