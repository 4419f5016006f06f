"""`agentkit run "task"`: one task, non-interactively.

Prints the answer (or, with `--json`, the trajectory). Exit codes: 0 the run gave an answer,
1 it stopped without one (step limit) or the model failed, 2 configuration error (unknown model
backend, missing API key, unknown tool, ...) — with a one-line message, never a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.text import Text

from agentkit.cli.chat import (
    ALLOW_DIR_OPTION,
    DEFAULT_CHAT_TOOLS,
    DEFAULT_MAX_STEPS,
    MAX_TOKENS_OPTION,
    MCP_OPTION,
    MODEL_OPTION,
    SELECT_TOOLS_OPTION,
    SYSTEM_OPTION,
    TEMPERATURE_OPTION,
    TOOLS_OPTION,
    build_agent,
    connect_mcp,
    tool_selection,
)
from agentkit.cli.console import EventPrinter, follow, format_call, load_model
from agentkit.cli.memory_options import MEMORY_OPTION
from agentkit.models import DEFAULT_MODEL, GenerationSettings, ModelConfigError
from agentkit.runs.approval import policy_from_spec
from agentkit.tools import ToolDefinitionError

if TYPE_CHECKING:
    from agentkit.tools.mcp import MCPToolkit

EXIT_ANSWER, EXIT_NO_ANSWER, EXIT_CONFIG = 0, 1, 2


def run_task(
    task: str,
    *,
    model: str = DEFAULT_MODEL,
    tools: str = DEFAULT_CHAT_TOOLS,
    allow_dir: Path | None = None,
    system: str | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    log: Path | None = None,
    as_json: bool = False,
    quiet: bool = False,
    temperature: float | None = None,
    max_tokens: int | None = None,
    mcp: Sequence[str] = (),
    ask: str = "none",
    select_tools: int = 0,
    memory: Path | None = None,
) -> int:
    """Run `task` once and print the outcome; returns the exit code. Calls of the tools named by `ask`
    need approval, which a one-shot run cannot give: the run stops before them (exit 1). `select_tools`
    > 0 shows the model only that many tools, those nearest the task. `memory` is a learn run's folder
    whose artefacts are attached (`agentkit.memory.load`)."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    mcp_kits: list[MCPToolkit] = []
    try:
        return _run_task(task, err, mcp_kits, model=model, tools=tools, allow_dir=allow_dir, system=system,
                         max_steps=max_steps, log=log, as_json=as_json, quiet=quiet, temperature=temperature,
                         max_tokens=max_tokens, mcp=mcp, ask=ask, select_tools=select_tools, memory=memory)
    finally:
        for kit in mcp_kits:
            kit.close()


def _run_task(task: str, err: Console, mcp_kits: list[MCPToolkit], *, model: str, tools: str, allow_dir: Path | None,
              system: str | None, max_steps: int, log: Path | None, as_json: bool, quiet: bool,
              temperature: float | None, max_tokens: int | None, mcp: Sequence[str], ask: str,
              select_tools: int, memory: Path | None) -> int:
    try:
        if allow_dir is not None and not allow_dir.is_dir():
            raise ValueError(f"--allow-dir {allow_dir} is not a directory")
        extensions = tool_selection(select_tools)
        if memory is not None:
            from agentkit.memory.load import load_memory, memory_model

            extensions += load_memory(memory)
            model = memory_model(model, memory)
        mcp_kits.extend(connect_mcp(mcp))
        loaded = load_model(model, err)
        settings = GenerationSettings(temperature=temperature, max_tokens=max_tokens)
        agent = build_agent(loaded, tools=tools, allow_dir=allow_dir, extra_tools=mcp_kits, system=system,
                            max_steps=max_steps, log=log, settings=settings, approval=policy_from_spec(ask),
                            extensions=extensions)
    except (ModelConfigError, ToolDefinitionError, ValueError, ImportError, OSError, RuntimeError) as exc:
        err.print(Text(f"error: {exc}", style="red"))
        return EXIT_CONFIG

    # Tool activity goes to stderr so stdout holds only the answer (or the JSON).
    printer = EventPrinter(err, show_text=False) if not (quiet or as_json) else None
    try:
        result = follow(agent.stream(task), printer)
    except ModelConfigError as exc:
        err.print(Text(f"error: {exc}", style="red"))
        return EXIT_CONFIG
    except Exception as exc:  # a failing model call: say what failed, no traceback
        err.print(Text(f"error: the run failed: {type(exc).__name__}: {exc}", style="red"))
        return EXIT_NO_ANSWER
    finally:
        agent.close()
    if as_json:
        typer.echo(result.trajectory.model_dump_json(indent=2))
    elif result.answer is not None:
        typer.echo(result.answer)
    if result.stop_reason == "paused" and not quiet:  # nobody to ask here
        waiting = ", ".join(format_call(c.name, c.arguments, 80) for c in result.pending)
        err.print(Text(f"no answer: the run paused for approval of {waiting}; `agentkit run` cannot ask "
                       "(use `agentkit chat`, or resume the run from Python)", style="yellow"))
        return EXIT_NO_ANSWER
    if result.answer is None:
        if printer is None and not quiet:
            trajectory = result.trajectory
            err.print(Text(f"no answer: the run stopped by {trajectory.stop_reason} after "
                           f"{len(trajectory.turns)} model calls", style="yellow"))
        return EXIT_NO_ANSWER
    return EXIT_ANSWER


def register(app: typer.Typer) -> None:
    """Add `agentkit run`."""

    @app.command("run")
    def run(
        task: str = typer.Argument(..., help="The task or question"),
        model: str = MODEL_OPTION,
        tools: str = TOOLS_OPTION,
        allow_dir: Path | None = ALLOW_DIR_OPTION,
        system: str | None = SYSTEM_OPTION,
        max_steps: int = typer.Option(DEFAULT_MAX_STEPS, "--max-steps", min=1, help="Most model calls"),
        log: Path | None = typer.Option(None, "--log", help="Append the trajectory to this JSONL file"),
        as_json: bool = typer.Option(False, "--json", help="Print the trajectory as JSON instead of the answer"),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not show tool calls on stderr"),
        temperature: float | None = TEMPERATURE_OPTION,
        max_tokens: int | None = MAX_TOKENS_OPTION,
        mcp: list[str] | None = MCP_OPTION,
        ask: str = typer.Option("none", "--ask", help="Stop before calls of these tools (none, writes, all, or "
                                "names): a one-shot run cannot ask for approval"),
        select_tools: int = SELECT_TOOLS_OPTION,
        memory: Path | None = MEMORY_OPTION,
    ) -> None:
        """Run one task and print the answer (exit 0), or 1 without an answer, 2 on a configuration error."""
        raise typer.Exit(run_task(task, model=model, tools=tools, allow_dir=allow_dir, system=system,
                                  max_steps=max_steps, log=log, as_json=as_json, quiet=quiet,
                                  temperature=temperature, max_tokens=max_tokens, mcp=mcp or [], ask=ask,
                                  select_tools=select_tools, memory=memory))
