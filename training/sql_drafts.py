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
ORDER BY). The kept turn keeps its recorded prompt and completion token ids (nothing is re-tokenised; a turn
stored as the continuation of an earlier one, as a repair is, gets its whole prompt rebuilt through `extends`,
while its prompt text stays empty, since the run recorded only the new tokens) and its phase; at most `per_task`
distinct queries are kept per task, in the order the runs made them (the greedy draft first), so that a question
the model answers many ways does not outweigh the others.

Rationalisation (STaR) asks the questions the model never answered again with a hint, and trains on the right
answers as if the hint had not been there:

    hints = {r["id"]: skeleton_hint(r["sql"]) for r in missed}         # missed: task-file records
    # ... the draft agent runs on a task file of the missed records, each with its hint as "evidence" ...
    for t in verified_drafts(runs, hinted_env):
        plain = without_hint(t, hints[t.task_id], tokenize)             # the hint line gone, prompt re-tokenised

`skeleton_hint` is the gold query's skeleton (`agentkit.memory.skeleton`: what the query does, every name and value
masked); the task prompt shows it as its "Hint:" line, and `without_hint` removes that line from the kept turn's
prompt text, input messages and task, then tokenises the prompt text again. A kept repair has no whole prompt text
to remove the hint from, so a hinted run's repairs are not kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from agentkit.environments.sql import SQLEnvironment
from agentkit.memory.skeleton import sql_skeleton
from agentkit.sql.draft import DRAFT_PHASE, REPAIR_PHASE
from agentkit.sql.extract import query_key, sql_in_text
from agentkit.sql.recipe import EVIDENCE_TEMPLATE
from agentkit.sql.rewards import EXECUTION_MATCH, execution_reward
from agentkit.trajectory import Trajectory
from agentkit.trajectory import without_hint as remove_hint

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
            whole = turn.model_copy(update={"index": 0, "extends": None, "prompt_ids": run.prompt_ids(turn.index)})
            out.append(Trajectory(
                task=run.task, task_id=run.task_id, model=run.model, planner=run.planner,
                turns=[whole], answer=sql, stop_reason="final",
                reward=1.0, rewards={"execution": EXECUTION_MATCH, "reward": 1.0},
                metadata={"kind": KIND, "source": run.id, "source_turn": turn.index, "phase": turn.phase}))
    return out


HINT_LEAD = "a right query has this shape (names and values masked): "
"""How `skeleton_hint` begins."""


def skeleton_hint(gold_sql: str) -> str:
    """The hint of a rationalisation question: `HINT_LEAD` and the skeleton of its gold query, e.g.
    "a right query has this shape (names and values masked): SELECT _ , COUNT ( _ ) FROM _ LEFT JOIN _ ON _ = _
    GROUP BY _"."""
    return HINT_LEAD + sql_skeleton(gold_sql)


def without_hint(draft: Trajectory, evidence: str, tokenize: Callable[[str], list[int]]) -> Trajectory:
    """`draft` (a `verified_drafts` item of a task asked with `evidence` as its hint) as if the task had been asked
    without it: the "Hint:" line removed from its task, its turn's prompt text and input messages, and the prompt
    text tokenised again with `tokenize` (the text of the model's own chat template, special tokens included; for
    the embedded models, their tokenizer with `add_special_tokens=False`; `agentkit.trajectory.without_hint`). The
    completion keeps its token ids. Raises ValueError when the turn's prompt text does not hold the hint line,
    since then it cannot be removed."""
    plain = remove_hint(draft, EVIDENCE_TEMPLATE.format(evidence=evidence.strip()), tokenize)
    return plain.model_copy(update={"metadata": {**draft.metadata, "hint_removed": evidence.strip()}})


__all__ = ["HINT_LEAD", "KIND", "skeleton_hint", "verified_drafts", "without_hint"]
