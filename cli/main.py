"""The `agentkit` command. Each command group lives in its own module with a `register(app)`."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="agentkit",
    help="Tool-using LLM agents that improve with use, and the RL stack that trains them.",
    no_args_is_help=True,
    add_completion=False,
)

COMMAND_MODULES = (
    "chat_cmd", "run_cmd", "sql_cmd", "eval_cmd", "train_cmd", "learn_cmd", "skills_cmd", "notes_cmd", "serve_cmd",
    "mcp_cmd", "sql_tasks_cmd", "runs_cmd",
)

for _name in COMMAND_MODULES:
    importlib.import_module(f"agentkit.cli.{_name}").register(app)


if __name__ == "__main__":  # pragma: no cover
    app()
