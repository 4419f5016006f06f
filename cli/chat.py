"""`agentkit chat`: an interactive terminal chat with a tool-using agent.

The chat is built from parts other modules can extend:

- `build_agent(model, ..., extensions=[...])` makes the agent (skill libraries, notebooks, planners
  plug in as extensions);
- `builtin_commands()` builds a session's `/commands` from the explicit list at the end of this module
  (`@slash_command("name", "help")` only declares one), and `run_chat(..., commands={...})` adds more
  for one session;
- `run_chat(config, extensions=..., commands=...)` runs the loop; a command with more options
  (`--skills`, `--notes`, ...) can build its extensions and call it, as `agentkit.cli.chat_cmd` does.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentkit.agent import DEFAULT_INSTRUCTIONS, Agent, RunResult
from agentkit.cli.console import format_call, load_model
from agentkit.cli.own_agent import TeamPrinter
from agentkit.cli.slash import CommandHandler as CommandHandler
from agentkit.cli.slash import SlashCommand, commands_of, feedback_commands, slash_command
from agentkit.events import RunFinished
from agentkit.loop.extensions import Extension, Planner
from agentkit.loop.tracer import tracing_from_env
from agentkit.messages import Message, ToolCall, Usage
from agentkit.models import DEFAULT_MODEL, GenerationSettings, Model, ModelConfigError
from agentkit.models.cost import format_cost
from agentkit.records import NOTES
from agentkit.runs.approval import ApprovalPolicy, Decision, approve, deny, policy_from_spec
from agentkit.tools import Tool, ToolDefinitionError, Toolkit
from agentkit.tools.builtin import builtin_tools, parse_tool_names
from agentkit.trajectory import Trajectory, append_jsonl

if TYPE_CHECKING:
    from agentkit.tools.mcp import MCPToolkit

DEFAULT_CHAT_TOOLS = "calculator,time"
DEFAULT_MAX_STEPS = 10
DEFAULT_ASK = "writes"

# Options `agentkit chat` and `agentkit run` share.
MODEL_OPTION = typer.Option(DEFAULT_MODEL, "--model", "-m", help="openai:NAME, litellm:P/NAME, "
                             "vllm:URL/NAME, local:default, local:smollm2-135m, script:FILE.json")
TOOLS_OPTION = typer.Option(DEFAULT_CHAT_TOOLS, "--tools", "-t",
                             help="Built-in tools, comma-separated: calculator,time,read_file,http_get "
                             "('none' for no tools)")
ALLOW_DIR_OPTION = typer.Option(None, "--allow-dir", help="Directory read_file may read (enables it)")
SYSTEM_OPTION = typer.Option(None, "--system", help="System prompt (replaces the default)")
TEMPERATURE_OPTION = typer.Option(None, "--temperature", min=0, help="Sampling temperature (0: greedy)")
MAX_TOKENS_OPTION = typer.Option(None, "--max-tokens", min=1, help="Most tokens per model reply")
MCP_OPTION = typer.Option(None, "--mcp", help="Add an MCP server's tools: a command (\"python server.py\") or a "
                          "streamable-HTTP URL; repeatable (needs agentkit[mcp])")
SELECT_TOOLS_OPTION = typer.Option(0, "--select-tools", min=0, help="Show the model only the N tools nearest each "
                                   "request (0: all): fewer look-alikes to confuse; needs agentkit[memory]")
ASK_OPTION = typer.Option(DEFAULT_ASK, "--ask", help="Tools whose calls wait for your y/n/always: 'writes' (tools "
                          "not marked read-only), 'all', 'none', or comma-separated names")
OTEL_OPTION = typer.Option(False, "--otel", help="OpenTelemetry spans: OTLP to OTEL_EXPORTER_OTLP_ENDPOINT if set, "
                           "else printed to stderr (also AGENTKIT_OTEL=1)")
PROMPT = "you> "
_READLINE_PROMPT = "\001\x1b[1;32m\002you>\001\x1b[0m\002 "  # \001..\002 tell readline the codes take no room


def build_agent(
    model: Model | str,
    *,
    tools: str | Iterable[str] = DEFAULT_CHAT_TOOLS,
    allow_dir: str | Path | None = None,
    extra_tools: Iterable[Tool | Toolkit] = (),
    system: str | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    log: str | Path | None = None,
    extensions: Sequence[Extension] = (),
    planner: Planner | str = "react",
    settings: GenerationSettings | None = None,
    approval: ApprovalPolicy | None = None,
    tracing: bool | Any = None,
    check_answers: bool = False,
) -> Agent:
    """The chat's agent: built-in tools by name (read_file joins when `allow_dir` is given and no
    explicit list names it), extra tools, extensions, a planner, an approval policy and tracing;
    `check_answers` is the agent's option (an answer stating values no result gave is sent back once)."""
    names = parse_tool_names(tools)
    if allow_dir is not None and "read_file" not in names:
        names.append("read_file")
    return Agent(
        model,
        tools=[*builtin_tools(names, allow_dir=allow_dir), *extra_tools],
        instructions=system or DEFAULT_INSTRUCTIONS,
        extensions=extensions,
        planner=planner,
        max_steps=max_steps,
        log=log,
        settings=settings,
        approval=approval,
        tracing=tracing,
        check_answers=check_answers,
    )


@dataclass
class ChatConfig:
    """What `agentkit chat` was started with."""

    model: str = DEFAULT_MODEL
    tools: str = DEFAULT_CHAT_TOOLS
    allow_dir: Path | None = None
    system: str | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    log: Path | None = None
    planner: str = "react"
    temperature: float | None = None
    max_tokens: int | None = None
    ask: str = DEFAULT_ASK
    otel: bool = False

    def settings(self) -> GenerationSettings:
        """Sampling settings from the options (None leaves the backend's default)."""
        return GenerationSettings(temperature=self.temperature, max_tokens=self.max_tokens)


# -- slash commands ---------------------------------------------------------------------------------

# -- the session ------------------------------------------------------------------------------------


@dataclass
class ChatSession:
    """One conversation: the agent, the history passed to each run, and the trajectories so far.

    `agent_factory` rebuilds the agent for another model (`/model NAME`); `on_turn` hooks run after
    every finished turn (e.g. to persist the session); `state` is free room for extensions' commands
    (e.g. a skill library to list). A tool call that needs approval is put to the user through
    `read_answer` (y, n [reason], or always: approve this tool for the rest of the session).
    """

    agent_factory: Callable[[Model], Agent]
    model: Model
    model_spec: str
    console: Console
    commands: dict[str, SlashCommand] = field(default_factory=lambda: builtin_commands())
    history: list[Message] = field(default_factory=list)
    trajectories: list[Trajectory] = field(default_factory=list)
    on_turn: list[Callable[[ChatSession, RunResult], None]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    read_answer: Callable[[str], str] = input
    always_approved: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.agent = self.agent_factory(self.model)

    def ask(self, text: str) -> RunResult | None:
        """Run one user turn, streaming it; Ctrl-C interrupts it and leaves the history as it was."""
        printer = TeamPrinter(self.console)  # the runs of agents it calls or hands over to shown too
        events = self.agent.stream(text, history=list(self.history))
        result: RunResult | None = None
        try:
            while True:
                for event in events:
                    printer.handle(event)
                    if isinstance(event, RunFinished):
                        result = event.result
                if result is None or result.stop_reason != "paused":
                    break
                events = self.agent.resume_stream(result.state, self.decide(result.pending))
                result = None
        except KeyboardInterrupt:
            events.close()
            printer.finish()
            self.console.print(Text("[interrupted]", style="yellow"))
            return None
        except ModelConfigError as exc:
            printer.finish()
            self.console.print(Text(f"model configuration error: {exc}", style="red"))
            return None
        except Exception as exc:  # the session survives a failing model call; the user sees why
            printer.finish()
            self.console.print(Text(f"error: {type(exc).__name__}: {exc}", style="red"))
            return None
        if result is not None:
            self.history = list(result.trajectory.messages[1:])  # all but the system message
            self.trajectories.append(result.trajectory)
            for hook in self.on_turn:
                hook(self, result)
        return result

    def decide(self, pending: Sequence[ToolCall]) -> dict[str, Decision]:
        """Ask y/n/always for each pending call (tools approved with "always" are not asked again);
        the end of input denies what is left."""
        decisions: dict[str, Decision] = {}
        for call in pending:
            if call.name in self.always_approved:
                decisions[call.id] = approve()
                self.console.print(Text(f"✓ {format_call(call.name, call.arguments)} (always allowed)", style="dim"))
                continue
            while call.id not in decisions:
                try:
                    answer = self.read_answer(f"allow {format_call(call.name, call.arguments)}? [y/n/always] ")
                except EOFError:
                    decisions[call.id] = deny("no answer")
                    break
                word, _, reason = answer.strip().partition(" ")
                word = word.lower()
                if word in ("y", "yes"):
                    decisions[call.id] = approve()
                elif word in ("a", "always"):
                    self.always_approved.add(call.name)
                    decisions[call.id] = approve()
                elif word in ("n", "no"):
                    decisions[call.id] = deny(reason.strip() or None)
                else:
                    self.console.print(Text("answer y (yes), n (no, optionally with a reason) or always",
                                            style="yellow"))
        return decisions

    def command(self, line: str) -> bool:
        """Run a `/command`; True means the chat should end."""
        name, _, arg = line[1:].strip().partition(" ")
        cmd = self.commands.get(name.lower())
        if cmd is None:
            self.console.print(Text(f"unknown command /{name}; /help lists the commands", style="yellow"))
            return False
        return bool(cmd.handler(self, arg.strip()))

    def switch_model(self, spec: str) -> None:
        """Load another model and rebuild the agent for it; the history is kept."""
        model = load_model(spec, self.console)
        agent = self.agent_factory(model)
        self.agent.close()
        self.agent, self.model, self.model_spec = agent, model, spec

    def reset(self) -> None:
        """Start a new conversation (trajectories so far stay available to /save)."""
        self.history = []


@slash_command("help", "List the commands")
def _help(session: ChatSession, arg: str) -> None:
    table = Table(show_header=False, box=None, padding=(0, 2))
    for cmd in sorted(session.commands.values(), key=lambda c: c.name):
        table.add_row(f"/{cmd.name}" + (f" {cmd.usage}" if cmd.usage else ""), cmd.help)
    session.console.print(table)
    session.console.print(Text("Ctrl-C stops a reply; Ctrl-D or /exit leaves.", style="dim"))


@slash_command("tools", "List the agent's tools")
def _tools(session: ChatSession, arg: str) -> None:
    if not session.agent.tools:
        session.console.print("no tools")
        return
    table = Table("tool", "read-only", "description", box=None, padding=(0, 2))
    for t in session.agent.tools.values():
        table.add_row(t.name, "yes" if t.read_only else "no", t.description.splitlines()[0] if t.description else "")
    session.console.print(table)


@slash_command("usage", "Tokens and cost of each turn so far, and the total")
def _usage(session: ChatSession, arg: str) -> None:
    if not session.trajectories:
        session.console.print("no turns yet")
        return
    table = Table("turn", "model", "calls", "input tokens", "output tokens", "cost", box=None, padding=(0, 2))
    total = Usage()
    for i, trajectory in enumerate(session.trajectories, start=1):
        u = trajectory.usage
        total = total + u
        table.add_row(str(i), trajectory.model, str(u.calls), str(u.input_tokens), str(u.output_tokens),
                      format_cost(u.cost_usd))
    table.add_row("total", "", str(total.calls), str(total.input_tokens), str(total.output_tokens),
                  format_cost(total.cost_usd))
    session.console.print(table)
    if total.cost_usd is None:
        session.console.print(Text("cost n/a: no price is known for this model (LiteLLM's local price map)",
                                   style="dim"))


@slash_command("reset", "Forget the conversation so far")
def _reset(session: ChatSession, arg: str) -> None:
    turns = len(session.history)
    session.reset()
    session.console.print(Text(f"conversation reset ({turns} messages forgotten)", style="dim"))


@slash_command("save", "Append this session's trajectories to a JSONL file", usage="PATH")
def _save(session: ChatSession, arg: str) -> None:
    if not arg:
        session.console.print(Text("usage: /save PATH", style="yellow"))
        return
    if not session.trajectories:
        session.console.print(Text("nothing to save yet", style="yellow"))
        return
    path = Path(arg).expanduser()
    try:
        for trajectory in session.trajectories:
            append_jsonl(path, trajectory)
    except OSError as exc:
        session.console.print(Text(f"could not save to {path}: {exc}", style="red"))
        return
    session.console.print(Text(f"saved {len(session.trajectories)} trajectories to {path}", style="dim"))


@slash_command("model", "Show the model, or switch to another (history is kept)", usage="[NAME]")
def _model(session: ChatSession, arg: str) -> None:
    if not arg:
        session.console.print(f"model: {session.model_spec}", markup=False)
        return
    try:
        session.switch_model(arg)
    except (ModelConfigError, ImportError, OSError, ValueError) as exc:
        session.console.print(Text(f"cannot switch to {arg}: {exc}", style="red"))
        return
    session.console.print(Text(f"model: {session.model_spec}", style="dim"))


@slash_command("exit", "Leave the chat")
def _exit(session: ChatSession, arg: str) -> bool:
    return True



# -- the loop ---------------------------------------------------------------------------------------


def chat_loop(session: ChatSession, stdin: TextIO | None = None) -> None:
    """Read lines until /exit or end of input; a terminal gets a prompt, a pipe is read line by line."""
    stdin = stdin or sys.stdin
    interactive = stdin.isatty()
    console = session.console
    prompt = PROMPT
    if interactive:
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # inherited from a launcher: Ctrl-C must work here
            signal.signal(signal.SIGINT, signal.default_int_handler)
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401  (line editing and history for input())

            if console.is_terminal and console.color_system and not console.no_color:
                prompt = _READLINE_PROMPT
    session.read_answer = input if interactive else _piped_answer(stdin, console)
    while True:
        try:
            if interactive:
                line = input(prompt)  # input() itself, so readline knows the prompt when editing the line
            else:
                line = stdin.readline()
                if not line:
                    raise EOFError
                if line.strip():
                    console.print(Text(f"> {line.strip()}", style="dim"))
        except EOFError:
            console.print()
            break
        except KeyboardInterrupt:
            console.print(Text("\n(use /exit or Ctrl-D to leave)", style="dim"))
            continue
        line = line.strip()
        if not line:
            continue
        try:
            if line.startswith("/"):
                if session.command(line):
                    break
                continue
            session.ask(line)
        except KeyboardInterrupt:  # e.g. during /model loading; ask() handles its own
            console.print(Text("[interrupted]", style="yellow"))


def _piped_answer(stdin: TextIO, console: Console) -> Callable[[str], str]:
    """Read approval answers from a pipe, echoing question and answer."""

    def read(question: str) -> str:
        line = stdin.readline()
        if not line:
            raise EOFError
        console.print(Text(f"{question}{line.strip()}", style="dim"))
        return line

    return read


def run_chat(
    config: ChatConfig,
    *,
    extensions: Sequence[Extension] = (),
    extra_tools: Iterable[Tool | Toolkit] = (),
    commands: dict[str, SlashCommand] | None = None,
    history: Sequence[Message] = (),
    on_turn: Sequence[Callable[[ChatSession, RunResult], None]] = (),
    console: Console | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Load the model, build the agent and chat; returns the exit code (2: configuration error).

    `history` resumes an earlier conversation (no system message); `on_turn` hooks run after each
    finished turn with the session (whose `history` is then up to date) and the run's result.
    """
    console = console or Console(highlight=False, soft_wrap=True)
    extra_tools = list(extra_tools)
    tracer_provider: Any = None

    def factory(model: Model) -> Agent:
        return build_agent(model, tools=config.tools, allow_dir=config.allow_dir, extra_tools=extra_tools,
                           system=config.system, max_steps=config.max_steps, log=config.log,
                           extensions=extensions, planner=config.planner, settings=config.settings(),
                           approval=approval, tracing=tracer_provider or False)

    try:
        if config.allow_dir is not None and not Path(config.allow_dir).is_dir():
            raise ValueError(f"--allow-dir {config.allow_dir} is not a directory")
        approval = policy_from_spec(config.ask)
        if config.otel or tracing_from_env():
            from agentkit.tracing import exporting_provider

            tracer_provider = exporting_provider()
        model = load_model(config.model, console)
        commands = {**builtin_commands(), **(commands or {})}
        session = ChatSession(factory, model, config.model, console, commands=commands,
                              history=list(history), on_turn=list(on_turn))
    except (ModelConfigError, ToolDefinitionError, ValueError, ImportError, OSError) as exc:
        Console(stderr=True, highlight=False, soft_wrap=True).print(Text(f"error: {exc}", style="red"))
        return 2
    tools = ", ".join(session.agent.tools) or "none"
    console.print(Text(f"agentkit chat · model {config.model} · tools: {tools}", style="bold"))
    console.print(Text("/help for commands · Ctrl-C stops a reply · /exit or Ctrl-D leaves", style="dim"))
    try:
        chat_loop(session, stdin)
    finally:
        session.agent.close()
        if tracer_provider is not None:
            tracer_provider.shutdown()
    return 0


def connect_mcp(servers: Sequence[str]) -> list[MCPToolkit]:
    """Connect to the MCP servers named by `--mcp` (commands or URLs); on a failure, close the ones
    already started and raise (MCPConnectionError, or MissingExtraError without agentkit[mcp])."""
    from agentkit.tools.mcp import MCPToolkit

    kits: list[MCPToolkit] = []
    try:
        for server in servers:
            kits.append(MCPToolkit(server))
    except BaseException:
        for kit in kits:
            kit.close()
        raise
    return kits


def tool_selection(top_k: int) -> list[Extension]:
    """What `--select-tools N` attaches: a `ToolSelection` of the N nearest tools, or nothing for 0."""
    if top_k == 0:
        return []
    from agentkit.memory.tool_selection import ToolSelection

    return [ToolSelection(top_k)]


@slash_command("map", "Show the cognitive map of the last turn (with --planner map-then-act)")
def _map(session: ChatSession, arg: str) -> None:
    from agentkit.loop.planning import map_of

    cmap = map_of(session.trajectories[-1]) if session.trajectories else None
    session.console.print(cmap.render() if cmap else "no map yet (chat with --planner map-then-act)")


@slash_command("notes", "Show the notes the mistake notebook put into the last turn (with --notes)")
def _notes(session: ChatSession, arg: str) -> None:
    shown = session.trajectories[-1].records.get(NOTES) if session.trajectories else None
    if not shown or not shown.root:
        session.console.print("no notes were shown in the last turn")
        return
    for note in shown.root:
        session.console.print(f"- {note.subject} (similarity {note.score:.2f})")


def builtin_commands() -> dict[str, SlashCommand]:
    """The chat's own commands, built afresh for each session from this explicit list."""
    table = commands_of(_help, _tools, _reset, _usage, _save, _model, _exit, _map, _notes)
    table["quit"] = SlashCommand("quit", "Leave the chat", _exit)
    table.update(feedback_commands())
    return table
