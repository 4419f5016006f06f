"""Evaluation reports: results as JSON, a Markdown summary and a self-contained HTML page of every run."""

from __future__ import annotations

import html
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit.evaluation import RESULTS_SCHEMA_VERSION, EvalRun
from agentkit.messages import Message
from agentkit.models.cost import format_cost
from agentkit.records import MAP
from agentkit.trajectory import Trajectory


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
    cmap = t.records.get(MAP)
    if cmap is not None:
        parts.append(f"<h4>Cognitive map</h4><pre>{_e(json.dumps(cmap.model_dump(mode='json'), indent=1))}</pre>")
    extras = {k: v for k, v in t.extras.items() if k != MAP.name}
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
