"""Pacing: how many replies of each phase a run may make, learned from the runs that succeeded.

An agent can loop inside one phase: given a database schema it describes table after table until the
step limit and never writes the query. Runs that succeed do not: in them each phase takes a few calls.
`Pacing.fit` reads scored trajectories and, per phase, keeps the most replies (model turns labelled with
that phase) any successful run made, when some failed run went past it (a
limit that would have changed nothing is not kept). Attached to an
agent (an `Extension` with a `review` hook), it declines a reply that would go past a limit: the calls
get the reason back instead of running, and the next reply must call the agent's finishing tool when it
has one (`@tool(final=True)`, e.g. the SQL toolkit's `confirm_answer`). A reply that calls a finishing
tool is never declined.

The limits are learned from the agent's own runs on train tasks (`agentkit learn --method pacing`), saved
as pacing.json in the learn run's folder, and attached with that folder (`agentkit chat/eval --memory DIR`,
`agentkit.memory.load_memory`) or `Agent(..., extensions=[Pacing.load(f)])`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from agentkit.files import read_artefact, write_artefact
from agentkit.loop.extensions import RunContext
from agentkit.messages import Message
from agentkit.results import succeeded
from agentkit.trajectory import Trajectory

KIND = "agentkit.pacing"  # the saved file's format tag (kept: files written before stay readable)
VERSION = 1
MIN_SUCCESSES = 3
"""Successful runs needed before any limit is learned: fewer say too little about what a task needs."""


def phase_counts(trajectory: Trajectory, exempt: Collection[str] = ("act",)) -> Counter[str]:
    """Main-conversation model turns per phase label (phases in `exempt` not counted)."""
    return Counter(t.phase for t in trajectory.turns if t.context == "main" and t.phase not in exempt)


class Pacing:
    """Per-phase limits on a run's calls (see the module docstring).

    Args:
        limits: phase label -> the most model turns of that phase a run may make.
        evidence: what each limit was learned from (written by `fit`, kept in the saved file).
    """

    name = "pacing"

    def __init__(self, limits: Mapping[str, int], evidence: Mapping[str, Any] | None = None) -> None:
        bad = {p: n for p, n in limits.items() if not isinstance(n, int) or isinstance(n, bool) or n < 1}
        if bad:
            raise ValueError(f"pacing limits must be whole numbers of at least 1: {bad}")
        self.limits = dict(limits)
        self.evidence = dict(evidence or {})

    @classmethod
    def fit(cls, trajectories: Iterable[Trajectory], *, exempt: Collection[str] = ("act",),
            success: Callable[[Trajectory], bool] = succeeded, min_successes: int = MIN_SUCCESSES) -> Pacing:
        """Limits from scored runs: per phase, the most turns of it in any successful run, kept when at
        least `min_successes` runs succeeded and some failed run went past it. `exempt` phases get no limit
        (pass the phases of the tools that finish a run)."""
        wins: list[Counter[str]] = []
        losses: list[Counter[str]] = []
        for trajectory in trajectories:
            (wins if success(trajectory) else losses).append(phase_counts(trajectory, exempt))
        limits: dict[str, int] = {}
        evidence: dict[str, Any] = {"successes": len(wins), "failures": len(losses)}
        if len(wins) >= min_successes:
            for phase in sorted({p for c in wins + losses for p in c}):
                most = max(c[phase] for c in wins)
                over = sum(1 for c in losses if c[phase] > most)
                if most >= 1 and over:
                    limits[phase] = most
                    evidence[phase] = {"most_in_a_success": most, "failures_past_it": over,
                                       "successes_by_count": dict(sorted(Counter(c[phase] for c in wins).items()))}
        return cls(limits, evidence)

    # -- files --------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the limits and their evidence as JSON (atomically)."""
        return write_artefact(path, KIND, {"version": VERSION, "limits": self.limits, "evidence": self.evidence})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Pacing:
        """Read limits saved by `save`; a missing or malformed file is a clear error."""
        data = read_artefact(path, KIND, "pacing file", "agentkit.memory.pacing.Pacing.save", "limits")
        return cls(data["limits"], data.get("evidence"))

    # -- the Extension protocol and its review hook ---------------------------------------------------
    def before_run(self, run: RunContext) -> None:
        """Nothing before the run: pacing acts on replies."""

    def after_run(self, run: RunContext) -> None:
        """Nothing after it: limits are learned by `fit`, not run by run."""

    def review(self, run: RunContext, reply: Message) -> str | None:
        """Decline the reply when its phase has now had more turns than its limit."""
        turns = [t for t in run.trajectory.turns if t.context == "main"]  # the reply's own turn is the last
        if not turns:
            return None
        phase = turns[-1].phase
        limit = self.limits.get(phase)
        made = sum(1 for t in turns if t.phase == phase)
        if limit is None or made <= limit:
            return None
        declined = list(run.trajectory.extras.get(self.name, {}).get("declined", []))
        run.record(self.name, {"limits": self.limits, "declined": [*declined, turns[-1].index]})
        return (f"runs that succeeded at tasks like this one made at most {limit} {phase} call"
                f"{'s' if limit != 1 else ''}, and this run has made {made - 1}. Finish with what you have found "
                "so far.")

    def __repr__(self) -> str:
        return f"Pacing({self.limits})"
