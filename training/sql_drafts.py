"""Rejection-sampling data for SQL from the draft agent's own runs: every draft or repair whose query returned the
gold query's result becomes a one-turn trajectory the trainer imitates.

    from agentkit.environments.sql import SQLEnvironment
    from agentkit.trajectory import append_jsonl, read_jsonl
    from agentkit.training.sql_drafts import verified_drafts

    env = SQLEnvironment(tasks="bench-out/sqlgen/train.jsonl")
    for t in verified_drafts(read_jsonl(["runs/train-draft.jsonl"]), env, per_task=2):
        append_jsonl("runs/sql-drafts.jsonl", t)     # then: agentkit train --data runs/sql-drafts.jsonl --algo sft

A run of the draft planner (`agentkit.sql.draft`) holds several completions: the greedy draft, the sampled drafts
that vote, the repairs. Scoring the run as a whole would imitate its wrong drafts with its right one, so each
completion is scored on its own: its query is run against the task's database and kept when its rows match the
gold query's (the execution match every SQL evaluation scores with, row order counting when the gold query has an
ORDER BY). The kept turn keeps its recorded prompt and completion token ids (nothing is re-tokenised) and its
phase; at most `per_task` distinct queries are kept per task, in the order the runs made them (the greedy draft
first), so that a question the model answers many ways does not outweigh the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agentkit.environments.sql import SQLEnvironment
from agentkit.sql.draft import DRAFT_PHASE, REPAIR_PHASE
from agentkit.sql.extract import query_key, sql_in_text
from agentkit.sql.rewards import EXECUTION_MATCH, execution_reward
from agentkit.trajectory import Trajectory

KIND = "verified-draft"
"""`metadata["kind"]` of the trajectories `verified_drafts` writes."""


def verified_drafts(runs: Iterable[Trajectory], env: SQLEnvironment, *, per_task: int = 2,
                    phases: Sequence[str] = (DRAFT_PHASE, REPAIR_PHASE)) -> list[Trajectory]:
    """The completions of `runs` (turns of `phases` with token ids) whose query returned the gold result of their
    task in `env`, each as a trajectory of that one turn with reward 1, at most `per_task` distinct queries
    (whitespace and case normalised) per task. Runs of tasks `env` does not have are skipped; a task whose gold
    query fails raises `QueryError` naming it."""
    if per_task < 1:
        raise ValueError("per_task must be 1 or more")
    tasks = {t.id: t for t in env.tasks()}
    kept: dict[str, set[str]] = {}
    out: list[Trajectory] = []
    for run in runs:
        task = tasks.get(run.task_id or "")
        if task is None:
            continue
        seen = kept.setdefault(task.id, set())
        gold, _ = env.gold(task)
        db = env.database(task)
        for turn in run.turns:
            if len(seen) >= per_task:
                break
            if turn.phase not in phases or not turn.prompt_ids or not turn.completion_ids:
                continue
            sql = sql_in_text(turn.output.content)
            if sql is None or query_key(sql) in seen:
                continue
            if execution_reward(sql, str(task.data["gold_sql"]), db, gold_result=gold) != EXECUTION_MATCH:
                continue
            seen.add(query_key(sql))
            out.append(Trajectory(
                task=run.task, task_id=run.task_id, model=run.model, planner=run.planner,
                turns=[turn.model_copy(update={"index": 0, "extends": None})], answer=sql, stop_reason="final",
                reward=1.0, rewards={"execution": EXECUTION_MATCH, "reward": 1.0},
                metadata={"kind": KIND, "source": run.id, "source_turn": turn.index, "phase": turn.phase}))
    return out


__all__ = ["KIND", "verified_drafts"]
