"""Planners by name: the one explicit mapping `Agent(planner="...")` resolves against.

The mapping is a literal, built once at import with nothing registered from elsewhere; a custom planner is
passed as an object (`Agent(planner=MyPlanner())`), the way a custom model is passed to `resolve_model`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from agentkit.loop.extensions import Planner, ReactPlanner


def _map_then_act() -> Planner:
    from agentkit.loop.planning import MapThenActPlanner  # imported when first used: `import agentkit` stays light

    return MapThenActPlanner()


PLANNERS: Mapping[str, Callable[[], Planner]] = MappingProxyType({
    "react": ReactPlanner,
    "map-then-act": _map_then_act,
})
"""The built-in planners by the name `Agent(planner=...)` and `agentkit chat --planner` accept."""


def resolve_planner(planner: Planner | str) -> Planner:
    """A planner from its name in `PLANNERS`, or the given `Planner` object unchanged.

    Raises:
        ValueError: the name is not a built-in planner (the message lists the known names).
    """
    if not isinstance(planner, str):
        return planner
    try:
        factory = PLANNERS[planner]
    except KeyError:
        raise ValueError(f"unknown planner {planner!r}; known: {', '.join(sorted(PLANNERS))}") from None
    return factory()
