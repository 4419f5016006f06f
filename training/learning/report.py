"""What a learning run reports: held-out scores with Wilson intervals, costs per phase, the learning curve,
the held-out tasks that flipped and what their runs were shown or used, and the files it writes
(summary.json, report.html, learning_curve.png)."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentkit.evaluation import EvalRun
from agentkit.records import EXPERIENCE, NOTES, SKILLS
from agentkit.sql.rewards import FIXES
from agentkit.sql.toolkit import UNORDERED_LIMIT
from agentkit.trajectory import Trajectory

REPORT_SCHEMA_VERSION = 2  # 2: flips


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a success rate (95% by default); (0, 1) when n is 0.

    centre = (p + z²/2n) / (1 + z²/n), half-width = z·sqrt(p(1−p)/n + z²/4n²) / (1 + z²/n).
    """
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


class Score(BaseModel):
    """One evaluation of the agent on a task set (greedy decoding)."""

    label: str
    environment: str
    tasks: int
    successes: int
    success_rate: float
    ci_low: float
    ci_high: float
    mean_reward: float = 0.0
    errors: int = 0
    per_task: dict[str, bool] = Field(default_factory=dict)
    minutes: float = 0.0
    tokens: int = 0
    same_as: str | None = None  # not run: the agent was unchanged since this evaluation, whose results these are
    why_same: str | None = None

    @classmethod
    def of(cls, label: str, run: EvalRun, *, minutes: float, tokens: int) -> Score:
        """Summarise an `EvalRun` (a task that raised counts as a failure)."""
        n = len(run.results)
        wins = sum(r.success for r in run.results)
        low, high = wilson_interval(wins, n)
        mean = sum(r.reward or 0.0 for r in run.results) / n if n else 0.0
        return cls(label=label, environment=run.environment, tasks=n, successes=wins,
                   success_rate=round(wins / n, 4) if n else 0.0, ci_low=round(low, 4), ci_high=round(high, 4),
                   mean_reward=round(mean, 4), errors=sum(r.error is not None for r in run.results),
                   per_task={r.task_id: r.success for r in run.results}, minutes=round(minutes, 3), tokens=tokens)


class PhaseCost(BaseModel):
    """Wall-clock minutes, model tokens and episodes one phase spent."""

    phase: str
    minutes: float = 0.0
    tokens: int = 0
    episodes: int = 0


class CurvePoint(BaseModel):
    """Held-out success after some learning: learning minutes and tokens spent so far."""

    label: str
    minutes: float
    tokens: int
    success_rate: float
    ci_low: float
    ci_high: float


class Flip(BaseModel):
    """A held-out task solved in one evaluation and not in the other, and what its run in the later one was
    shown or used (`artefacts_used`; empty: nothing learned acted on the run, so the flip is the engine's
    run-to-run difference, not a learned artefact's doing)."""

    task: str
    before: str  # the earlier evaluation's label
    after: str  # the later evaluation's label, where the task flipped
    became: Literal["right", "wrong"]
    artefacts: list[str] = Field(default_factory=list)
    use: str | None = None  # with examples shown: the confirmed query "copied" one, "adapted" one, or is its "own"


def artefacts_used(trajectory: Trajectory, *, adapter: bool = False) -> list[str]:
    """What a run was shown or used, from its records: "example ID" (experience), "skill NAME", "note ID",
    "check SLIP" (a shape check fixed its query), "pacing" (a reply declined), "repair KIND", "adapter" (when
    `adapter`: the model ran with the learned adapter), and "limit check (toolkit)" when the SQL toolkit's
    static check (not learned) refused a query."""
    used: list[str] = []
    experience = trajectory.records.get(EXPERIENCE)
    if experience is not None:
        used += [f"example {s.id}" for s in experience.shown]
    skills = trajectory.records.get(SKILLS)
    if skills is not None and skills.used:
        used.append(f"skill {skills.used}")
    notes = trajectory.records.get(NOTES)
    if notes is not None:
        used += [f"note {n.id}" for n in notes.root]
    extras = trajectory.extras
    used += [f"check {f.get('slip', '?')}" for f in extras.get(FIXES, {}).get("fixed", []) if isinstance(f, dict)]
    if extras.get("pacing", {}).get("declined"):
        used.append("pacing")
    used += [f"repair {r.get('kind', '?')}" for r in extras.get("repairs", {}).get("shown", []) if isinstance(r, dict)]
    if any(m.role == "tool" and m.is_error and UNORDERED_LIMIT in m.content for m in trajectory.messages):
        used.append("limit check (toolkit)")
    if adapter:
        used.append("adapter")
    return list(dict.fromkeys(used))


def flipped(before: Score, after: Score, runs: Mapping[str, Trajectory], *, adapter: bool = False) -> list[Flip]:
    """The tasks of `after` whose outcome differs from `before`'s, each attributed to what its run in `after`
    (`runs`, by task id) was shown or used."""
    out = []
    for task, solved in after.per_task.items():
        if task not in before.per_task or before.per_task[task] == solved:
            continue
        run = runs.get(task)
        record = run.records.get(EXPERIENCE) if run is not None else None
        out.append(Flip(task=task, before=before.label, after=after.label, became="right" if solved else "wrong",
                        artefacts=artefacts_used(run, adapter=adapter) if run is not None else
                        (["adapter"] if adapter else []),
                        use=record.use if record is not None else None))
    return out


class LearningReport(BaseModel):
    """The result of `learn`: held-out success before and after, on the unseen set, costs and artefacts."""

    schema_version: int = REPORT_SCHEMA_VERSION
    environment: str
    model: str
    methods: list[str]
    seed: int
    planner: str = "react"  # how the agent acted in every evaluation: "react", or "draft:VOTES" (`learn(planner=)`)
    budget_minutes: float | None = None
    budget_episodes: int | None = None
    train_tasks: list[str]
    heldout_tasks: list[str]
    validation_tasks: list[str] = Field(default_factory=list)  # train tasks kept from learning to check methods
    before: Score
    after: Score
    evaluations: list[Score] = Field(default_factory=list)
    validation: list[Score] = Field(default_factory=list)  # validation-before, then validation-METHOD per check
    set_aside: list[Score] = Field(default_factory=list)  # set-aside-METHOD: held-out with a set-aside method
    unseen_before: Score | None = None
    unseen_after: Score | None = None
    costs: list[PhaseCost] = Field(default_factory=list)
    curve: list[CurvePoint] = Field(default_factory=list)
    details: dict[str, dict[str, Any]] = Field(default_factory=dict)
    artefacts: dict[str, str] = Field(default_factory=dict)
    trajectories: list[str] = Field(default_factory=list)
    flips: list[Flip] = Field(default_factory=list)  # held-out tasks that flipped between consecutive evaluations

    @property
    def delta(self) -> float:
        """Held-out success after minus before (points of rate, e.g. 0.1 = ten points)."""
        return round(self.after.success_rate - self.before.success_rate, 4)

    @property
    def unseen_delta(self) -> float | None:
        """Success on the unseen split after minus before (None without that split)."""
        if self.unseen_before is None or self.unseen_after is None:
            return None
        return round(self.unseen_after.success_rate - self.unseen_before.success_rate, 4)

    def learning_cost(self) -> PhaseCost:
        """The learning phases together (evaluations excluded)."""
        learning = [c for c in self.costs if c.phase.startswith("learn-")]
        return PhaseCost(phase="learning", minutes=round(sum(c.minutes for c in learning), 3),
                         tokens=sum(c.tokens for c in learning), episodes=sum(c.episodes for c in learning))

    def table_row(self) -> str:
        """method | before | after | Δ | unseen DB (before → after) | minutes | tokens — as Markdown."""
        cost = self.learning_cost()
        unseen = "-" if self.unseen_delta is None else (
            f"{_pct(self.unseen_before.success_rate)} → {_pct(self.unseen_after.success_rate)} "  # type: ignore[union-attr]
            f"({self.unseen_delta * 100:+.1f})")
        return (f"| {'+'.join(self.methods)} | {_score_text(self.before)} | {_score_text(self.after)} | "
                f"{self.delta * 100:+.1f} | {unseen} | {cost.minutes:.1f} | {cost.tokens} |")


def _pct(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def _score_text(s: Score) -> str:
    return f"{_pct(s.success_rate)} [{_pct(s.ci_low)}, {_pct(s.ci_high)}] (n={s.tasks})"


TABLE_HEADER = ("| method | held-out success before | after | Δ (points) | unseen DB before → after | "
                "learning minutes | learning tokens |\n|---|---|---|---|---|---|---|")


# -- files ----------------------------------------------------------------------------------------


def write_summary(report: LearningReport, out: Path) -> Path:
    """Write the report (with its deltas and learning cost) as summary.json in `out`; returns the path."""
    path = out / "summary.json"
    data = {**report.model_dump(mode="json"), "delta": report.delta, "unseen_delta": report.unseen_delta,
            "learning_cost": report.learning_cost().model_dump()}
    path.write_text(json.dumps(data, indent=1))
    return path


def plot_curve(report: LearningReport, out: Path) -> Path | None:
    """Held-out success (with its Wilson interval) against learning minutes and learning tokens.
    None when matplotlib (the `train` extra) is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    points = report.curve
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, key, xlabel in ((axes[0], "minutes", "learning minutes"), (axes[1], "tokens", "learning tokens")):
        xs = [getattr(p, key) for p in points]
        ys = [100 * p.success_rate for p in points]
        lows = [100 * (p.success_rate - p.ci_low) for p in points]
        highs = [100 * (p.ci_high - p.success_rate) for p in points]
        ax.errorbar(xs, ys, yerr=[lows, highs], marker="o", capsize=3)
        for i, (p, x, y) in enumerate(zip(points, xs, ys, strict=True)):  # staggered: points may coincide
            ax.annotate(p.label, (x, y), textcoords="offset points", xytext=(4, 6 + 11 * (i % 4)), fontsize=8)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"held-out success % (n={report.before.tasks}, 95% Wilson)")
    axes[0].set_ylim(-5, 105)
    fig.suptitle(f"{report.environment} · {report.model} · {'+'.join(report.methods)} · seed {report.seed}")
    fig.tight_layout()
    path = out / "learning_curve.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


_CSS = ("body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        "th{background:#f3f3f3}.ok{color:#080;font-weight:bold}.bad{color:#b00}")


def html_report(report: LearningReport) -> str:
    """A self-contained page: the before/after table per evaluation point, costs, and tasks side by side."""
    e = html.escape
    scores: Sequence[Score] = [report.before, *report.evaluations]
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>agentkit learn</title><style>{_CSS}</style>"
           f"</head><body><h1>agentkit learn: {e(report.environment)}</h1>",
           f"<p>Model <b>{e(report.model)}</b> · methods <b>{e(', '.join(report.methods))}</b> · seed "
           f"{report.seed} · {len(report.train_tasks)} train tasks, {len(report.validation_tasks)} validation tasks, "
           f"{len(report.heldout_tasks)} held-out tasks · "
           f"greedy decoding in every evaluation · 95% Wilson intervals.</p>",
           "<h2>Held-out success</h2><table><tr><th>evaluation</th><th>success</th><th>95% CI</th><th>Δ vs before"
           "</th><th>mean reward</th><th>errors</th><th>eval minutes</th><th>eval tokens</th></tr>"]
    for s in scores:
        out.append(f"<tr><td>{e(s.label)}</td><td>{s.successes}/{s.tasks} ({_pct(s.success_rate)})</td>"
                   f"<td>{_pct(s.ci_low)} – {_pct(s.ci_high)}</td>"
                   f"<td>{(s.success_rate - report.before.success_rate) * 100:+.1f}</td><td>{s.mean_reward:.3f}</td>"
                   f"<td>{s.errors}</td><td>{_eval_cost(s)}</td><td>{s.tokens}</td></tr>")
    out.append("</table>")
    if report.unseen_before is not None and report.unseen_after is not None:
        out.append("<h2>Unseen database (never used for learning)</h2><table><tr><th>evaluation</th><th>success"
                   "</th><th>95% CI</th></tr>")
        for s in (report.unseen_before, report.unseen_after):
            out.append(f"<tr><td>{e(s.label)}</td><td>{s.successes}/{s.tasks} ({_pct(s.success_rate)})</td>"
                       f"<td>{_pct(s.ci_low)} – {_pct(s.ci_high)}</td></tr>")
        out.append("</table>")
    if report.validation:
        out.append(f"<h2>Validation ({len(report.validation_tasks)} train tasks no method learned from)</h2><p>After "
                   "each method the agent with it is checked on these; a method with which it solves fewer than "
                   "without (or no more, for skills, notes and rl, which change every run) is set aside.</p>"
                   "<table><tr><th>evaluation</th><th>success</th></tr>")
        for s in report.validation:
            out.append(f"<tr><td>{e(s.label)}</td><td>{s.successes}/{s.tasks} ({_pct(s.success_rate)})</td></tr>")
        out.append("</table>")
    out.append("<h2>Cost per phase</h2><table><tr><th>phase</th><th>minutes</th><th>tokens</th><th>episodes</th></tr>")
    for c in report.costs:
        out.append(f"<tr><td>{e(c.phase)}</td><td>{c.minutes:.2f}</td><td>{c.tokens}</td><td>{c.episodes}</td></tr>")
    out.append("</table>")
    if report.details:
        out.append("<h2>What each method did</h2><table><tr><th>method</th><th>details</th></tr>")
        for method, detail in report.details.items():
            out.append(f"<tr><td>{e(method)}</td><td><code>{e(json.dumps(detail))}</code></td></tr>")
        out.append("</table>")
    out.append("<h2>Flipped held-out tasks</h2>")
    if report.flips:
        out.append("<p>Each task solved in one evaluation and not in the next, with what its run in the later one "
                   "was shown or used. Nothing shown or used: no learned artefact acted on the run, so the flip is "
                   "the engine's run-to-run difference.</p><table><tr><th>task</th><th>from → in</th><th>became</th>"
                   "<th>shown or used</th><th>examples</th></tr>")
        for f in report.flips:
            mark = "ok" if f.became == "right" else "bad"
            out.append(f"<tr><td>{e(f.task)}</td><td>{e(f.before)} → {e(f.after)}</td><td class='{mark}'>{f.became}"
                       f"</td><td>{e(', '.join(f.artefacts) or 'nothing learned (noise)')}</td>"
                       f"<td>{e(f.use or '-')}</td></tr>")
        out.append("</table>")
    else:
        out.append("<p>No held-out task changed outcome between evaluations.</p>")
    out.append("<h2>Learning curve</h2><img src='learning_curve.png' alt='learning curve' style='max-width:100%'>")
    out.append("<h2>Per held-out task</h2><table><tr><th>task</th>" + "".join(f"<th>{e(s.label)}</th>" for s in scores)
               + "</tr>")
    for task_id in report.heldout_tasks:
        cells = "".join("<td class='ok'>✓</td>" if s.per_task.get(task_id) else "<td class='bad'>✗</td>"
                        for s in scores)
        out.append(f"<tr><td>{e(task_id)}</td>{cells}</tr>")
    out.append("</table><h2>Files</h2><ul>")
    files = {**report.artefacts, **{f"trajectories {i}": p for i, p in enumerate(report.trajectories, 1)}}
    for name, path in files.items():
        out.append(f"<li>{e(name)}: <code>{e(path)}</code></li>")
    out.append("</ul></body></html>")
    return "\n".join(out)


def write_report_files(report: LearningReport, out: Path) -> dict[str, Path]:
    """summary.json, learning_curve.png (when matplotlib is there) and report.html in `out`."""
    paths = {"summary": write_summary(report, out)}
    png = plot_curve(report, out)
    if png is not None:
        paths["curve"] = png
    page = html_report(report)
    if png is None:
        page = page.replace("<img src='learning_curve.png' alt='learning curve' style='max-width:100%'>",
                            "<p>(install the train extra for the learning-curve PNG)</p>")
    (out / "report.html").write_text(page)
    paths["html"] = out / "report.html"
    return paths


def _eval_cost(score: Score) -> str:
    """An evaluation's minutes, or which one it repeats (not run: nothing had changed)."""
    if score.same_as is None:
        return f"{score.minutes:.2f}"
    return html.escape(f"not run ({score.why_same or 'nothing learned'}): = {score.same_as}")
