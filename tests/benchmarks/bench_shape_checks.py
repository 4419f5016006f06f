"""How often a learned LIMIT check would fire, and how often wrongly, on held-out and unseen databases.

`agentkit.sql.shape.ShapeChecks` sends back a confirmed query with a LIMIT when none of the train questions
sharing the most words with the question was answered with one. Whether that vote is right needs no model:
for every test question it is read against the question's own gold query. Per learn seed (the Chinook split
`agentkit learn` makes: a seeded 30% held out, 25% of the rest for validation, the train tasks' gold queries
as examples), on the held-out Chinook questions and on every question of the clinic and library databases
(never learned on), it counts:

- covered: questions whose gold query has no LIMIT on which the check would fire (a stray LIMIT there
  would be sent back),
- wrong: questions whose gold query has a LIMIT on which it would fire (a right LIMIT would be sent back).

    python tests/benchmarks/bench_shape_checks.py --seeds 0 1 2 --out bench-out/shape-checks.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agentkit.environments.sql import SQLEnvironment
from agentkit.sql.shape import Example, ShapeChecks, clauses, gold_of
from agentkit.training.learning.loop import split_tasks, validation_split

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def unseen_sets() -> dict[str, list[tuple[str, str]]]:
    """(prompt, gold SQL) of every question of the databases the loop never learns on."""
    sets = {}
    for name, env in (("clinic", SQLEnvironment.clinic()),
                      ("library", SQLEnvironment(FIXTURES / "library.sqlite", FIXTURES / "library_tasks.jsonl"))):
        sets[name] = list(gold_of(env.tasks()).values())
        env.close()
    return sets


def tally(checks: ShapeChecks, questions: list[tuple[str, str]]) -> dict[str, int]:
    """Fires on a LIMIT query of each question, against its gold query's clauses."""
    out = {"questions": len(questions), "no_limit": 0, "covered": 0, "limit": 0, "wrong": 0}
    for question, gold in questions:
        needs_limit = "limit" in clauses(gold)
        fires = checks.find_slip(question, "SELECT 1 LIMIT 5") is not None
        out["limit" if needs_limit else "no_limit"] += 1
        out["wrong" if needs_limit else "covered"] += fires
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("bench-out/shape-checks.json"))
    args = parser.parse_args(argv)
    chinook = SQLEnvironment.chinook()
    unseen = unseen_sets()
    rows = []
    for seed in args.seeds:
        train, held = split_tasks(chinook.tasks(), 0.3, seed)
        train, _ = validation_split(train, 0.25, seed)
        checks = ShapeChecks((Example(q, tuple(sorted(clauses(sql)))) for q, sql in gold_of(train).values()),
                             {"extra_limit": 1})
        for name, questions in (("chinook held-out", list(gold_of(held).values())), *unseen.items()):
            rows.append({"seed": seed, "set": name, "train_examples": len(train), **tally(checks, questions)})
    chinook.close()
    lines = ["| seed | questions of | covered (gold without LIMIT) | wrong (gold with LIMIT) |", "|---|---|---|---|"]
    lines += [f"| {r['seed']} | {r['set']} | {r['covered']} of {r['no_limit']} | {r['wrong']} of {r['limit']} |"
              for r in rows]
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"script": "tests/benchmarks/bench_shape_checks.py", "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
