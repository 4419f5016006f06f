"""Chat slash-commands: what a `/name` command is, the annotation that declares one, and the feedback commands.

`@slash_command(...)` only annotates its function; no table is filled at import. Each chat session
builds its commands from an explicit list (`agentkit.cli.chat.builtin_commands`, plus the commands a
command-line option adds, such as `/skills` for `--skills`).

`/good [why]` and `/bad [why]` (`feedback_commands`) rate the last run: the verdict is stored on its
trajectory (`agentkit.feedback.rate`) and the rated trajectory is appended to the chat's `--log`, where
`agentkit learn --from-runs LOG` finds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CommandHandler = Callable[[Any, str], bool | None]
"""Called with the chat session (`agentkit.cli.chat.ChatSession`, which builds on this module, so it is not
named here; a handler annotates its own first parameter) and the text after the command name; returns True
to end the chat."""


@dataclass(frozen=True)
class SlashCommand:
    """A `/name` command of the chat."""

    name: str
    help: str
    handler: CommandHandler
    usage: str = ""


def slash_command(name: str, help: str, usage: str = "") -> Callable[[CommandHandler], CommandHandler]:
    """Declare a chat command: `@slash_command("notes", "Show the mistake notebook")`.

    The function is returned unchanged but for a `slash` attribute holding its `SlashCommand`;
    `commands_of` turns a list of such functions into a session's command table.
    """

    def annotate(handler: CommandHandler) -> CommandHandler:
        handler.slash = SlashCommand(name, help, handler, usage)  # type: ignore[attr-defined]
        return handler

    return annotate


def commands_of(*handlers: CommandHandler) -> dict[str, SlashCommand]:
    """The command table of functions declared with `@slash_command`, by command name."""
    table: dict[str, SlashCommand] = {}
    for handler in handlers:
        command = getattr(handler, "slash", None)
        if not isinstance(command, SlashCommand):
            raise TypeError(f"{getattr(handler, '__name__', handler)!r} is not declared with @slash_command")
        table[command.name] = command
    return table


# -- feedback: /good and /bad rate the last run ------------------------------------------------------


@slash_command("good", "Rate the last reply good: a verified run `agentkit learn --from-runs LOG` learns from",
               usage="[WHY]")
def rate_good(session: Any, arg: str) -> None:
    """`/good [why]`: the last run did what was asked."""
    rate_last(session, good=True, why=arg)


@slash_command("bad", "Rate the last reply bad, saying why: never learned as an example; the reason becomes a note",
               usage="[WHY]")
def rate_bad(session: Any, arg: str) -> None:
    """`/bad [why]`: the last run did not do what was asked (and why)."""
    rate_last(session, good=False, why=arg)


def rate_last(session: Any, *, good: bool, why: str) -> None:
    """Store the verdict on the session's last trajectory (`agentkit.feedback.rate`) and append it, rated, to the
    chat's `--log` when there is one."""
    from rich.text import Text

    from agentkit.feedback import rate

    if not session.trajectories:
        session.console.print(Text("nothing to rate yet: ask something first", style="yellow"))
        return
    log = getattr(session.agent, "log", None)
    try:
        rate(session.trajectories[-1], good=good, why=why or None, log=log)
    except OSError as exc:
        session.console.print(Text(f"rated, but could not append to {log}: {exc}", style="red"))
        return
    where = (f"; appended to {log} (agentkit learn --from-runs {log})" if log is not None
             else "; start the chat with --log FILE (or /save PATH) to learn from ratings")
    session.console.print(Text(f"rated the last reply {'good' if good else 'bad'}{where}", style="dim"))


def feedback_commands() -> dict[str, SlashCommand]:
    """`/good` and `/bad`, for a chat session's command table."""
    return commands_of(rate_good, rate_bad)
