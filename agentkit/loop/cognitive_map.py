"""The cognitive map M_t of map-then-act planning: typed, serialisable, lenient on input.

It is what a map-then-act run records on its trajectory (`agentkit.records.MAP`), rendered into the act
prompt and shown by `/map` in chat.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from agentkit.jsontext import lenient_json

MAP_SCHEMA_VERSION = 1


class Entity(BaseModel):
    """A thing the task involves."""

    name: str
    kind: str = ""
    notes: str = ""


class Affordance(BaseModel):
    """Which tool applies to what, and what it does there."""

    tool: str
    applies_to: str = ""
    effect: str = ""


class SubGoal(BaseModel):
    """One step of a plan: the goal, the tool it will use, whether it is done (a cognitive map's steps),
    and an optional `status` label a distilled skill may give a step ("optional", "failed")."""

    goal: str
    tool: str | None = None
    done: bool = False
    status: str | None = None

    @model_serializer(mode="wrap")
    def _without_empty_status(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if self.status is None and isinstance(data, dict):
            data.pop("status", None)  # a map's steps serialise as they always have
        return data


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


_ITEM_FIELDS: dict[str, tuple[str, ...]] = {
    "entities": ("name", "kind", "notes"),
    "affordances": ("tool", "applies_to", "effect"),
    "subgoals": ("goal", "tool", "done"),
}

_ALIASES = {
    "entities": ("entities", "objects", "entity", "items"),
    "affordances": ("affordances", "affordance", "actions", "tools"),
    "constraints": ("constraints", "rules", "constraint"),
    "unknowns": ("unknowns", "unknown", "open_questions", "questions"),
    "subgoals": ("subgoals", "sub_goals", "sub-goals", "goals", "plan", "steps"),
}


def _coerce_item(key: str, item: Any) -> dict[str, Any] | None:
    """Turn what a model wrote for one list item into the fields of its type (strings, loose dicts)."""
    first = _ITEM_FIELDS[key][0]
    if isinstance(item, str):
        return {first: item} if item.strip() else None
    if not isinstance(item, dict):
        return {first: _as_text(item)} if item is not None else None
    out: dict[str, Any] = {}
    synonyms = {"name": ("name", "entity", "object", "id"), "tool": ("tool", "action", "name"),
                "applies_to": ("applies_to", "target", "object", "entity", "on"),
                "goal": ("goal", "step", "description", "name", "subgoal")}
    for field in _ITEM_FIELDS[key]:
        for alias in synonyms.get(field, (field,)):
            if alias in item and item[alias] is not None:
                out[field] = item[alias] if field == "done" else _as_text(item[alias])
                break
    if first not in out:
        return None
    if "done" in out:
        out["done"] = bool(out["done"])
    return out


_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n?(.*?)(?:```|\Z)", re.S | re.I)
_NOTHING = re.compile(r"^\s*(none|n/?a|nothing|no unknowns?|null|-+)\s*\.?\s*$", re.I)


class CognitiveMap(BaseModel):
    """The task-specific map M_t: typed, serialisable, rendered into the act prompt and `/map` in chat."""

    schema_version: int = MAP_SCHEMA_VERSION
    task: str = ""
    entities: list[Entity] = Field(default_factory=list)
    affordances: list[Affordance] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    unknowns: list[str] = Field(default_factory=list)
    subgoals: list[SubGoal] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _lenient(cls, data: Any) -> Any:
        """Accept what models write: synonyms for keys, strings for objects, a string for a list."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for key, aliases in _ALIASES.items():
            value = next((data.pop(a) for a in aliases if a in data), None)
            if value is None:
                continue
            if isinstance(value, str | dict):
                value = [value]
            if not isinstance(value, list):
                value = [value]
            if key in _ITEM_FIELDS:
                data[key] = [c for c in (_coerce_item(key, v) for v in value) if c is not None]
            else:
                data[key] = [_as_text(v) for v in value if _as_text(v).strip() and not _NOTHING.match(_as_text(v))]
        return data

    @field_validator("task", mode="before")
    @classmethod
    def _task_text(cls, value: Any) -> str:
        return _as_text(value)

    @property
    def is_empty(self) -> bool:
        """Whether the map holds nothing (no entities, affordances, constraints, unknowns or sub-goals)."""
        return not (self.entities or self.affordances or self.constraints or self.unknowns or self.subgoals)

    @classmethod
    def parse(cls, text: str, task: str = "") -> tuple[CognitiveMap, str | None]:
        """Read a map from model text, leniently. Returns (map, error); the map is empty on error."""
        fenced = _FENCE.search(text or "")
        value = lenient_json(fenced.group(1)) if fenced else None
        if value is None:
            value = lenient_json(text or "")
        if isinstance(value, dict) and isinstance(value.get("map"), dict):
            value = value["map"]
        if not isinstance(value, dict):
            snippet = (text or "").strip().replace("\n", " ")[:80]
            return cls(task=task), f"no JSON object in the reply ({snippet!r})"
        try:
            parsed = cls.model_validate({**value, "task": task})
        except Exception as exc:  # pydantic errors on very odd shapes
            return cls(task=task), f"the JSON does not fit the map ({type(exc).__name__})"
        if parsed.is_empty:
            return parsed, "the map is empty"
        return parsed, None

    def render(self) -> str:
        """The map as compact text for a prompt or the terminal."""
        lines: list[str] = []
        if self.entities:
            lines.append("Entities:")
            lines += [f"- {e.name}" + (f" ({e.kind})" if e.kind else "") + (f": {e.notes}" if e.notes else "")
                      for e in self.entities]
        if self.affordances:
            lines.append("Affordances:")
            lines += [f"- {a.tool}" + (f" -> {a.applies_to}" if a.applies_to else "")
                      + (f": {a.effect}" if a.effect else "") for a in self.affordances]
        if self.constraints:
            lines.append("Constraints:")
            lines += [f"- {c}" for c in self.constraints]
        if self.unknowns:
            lines.append("Unknowns:")
            lines += [f"- {u}" for u in self.unknowns]
        if self.subgoals:
            lines.append("Sub-goals:")
            lines += [f"{i}. [{'x' if g.done else ' '}] {g.goal}" + (f" (tool: {g.tool})" if g.tool else "")
                      for i, g in enumerate(self.subgoals, start=1)]
        return "\n".join(lines) if lines else "(empty map)"
