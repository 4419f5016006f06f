"""Replay the draft planner's vote offline under other rules, from the drafts its runs recorded.

    python tests/benchmarks/replay_draft_votes.py --runs bench-out/sqlgen/runs/train-draft-collect.jsonl \\
        --tasks bench-out/sqlgen/train.jsonl --kind train --out tests/benchmarks/results/vote-replay-train.json

A draft run (`agentkit.sql.draft`, `votes` > 1) records the greedy draft, its repairs and the sampled drafts, each
as a turn. This re-runs every recorded query with the run's own `run_query` tool and asks which query each rule
would have kept, scored by the execution match against the gold query, so a vote rule can be compared with the
shipped one on runs already made, without the model. Replaying the shipped rule must give the query the run kept;
the report counts the runs where it does not. Rules:

- `shipped`: the order-blind result most drafts share, the first draft's among equals (`SQLDraftPlanner._vote`);
- `ordered-member`: the same group, represented by the member whose rows in their order most members share;
- `ordered`: vote by rows in their order (drafts that order differently disagree);
- `tie-distinct`: among equally large groups, the one written the most distinct ways, then the first;
- `prefer-order-by`: the shipped group, represented by a member whose query has an ORDER BY when one has (the
  execution match ignores row order unless the gold query orders, so such a member loses nothing by ordering),
  the ordered rows most of those members share, then the first;
- `tie-shortest`: among equally large groups, the one holding the shortest query (fewest characters once
  whitespace is normalised), then the first.

Read replays of train and dev runs only: a test split's runs are for reporting.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from agentkit.environments.sql import SQLEnvironment
from agentkit.records import SQL
from agentkit.sql.draft import DRAFT_PHASE, REPAIR_PHASE, majority, result_key, returned_rows, try_query
from agentkit.sql.extract import query_key, sql_in_text
from agentkit.sql.rewards import EXECUTION_MATCH, execution_reward
from agentkit.trajectory import Trajectory, read_jsonl


@dataclass(frozen=True)
class Vote:
    """One query that ran and returned rows: its text, its order-blind and ordered results, whether it is right."""

    sql: str
    blind: str
    ordered: str
    right: bool


Rule = Callable[[Sequence[Vote]], Vote]


def shipped(votes: Sequence[Vote]) -> Vote:
    """The planner's rule (`agentkit.sql.draft.majority`): the biggest order-blind group, the first vote's among
    equals."""
    return votes[majority([v.blind for v in votes])]


def ordered_member(votes: Sequence[Vote]) -> Vote:
    """The shipped group, represented by its member whose ordered rows most members share."""
    group = [v for v in votes if v.blind == shipped(votes).blind]
    return group[majority([v.ordered for v in group])]


def ordered(votes: Sequence[Vote]) -> Vote:
    """The biggest group by rows in their order, the first vote's among equals."""
    return votes[majority([v.ordered for v in votes])]


def tie_distinct(votes: Sequence[Vote]) -> Vote:
    """The biggest order-blind group; among equals the one written the most distinct ways, then the first."""
    counts = Counter(v.blind for v in votes)
    ways = {key: len({query_key(v.sql) for v in votes if v.blind == key}) for key in counts}
    best = max((counts[k], ways[k]) for k in counts)
    return next(v for v in votes if (counts[v.blind], ways[v.blind]) == best)


ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def prefer_order_by(votes: Sequence[Vote]) -> Vote:
    """The shipped group, represented by the members with an ORDER BY when any has one, by their ordered rows'
    majority, the first among equals."""
    group = [v for v in votes if v.blind == shipped(votes).blind]
    group = [v for v in group if ORDER_BY.search(v.sql)] or group
    return group[majority([v.ordered for v in group])]


def tie_shortest(votes: Sequence[Vote]) -> Vote:
    """The biggest order-blind group; among equals the one holding the shortest query, then the first."""
    counts = Counter(v.blind for v in votes)
    shortest = {key: min(len(query_key(v.sql)) for v in votes if v.blind == key) for key in counts}
    best = max(counts.values())
    key = min((k for k in counts if counts[k] == best), key=lambda k: shortest[k])
    return next(v for v in votes if v.blind == key)


RULES: dict[str, Rule] = {"shipped": shipped, "ordered-member": ordered_member, "ordered": ordered,
                          "tie-distinct": tie_distinct, "prefer-order-by": prefer_order_by,
                          "tie-shortest": tie_shortest}


def votes_of(run: Trajectory, query: Callable[[str], tuple[str, bool]]) -> list[tuple[str, str]]:
    """The queries of `run` that voted, in the planner's order, with what running them showed: the greedy chain's
    last query when it returned rows, then each sampled draft that ran and returned rows. `query(sql)` returns
    (what running it showed, whether it failed)."""
    turns = [t for t in run.turns if t.phase in (DRAFT_PHASE, REPAIR_PHASE)]
    if not turns or turns[0].phase != DRAFT_PHASE:
        return []
    chain_end = 1
    while chain_end < len(turns) and turns[chain_end].phase == REPAIR_PHASE:
        chain_end += 1
    chain_sql: str | None = None
    for t in turns[:chain_end]:
        chain_sql = sql_in_text(t.output.content) or chain_sql
    candidates = [chain_sql, *(sql_in_text(t.output.content) for t in turns[chain_end:])]
    out = []
    for sql in candidates:
        if sql is not None:
            ran, failed = query(sql)
            if not failed and returned_rows(ran):
                out.append((sql, ran))
    return out


def replay(runs: Sequence[Trajectory], env: SQLEnvironment, rules: dict[str, Rule] = RULES) -> dict[str, Any]:
    """Per rule, how many runs' kept query is right, and the runs where it differs from the shipped rule."""
    tasks = {t.id: t for t in env.tasks()}
    right = dict.fromkeys(rules, 0)
    changed: dict[str, list[dict[str, Any]]] = {name: [] for name in rules}
    replayed = mismatched = no_votes = 0
    for run in runs:
        task = tasks.get(run.task_id or "")
        if task is None:
            continue
        episode = env.reset(task)
        try:
            tool = next(t for t in episode.tools if t.name == "run_query")
            ran = votes_of(run, partial(try_query, tool))
            gold, _ = env.gold(task)
            db = env.database(task)
            votes = [Vote(sql, result_key(rows), rows.strip(), execution_reward(
                sql, str(task.data["gold_sql"]), db, gold_result=gold) == EXECUTION_MATCH) for sql, rows in ran]
        finally:
            episode.close()
        if not votes:
            no_votes += 1
            continue
        replayed += 1
        base = shipped(votes)
        record = run.records.get(SQL)
        if record is not None and record.final_sql and query_key(record.final_sql) != query_key(base.sql):
            mismatched += 1  # the loop went on after the vote (a repair), or the replay is not the planner's
        for name, rule in rules.items():
            pick = rule(votes)
            right[name] += pick.right
            if pick.right != base.right:
                changed[name].append({"task": task.id, "right": pick.right})
    return {
        "runs": len(runs), "replayed": replayed, "no_votes": no_votes, "kept_differs_from_replay": mismatched,
        "rules": {name: {"right": right[name], "of": replayed,
                         "wins": sum(c["right"] for c in changed[name]),
                         "losses": sum(not c["right"] for c in changed[name]),
                         "changed": changed[name]} for name in rules},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, required=True, help="a draft configuration's runs (JSONL)")
    parser.add_argument("--tasks", type=Path, required=True, help="the split's task file")
    parser.add_argument("--kind", required=True, choices=["train", "dev"], help="the split's kind (test: refused)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    env = SQLEnvironment(tasks=args.tasks)
    report = {"kind": args.kind, "runs_file": str(args.runs), **replay(read_jsonl([args.runs]), env)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    for name, r in report["rules"].items():
        print(f"{name:15s} {r['right']}/{r['of']}  wins {r['wins']}  losses {r['losses']}")
    print(f"replayed {report['replayed']} of {report['runs']}; shipped replay differs from the run's kept query "
          f"in {report['kept_differs_from_replay']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
