"""`agentkit eval`: run a task set under one or more agent configurations and write a report.

    agentkit eval --env sql --model local:smollm2-135m --planner react --planner map-then-act --limit 10
    agentkit eval --env tooluse --tasks bfcl_simple.json --model openai:gpt-4o-mini
    agentkit eval --env textgame --game coin --model oracle

Repeating --planner compares configurations side by side; `recipe` (sql only) is the four-phase
TRUST-SQL recipe, `single-shot` (sql only) the naive baseline: one completion with no tools, its SQL
block executed (use it with `--schema full`, the whole schema in the prompt), and `draft` (sql only) the
agent that drafts the query in one completion first and repairs it in the loop (`agentkit.sql.draft`).
`--model oracle` replays each task's expected actions: the upper bound the harness allows, which validates
the reward code.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer

from agentkit.cli.memory_options import (
    CHECKS_OPTION,
    MEMORY_OPTION,
    NOTES_OPTION,
    PACING_OPTION,
    REPAIRS_OPTION,
    SKILLS_OPTION,
    learned_extensions,
    memory_model,
)

PLANNERS = ("react", "map-then-act", "recipe", "single-shot", "draft")
ENVS = ("sql", "tooluse", "textgame")

TOOL_INSTRUCTIONS = (
    "You are a careful assistant that completes tasks with the tools. Call the tools you need; when the "
    "task is done, reply briefly with the result."
)
SQL_INSTRUCTIONS_PLAIN = (
    "Answer the question about the database with the tools. When you know the SQL query that answers it, "
    "call confirm_answer with that query."
)


SCHEMA_HELP = ("sql: 'digest' shows each question the CREATE TABLEs it likely needs and the values it names; "
               "'tables' the CREATE TABLEs only (within a budget); 'full' every CREATE TABLE; 'hidden' makes the "
               "agent find the schema with the tools (the four-phase recipe).")


def load_environment(env: str, tasks: Path | None, *, db: Path | None = None, game: str = "coin",
                     seeds: int = 3, answers: Path | None = None, schema: str = "digest",
                     check_limit: bool = False, check_case: bool = False, check_count: bool = False) -> Any:
    """Build the environment named by `--env` (a clear error if its module or extra is missing)."""
    if env == "sql":
        try:
            from agentkit.environments.sql import SQLEnvironment
            from agentkit.sql.digest import SCHEMA_MODES
        except ImportError as exc:
            raise typer.BadParameter(f"the SQL environment is not available: {exc}") from exc
        if schema not in SCHEMA_MODES:
            return _bad(f"--schema must be one of {', '.join(SCHEMA_MODES)}, not {schema!r}")
        if tasks is None and db is not None:
            return _bad("--env sql with --db needs --tasks FILE")
        if tasks is None:
            return SQLEnvironment.chinook(schema=schema, check_limit=check_limit, check_case=check_case,
                                          check_count=check_count)
        return SQLEnvironment(db=db, tasks=tasks, schema=schema, check_limit=check_limit, check_case=check_case,
                              check_count=check_count)
    if env == "tooluse":
        from agentkit.environments.tooluse import ToolUseEnvironment

        return ToolUseEnvironment.sample() if tasks is None else ToolUseEnvironment.from_file(tasks, answers=answers)
    if env == "textgame":
        from agentkit.environments.textgame import GameUnavailable, TextGameEnvironment, check_available

        try:
            check_available()
        except GameUnavailable as exc:
            raise typer.BadParameter(str(exc)) from exc
        return TextGameEnvironment.from_file(tasks) if tasks else TextGameEnvironment(game, range(seeds))
    return _bad(f"unknown --env {env!r}; choose from {', '.join(ENVS)}")


def _bad(message: str) -> Any:
    raise typer.BadParameter(message)


def agent_factory(config: str, env: Any, model: Any, *, max_steps: int, settings: Any, explore_steps: int,
                  map_steps: int, skills: Any = None, notes: Any = None, learned: Sequence[Any] = (),
                  persist_priors: bool = True,
                  refresh_priors: bool = False, priors_cache: Any = None, votes: int = 1) -> Callable[[list[Any]], Any]:
    """How one configuration builds its agent from an episode's tools. One planner serves every episode,
    so exploration runs once per environment; priors persist (under `priors_cache`, default the agentkit
    home) unless `persist_priors` is False."""
    from agentkit.agent import Agent
    from agentkit.loop.planning import MapThenActPlanner

    is_sql = env.name.startswith("sql")
    extra: list[Any] = []
    instructions = TOOL_INSTRUCTIONS
    if is_sql:  # the environment's own prompt when episodes show the schema; else a plain one
        instructions = env.instructions if getattr(env, "schema", "hidden") != "hidden" else SQL_INSTRUCTIONS_PLAIN
    if is_sql:
        from agentkit.sql.recipe import SQL_INSTRUCTIONS, SQLRunRecorder

        extra.append(SQLRunRecorder())
        if config == "recipe":
            instructions = SQL_INSTRUCTIONS
    elif config in ("recipe", "single-shot"):
        raise typer.BadParameter(f"--planner {config} needs --env sql")
    if config == "single-shot":  # the baseline: one completion, no tools, its SQL block executed
        from agentkit.sql.recipe import SQL_INSTRUCTIONS_SINGLE_SHOT

        if getattr(env, "schema", "hidden") == "hidden":
            raise typer.BadParameter("--planner single-shot needs the schema shown (--schema full, tables or digest)")

        def single(tools: list[Any]) -> Any:
            return Agent(model, [], instructions=SQL_INSTRUCTIONS_SINGLE_SHOT, max_steps=1, settings=settings)

        return single

    planner: Any = "react"
    if config == "draft":
        if not is_sql:
            raise typer.BadParameter("--planner draft needs --env sql")
        from agentkit.sql.draft import SQLDraftPlanner

        planner = SQLDraftPlanner(votes=votes)
    if config == "map-then-act":
        planner = MapThenActPlanner(env, explore_steps=explore_steps, map_steps=map_steps,
                                    cache=priors_cache if persist_priors else False, refresh=refresh_priors)

    def build(tools: list[Any]) -> Any:
        return Agent(model, tools, instructions=instructions, planner=planner, max_steps=max_steps,
                     settings=settings, extensions=[*extra, *(e for e in (skills, notes) if e is not None), *learned])

    return build


def register(app: typer.Typer) -> None:
    """Add `agentkit eval`."""

    @app.command("eval")
    def eval_command(
        env: str = typer.Option("sql", "--env", help="Environment: sql, tooluse or textgame."),
        tasks: Path | None = typer.Option(None, "--tasks", help="Task file (sql: JSONL with gold SQL; tooluse: "
                                   "BFCL-style JSON/JSONL; textgame: JSON spec). Default: the shipped set."),
        model: str = typer.Option("local:default", "--model", help="Model string, or 'oracle'."),
        planner: list[str] = typer.Option(["react"], "--planner",
                                          help="react, map-then-act, or for sql recipe, single-shot or draft; "
                                          "repeat to compare."),
        memory: Path | None = MEMORY_OPTION,
        skills: Path | None = SKILLS_OPTION,
        notes: Path | None = NOTES_OPTION,
        pacing: Path | None = PACING_OPTION,
        checks: Path | None = CHECKS_OPTION,
        repairs: Path | None = REPAIRS_OPTION,
        concurrency: int = typer.Option(1, "--concurrency", min=1, help="Tasks run at once (threads; a local model "
                                         "gets as many llama.cpp slots)."),
        limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N tasks."),
        difficulty: str | None = typer.Option(None, "--difficulty", help="Only tasks of this difficulty (sql)."),
        schema: str = typer.Option("digest", "--schema", help=SCHEMA_HELP),
        check_limit: bool = typer.Option(False, "--check-limit", help="sql: the toolkit's optional static check "
                                         "of a LIMIT that cuts unordered rows (SchemaToolkit(check_limit=True))"),
        check_case: bool = typer.Option(False, "--check-case", help="sql: the toolkit's optional check of text "
                                        "compared by = that is also stored in another letter case "
                                        "(SchemaToolkit(check_case=True))"),
        check_count: bool = typer.Option(False, "--check-count", help="sql: the toolkit's optional check of a "
                                         "COUNT(*) after a LEFT JOIN that counts rows with no match as 1 "
                                         "(SchemaToolkit(check_count=True))"),
        max_steps: int = typer.Option(8, "--max-steps", min=1, help="Most act-loop model calls per task."),
        votes: int = typer.Option(1, "--votes", min=1, help="draft: drafts that vote by their results (1: greedy)."),
        max_tokens: int | None = typer.Option(None, "--max-tokens", help="Most tokens per model reply."),
        temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature."),
        explore_steps: int = typer.Option(3, "--explore-steps", min=0, help="map-then-act exploration budget."),
        map_steps: int = typer.Option(2, "--map-steps", min=1, help="map-then-act mapping budget."),
        db: Path | None = typer.Option(None, "--db", help="Database for --env sql with your own --tasks."),
        answers: Path | None = typer.Option(None, "--answers", help="BFCL possible-answer file (tooluse)."),
        game: str = typer.Option("coin", "--game", help="textgame: coin or cookingworld."),
        seeds: int = typer.Option(3, "--seeds", min=1, help="textgame: how many generated games."),
        refresh_priors: bool = typer.Option(False, "--refresh-priors",
                                            help="map-then-act: explore again even if priors are cached."),
        out: Path | None = typer.Option(None, "--out", help="Output folder (default eval-runs/ENV-TIME)."),
    ) -> None:
        """Evaluate agent configurations on a task set: results table (JSON, Markdown), trajectories, HTML."""
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
        from rich.table import Table

        from agentkit.evaluation import EvalConfig, evaluate, oracle_model, oracle_script_for
        from agentkit.evaluation.reports import write_report
        from agentkit.models import GenerationSettings, resolve_model

        console = Console()
        unknown = [p for p in planner if p not in PLANNERS]
        if unknown:
            raise typer.BadParameter(f"unknown --planner {', '.join(unknown)}; choose from {', '.join(PLANNERS)}")
        try:
            environment = load_environment(env, tasks, db=db, game=game, seeds=seeds, answers=answers, schema=schema,
                                           check_limit=check_limit, check_case=check_case, check_count=check_count)
        except (ValueError, OSError) as exc:  # bad task files, missing databases: say what is wrong
            raise typer.BadParameter(f"cannot load the {env} tasks: {exc}") from exc
        todo = environment.tasks()
        if difficulty:
            todo = [t for t in todo if str(t.data.get("difficulty", "")) == difficulty]
        if limit:
            todo = todo[:limit]
        if not todo:
            raise typer.BadParameter("no tasks left to run (check --difficulty / --limit)")
        attached = learned_extensions(memory, skills=skills, notes=notes, checks=checks, repairs=repairs, pacing=pacing)
        model = memory_model(model, memory)
        if model == "oracle":
            the_model: Any = oracle_model(todo, oracle_script_for(environment))
        else:
            with console.status(f"Loading model {model} …"):
                the_model = resolve_model(model, parallel=concurrency)
        settings = GenerationSettings(temperature=temperature, max_tokens=max_tokens)
        out_dir = out or Path("eval-runs") / f"{env}-{time.strftime('%Y%m%d-%H%M%S')}"
        out_dir.mkdir(parents=True, exist_ok=True)

        runs = []
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console) as progress:
            for config in planner:
                bar = progress.add_task(config, total=len(todo))

                def advance(_result: Any, bar: TaskID = bar) -> None:
                    progress.advance(bar)

                build = agent_factory(config, environment, the_model, max_steps=max_steps, settings=settings,
                                      explore_steps=explore_steps, map_steps=map_steps, learned=attached,
                                      persist_priors=model != "oracle",
                                      refresh_priors=refresh_priors, votes=votes)
                runs.append(evaluate(environment, EvalConfig(config, build), tasks=todo, concurrency=concurrency,
                                     log=out_dir / f"trajectories-{config}.jsonl",
                                     on_result=advance))
        paths = write_report(runs, out_dir, title=f"agentkit eval: {environment.name} · {model}")

        table = Table(title=f"{environment.name} · {model}")
        for head in ("config", "tasks", "success", "mean reward", "steps", "tokens", "wall s", "errors"):
            table.add_column(head)
        for r in runs:
            s = r.summary()
            table.add_row(s["config"], str(s["tasks"]), f"{s['success_rate']:.1%}", f"{s['mean_reward']:.3f}",
                          f"{s['mean_steps']:.1f}", f"{s['mean_tokens']:.0f}", f"{s['mean_wall_s']:.2f}",
                          str(s["errors"]))
        console.print(table)
        for kind, path in paths.items():
            console.print(f"{kind}: {path}")
        console.print(f"trajectories: {out_dir}/trajectories-*.jsonl")
