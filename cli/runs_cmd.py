"""`agentkit runs list|show|resume`: the durable runs kept in a run store (`Agent(store=DIR)`, agentkit.runs.durable).

`resume` needs the run's agent: `--agent FILE.py:NAME` names it (an `Agent` in that file, or a function of no
arguments returning one), else it is rebuilt from the run's record when the run was started with a model string
and importable tools (`agentkit.runs.approval.AgentRecord`). Exit codes as for `agentkit run`: 0 the run gave an
answer, 1 it stopped without one (or paused again), 2 a configuration error (no such run, no agent).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from agentkit.agent import Agent
from agentkit.cli.console import EventPrinter, follow, format_call
from agentkit.cli.own_agent import load_agent
from agentkit.home import agentkit_home
from agentkit.models import ModelConfigError
from agentkit.runs.approval import AgentRecord, Decision, RunState
from agentkit.runs.durable import DirectoryStore, RunSummary, UnknownRunError, summaries
from agentkit.tools import Tool, ToolDefinitionError

EXIT_ANSWER, EXIT_NO_ANSWER, EXIT_CONFIG = 0, 1, 2
STORE_HELP = "The run store directory (Agent(store=DIR)); default $AGENTKIT_HOME/runs."


def default_store() -> Path:
    """Where `agentkit runs` looks when no `--store` is given."""
    return agentkit_home() / "runs"


def agent_from_record(record: AgentRecord | None) -> Agent:
    """The agent a run's record describes: its model string, its tools imported from where they were defined.
    Raises ValueError when the record cannot rebuild it."""
    if record is None or record.model is None:
        raise ValueError("the run's agent was built from a Model object, not a model string: pass --agent "
                         "FILE.py:NAME")
    missing = [name for name, where in record.tools.items() if where is None]
    if missing:
        raise ValueError(f"the run's tools {', '.join(missing)} cannot be imported (defined in a function or a "
                         "script): pass --agent FILE.py:NAME")
    tools = [_import_tool(name, where) for name, where in record.tools.items() if where is not None]
    return Agent(record.model, tools=tools, max_steps=record.max_steps)


def _import_tool(name: str, where: str) -> Tool:
    module_name, _, qualname = where.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import the tool {name} from {module_name}: {exc}; pass --agent FILE.py:NAME") \
            from None
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if not isinstance(found, Tool) and callable(found):
        found = Tool(found)
    if not isinstance(found, Tool) or found.name != name:
        raise ValueError(f"{where} is not the tool {name} any more; pass --agent FILE.py:NAME")
    return found


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds)) if seconds else "-"


def _load(store: DirectoryStore, run_id: str, err: Console) -> RunState:
    try:
        return store.load(run_id)
    except (UnknownRunError, ValueError) as exc:
        err.print(Text(f"error: {exc.args[0] if exc.args else exc}", style="red"))
        raise typer.Exit(EXIT_CONFIG) from None


def show_state(state: RunState) -> list[str]:
    """The lines `agentkit runs show` prints about a run."""
    s, t = RunSummary.of(state), state.trajectory
    lines = [f"run      {s.run_id}", f"status   {s.status}" + (f" ({t.stop_reason})" if s.status == "finished" else ""),
             f"task     {_short(s.task, 200)}", f"model    {s.model}", f"steps    {s.steps}",
             f"saved    {_when(s.updated_at)}"]
    if state.agent is not None:
        tools = ", ".join(f"{n} ({w})" if w else n for n, w in state.agent.tools.items()) or "-"
        lines += [f"agent    model {state.agent.model or '(a Model object)'}; tools {tools}"]
    lines.append("")
    for m in t.messages:
        if m.role == "assistant" and m.tool_calls:
            lines += [f"assistant → {format_call(c.name, c.arguments, 100)}  [{c.id}]" for c in m.tool_calls]
        elif m.role != "system":
            lines.append(f"{m.role}{' (error)' if m.is_error else ''}: {_short(m.content, 160)}")
    lines += [f"in flight: {format_call(c.name, c.arguments, 100)}  [{c.id}]" for c in state.in_flight]
    lines += [f"returned:  {_short(m.content, 100)}  [{m.tool_call_id}]" for m in state.finished]
    lines += [f"waiting for approval: {format_call(c.name, c.arguments, 100)}  [{c.id}]" for c in state.pending]
    if s.status == "finished":
        lines.append(f"answer: {t.answer if t.answer is not None else '(none)'}")
    return lines


def resume_run(run_id: str, *, store: Path | None = None, agent_spec: str | None = None, approve: bool = False,
               deny: bool = False, quiet: bool = False) -> int:
    """Resume a stored run and print its answer; returns the exit code (see the module docstring)."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    directory = DirectoryStore(store or default_store())
    state = _load(directory, run_id, err)
    decisions: dict[str, Decision | bool] | None = None
    if state.status == "paused":
        if approve == deny:
            waiting = ", ".join(f"{format_call(c.name, c.arguments, 80)} [{c.id}]" for c in state.pending)
            err.print(Text(f"error: the run waits for approval of {waiting}: pass --approve or --deny", style="red"))
            return EXIT_CONFIG
        decisions = {c.id: approve for c in state.pending}
    try:
        agent = load_agent(agent_spec) if agent_spec else agent_from_record(state.agent)
    except (ValueError, ModelConfigError, ToolDefinitionError, ImportError, OSError) as exc:
        err.print(Text(f"error: {exc}", style="red"))
        return EXIT_CONFIG
    if not (isinstance(agent.store, DirectoryStore) and agent.store.path.resolve() == directory.path.resolve()):
        agent = copy.copy(agent)  # checkpoints go where the run is kept
        agent.store = directory
    printer = EventPrinter(err, show_text=False) if not quiet else None
    try:
        result = follow(agent.resume_stream(state, decisions), printer)
    except ModelConfigError as exc:
        err.print(Text(f"error: {exc}", style="red"))
        return EXIT_CONFIG
    except Exception as exc:  # a failing model call: the run stays resumable
        err.print(Text(f"error: the run failed: {type(exc).__name__}: {exc} (it can be resumed again)", style="red"))
        return EXIT_NO_ANSWER
    finally:
        agent.close()
    if result.answer is not None:
        typer.echo(result.answer)
    if result.stop_reason == "paused":
        err.print(Text(f"paused again: resume with `agentkit runs resume {run_id} --approve` (or --deny)",
                       style="yellow"))
        return EXIT_NO_ANSWER
    return EXIT_ANSWER if result.answer is not None else EXIT_NO_ANSWER


def register(app: typer.Typer) -> None:
    """Add the `runs` command group."""
    runs = typer.Typer(help="Durable runs kept in a run store: list them, show one, resume one.",
                       no_args_is_help=True)
    app.add_typer(runs, name="runs")

    @runs.command("list")
    def list_runs(store: Path | None = typer.Option(None, "--store", help=STORE_HELP),
                  status: str | None = typer.Option(None, "--status", help="Only runs that are running, paused "
                                                    "or finished")) -> None:
        """List the runs, latest saved first: id, status, steps, when saved, task."""
        directory = DirectoryStore(store or default_store())
        shown = 0
        for item in summaries(directory):
            if isinstance(item, tuple):
                typer.echo(f"{item[0]}  unreadable: {_short(item[1], 100)}")
                continue
            if status is not None and item.status != status:
                continue
            shown += 1
            flight = f", {item.in_flight} in flight" if item.in_flight else ""
            caller = f"  (agent call of {item.parent})" if item.parent else ""
            typer.echo(f"{item.run_id}  {item.status:<8}  {item.steps:>3} steps{flight}  {_when(item.updated_at)}  "
                       f"{_short(item.task, 70)}{caller}")
        typer.echo(f"{shown} run(s) in {directory.path}")

    @runs.command("show")
    def show(run_id: str = typer.Argument(..., help="The run's id (its trajectory's id)."),
             store: Path | None = typer.Option(None, "--store", help=STORE_HELP),
             as_json: bool = typer.Option(False, "--json", help="Print the saved state as JSON")) -> None:
        """Print one run: where it stands, its conversation, the calls in flight or waiting."""
        state = _load(DirectoryStore(store or default_store()), run_id, Console(stderr=True, highlight=False))
        if as_json:
            typer.echo(state.model_dump_json(indent=2))
            return
        for line in show_state(state):
            typer.echo(line)

    @runs.command("resume")
    def resume(run_id: str = typer.Argument(..., help="The run's id (its trajectory's id)."),
               store: Path | None = typer.Option(None, "--store", help=STORE_HELP),
               agent: str | None = typer.Option(None, "--agent", help="FILE.py:NAME, the run's agent (default: "
                                                "rebuilt from the run's model string and tools)"),
               approve: bool = typer.Option(False, "--approve", help="Approve every call a paused run waits for"),
               deny: bool = typer.Option(False, "--deny", help="Deny every call a paused run waits for"),
               quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not show tool calls on stderr")) -> None:
        """Continue a run from its last checkpoint (a finished run prints its answer, nothing runs again)."""
        raise typer.Exit(resume_run(run_id, store=store, agent_spec=agent, approve=approve, deny=deny, quiet=quiet))
