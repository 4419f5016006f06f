"""Evaluate agent configurations on an environment; write results as JSON, Markdown and HTML.

    env = ToolUseEnvironment.sample()
    runs = [evaluate(env, EvalConfig("react", lambda tools: Agent(model, tools))),
            evaluate(env, EvalConfig("map-then-act", lambda tools: Agent(model, tools, planner="map-then-act")))]
    write_report(runs, "eval-out")        # results.json, results.md, report.html

Each task is one episode (`agentkit.environments.base.run_episode`): a fresh agent, the episode's
tools, the episode's scorer as reward function. Tasks run in worker threads (`concurrency`); a task
that raises is recorded as a failure with its error, never ends the evaluation.
"""

from __future__ import annotations

import html
import json
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, computed_field

from agentkit.cost import format_cost
from agentkit.environments.base import AgentFactory, Environment, Task, run_episode, succeeded
from agentkit.messages import Message
from agentkit.planning import EXPLORE_SYSTEM, MAP_SYSTEM
from agentkit.testing import FunctionModel
from agentkit.trajectory import Trajectory, append_jsonl

RESULTS_SCHEMA_VERSION = 1


@dataclass
class EvalConfig:
    """One configuration under evaluation: a label and how to build the agent for an episode."""

    label: str
    agent_factory: AgentFactory


class TaskResult(BaseModel):
    """The outcome of one task under one configuration."""

    task_id: str
    config: str
    success: bool = False
    reward: float | None = None
    rewards: dict[str, float] = Field(default_factory=dict)
    steps: int = 0
    turns: int = 0
    phases: dict[str, int] = Field(default_factory=dict)
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    wall_s: float = 0.0
    stop_reason: str = ""
    answer: str | None = None
    error: str | None = None
    trajectory_id: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tokens(self) -> int:
        """Input plus output tokens of every model call of the task."""
        return self.input_tokens + self.output_tokens


class EvalRun(BaseModel):
    """All task results of one configuration on one environment (trajectories kept in memory only)."""

    schema_version: int = RESULTS_SCHEMA_VERSION
    config: str
    environment: str
    model: str = ""
    started_at: float = Field(default_factory=time.time)
    wall_s: float = 0.0
    results: list[TaskResult] = Field(default_factory=list)
    trajectories: dict[str, Trajectory] = Field(default_factory=dict, exclude=True)

    def summary(self) -> dict[str, Any]:
        """Success rate, mean reward, per-task means of steps, tokens and wall time, and the total cost
        (US dollars, None when no model call had a known price)."""
        rs = self.results
        if not rs:
            return {"config": self.config, "tasks": 0}

        def mean(values: list[float]) -> float:
            return round(statistics.fmean(values), 4) if values else 0.0

        return {
            "config": self.config,
            "tasks": len(rs),
            "success_rate": mean([float(r.success) for r in rs]),
            "mean_reward": mean([r.reward or 0.0 for r in rs]),
            "mean_steps": mean([float(r.steps) for r in rs]),
            "mean_tokens": mean([float(r.tokens) for r in rs]),
            "mean_wall_s": mean([r.wall_s for r in rs]),
            "cost_usd": round(sum(costs), 6) if (costs := [r.cost_usd for r in rs if r.cost_usd is not None]) else None,
            "errors": sum(r.error is not None for r in rs),
        }


def result_of(task: Task, config: str, trajectory: Trajectory) -> TaskResult:
    """Summarise a scored trajectory as a `TaskResult`."""
    phases: dict[str, int] = {}
    for turn in trajectory.turns:
        phases[turn.phase] = phases.get(turn.phase, 0) + 1
    usage = trajectory.usage
    return TaskResult(
        task_id=task.id, config=config, success=succeeded(trajectory), reward=trajectory.reward,
        rewards=dict(trajectory.rewards), steps=sum(t.context == "main" for t in trajectory.turns),
        turns=len(trajectory.turns), phases=phases,
        tool_calls=sum(len(m.tool_calls) for m in trajectory.messages if m.role == "assistant"),
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost_usd=usage.cost_usd,
        wall_s=round(trajectory.duration_s, 4),
        stop_reason=trajectory.stop_reason, answer=trajectory.answer, trajectory_id=trajectory.id,
    )


def evaluate(
    env: Environment,
    config: EvalConfig,
    *,
    tasks: Sequence[Task] | None = None,
    concurrency: int = 1,
    log: str | Path | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
) -> EvalRun:
    """Run every task (default: all of the environment's) under one configuration.

    Args:
        env: the environment.
        config: label and agent factory.
        tasks: a subset of tasks to run.
        concurrency: worker threads running episodes at once.
        log: a JSONL file each trajectory is appended to as it finishes.
        on_result: called (from the worker thread) after each task, e.g. to advance a progress bar.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    todo = list(tasks if tasks is not None else env.tasks())
    run = EvalRun(config=config.label, environment=env.name)
    started = time.perf_counter()
    lock = threading.Lock()
    results: dict[int, TaskResult] = {}

    def one(i: int, task: Task) -> None:
        t0 = time.perf_counter()
        try:
            trajectory = run_episode(config.agent_factory, env, task, metadata={"config": config.label})
            result = result_of(task, config.label, trajectory)
            result.wall_s = round(time.perf_counter() - t0, 4)  # the whole episode, environment set-up included
        except Exception as exc:  # a broken episode is a failed task, not a failed evaluation
            trajectory = None
            result = TaskResult(task_id=task.id, config=config.label, error=f"{type(exc).__name__}: {exc}",
                                wall_s=round(time.perf_counter() - t0, 4), stop_reason="error")
        with lock:
            results[i] = result
            if trajectory is not None:
                run.trajectories[task.id] = trajectory
                run.model = run.model or trajectory.model
                if log is not None:
                    append_jsonl(log, trajectory)
        if on_result is not None:
            on_result(result)

    if concurrency == 1:
        for i, task in enumerate(todo):
            one(i, task)
    else:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="agentkit-eval") as pool:
            for future in as_completed([pool.submit(one, i, t) for i, t in enumerate(todo)]):
                future.result()
    run.results = [results[i] for i in range(len(todo))]
    run.wall_s = round(time.perf_counter() - started, 4)
    return run


# -- a scripted upper bound -----------------------------------------------------------------------

ScriptFor = Callable[[Task], Sequence[Message | str]]

ORACLE_PRIORS = "- (oracle) the expected actions are known; no exploration needed."
ORACLE_MAP = '{"subgoals": [{"goal": "carry out the expected actions"}], "unknowns": []}'


def oracle_model(tasks: Sequence[Task], script_for: ScriptFor, name: str = "oracle") -> FunctionModel:
    """A scripted "oracle-policy" model: for each task it replays `script_for(task)` (the expected actions,
    then a final reply), whatever the planner. Its score is the upper bound the harness allows: anything
    below 100% is a bug in the environment's reward code or the harness."""
    scripts = {t.id: list(script_for(t)) for t in tasks}
    by_prompt = sorted(tasks, key=lambda t: len(t.prompt), reverse=True)

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> Message | str:
        system = messages[0].content if messages and messages[0].role == "system" else ""
        if system.startswith(EXPLORE_SYSTEM):
            return ORACLE_PRIORS
        if system.startswith(MAP_SYSTEM):
            return ORACLE_MAP
        first_user = next((m.content for m in messages if m.role == "user"), "")
        task = next((t for t in by_prompt if t.prompt and t.prompt in first_user), None)
        if task is None:
            raise LookupError("oracle: the conversation matches no known task")
        step = sum(m.role == "assistant" for m in messages)
        script = scripts[task.id]
        return script[min(step, len(script) - 1)]

    return FunctionModel(reply, name=name)


def sql_oracle_script(env: Any) -> ScriptFor:
    """The oracle policy of a text-to-SQL environment: the four phases with the gold SQL —
    list_tables, propose_schema (the gold query's tables and columns), run_query, confirm_answer."""
    from agentkit.messages import ToolCall

    def script(task: Task) -> list[Message | str]:
        gold_sql = task.data["gold_sql"]
        _, items = env.gold(task)
        schema = env.database(task).schema()
        names = {t.lower(): t for t in schema}
        tables = sorted(names.get(t, t) for t in items.tables)
        columns: dict[str, list[str]] = {}
        for item in sorted(items.columns):
            table, _, column = item.partition(".")
            real = names.get(table, table)
            spelled = next((c for c in schema.get(real, []) if c.lower() == column), column)
            columns.setdefault(real, []).append(spelled)

        def step(name: str, **arguments: Any) -> Message:
            return Message.assistant(tool_calls=[ToolCall(name=name, arguments=arguments)])

        return [step("list_tables"), step("propose_schema", tables=tables, columns=columns),
                step("run_query", sql=gold_sql), step("confirm_answer", sql=gold_sql)]

    return script


def oracle_script_for(env: Any) -> ScriptFor:
    """The oracle policy an environment offers (`env.oracle_script`), or the SQL one for text-to-SQL."""
    if callable(getattr(env, "oracle_script", None)):
        return env.oracle_script  # type: ignore[no-any-return]
    if callable(getattr(env, "gold", None)) and callable(getattr(env, "database", None)):
        return sql_oracle_script(env)
    raise ValueError(f"environment {getattr(env, 'name', env)!r} has no oracle policy (oracle_script)")


# -- reports --------------------------------------------------------------------------------------


def write_report(
    runs: Sequence[EvalRun], out_dir: str | Path, *, title: str = "agentkit evaluation"
) -> dict[str, Path]:
    """Write results.json, results.md and a self-contained report.html for one or more runs."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "markdown": out / "results.md", "html": out / "report.html"}
    data = {"schema_version": RESULTS_SCHEMA_VERSION, "title": title,
            "summary": [r.summary() for r in runs], "runs": [r.model_dump() for r in runs]}
    paths["json"].write_text(json.dumps(data, indent=1, ensure_ascii=False))
    paths["markdown"].write_text(markdown_report(runs, title=title))
    paths["html"].write_text(html_report(runs, title=title))
    return paths


_SUMMARY_COLUMNS = [("config", "config"), ("tasks", "tasks"), ("success_rate", "success"),
                    ("mean_reward", "mean reward"), ("mean_steps", "steps/task"), ("mean_tokens", "tokens/task"),
                    ("mean_wall_s", "wall s/task"), ("cost_usd", "cost"), ("errors", "errors")]


def _fmt(value: Any, key: str = "") -> str:
    if key == "success_rate" and isinstance(value, int | float):
        return f"{value:.1%}"
    if key == "cost_usd" and (value is None or isinstance(value, int | float)):
        return format_cost(value)
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def _task_rows(runs: Sequence[EvalRun]) -> list[str]:
    ids: list[str] = []
    for r in runs:
        ids += [x.task_id for x in r.results if x.task_id not in ids]
    return ids


def markdown_report(runs: Sequence[EvalRun], *, title: str = "agentkit evaluation") -> str:
    """The results as Markdown: a summary table per configuration, then tasks side by side."""
    env = ", ".join(sorted({r.environment for r in runs}))
    models = ", ".join(sorted({r.model for r in runs if r.model}))
    lines = [f"# {title}", "", f"Environment: {env}. Model: {models or '-'}.", ""]
    lines.append("| " + " | ".join(h for _, h in _SUMMARY_COLUMNS) + " |")
    lines.append("|" + "---|" * len(_SUMMARY_COLUMNS))
    for r in runs:
        s = r.summary()
        lines.append("| " + " | ".join(_fmt(s.get(k, ""), k) for k, _ in _SUMMARY_COLUMNS) + " |")
    lines += ["", "## Per task (success / reward / steps / tokens / wall s)", ""]
    lines.append("| task | " + " | ".join(r.config for r in runs) + " |")
    lines.append("|---|" + "---|" * len(runs))
    index = [{x.task_id: x for x in r.results} for r in runs]
    for task_id in _task_rows(runs):
        cells = []
        for by_id in index:
            x = by_id.get(task_id)
            if x is None:
                cells.append("")
            elif x.error:
                cells.append(f"error: {x.error[:60]}")
            else:
                cells.append(f"{'✓' if x.success else '✗'} {_fmt(x.reward or 0.0)} / {x.steps} / {x.tokens} / "
                             f"{x.wall_s:.2f}")
        lines.append(f"| {task_id} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
th{background:#f3f3f3}.ok{color:#080;font-weight:bold}.bad{color:#b00;font-weight:bold}
details{border:1px solid #ddd;border-radius:4px;margin:.4em 0;padding:.3em .6em}summary{cursor:pointer}
pre{white-space:pre-wrap;background:#f8f8f8;padding:.5em;margin:.3em 0;max-height:30em;overflow:auto}
.msg{margin:.4em 0;padding-left:.6em;border-left:3px solid #ccc}.assistant{border-color:#36c}
.tool{border-color:#c93}.user{border-color:#393}.system{border-color:#999}
.phase{display:inline-block;background:#eef;border-radius:3px;padding:0 5px;font-size:12px;margin-right:4px}"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _anchor(config: str, task_id: str) -> str:
    return "t-" + "".join(c if c.isalnum() else "-" for c in f"{config}-{task_id}")


def _message_html(m: Message, phase: str | None = None) -> str:
    badge = f'<span class="phase">{_e(phase)}</span>' if phase else ""
    head = f"<b>{_e(m.role)}</b>" + (f" ← {_e(m.name)}" if m.name else "") + (" (error)" if m.is_error else "")
    body = f"<pre>{_e(m.content)}</pre>" if m.content else ""
    calls = "".join(f"<pre>→ {_e(c.name)}({_e(json.dumps(c.arguments, ensure_ascii=False))})</pre>"
                    for c in m.tool_calls)
    note = f"<pre>parse error: {_e(m.parse_error)}</pre>" if m.parse_error else ""
    return f'<div class="msg {_e(m.role)}">{badge}{head}{body}{calls}{note}</div>'


def _trajectory_html(t: Trajectory) -> str:
    parts = [f"<p><b>reward</b> {_e(t.reward)} {_e(json.dumps(t.rewards))} · <b>stop</b> {_e(t.stop_reason)} · "
             f"<b>tokens</b> {t.usage.input_tokens}+{t.usage.output_tokens} · <b>cost</b> "
             f"{format_cost(t.usage.cost_usd)} · <b>wall</b> {t.duration_s:.2f}s</p>"]
    side = [turn for turn in t.turns if turn.context != "main"]
    if side:
        parts.append("<h4>Before acting</h4>")
        for turn in side:
            tail = [m for m in (turn.input or []) if m.role == "tool"][-4:]
            parts += [_message_html(m) for m in tail]
            parts.append(_message_html(turn.output, turn.phase))
    if "map" in t.extras:
        parts.append(f"<h4>Cognitive map</h4><pre>{_e(json.dumps(t.extras['map'], indent=1))}</pre>")
    extras = {k: v for k, v in t.extras.items() if k != "map"}
    if extras:
        parts.append(f"<details><summary>extras</summary><pre>{_e(json.dumps(extras, indent=1, default=str))}"
                     "</pre></details>")
    parts.append("<h4>Conversation</h4>")
    phase_at = {turn.n_input: turn.phase for turn in t.turns if turn.context == "main"}
    for i, m in enumerate(t.messages):
        parts.append(_message_html(m, phase_at.get(i) if m.role == "assistant" else None))
    return "".join(parts)


def html_report(runs: Sequence[EvalRun], *, title: str = "agentkit evaluation") -> str:
    """A self-contained HTML page: summary, tasks side by side, and each task's trajectory to drill into."""
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
           f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1>"]
    env = ", ".join(sorted({r.environment for r in runs}))
    models = ", ".join(sorted({r.model for r in runs if r.model}))
    out.append(f"<p>Environment <b>{_e(env)}</b> · model <b>{_e(models or '-')}</b> · "
               f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}</p>")
    out.append("<table><tr>" + "".join(f"<th>{_e(h)}</th>" for _, h in _SUMMARY_COLUMNS) + "</tr>")
    for r in runs:
        s = r.summary()
        out.append("<tr>" + "".join(f"<td>{_e(_fmt(s.get(k, ''), k))}</td>" for k, _ in _SUMMARY_COLUMNS) + "</tr>")
    out.append("</table><h2>Tasks</h2><table><tr><th>task</th>"
               + "".join(f"<th>{_e(r.config)}</th>" for r in runs) + "</tr>")
    index = [{x.task_id: x for x in r.results} for r in runs]
    for task_id in _task_rows(runs):
        out.append(f"<tr><td>{_e(task_id)}</td>")
        for r, by_id in zip(runs, index, strict=True):
            x = by_id.get(task_id)
            if x is None:
                out.append("<td></td>")
                continue
            mark = "<span class='ok'>✓</span>" if x.success else "<span class='bad'>✗</span>"
            out.append(f"<td>{mark} <a href='#{_anchor(r.config, task_id)}'>{_e(_fmt(x.reward or 0.0))}</a> · "
                       f"{x.steps} steps · {x.tokens} tok · {x.wall_s:.2f}s</td>")
        out.append("</tr>")
    out.append("</table>")
    for r in runs:
        out.append(f"<h2>{_e(r.config)}</h2>")
        for x in r.results:
            mark = "✓" if x.success else "✗"
            out.append(f"<details id='{_anchor(r.config, x.task_id)}'><summary>{mark} {_e(x.task_id)} — reward "
                       f"{_e(_fmt(x.reward or 0.0))}, {x.steps} steps, {x.tokens} tokens, {x.wall_s:.2f}s"
                       f"</summary>")
            t = r.trajectories.get(x.task_id)
            if x.error:
                out.append(f"<pre>{_e(x.error)}</pre>")
            if t is not None:
                out.append(f"<p><b>task</b></p><pre>{_e(t.task)}</pre><p><b>answer</b></p><pre>{_e(t.answer)}</pre>")
                out.append(_trajectory_html(t))
            out.append("</details>")
    out.append("<script>if(location.hash){const d=document.querySelector(location.hash);if(d)d.open=true}"
               "document.querySelectorAll('a[href^=\"#t-\"]').forEach(a=>a.onclick=()=>{"
               "const d=document.querySelector(a.getAttribute('href'));if(d)d.open=true})</script>")
    out.append("</body></html>")
    return "\n".join(out)
