"""`agentkit learn`: the agent learns from its own runs on a train split and is measured on held-out tasks.

    agentkit learn --env sql --model local:default --budget 45m --out learn-runs/chinook
    agentkit learn --env sql --tasks q.jsonl --db shop.sqlite --method skills,notes --budget 15m --out runs/a
    agentkit learn --env sql --unseen-db clinic --budget 45m --out runs/b      # also measure on the clinic DB
    agentkit learn --out runs/b --resume ...                                    # continue a stopped run
    agentkit learn --from-runs chat.jsonl --db shop.sqlite --out runs/shop       # from rated runs, no gold

With `--from-runs LOG` there is no task file, no gold and no model: the runs of LOG that a person rated
(`/good`, `/bad [why]` in the chat, `agentkit.feedback.rate`, approval decisions) are learned from
(`agentkit.memory.from_runs`): good runs become worked examples (experience.json), bad runs with a reason
become notes.

The out folder holds the learned artefacts (skills/, notes/, experience.json, checks.json, repairs.json,
pacing.json, adapter/), every trajectory as
JSONL (trajectories/), report.html, learning_curve.png and summary.json. Use them right away:
`agentkit chat --model local:NAME --memory OUT` attaches what the run kept (`agentkit.memory.load`), the
adapter too when NAME is the model it trained.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from agentkit.cli.eval_cmd import SCHEMA_HELP


def unseen_environment(value: str | None, tasks: Path | None, schema: str = "digest") -> Any:
    """`--unseen-db`: "clinic" (the shipped second database and its questions) or a database file with
    `--unseen-tasks`."""
    if value is None:
        return None
    from agentkit.environments.sql import SQLEnvironment

    if value == "clinic":
        return SQLEnvironment.clinic(schema=schema)
    if tasks is None:
        raise typer.BadParameter("--unseen-db FILE needs --unseen-tasks FILE (its questions with gold SQL), "
                                 "or use --unseen-db clinic (shipped)")
    return SQLEnvironment(db=value, tasks=tasks, name=f"sql-{Path(value).stem}", schema=schema)


def learn_from_logs(logs: list[Path], out: Path, db: Path | None, method: str | None,
                    min_similarity: float | None = None) -> None:
    """`agentkit learn --from-runs LOG`: learn from the rated runs of the logs into `out` and say what was
    learned (see `agentkit.memory.from_runs`)."""
    from rich.console import Console

    from agentkit.memory.from_runs import METHODS, learn_from_runs

    methods = list(METHODS) if method is None else [m.strip() for m in method.split(",") if m.strip()]
    console = Console()
    try:
        summary = learn_from_runs(logs, out, db=db, methods=methods, min_similarity=min_similarity)
    except (ValueError, OSError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    except ImportError as exc:  # the embeddings and the notebook need the memory extra
        console.print(f"[red]error:[/red] learning from runs needs agentkit[memory]: {exc}")
        raise typer.Exit(1) from exc
    console.print(f"{summary.runs} runs: {summary.good} rated good, {summary.bad} rated bad, {summary.unrated} "
                  "not rated", markup=False)
    if "experience" in methods:
        console.print(f"experience: {len(summary.admitted)} examples admitted, {len(summary.forgotten)} forgotten "
                      f"(rated bad since), {summary.examples} in all", markup=False)
        for why, n in summary.not_admitted.items():
            console.print(f"  {n} good run{'s' if n != 1 else ''} not admitted: {why}", markup=False)
    if "notes" in methods:
        console.print(f"notes: {len(summary.notes)} written from bad runs with a reason", markup=False)
    console.print(f"use them: agentkit chat --memory {out}  (or agentkit sql ... --memory {out})", markup=False)


def register(app: typer.Typer) -> None:
    """Add `agentkit learn`."""

    @app.command("learn")
    def learn_command(
        env: str = typer.Option("sql", "--env", help="Environment: sql, tooluse or textgame."),
        tasks: Path | None = typer.Option(None, "--tasks", help="Task file (default: the shipped set)."),
        db: Path | None = typer.Option(None, "--db", help="Database for --env sql with your own --tasks; with "
                                       "--from-runs, the database the logged runs queried."),
        model: str = typer.Option("local:default", "--model", help="Model string; rl needs a local: model."),
        budget: str = typer.Option("45m", "--budget", help="Learning budget: 45m, 90s, 1.5h, 200ep or 45m,200ep."),
        method: str | None = typer.Option(None, "--method", help="Comma-separated: skills, notes, experience, checks, "
                                          "repairs, pacing, rl (run in the order given). Default: "
                                          "skills,notes,checks,pacing, then experience for --env sql, then rl for a "
                                          "local torch model (on llama.cpp, name rl to run it); with --from-runs: "
                                          "experience,notes."),
        out: Path = typer.Option(..., "--out", help="Run folder: artefacts, trajectories, report, state."),
        from_runs: list[Path] | None = typer.Option(None, "--from-runs", help="Learn from the rated runs of this "
                                                    "JSONL log instead (repeatable; no task file, no gold, no "
                                                    "model): good runs become worked examples, bad runs with a "
                                                    "reason notes. --db names the database of runs that did not "
                                                    "record theirs; --out may hold earlier artefacts."),
        seed: int = typer.Option(0, "--seed", help="Seeds the split, the train order and RL."),
        heldout: Path | None = typer.Option(None, "--heldout", help="A task file of held-out tasks (same --env "
                                            "and --db); default: a seeded share of --tasks."),
        heldout_fraction: float = typer.Option(0.3, "--heldout-fraction", help="Share of tasks held out."),
        validation: float = typer.Option(0.25, "--validation", min=0.0, max=0.9, help="Share of the train tasks "
                                         "no method learns from: a method is set aside when the agent with it "
                                         "solves fewer of them than without it, or no more for skills, notes and "
                                         "rl (0: no check)."),
        unseen_db: str | None = typer.Option(None, "--unseen-db", help="A database never learned on (sql): "
                                             "'clinic' (shipped) or a file with --unseen-tasks."),
        unseen_tasks: Path | None = typer.Option(None, "--unseen-tasks", help="Questions of --unseen-db."),
        max_steps: int = typer.Option(8, "--max-steps", min=1, help="Agent steps per episode."),
        max_tokens: int = typer.Option(512, "--max-tokens", min=16, help="Most tokens per model reply."),
        temperature: float = typer.Option(0.0, "--temperature", help="Sampling in the skills and notes runs (rl "
                                          "samples at its own temperature; evaluations are greedy)."),
        notes_threshold: float = typer.Option(0.4, "--notes-threshold", help="Note retrieval cosine "
                                               "(0.4; why: docs/decisions.md#notes)."),
        notes_analyst: str = typer.Option("environment", "--notes-analyst", help="Who writes the notes: "
                                          "'environment' (sql: a comparison of each failed query with the gold "
                                          "query; other environments: the model) or 'model'."),
        min_similarity: float | None = typer.Option(None, "--min-similarity", min=-1.0, max=1.0,
                                                    help="Worked examples (experience) need at least this question "
                                                         "cosine to be shown; saved in experience.json (default "
                                                         "0.8)."),
        hinted_retries: bool = typer.Option(False, "--hints/--no-hints", help="Experience (sql): play each train "
                                            "question a run failed once more with its gold query's shape as a "
                                            "hint; a right retry becomes a worked example (held-out runs never see "
                                            "a hint)."),
        resume: bool = typer.Option(False, "--resume", help="Continue the stopped run in --out."),
        schema: str = typer.Option("digest", "--schema", help=SCHEMA_HELP),
        concurrency: int = typer.Option(1, "--concurrency", min=1, help="Evaluation tasks run at once (a local "
                                        "model gets as many llama.cpp slots), skills episodes per step, "
                                        "notes-batch tasks at once."),
        planner: str = typer.Option("react", "--planner", help="How the agent acts in evaluations and memory "
                                    "runs: react, or draft (sql: the query drafted first, as `agentkit sql` "
                                    "does; show the schema with --schema tables)."),
        votes: int = typer.Option(5, "--votes", min=1, help="With --planner draft: drafts that vote by their "
                                  "results."),
    ) -> None:
        """Learn skills, notes, experience and/or a LoRA adapter from the agent's own runs; report held-out
        success. With --from-runs, learn experience and notes from runs people rated."""
        from rich.console import Console

        if from_runs:
            learn_from_logs(from_runs, out, db, method, min_similarity)
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from agentkit.cli.eval_cmd import load_environment
        from agentkit.models import resolve_model

        try:  # the learning loop lives in agentkit.training, which needs torch even for skills and notes
            from agentkit.training.learning import TABLE_HEADER, Budget, LearnEvent, learn
            from agentkit.training.learning.methods import rl_by_default, untrainable
        except ImportError as exc:
            raise typer.BadParameter(f"agentkit learn needs the train extra (pip install 'agentkit[train]'): "
                                     f"{exc}") from exc

        console = Console()
        methods = None if method is None else [m.strip() for m in method.split(",") if m.strip()]
        try:
            the_budget = Budget.parse(budget)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from exc
        if unseen_db is not None and env != "sql":
            raise typer.BadParameter("--unseen-db needs --env sql")
        if planner not in ("react", "draft"):
            raise typer.BadParameter(f"--planner is 'react' or 'draft', not {planner!r}")
        if planner == "draft" and env != "sql":
            raise typer.BadParameter("--planner draft needs --env sql")
        if notes_analyst not in ("environment", "model"):
            raise typer.BadParameter(f"--notes-analyst is 'environment' or 'model', not {notes_analyst!r}")
        try:
            environment = load_environment(env, tasks, db=db, schema=schema)
            held_env = load_environment(env, heldout, db=db, schema=schema) if heldout is not None else None
            unseen = unseen_environment(unseen_db, unseen_tasks, schema)
        except (ValueError, OSError) as exc:
            raise typer.BadParameter(f"cannot load the tasks: {exc}") from exc
        with console.status(f"Loading model {model} …"):
            the_model = resolve_model(model, parallel=concurrency)
        if methods is None and not rl_by_default(the_model):  # learn's default then leaves rl out: say so
            why = untrainable(the_model) or ("on llama.cpp, rl runs only when named (--method "
                                             "skills,notes,checks,pacing,rl): a GRPO step of this model takes about a "
                                             "minute of a CPU budget")
            console.print(f"rl left out: {why}; learning skills, notes, checks and pacing")

        columns = (TextColumn("[bold]{task.fields[phase]}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.description}"))
        with Progress(*columns, console=console) as progress:
            bars: dict[str, Any] = {}

            def show(event: LearnEvent) -> None:
                bar = bars.get(event.phase)
                if bar is None:
                    bar = bars[event.phase] = progress.add_task("", total=event.total, phase=event.phase)
                left = []
                if event.minutes_left is not None:
                    left.append(f"{event.minutes_left:.1f} min left")
                if event.episodes_left is not None:
                    left.append(f"{event.episodes_left} episodes left")
                text = event.message + (f" · {', '.join(left)}" if left else "")
                progress.update(bar, completed=event.done, total=event.total, description=text[:90])

            try:
                report = learn(environment, the_model, budget=the_budget, methods=methods, out=out, seed=seed,
                               heldout=held_env, heldout_fraction=heldout_fraction, validation=validation,
                               unseen=unseen, resume=resume, max_steps=max_steps, train_temperature=temperature,
                               max_tokens=max_tokens, notes_threshold=notes_threshold, concurrency=concurrency,
                               notes_analyst="model" if notes_analyst == "model" else "environment",
                               planner=planner, votes=votes, on_event=show, hinted_retries=hinted_retries,
                               experience_options=None if min_similarity is None else
                               {"min_similarity": min_similarity})
            except (ValueError, FileExistsError, FileNotFoundError) as exc:
                console.print(f"[red]error:[/red] {exc}")
                raise typer.Exit(1) from exc
        console.print(TABLE_HEADER)
        console.print(report.table_row())
        for c in report.costs:
            console.print(f"  {c.phase}: {c.minutes:.2f} min, {c.tokens} tokens, {c.episodes} episodes")
        for detail in report.details.values():
            if "set_aside" in detail:
                console.print(f"  {detail['set_aside']}")
        console.print(f"report: {out / 'report.html'} · summary: {out / 'summary.json'}")
        hints = [f"--skills {report.artefacts['skills']}" if "skills" in report.artefacts else "",
                 f"--notes {report.artefacts['notes']}" if "notes" in report.artefacts else "",
                 f"--checks {report.artefacts['checks']}" if "checks" in report.artefacts else "",
                 f"--repairs {report.artefacts['repairs']}" if "repairs" in report.artefacts else "",
                 f"--pacing {report.artefacts['pacing']}" if "pacing" in report.artefacts else "",
                 f"--model {model}+{report.artefacts['adapter']}" if "adapter" in report.artefacts else ""]
        console.print(f"use them: agentkit chat --model {model} --memory {out}")
        console.print("  (or one by one: " + " ".join(h for h in hints if h) + ")")
