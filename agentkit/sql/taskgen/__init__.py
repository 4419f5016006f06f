"""The SQL task engine: generated SQLite databases with checked questions, split train / dev / test.

    from agentkit.sql.taskgen import build_tasks
    build_tasks("bench-out/sqlgen")     # databases, train/dev/test.jsonl, manifest.json

The split is by database and frozen (manifest.json beside this module): learn from train, read the
failures of dev, and only report on test. `spare_questions` gives a database's further checked questions
(never scored by any split). See `agentkit.sql.taskgen.build` for what is checked.
"""

from agentkit.sql.taskgen.build import SPLITS, FrozenMismatch, build_tasks, spare_questions, split_of
from agentkit.sql.taskgen.spec import Col, Domain, Table

__all__ = ["SPLITS", "Col", "Domain", "FrozenMismatch", "Table", "build_tasks", "spare_questions", "split_of"]
