"""How often the learned LIMIT checks would fire, and how often wrongly, on held-out and unseen databases.

`agentkit.memory.shape_checks.ShapeChecks` takes a LIMIT off a confirmed query when it is an extra LIMIT and none
of the train questions sharing the most words with the question was answered with one. Whether that is right needs
no model: for every test question it is read against the question's own gold query. Per learn seed (the
Chinook split `agentkit learn` makes: a seeded 30% held out, 25% of the rest for validation, the train tasks'
gold queries as examples), on the held-out Chinook questions and on every question of the clinic and library
databases (never learned on), it counts per slip:

- covered: questions whose gold query lacks the clause on which the check would fire (a stray LIMIT there
  would be taken off),
- wrong: questions whose gold query has it on which it would fire (a right LIMIT would be taken off).

With `--runs GLOB` (trajectory JSONL files of earlier evaluations or learn runs) it also replays what taking
an unordered LIMIT off would have done to each distinct answer those runs confirmed: scored against the gold
query before and after, on the database of its task (Chinook, clinic or library).

    python tests/benchmarks/bench_shape_checks.py --seeds 0 1 2 --out bench-out/shape-checks.json \
        [--runs 'bench-out/**/*.jsonl']
"""

from __future__ import annotations

import argparse
import glob
import json
from collections import Counter
from pathlib import Path

from agentkit.environments.sql import SQLEnvironment
from agentkit.memory.shape_checks import Example, ShapeChecks, clauses, gold_of, without_limit
from agentkit.sql.rewards import execution_reward, final_sql
from agentkit.training.learning.splits import split_tasks, validation_split
from agentkit.trajectory import iter_jsonl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def library() -> SQLEnvironment:
    """The third database, a test fixture."""
    return SQLEnvironment(FIXTURES / "library.sqlite", FIXTURES / "library_tasks.jsonl")


def unseen_sets() -> dict[str, list[tuple[str, str]]]:
    """(prompt, gold SQL) of every question of the databases the loop never learns on."""
    sets = {}
    for name, env in (("clinic", SQLEnvironment.clinic()), ("library", library())):
        sets[name] = list(gold_of(env.tasks()).values())
        env.close()
    return sets


SLIP_QUERIES = {"extra_limit": ("limit", "SELECT 1 ORDER BY 1 LIMIT 5")}
"""Each learned slip, the gold clause that makes a fire wrong, and a query showing that slip alone (a LIMIT
cutting unordered rows is the SQL toolkit's static check now, not a learned slip; `--runs` replays it)."""


def tally(checks: ShapeChecks, questions: list[tuple[str, str]], slip: str) -> dict[str, int]:
    """Fires of `slip`'s check on a query showing it for each question, against its gold query's clauses."""
    clause, query = SLIP_QUERIES[slip]
    out = {"questions": len(questions), "without": 0, "covered": 0, "with": 0, "wrong": 0}
    for question, gold in questions:
        needs = clause in clauses(gold)
        fires = checks.find_slip(question, query) is not None
        out["with" if needs else "without"] += 1
        out["wrong" if needs else "covered"] += fires
    return out


def replay(pattern: str, envs: list[SQLEnvironment]) -> dict[str, int]:
    """Per (before, after) reward pair: the distinct confirmed answers with an unordered LIMIT in the runs
    matching `pattern`, scored as they were and with the LIMIT taken off."""
    gold = {t.id: (t.data["gold_sql"], env.database(t)) for env in envs for t in env.tasks()
            if t.data.get("gold_sql")}
    seen, out = set(), Counter[str]()
    for path in sorted(glob.glob(pattern, recursive=True)):
        for run in iter_jsonl(path):
            sql = final_sql(run)
            if sql is None or run.task_id not in gold or (run.task_id, sql) in seen:
                continue
            seen.add((run.task_id, sql))
            if "unordered_limit" in clauses(sql) and (fixed := without_limit(sql)) is not None:
                gold_sql, db = gold[run.task_id]
                out[f"{execution_reward(sql, gold_sql, db)} -> {execution_reward(fixed, gold_sql, db)}"] += 1
    return dict(sorted(out.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("bench-out/shape-checks.json"))
    parser.add_argument("--runs", help="a glob of trajectory JSONL files to replay the unordered-LIMIT fix on")
    args = parser.parse_args(argv)
    chinook = SQLEnvironment.chinook()
    unseen = unseen_sets()
    replayed = None
    if args.runs:
        envs = [chinook, SQLEnvironment.clinic(), library()]
        replayed = replay(args.runs, envs)
        print("unordered LIMIT taken off recorded answers (execution reward before -> after: answers):", replayed)
    rows = []
    for seed in args.seeds:
        train, held = split_tasks(chinook.tasks(), 0.3, seed)
        train, _ = validation_split(train, 0.25, seed)
        examples = [Example(q, tuple(sorted(clauses(sql)))) for q, sql in gold_of(train).values()]
        for slip in SLIP_QUERIES:
            checks = ShapeChecks(examples, {slip: 1})
            for name, questions in (("chinook held-out", list(gold_of(held).values())), *unseen.items()):
                rows.append({"seed": seed, "slip": slip, "set": name, "train_examples": len(train),
                             **tally(checks, questions, slip)})
    chinook.close()
    lines = ["| seed | slip | questions of | covered (gold without the clause) | wrong (gold with it) |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['seed']} | {r['slip']} | {r['set']} | {r['covered']} of {r['without']} | "
              f"{r['wrong']} of {r['with']} |" for r in rows]
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"script": "tests/benchmarks/bench_shape_checks.py", "rows": rows,
                                    "replayed": replayed, "runs": args.runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
