"""The optional hooks of `Extension`, gathered once per run for the loop to call.

An extension may define `review`, `check`, `advise` and `choose` (what each does: `agentkit.loop.extensions.
Extension`). `Hooks.of(extensions)` looks them up once, as bound methods in the extensions' order, so the
loop pays nothing per step for a hook no extension has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentkit.loop.extensions import RunContext
from agentkit.messages import Message, ToolCall
from agentkit.results import RunResult

Review = Callable[[RunContext, Message], str | None]
"""`review(run, reply)`: a reason to decline the reply's calls, or None."""
Check = Callable[[RunContext, ToolCall], ToolCall | None]
"""`check(run, call)`: a call of a finishing tool to run instead of `call`, or None."""
Advise = Callable[[RunContext, ToolCall, str], str | None]
"""`advise(run, call, error)`: text to add to a failed call's error, or None."""
Choose = Callable[[Sequence[RunResult]], int]
"""`choose(results)`: the index of the preferred run among samples."""

HOOK_NAMES = ("review", "check", "advise", "choose")
"""The optional methods of an `Extension`."""


def defined_hooks(extension: object) -> tuple[str, ...]:
    """The names of the optional hooks `extension` defines, in `HOOK_NAMES` order."""
    return tuple(name for name in HOOK_NAMES if callable(getattr(extension, name, None)))


def _bound(extensions: Iterable[object], name: str) -> tuple[Any, ...]:
    return tuple(hook for e in extensions if callable(hook := getattr(e, name, None)))


@dataclass(frozen=True, slots=True)
class Hooks:
    """The hooks a run's extensions define, by kind, in the extensions' order."""

    reviews: tuple[Review, ...] = ()
    checks: tuple[Check, ...] = ()
    advisors: tuple[Advise, ...] = ()
    choosers: tuple[Choose, ...] = ()

    @classmethod
    def of(cls, extensions: Sequence[object]) -> Hooks:
        """The hooks `extensions` define (an empty `Hooks` when none has any)."""
        if not extensions:
            return NO_HOOKS
        return cls(*(_bound(extensions, name) for name in HOOK_NAMES))

    def review(self, run: RunContext, reply: Message, finishers: Sequence[str]) -> str | None:
        """The first review's reason to decline `reply`; a reply that calls a finishing tool is never declined."""
        if not self.reviews or any(c.name in finishers for c in reply.tool_calls):
            return None
        return next((r for review in self.reviews if (r := review(run, reply)) is not None), None)

    def check(self, run: RunContext, reply: Message, finishers: Sequence[str]) -> Message:
        """`reply` with each call of a finishing tool as the first check that fixes it says (the same reply
        when none does; the trajectory keeps the model's own)."""
        if not self.checks:
            return reply
        calls = [next((f for check in self.checks if (f := check(run, c)) is not None), c) if c.name in finishers
                 else c for c in reply.tool_calls]
        return reply if calls == reply.tool_calls else reply.model_copy(update={"tool_calls": calls})

    def advise(self, run: RunContext, call: ToolCall, error: str) -> str:
        """`error`, followed by what each advisor adds to it (paragraphs apart)."""
        if not self.advisors:
            return error
        return "\n\n".join([error, *(a for advise in self.advisors if (a := advise(run, call, error)))])

    def choose(self, results: Sequence[RunResult]) -> int | None:
        """The first chooser's pick among `results`, or None when no extension chooses."""
        return self.choosers[0](results) if self.choosers else None


NO_HOOKS = Hooks()
"""The hooks of a run without extensions."""
