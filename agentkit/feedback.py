"""Feedback on runs: a person's (or a program's) verdict, stored on the run's trajectory, for learning without gold.

    from agentkit import feedback

    result = agent.run("How many orders came in last week?")
    feedback.rate(result.trajectory, good=True, log="runs.jsonl")            # verified: learnable
    feedback.rate(other.trajectory, good=False, why="count only paid orders", log="runs.jsonl")

    agentkit learn --from-runs runs.jsonl --db shop.sqlite --out learn-runs/shop   # learn from the rated runs

A verdict is the trajectory's `FEEDBACK` record (`agentkit.records`): good or bad, why, who gave it and when.
`agentkit chat` writes one with `/good` and `/bad [why]`. A run nobody rated still has a verdict when a person
decided on its calls (`--ask`): a denied call makes it bad (the reason is the why), calls that were all
approved make it good (`feedback_of`). A program rates runs with `rate(..., source="callback")`, e.g. from a
check of its own after each `agent.run`.

A rated run is appended to the log again with its verdict; `agentkit.trajectory.read_jsonl` reads a log keeping
the last line of each trajectory id, so a rating made after the run was logged replaces the unrated copy (for
`learn --from-runs` and for training alike).
"""

from __future__ import annotations

import os
import time

from agentkit.records import FEEDBACK, FeedbackRecord
from agentkit.trajectory import Trajectory, append_jsonl

SOURCES = ("user", "approval", "callback")


def rate(trajectory: Trajectory, *, good: bool, why: str | None = None, source: str = "user",
         log: str | os.PathLike[str] | None = None) -> FeedbackRecord:
    """Store a verdict on `trajectory` (replacing an earlier one) and, given a `log`, append the rated
    trajectory to it; returns the verdict.

    Args:
        good: whether the run did what was asked (a good run can be learned from as a verified example).
        why: what was wrong (or right): shown to later runs as a note when the run was bad.
        source: who judged: "user" (a person), "approval" (their decisions on its calls) or "callback".
        log: a JSONL log of trajectories (e.g. the chat's `--log` file).
    """
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    verdict = FeedbackRecord(good=good, why=(why or "").strip() or None, source=source, at=round(time.time(), 3))
    trajectory.records.set(FEEDBACK, verdict)
    if log is not None:
        append_jsonl(log, trajectory)
    return verdict


def feedback_of(trajectory: Trajectory) -> FeedbackRecord | None:
    """The verdict on a run: its `FEEDBACK` record, else one read from its approval decisions (a denied call:
    bad, with the denial's reason; every decided call approved: good), else None (nobody judged it)."""
    verdict = trajectory.records.get(FEEDBACK)
    if verdict is not None:
        return verdict
    if not trajectory.approvals:
        return None
    denied = [a for a in trajectory.approvals if not a.approved]
    if denied:
        reasons = "; ".join(a.reason for a in denied if a.reason)
        return FeedbackRecord(good=False, why=reasons or f"the call of {denied[0].tool} was denied",
                              source="approval")
    return FeedbackRecord(good=True, source="approval")
