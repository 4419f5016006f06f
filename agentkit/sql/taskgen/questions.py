"""Questions with gold SQL for a generated database, from templates over its declared structure.

    from agentkit.sql.taskgen.questions import candidates
    for q in candidates(domain, conn, rng):   # every question the templates can ask of this database
        print(q.kind, q.difficulty, q.question, q.sql)

Templates read the domain's declaration, not its name: a table with a label and a measure gets
filters, aggregates, top-k and "above the average"; a foreign key gets joins, per-parent counts,
"the most", HAVING, "without any", "both X and Y" and "X but not Y"; a chain of two keys gets three-table
joins; a link table (two keys, no label) gets many-to-many questions over three or four tables. Values in
questions are drawn from the rows, so every question has an answer; `agentkit.sql.taskgen.build` then
executes each gold query and keeps only those whose result is deterministic and non-trivial.
Each template words its question in a few ways (chosen by the seed), so no one phrasing is learned.
"""

from __future__ import annotations

import random
import sqlite3

from agentkit.sql.taskgen.join_templates import JOIN_TEMPLATES
from agentkit.sql.taskgen.spec import Domain
from agentkit.sql.taskgen.table_templates import TABLE_TEMPLATES
from agentkit.sql.taskgen.template_base import Ctx, Question, Template

TEMPLATES: tuple[Template, ...] = (*TABLE_TEMPLATES, *JOIN_TEMPLATES)
"""Every template, in the order `candidates` runs them (the frozen task set depends on this order)."""


def candidates(domain: Domain, conn: sqlite3.Connection, rng: random.Random) -> list[Question]:
    """Every question the templates ask of the domain's database (unchecked; see `build.check_gold`)."""
    ctx = Ctx(domain, conn, rng)
    out: list[Question] = []
    for fn in TEMPLATES:
        out.extend(fn(ctx))
    return out
