"""Whether an agent traces its runs, and its tracer: `Agent(tracing=...)` and `AGENTKIT_OTEL` read in one place,
so that OpenTelemetry (`agentkit.tracing`) is imported only when tracing is on."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentkit.tracing import RunTracer

OTEL_ENV = "AGENTKIT_OTEL"
"""Set to 1 to trace every agent whose `tracing` is left unset (see agentkit.tracing)."""


def tracing_from_env() -> bool:
    """Whether `AGENTKIT_OTEL` asks for tracing (1, true, yes or on)."""
    return os.environ.get(OTEL_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def make_tracer(tracing: bool | Any) -> RunTracer | None:
    """The run tracer for `Agent(tracing=...)`: None when tracing is off (True: the global tracer provider; a
    provider: that one; None: as `AGENTKIT_OTEL` says)."""
    if tracing is None:
        tracing = tracing_from_env()
    if tracing is False:
        return None
    from agentkit.tracing import RunTracer

    return RunTracer(None if tracing is True else tracing)
