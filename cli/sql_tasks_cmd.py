"""`agentkit sql-tasks OUT`: build the generated SQL databases and their train / dev / test task files."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add the `sql-tasks` command to the CLI."""

    @app.command("sql-tasks")
    def sql_tasks(
        out: Path = typer.Argument(Path("bench-out/sqlgen"), help="Folder to write the databases and task files to."),
        split: list[str] = typer.Option(["train", "dev", "test"], "--split", help="Splits to build (repeatable)."),
    ) -> None:
        """Write OUT/database/DB/DB.sqlite and OUT/{train,dev,test}.jsonl (checked against the frozen
        manifest); evaluate with `agentkit eval --env sql --tasks OUT/dev.jsonl`."""
        from agentkit.sql.taskgen import SPLITS, FrozenMismatch, build_tasks

        bad = [s for s in split if s not in SPLITS]
        if bad:
            raise typer.BadParameter(f"unknown --split {', '.join(bad)}; choose from {', '.join(SPLITS)}")
        try:
            manifest = build_tasks(out, splits=split)
        except FrozenMismatch as exc:
            typer.echo(f"Refusing to write: {exc}", err=True)
            raise typer.Exit(1) from None
        for name in split:
            dbs = [d for d, e in manifest["databases"].items() if e["split"] == name]
            questions = sum(manifest["databases"][d]["questions"] for d in dbs)
            typer.echo(f"{name}: {len(dbs)} databases, {questions} questions -> {out / (name + '.jsonl')}")
