"""Which cosine threshold should the mistake notebook use with the packaged MiniLM? Measured, not guessed.

For every shipped SQL task (Chinook, 68; clinic, 26) the task prompt, exactly as the notebook sees it, is
embedded and compared with note subjects written in the style the analyst prompt asks for (10–50 words:
the kind of question, the domain, the method). A subject is *relevant* to a task when it describes the
task's kind (by the shape of its gold SQL: count, filter, aggregate, group, join, list) on the task's
database; every other subject is irrelevant. Prints the two cosine distributions and, for each
threshold, how many tasks get at least one relevant note (recall) and what share of shown notes is
relevant (precision); reports the best F1 and chooses the highest threshold within 10% of it (about
the same F1 with fewer irrelevant notes in the prompt).

    python tests/benchmarks/bench_note_threshold.py --out bench-out/note-threshold.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

KINDS = {
    "count": "Questions like how many {things} are there, over the {domain}: count the rows of the one table "
             "named with SELECT COUNT(*) FROM that table, adding a WHERE condition when the question filters",
    "filter": "Questions like which {things} have some property or list those matching a condition, over the "
              "{domain}: SELECT the asked columns FROM the table WHERE the condition holds",
    "aggregate": "Questions like what is the total, average, highest or lowest value, over the {domain}: use SUM, "
                 "AVG, MIN or MAX on the column, or ORDER BY it with LIMIT 1",
    "group": "Questions like how many {things} are in each group or which group has the most, over the {domain}: "
             "GROUP BY the grouping column with COUNT, ordering by the count when asked for the most",
    "join": "Questions that need names from a second table, like the {things} of each related record, over the "
            "{domain}: JOIN the tables on their key columns before selecting or grouping",
    "list": "Questions like list all the names or titles of {things}, over the {domain}: SELECT the asked column "
            "FROM the one table the question names, without conditions",
}
DOMAINS = {"chinook": ("the Chinook music store database", "tracks, albums, artists or customers"),
           "clinic": ("an outpatient clinic database", "patients, doctors, appointments or prescriptions")}


def kind(sql: str) -> str:
    s = " ".join(sql.upper().split())
    if " JOIN " in s:
        return "join"
    if "GROUP BY" in s:
        return "group"
    if "COUNT(" in s:
        return "count"
    if any(f in s for f in ("SUM(", "AVG(", "MIN(", "MAX(")) or "LIMIT 1" in s:
        return "aggregate"
    if " WHERE " in s:
        return "filter"
    return "list"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    import numpy as np

    from agentkit.environments.sql import SQLEnvironment
    from agentkit.memory.embeddings import Embedder

    tasks = [("chinook", t) for t in SQLEnvironment.chinook().tasks()] + \
            [("clinic", t) for t in SQLEnvironment.clinic().tasks()]
    subjects = [((db, k), template.format(domain=DOMAINS[db][0], things=DOMAINS[db][1]))
                for db in DOMAINS for k, template in KINDS.items()]
    embedder = Embedder.default()
    q = np.asarray(embedder.embed([t.prompt for _, t in tasks]))
    s = np.asarray(embedder.embed([text for _, text in subjects]))
    cos = q @ s.T
    relevant = np.array([[(db, kind(t.data["gold_sql"])) == key for key, _ in subjects] for db, t in tasks])
    rel, irr = cos[relevant], cos[~relevant]

    def describe(values: np.ndarray) -> dict[str, float]:
        return {"n": int(values.size), "min": round(float(values.min()), 3),
                "p10": round(float(np.percentile(values, 10)), 3), "median": round(float(np.median(values)), 3),
                "p90": round(float(np.percentile(values, 90)), 3), "max": round(float(values.max()), 3)}

    rows = []
    for threshold in [round(x, 2) for x in np.arange(0.1, 0.76, 0.05)]:
        shown = cos >= threshold
        top = np.argsort(-cos, axis=1)[:, :3]  # the notebook shows at most top_k = 3
        kept = np.zeros_like(shown)
        np.put_along_axis(kept, top, True, axis=1)
        shown &= kept
        recall = float(np.mean((shown & relevant).any(axis=1)))
        precision = float((shown & relevant).sum() / shown.sum()) if shown.sum() else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        rows.append({"threshold": threshold, "tasks_with_a_relevant_note": round(recall, 3),
                     "precision_of_shown_notes": round(precision, 3), "f1": round(f1, 3),
                     "notes_shown_per_task": round(float(shown.sum(axis=1).mean()), 2),
                     "relevant_pairs_above": round(float(np.mean(rel >= threshold)), 3),
                     "irrelevant_pairs_above": round(float(np.mean(irr >= threshold)), 3)})
    best = max(rows, key=lambda r: (r["f1"], r["threshold"]))
    # The rule: the highest threshold within 10% of the best F1 (fewer irrelevant notes for about the same F1).
    chosen = max((r for r in rows if r["f1"] >= 0.9 * best["f1"]), key=lambda r: r["threshold"])
    result = {"relevant": describe(rel), "irrelevant": describe(irr), "sweep": rows, "best": best, "chosen": chosen,
              "relevant_median_minus_irrelevant_median": round(float(statistics.median(rel) - statistics.median(irr)),
                                                               3)}
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
