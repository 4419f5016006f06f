"""Chat slash-commands: what a `/name` command is, and the annotation that declares one.

`@slash_command(...)` only annotates its function; no table is filled at import. Each chat session
builds its commands from an explicit list (`agentkit.cli.chat.builtin_commands`, plus the commands a
command-line option adds, such as `/skills` for `--skills`).
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
