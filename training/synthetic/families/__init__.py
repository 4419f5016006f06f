"""Tool families: the invented tools the synthetic conversations offer and call.

A family is one kind of tool (`agentkit.training.synthetic.family.Family`). The tables are split by domain:
`services` (travel, stays, money, shopping, work, books, sport, food, music), `records` (places, science,
calendars, files and code, support, devices, the sky, transit, vehicles, homes, health, study, meters, games,
farms, networks, messages, media, words) and `estimates` (tools that work a result out from a number another
tool reports: an electricity cost, an irrigation plan, a boiling point, a calorie burn). None is, or is close
to, a tool of the evaluation sets (`agentkit.training.synthetic.heldout`).
"""

from __future__ import annotations

from agentkit.training.synthetic.families.estimates import ESTIMATE_FAMILIES
from agentkit.training.synthetic.families.records import RECORD_FAMILIES
from agentkit.training.synthetic.families.services import SERVICE_FAMILIES
from agentkit.training.synthetic.family import Family

FAMILIES: tuple[Family, ...] = (*SERVICE_FAMILIES, *RECORD_FAMILIES, *ESTIMATE_FAMILIES)
"""Every family, in a fixed order (draws index into it)."""
BY_KEY: dict[str, Family] = {f.key: f for f in FAMILIES}
"""Families by their first name."""
