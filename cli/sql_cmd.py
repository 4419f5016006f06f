"""`agentkit sql "question" --db PATH`: answer a question over an unknown database, each step shown live."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from agentkit.cli.memory_options import MEMORY_OPTION, learned_extensions, memory_model, note_planner

OBSERVATION_LINES = 12


def register(app: typer.Typer) -> None:
    """Add the `sql` command to the CLI."""

    @app.command("sql")
    def sql(
        question: str = typer.Argument(..., help="The question to answer with SQL."),
        db: str = typer.Option(..., "--db", help="SQLite file or SQLAlchemy URL (opened read-only)."),
        model: str | None = typer.Option(None, "--model", "-m", help="Model string, e.g. openai:gpt-4o-mini "
                                         "(default: local:qwen2.5-coder-1.5b-sql, the embedded 1.5B with its "
                                         "SQL-trained LoRA)."),
        evidence: str | None = typer.Option(None, "--evidence", help="Extra hint (BIRD-style evidence)."),
        max_steps: int = typer.Option(24, "--max-steps", help="Most model turns."),
        max_rows: int = typer.Option(30, "--max-rows", help="Rows shown per query."),
        timeout: float = typer.Option(5.0, "--timeout", help="Seconds allowed per query."),
        embed: bool = typer.Option(True, "--embed/--no-embed", help="Search columns by meaning (MiniLM)."),
        log: Path | None = typer.Option(None, "--log", help="Append the trajectory to this JSONL file."),
        planner: str = typer.Option("draft", "--planner", help="'draft': write the query in one completion, "
                                    "repair it while it fails, let drafts vote (agentkit.sql.draft); 'react': "
                                    "explore, query and confirm with the tools from the first step."),
        votes: int = typer.Option(5, "--votes", min=1, help="draft: drafts that vote by their results."),
        schema: str | None = typer.Option(None, "--schema", help="'digest': show the CREATE TABLEs the question "
                                          "likely needs and the values it names up front (react's default); "
                                          "'tables': the CREATE TABLEs only (draft's default); 'full': every "
                                          "CREATE TABLE; 'hidden': find the schema with the tools alone."),
        memory: Path | None = MEMORY_OPTION,
        check_limit: bool = typer.Option(False, "--check-limit", help="confirm_answer refuses, once per query, a "
                                         "LIMIT that cuts rows no ORDER BY ranks (arbitrary rows); the same query "
                                         "confirmed again runs."),
        check_case: bool = typer.Option(True, "--check-case/--no-check-case", help="run_query notes, and "
                                        "confirm_answer refuses once per query, text compared by = that the "
                                        "database also stores in another letter case; the same query confirmed "
                                        "again runs (on by default)."),
        check_count: bool = typer.Option(False, "--check-count/--no-check-count", help="run_query notes, and "
                                         "confirm_answer refuses once per query, a COUNT(*) after a LEFT JOIN that "
                                         "counts rows with no match as 1 (shown rewritten); the same query "
                                         "confirmed again runs."),
    ) -> None:
        """Answer QUESTION over the database: draft the query, repair it while it fails and confirm the one
        the drafts agree on (default); with --planner react, write, check and confirm it with the tools; with
        --schema hidden, the explore → propose → generate → confirm recipe."""
        from agentkit.events import ModelTurn, RunFinished, ToolFinished, ToolStarted
        from agentkit.models.protocol import ModelConfigError
        from agentkit.sql import SchemaToolkit, sql_agent, sql_task_prompt
        from agentkit.sql.digest import SCHEMA_MODES
        from agentkit.sql.recipe import SQL_MODEL

        model = model or SQL_MODEL
        if planner not in ("draft", "react"):
            raise typer.BadParameter(f"--planner must be draft or react, not {planner!r}")
        if schema is not None and schema not in SCHEMA_MODES:  # sql_agent picks the default for the planner
            raise typer.BadParameter(f"--schema must be one of {', '.join(SCHEMA_MODES)}, not {schema!r}")
        extensions = learned_extensions(memory)  # what a learn run kept, opened before the database
        note_planner(memory, planner)

        try:
            kit = SchemaToolkit(db, embed=_embedder() if embed else None, max_rows=max_rows, timeout_s=timeout,
                                check_limit=check_limit, check_case=check_case, check_count=check_count)
        except (OSError, ValueError) as exc:
            typer.echo(f"Cannot open the database: {exc}", err=True)
            raise typer.Exit(2) from None
        if embed and kit.embed is None:
            typer.echo("(column search is lexical: the embedding model is not available)", err=True)
        try:
            agent = sql_agent(memory_model(model, memory), kit, planner=planner, schema=schema, votes=votes,
                              max_steps=max_steps, log=log, extensions=extensions)
        except ModelConfigError as exc:
            typer.echo(f"Model error: {exc}", err=True)
            raise typer.Exit(2) from None
        phase = None
        result = None
        for event in agent.stream(sql_task_prompt(question, evidence)):
            if isinstance(event, ModelTurn):
                if event.turn.phase != phase:
                    phase = event.turn.phase
                    typer.echo(f"\n== {phase} ==")
                if event.turn.output.content.strip() and not event.turn.output.tool_calls:
                    typer.echo(event.turn.output.content.strip())
            elif isinstance(event, ToolStarted):
                typer.echo(f"> {event.call.name}({_args(event.call.arguments)})")
            elif isinstance(event, ToolFinished):
                typer.echo(_indent(event.result.content, error=event.result.is_error))
            elif isinstance(event, RunFinished):
                result = event.result
        agent.close()
        if result is None or kit.final is None:
            why = ("the step limit was reached" if result is not None and result.stop_reason == "max_steps"
                   else "the model stopped without calling confirm_answer")
            typer.echo(f"\nNo confirmed answer: {why}.", err=True)
            raise typer.Exit(1)
        typer.echo("\n== answer ==")
        typer.echo(kit.final.sql)
        typer.echo(kit.final.render())


def _embedder() -> Any:
    try:
        from agentkit.memory.embeddings import Embedder

        embedder = Embedder.default()
        embedder.embed(["warm up"])
        return embedder.embed
    except Exception:  # no model installed: search falls back to lexical and says so
        return None


def _args(arguments: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return text if len(text) <= 300 else text[:297] + "..."


def _indent(text: str, *, error: bool) -> str:
    lines = text.splitlines() or [""]
    shown = lines[:OBSERVATION_LINES]
    if len(lines) > OBSERVATION_LINES:
        shown.append(f"... ({len(lines) - OBSERVATION_LINES} more lines)")
    prefix = "  ! " if error else "  "
    return "\n".join(prefix + line for line in shown)
