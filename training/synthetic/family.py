"""A tool family: one kind of invented tool, with its names, schema, requests, results and answers.

The tables of families are in `agentkit.training.synthetic.families`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentkit.training.synthetic.values import schema_type


@dataclass(frozen=True)
class Param:
    """A parameter: its name, the value spec its arguments are drawn from, its description."""

    name: str
    gen: str
    doc: str
    optional: bool


@dataclass(frozen=True)
class Judge:
    """A use-the-result question: is output `field` `op` a threshold the user names?"""

    field: str
    op: str  # ">=" or "<="
    gen: str
    asks: tuple[str, ...]
    yes: str
    no: str


@dataclass(frozen=True)
class Family:
    """One kind of tool: its names (aliases), schema, how users ask for it, its results and the answers."""

    names: tuple[str, ...]
    domain: str
    doc: str
    params: tuple[Param, ...]
    outs: tuple[tuple[str, str], ...]
    sentence: str
    asks: tuple[str, ...]
    answers: tuple[str, ...]
    task: str  # what it does, for "none of my tools can ..."
    judge: Judge | None

    @property
    def key(self) -> str:
        """The family's first name, which the tables refer to it by."""
        return self.names[0]

    def spec(self, name: str) -> dict[str, Any]:
        """The OpenAI function spec under `name`."""
        props = {p.name: {**schema_type(p.gen), "description": p.doc} for p in self.params}
        required = [p.name for p in self.params if not p.optional]
        return {"type": "function", "function": {"name": name, "description": self.doc, "parameters": {
            "type": "object", "properties": props, "required": required}}}


Ask = tuple[str, str, str, list[str], str, str]
DATE = "date, YYYY-MM-DD"


def fam(names: str, domain: str, doc: str, params: list[tuple[str, str, str]], outs: str, sentence: str,
        asks: list[str], answers: list[str], task: str, judge: Ask | None = None) -> Family:
    """A family from compact literals: params as (name, value spec, description), a name ending in "?"
    optional; outs as "field=spec; field=spec"."""
    ps = tuple(Param(n.rstrip("?"), g, d, n.endswith("?")) for n, g, d in params)
    out_pairs = tuple((f.strip(), g.strip()) for f, g in (o.split("=", 1) for o in outs.split(";")))
    j = Judge(judge[0], judge[1], judge[2], tuple(judge[3]), judge[4], judge[5]) if judge else None
    return Family(tuple(names.split()), domain, doc, ps, out_pairs, sentence, tuple(asks), tuple(answers), task, j)
