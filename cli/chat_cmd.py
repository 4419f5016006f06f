"""The `agentkit chat` command: its options, turned into a chat session (`register(app)` adds it to the app).

- `agentkit chat [OPTIONS]` builds a `ChatConfig` and, from `--memory` (or `--skills`, `--notes`, ...),
  `--select-tools` and `--session`, the extensions, commands, history and per-turn hooks
  (`memory_and_skills`), then runs `agentkit.cli.chat.run_chat`;
- `agentkit chat --agent FILE.py:NAME` chats with the agent a file builds (`chat_with_agent_file`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import typer
from rich.console import Console
from rich.text import Text

from agentkit.agent import RunResult
from agentkit.cli.chat import (
    ALLOW_DIR_OPTION,
    ASK_OPTION,
    DEFAULT_MAX_STEPS,
    MAX_TOKENS_OPTION,
    MCP_OPTION,
    MODEL_OPTION,
    OTEL_OPTION,
    SELECT_TOOLS_OPTION,
    SYSTEM_OPTION,
    TEMPERATURE_OPTION,
    TOOLS_OPTION,
    ChatConfig,
    ChatSession,
    builtin_commands,
    chat_loop,
    connect_mcp,
    run_chat,
    tool_selection,
)
from agentkit.cli.memory_options import (
    CHECKS_OPTION,
    MEMORY_OPTION,
    PACING_OPTION,
    REPAIRS_OPTION,
    alias_option,
    memory_model,
    memory_paths,
    open_memory,
)
from agentkit.cli.own_agent import load_agent
from agentkit.cli.slash import SlashCommand
from agentkit.loop.extensions import Extension
from agentkit.messages import Message
from agentkit.trajectory import append_jsonl


def register(app: typer.Typer) -> None:
    """Add `agentkit chat`."""

    @app.command()
    def chat(
        ctx: typer.Context,
        model: str = MODEL_OPTION,
        tools: str = TOOLS_OPTION,
        allow_dir: Path | None = ALLOW_DIR_OPTION,
        system: str | None = SYSTEM_OPTION,
        max_steps: int = typer.Option(DEFAULT_MAX_STEPS, "--max-steps", min=1, help="Model calls per turn"),
        log: Path | None = typer.Option(None, "--log", help="Append every turn's trajectory to this JSONL file"),
        temperature: float | None = TEMPERATURE_OPTION,
        max_tokens: int | None = MAX_TOKENS_OPTION,
        planner: str = typer.Option("react", "--planner", help="react or map-then-act (/map shows the map)"),
        ask: str = ASK_OPTION,
        otel: bool = OTEL_OPTION,
        memory: Path | None = MEMORY_OPTION,
        skills: Path | None = alias_option("skills", "Use and grow the skill library in this folder"),
        notes: Path | None = alias_option("notes", "Show relevant notes of the mistake notebook in this folder"),
        pacing: Path | None = PACING_OPTION,
        repairs: Path | None = REPAIRS_OPTION,
        checks: Path | None = CHECKS_OPTION,
        session: str | None = typer.Option(None, "--session", help="Save the conversation under NAME and resume "
                                           "it next time"),
        mcp: list[str] | None = MCP_OPTION,
        select_tools: int = SELECT_TOOLS_OPTION,
        agent: str | None = typer.Option(None, "--agent", help="Chat with your own agent: FILE.py:NAME, an Agent "
                                         "(or a function returning one) the file defines, as it builds it"),
    ) -> None:
        """Chat with a tool-using agent in the terminal (offline by default, on the embedded model)."""
        if agent is not None:  # the options that build an agent are not for it
            given = [p.opts[0] for p in ctx.command.params if p.name not in ("agent", "log")
                     and getattr(ctx.get_parameter_source(p.name or ""), "name", "DEFAULT") != "DEFAULT"]
            raise typer.Exit(chat_with_agent_file(agent, log=log, unused=given))
        model = memory_model(model, memory)
        config = ChatConfig(model=model, tools=tools, allow_dir=allow_dir, system=system, max_steps=max_steps,
                            log=log, planner=planner, temperature=temperature, max_tokens=max_tokens, ask=ask,
                            otel=otel)
        try:
            extensions, commands, history, on_turn = memory_and_skills(skills=skills, notes=notes, session=session,
                                                                       model=model, pacing=pacing,
                                                                       repairs=repairs, checks=checks,
                                                                       select_tools=select_tools, memory=memory)
            mcp_kits = connect_mcp(mcp or [])
        except (ValueError, OSError, ImportError, RuntimeError) as exc:
            Console(stderr=True, highlight=False).print(Text(f"error: {exc}", style="red"))
            raise typer.Exit(2) from None
        try:
            code = run_chat(config, extensions=extensions, extra_tools=mcp_kits, commands=commands, history=history,
                            on_turn=on_turn)
        finally:
            for kit in mcp_kits:
                kit.close()
        raise typer.Exit(code)


def chat_with_agent_file(spec: str, *, log: Path | None = None, unused: Sequence[str] = (),
                         stdin: TextIO | None = None) -> int:
    """`agentkit chat --agent FILE.py:NAME`: chat with the agent the file builds (see agentkit.cli.own_agent);
    `log` gets each finished turn's trajectory. The options that build an agent (`unused`) are an error with it."""
    error = Console(stderr=True, highlight=False, soft_wrap=True)
    if unused:
        error.print(Text(f"error: --agent uses the agent as {spec} builds it; drop {', '.join(unused)}", style="red"))
        return 2
    try:
        agent = load_agent(spec)
    except ValueError as exc:
        error.print(Text(f"error: {exc}", style="red"))
        return 2
    console = Console(highlight=False, soft_wrap=True)
    hooks = [] if log is None else [lambda session, result: append_jsonl(log, result.trajectory)]
    commands = {k: v for k, v in builtin_commands().items() if k != "model"}  # the file chose the model
    session = ChatSession(lambda model: agent, agent.model, spec, console, commands=commands, on_turn=hooks)
    console.print(Text(f"agentkit chat · agent {agent.name} from {spec} · tools: {', '.join(agent.tools) or 'none'}",
                       style="bold"))
    try:
        chat_loop(session, stdin)
    finally:
        agent.close()
    return 0


def memory_and_skills(
    *, skills: Path | None, notes: Path | None, session: str | None, model: str, pacing: Path | None = None,
    repairs: Path | None = None, checks: Path | None = None, select_tools: int = 0, memory: Path | None = None,
) -> tuple[list[Extension], dict[str, SlashCommand], list[Message], list[Callable[[ChatSession, RunResult], None]]]:
    """The extensions, extra commands, resumed history and per-turn hooks that `--memory` (and its aliases
    `--skills`, `--notes`, `--checks`, `--repairs`, `--pacing`), `--select-tools` and `--session` ask for; a
    skill library also gets its /skills command."""
    extensions: list[Extension] = tool_selection(select_tools)
    commands: dict[str, SlashCommand] = {}
    history: list[Message] = []
    on_turn: list[Callable[[ChatSession, RunResult], None]] = []
    learned = memory_paths(memory, skills=skills, notes=notes, checks=checks, repairs=repairs, pacing=pacing)
    if "skills" in learned:
        from agentkit.cli.skills_cmd import chat_commands, open_library

        library = open_library(learned.pop("skills")[0])
        extensions.append(library)
        commands.update(chat_commands(library))
    extensions += open_memory(learned)
    if session is not None:
        from agentkit.memory.sessions import chat_persistence

        history, save_turn = chat_persistence(session, model)
        on_turn.append(save_turn)
    return extensions, commands, history, on_turn
