"""`agentkit notes`: list, show, search and remove notes of the mistake notebook, and learn new ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

PATH_HELP = "Notebook folder (or .json file); default $AGENTKIT_HOME/notes."


def _open(path: Path | None, threshold: float | None = None) -> Any:
    from agentkit.memory import default_notes_path

    try:
        from agentkit.memory.notebook import DEFAULT_THRESHOLD, MistakeNotebook

        return MistakeNotebook.open(path or default_notes_path(),
                                    threshold=DEFAULT_THRESHOLD if threshold is None else threshold)
    except (ValueError, RuntimeError, ImportError) as exc:  # ImportError: the memory extra is missing
        typer.echo(f"Cannot open the notebook: {exc}", err=True)
        raise typer.Exit(2) from None


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def register(app: typer.Typer) -> None:
    """Add the `notes` command group to the CLI."""
    notes = typer.Typer(help="The mistake notebook: notes learnt from failures, shown to later runs.",
                        no_args_is_help=True)
    app.add_typer(notes, name="notes")

    @notes.command("list")
    def list_notes(path: Path | None = typer.Option(None, "--path", help=PATH_HELP)) -> None:
        """List the notes: id, last update, subject."""
        import time

        book = _open(path)
        if not len(book):
            typer.echo(f"No notes in {book.file}.")
            return
        for note in sorted(book, key=lambda n: n.updated_at, reverse=True):
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(note.updated_at))
            typer.echo(f"{note.id}  {when}  {_short(note.subject, 90)}")
        typer.echo(f"{len(book)} note(s) in {book.file}")

    @notes.command("show")
    def show(note_id: str = typer.Argument(..., help="Note id (or a unique prefix)."),
             path: Path | None = typer.Option(None, "--path", help=PATH_HELP)) -> None:
        """Print one note as the agent sees it, and where it came from."""
        book = _open(path)
        try:
            note = book.get(note_id)
        except KeyError as exc:
            typer.echo(str(exc.args[0]), err=True)
            raise typer.Exit(1) from None
        typer.echo(f"{note.id}\n")
        typer.echo(note.render())
        typer.echo(f"\nlearnt from tasks: {', '.join(note.source_tasks) or '-'}")

    @notes.command("search")
    def search(text: str = typer.Argument(..., help="A task; notes are matched by their subject."),
               k: int = typer.Option(3, "--k", help="Most notes shown."),
               threshold: float | None = typer.Option(None, "--threshold", help="Least cosine (default 0.4)."),
               path: Path | None = typer.Option(None, "--path", help=PATH_HELP)) -> None:
        """The notes a run on TEXT would be shown, with their cosine similarity."""
        book = _open(path, threshold)
        found = book.search(text, k=k)
        if not found:
            typer.echo(f"No note reaches cosine {book.threshold} for this text.")
            return
        for note, score in found:
            typer.echo(f"{score:.3f}  {note.id}  {_short(note.subject, 90)}")

    @notes.command("rm")
    def remove(note_id: str = typer.Argument(..., help="Note id (or a unique prefix)."),
               path: Path | None = typer.Option(None, "--path", help=PATH_HELP)) -> None:
        """Remove a note."""
        book = _open(path)
        try:
            note = book.remove(note_id)
        except KeyError as exc:
            typer.echo(str(exc.args[0]), err=True)
            raise typer.Exit(1) from None
        typer.echo(f"Removed {note.id}: {_short(note.subject, 80)}")

    @notes.command("learn")
    def learn(
        tasks_file: Path = typer.Argument(..., help="JSONL tasks: {id, question|prompt, sql | expected}."),
        reward: str = typer.Option("sql", "--reward", help="sql: execution match on --db; exact: answer == expected."),
        model: str = typer.Option("local:default", "--model", "-m", help="The agent's model."),
        analyst: str | None = typer.Option(None, "--analyst", help="Model that writes notes (default: --model)."),
        db: str | None = typer.Option(None, "--db", help="Database for --reward sql (default: the shipped Chinook)."),
        steps: int = typer.Option(1, "--steps", help="Learn steps over the same batch."),
        batch: int = typer.Option(0, "--batch", help="Tasks per step (0: all of them)."),
        threshold: float | None = typer.Option(None, "--threshold",
                                               help="Least task–subject cosine for a note to be shown (default 0.4)."),
        max_steps: int = typer.Option(12, "--max-steps", help="Most model turns per run."),
        max_tokens: int = typer.Option(256, "--max-tokens", help="Most tokens per model reply."),
        path: Path | None = typer.Option(None, "--path", help=PATH_HELP),
        as_json: bool = typer.Option(False, "--json", help="Print the reports as JSON."),
    ) -> None:
        """Mistake Notebook Learning: answer, learn notes from failures, keep them only if they help."""
        import dataclasses

        from agentkit.models import resolve_model
        from agentkit.models.protocol import GenerationSettings, ModelConfigError

        if reward not in ("sql", "exact"):
            typer.echo("--reward must be sql or exact", err=True)
            raise typer.Exit(2)
        if not tasks_file.is_file():
            typer.echo(f"No task file at {tasks_file}", err=True)
            raise typer.Exit(2)
        settings = GenerationSettings(max_tokens=max_tokens)
        try:
            agent_model = resolve_model(model)
            analyst_model = resolve_model(analyst) if analyst else agent_model
        except ModelConfigError as exc:
            typer.echo(f"Model error: {exc}", err=True)
            raise typer.Exit(2) from None
        try:
            agent, reward_fn, tasks = (_sql_setup if reward == "sql" else _exact_setup)(
                tasks_file, agent_model, db, max_steps, settings)
        except (OSError, ValueError) as exc:
            typer.echo(f"Cannot load the tasks: {exc}", err=True)
            raise typer.Exit(2) from None
        book = _open(path, threshold)
        size = batch or len(tasks)
        for step in range(steps):
            start = (step * size) % len(tasks)
            chunk = (tasks + tasks)[start:start + size]
            report = book.learn(chunk, reward_fn, agent, analyst=analyst_model,
                                analyst_settings=GenerationSettings(max_tokens=max(512, max_tokens)))
            if as_json:
                data = {f.name: getattr(report, f.name) for f in dataclasses.fields(report) if f.name != "results"}
                typer.echo(json.dumps({"step": step + 1, **data, "success_before": report.success_before,
                                       "success_after": report.success_after}))
            else:
                typer.echo(f"step {step + 1}: {report.summary()}; success {report.success_before:.0%} → "
                           f"{report.success_after:.0%}")
                for reason in report.skipped:
                    typer.echo(f"  skipped: {reason}", err=True)
        if not as_json:
            typer.echo(f"{len(book)} note(s) in {book.file}")


def _sql_setup(tasks_file: Path, model: Any, db: str | None, max_steps: int,
               settings: Any) -> tuple[Any, Any, list[Any]]:
    """A fresh SQL agent per task (its tools are the episode's), success = execution match."""
    from agentkit.environments.sql import CHINOOK_DB, SQLEnvironment
    from agentkit.sql import sql_agent

    env = SQLEnvironment(db=db or CHINOOK_DB, tasks=tasks_file)
    episodes: dict[str, Any] = {}

    def agent_for(task: Any) -> Any:
        episodes[task.id] = env.reset(task)
        return sql_agent(model, episodes[task.id].toolkit, planner="react", schema="hidden", max_steps=max_steps,
                         settings=settings)

    def reward_fn(task: Any, trajectory: Any) -> float:
        episode = episodes.pop(task.id)
        try:
            return float(episode.score(trajectory)["execution"] == 1.0)
        finally:
            episode.close()

    return agent_for, reward_fn, env.tasks()


def _exact_setup(tasks_file: Path, model: Any, db: str | None, max_steps: int,
                 settings: Any) -> tuple[Any, Any, list[Any]]:
    """A plain agent; success = the answer equals the task's "expected" (or "answer"), ignoring case and spaces."""
    from agentkit import Agent
    from agentkit.memory.learn import as_tasks

    records = [json.loads(line) for line in tasks_file.read_text().splitlines() if line.strip()]
    tasks = as_tasks(records)
    for task in tasks:
        if "expected" not in task.data and "answer" not in task.data:
            raise ValueError(f"task {task.id} has no 'expected' answer for --reward exact")

    def norm(text: Any) -> str:
        return " ".join(str(text or "").lower().split()).strip(" .")

    def reward_fn(task: Any, trajectory: Any) -> float:
        return float(norm(trajectory.answer) == norm(task.data.get("expected", task.data.get("answer"))))

    return Agent(model, max_steps=max_steps, settings=settings), reward_fn, tasks
