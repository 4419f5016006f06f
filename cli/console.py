"""Rich rendering of agent events for the terminal, shared by the CLI commands.

`EventPrinter` streams model text as it arrives (hiding text-protocol tool-call markup, which is
shown as a tool line instead), prints each tool call and its result as dim lines, context that
extensions add, phase changes, and how a run ended. A call the model wrote but that could not be read
is one quiet line (`UNREADABLE_CALL`); what was wrong with it stays in the trajectory and the debug log.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from agentkit.events import (
    ContextAdded,
    Event,
    ModelText,
    ModelTurn,
    PhaseStarted,
    RunFinished,
    ToolFinished,
    ToolStarted,
)
from agentkit.models import Model, resolve_model

UNREADABLE_CALL = "· a tool call could not be read; the model was asked to write it again"
log = logging.getLogger(__name__)
_CALL_MARKUP = re.compile(r"<\s*/?\s*(?:tool|function)[_\- ]?call", re.I)
_HOLD_BACK = 16  # characters kept back while they might be the start of "<tool_call>"
_BARE_CALL_START = ("{", "```", "[{")  # a reply that starts so is held until the turn says whether it was a call


def short(value: Any, limit: int) -> str:
    """One line of at most `limit` characters."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_call(name: str, arguments: dict[str, Any], limit: int = 160) -> str:
    """`name(a=1, b='x')`, shortened to `limit` characters."""
    args = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return short(f"{name}({args})", limit)


if TYPE_CHECKING:
    from agentkit.results import RunResult


def follow(events: Iterable[Any], printer: EventPrinter | None) -> RunResult:
    """Print a run's events as they come (`printer`; None: print nothing) and return its result, the one of its
    `RunFinished` event. What the run raises is raised here."""
    result: RunResult | None = None
    for event in events:
        if printer is not None:
            printer.handle(event)
        if isinstance(event, RunFinished):
            result = event.result
    if result is None:
        raise RuntimeError("the run ended without a result")
    return result


class EventPrinter:
    """Prints the events of one agent run as they happen.

    Args:
        console: where to print.
        show_text: stream the model's text (off when only tool activity should be shown).
        result_chars: how much of each tool result to show.
    """

    def __init__(self, console: Console, *, show_text: bool = True, result_chars: int = 300) -> None:
        self.console = console
        self.show_text = show_text
        self.result_chars = result_chars
        self._turn_text = ""
        self._shown = 0
        self._hidden = False
        self._line_open = False

    def handle(self, event: Event) -> None:
        """Render one event."""
        if isinstance(event, ModelText):
            self._text(event.text)
        elif isinstance(event, ModelTurn):
            self._end_turn(event)
        elif isinstance(event, ToolStarted):
            self._line(Text(f"⚙ {format_call(event.call.name, event.call.arguments)}", style="cyan dim"))
        elif isinstance(event, ToolFinished):
            style = "red" if event.result.is_error else "dim"
            body = short(event.result.content, self.result_chars) or "(empty)"
            self._line(Text(f"  ↳ {body}  ({event.duration_s:.2f} s)", style=style))
        elif isinstance(event, ContextAdded):
            self._line(Text(f"+ {event.source}: {short(event.title, 100)}", style="magenta dim"))
        elif isinstance(event, PhaseStarted):
            if event.phase != "act":
                self._line(Text(f"… {event.phase}", style="dim"))
        elif isinstance(event, RunFinished):
            self.finish()
            trajectory = event.result.trajectory
            if event.result.answer is None and trajectory.stop_reason != "paused":  # the caller asks for approval
                self.console.print(
                    Text(f"(no answer: stopped by {trajectory.stop_reason} after {len(trajectory.turns)} model calls)",
                         style="yellow")
                )

    def finish(self) -> None:
        """End an open line of streamed text."""
        if self._line_open:
            self.console.print()
            self._line_open = False

    # -- streamed text ----------------------------------------------------------------------------
    def _text(self, delta: str) -> None:
        if not self.show_text or self._hidden:
            return
        self._turn_text += delta
        visible = self._turn_text
        if visible.lstrip().startswith(_BARE_CALL_START):  # maybe a call written as bare JSON (Qwen): wait
            return
        match = _CALL_MARKUP.search(visible)
        if match:
            visible, self._hidden = visible[: match.start()], True
        else:
            lt = visible.rfind("<", max(0, len(visible) - _HOLD_BACK))
            if lt >= 0:
                visible = visible[:lt]
        self._emit(visible)

    def _emit(self, visible: str) -> None:
        new = visible[self._shown :]
        if not new:
            return
        if not self._line_open:
            new = new.lstrip("\n")
            if not new:
                return
        self.console.print(Text(new), end="", soft_wrap=True)
        self._shown = len(visible)
        self._line_open = not visible.endswith("\n")

    def _end_turn(self, event: ModelTurn) -> None:
        output = event.turn.output
        held = self._turn_text.lstrip().startswith(_BARE_CALL_START)
        if self.show_text and not self._hidden and not (held and (output.tool_calls or output.parse_error)):
            self._emit(self._turn_text)  # whatever was held back, unless it was a call (read or not)
        if output.tool_calls or output.parse_error:
            self.finish()
        if output.parse_error:  # the detail is in the trajectory (and the debug log), not on the user's screen
            log.debug("unreadable tool call: %s", output.parse_error)
            self._line(Text(UNREADABLE_CALL, style="dim"))
        self._turn_text, self._shown, self._hidden = "", 0, False

    def _line(self, text: Text) -> None:
        self.finish()
        self.console.print(text, soft_wrap=True)


def load_model(spec: str, console: Console) -> Model:
    """Resolve a model string, with a spinner while it loads (a local model takes seconds)."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # the spinner replaces loaders' own bars
    if "transformers" in sys.modules:  # imported earlier: its bars read the variable at import only
        sys.modules["transformers"].utils.logging.disable_progress_bar()
    with console.status(f"Loading model {spec} …", spinner="dots"):
        return resolve_model(spec)
