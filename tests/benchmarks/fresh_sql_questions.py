"""Write SQL questions nobody has run or read: a split's databases rebuilt with another generator seed.

    .venv/bin/python tests/benchmarks/fresh_sql_questions.py --split train --seed 7 \
        --kinds left-join-group join-group --out bench-out/sqlgen-s7
    .venv/bin/python tests/benchmarks/bench_sql_split.py --split train --data bench-out/sqlgen \
        --tasks bench-out/sqlgen-s7/fresh.jsonl --per-db 100 ...

The task engine writes each database's rows and questions from a seed. Rebuilt with another seed, a split's
databases keep their schemas and get other rows and another draw of questions, so a check written after reading
failures on the shipped build can be judged on questions that did not suggest it. A question is dropped when its
text or its gold query equals one of the shipped build's (the task file and the spare questions) on the same
database, so nothing kept was ever run by a collection, a learn split or a benchmark. The shipped frozen manifest
is not consulted: these databases are not any split's scored ones, and the test split is never rebuilt here.
Writes OUT/database/..., OUT/fresh.jsonl (task records, "db" relative to OUT, the rebuilt seed's task-file
questions first, then its spares) and OUT/fresh-summary.json (how many were kept and dropped, per kind).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any


def fresh_questions(split: str, seed: int, out: Path, kinds: set[str] | None = None) -> dict[str, Any]:
    """Build `split`'s databases with generator `seed` into `out` and write the questions the shipped build
    does not hold (of `kinds`, when given) to `out/fresh.jsonl`; returns the summary it writes beside it."""
    from agentkit.sql.taskgen import spare_questions, split_of
    from agentkit.sql.taskgen.build import SEED, build_database
    from agentkit.sql.taskgen.domains import ALL_DOMAINS

    if split == "test":
        raise ValueError("the test split is frozen: its databases are not rebuilt for fresh questions")
    if seed == SEED:
        raise ValueError(f"seed {seed} is the shipped build's: its questions are not fresh")
    out.mkdir(parents=True, exist_ok=True)
    kept: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as shipped_dir:
        shipped = Path(shipped_dir)
        for domain in ALL_DOMAINS:
            if split_of(domain.name) != split:
                continue
            seen = build_database(domain, shipped, seed=SEED).questions + spare_questions(domain, shipped)
            texts, queries = {r["question"] for r in seen}, {r["sql"] for r in seen}
            rebuilt = build_database(domain, out, seed=seed).questions + spare_questions(domain, out, seed=seed)
            for record in rebuilt:
                if kinds is not None and record["kind"] not in kinds:
                    continue
                if record["question"] in texts or record["sql"] in queries:
                    dropped[record["kind"]] += 1
                    continue
                texts.add(record["question"])
                queries.add(record["sql"])
                kept.append({**record, "id": f"{record['id']}-g{seed}"})
    with (out / "fresh.jsonl").open("w", encoding="utf-8") as fh:
        for record in kept:
            fh.write(json.dumps(record) + "\n")
    summary = {"split": split, "seed": seed, "shipped_seed": SEED, "kinds": sorted(kinds) if kinds else None,
               "kept": len(kept), "kept_by_kind": dict(sorted(Counter(r["kind"] for r in kept).items())),
               "dropped_as_seen_by_kind": dict(sorted(dropped.items()))}
    (out / "fresh-summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("train", "dev"), default="train")
    parser.add_argument("--seed", type=int, required=True, help="the generator seed (not the shipped one)")
    parser.add_argument("--kinds", nargs="+", default=None, help="keep only questions of these kinds")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    summary = fresh_questions(args.split, args.seed, args.out, set(args.kinds) if args.kinds else None)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
