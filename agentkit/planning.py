"""Built-in planners. `react` lives in agentkit.extensions; map-then-act is added here."""

from __future__ import annotations

from agentkit.extensions import ReactPlanner

__all__ = ["ReactPlanner"]
