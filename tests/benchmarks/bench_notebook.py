"""Mistake Notebook Learning on easy Chinook SQL tasks with the embedded model.

Success (execution match) before learning, after one learn step and after three, and the retrieval
latency the notebook adds per task. The agent is `local:smollm2-135m` (greedy, short replies); the
analyst is scripted by default: it labels each failure by the shape of the task's gold SQL and writes
the note from that gold SQL (an oracle analyst: the notes are as good as notes can be, so what is
measured is whether the small model can use them). `--analyst local:smollm2-135m` uses the model itself.

    python tests/benchmarks/bench_notebook.py --tasks 5 --out bench-out/notebook.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SUBJECTS = {
    "count": ("Questions like how many tracks, customers or albums are there, over the Chinook music store "
              "database: count the rows of the one table named, with SELECT COUNT(*) FROM that table"),
    "filter": ("Questions like which customers or employees live in a country or have a title, over the Chinook "
               "music store database: SELECT the asked columns FROM the table WHERE the condition holds"),
    "aggregate": ("Questions like what is the total, average, longest or largest value, over the Chinook music "
                  "store database: SUM, AVG, MIN or MAX, or ORDER BY the column with LIMIT 1"),
    "other": ("Questions like list the names of all genres or media types, over the Chinook music store "
              "database: SELECT the asked column FROM the table the question names"),
}


def shape(sql: str) -> str:
    s = sql.upper()
    if "COUNT(" in s:
        return "count"
    if any(f in s for f in ("SUM(", "AVG(", "MIN(", "MAX(")):
        return "aggregate"
    if " WHERE " in s:
        return "filter"
    if "ORDER BY" in s:
        return "aggregate"
    return "other"


def scripted_analyst(tasks: Sequence[Any]) -> Any:
    """Labels by gold-SQL shape; writes the note from the gold SQL of the cases it is shown."""
    from agentkit.testing import FunctionModel

    gold = {t.prompt: t.data["gold_sql"] for t in tasks}

    def reply(messages: Sequence[Any], tools: Sequence[Any]) -> str:
        prompt = messages[1].content
        case_tasks = [p for p in gold if p in prompt]
        if "Name the subject" in prompt:
            return json.dumps({"subject": SUBJECTS[shape(gold[case_tasks[0]])]})
        examples = [f"{p} -> call confirm_answer with: {gold[p]}" for p in case_tasks[:3]] or ["(none)"]
        return json.dumps({
            "corrected_examples": examples,
            "correct_approach": "Call run_query with one SELECT over the table the question names, check the rows, "
                                "then call confirm_answer with that exact SQL.",
            "mistake_summary": "The agent answered in prose instead of running and confirming an SQL query.",
            "generalisable_strategy": "Every answer must be a confirmed SQL query; write the SELECT first.",
            "anti_patterns": ["answering with a number or sentence without calling confirm_answer",
                              "guessing table names that were not listed"],
        })

    return FunctionModel(reply, name="scripted-analyst")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local:smollm2-135m")
    parser.add_argument("--analyst", default="scripted")
    parser.add_argument("--tasks", type=int, default=5, help="easy Chinook tasks (at most 10)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--max-steps", type=int, default=2, help="model turns per run")
    parser.add_argument("--threshold", type=float, default=0.7, help="task-subject cosine to show a note")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from agentkit.environments.sql import SQLEnvironment
    from agentkit.memory.embeddings import Embedder
    from agentkit.memory.notebook import MistakeNotebook
    from agentkit.models import resolve_model
    from agentkit.models.protocol import GenerationSettings
    from agentkit.sql import sql_agent

    env = SQLEnvironment.chinook()
    tasks = [t for t in env.tasks() if t.data.get("difficulty") == "easy"][: min(args.tasks, 10)]
    t0 = time.perf_counter()
    model = resolve_model(args.model)
    load_s = time.perf_counter() - t0
    settings = GenerationSettings(max_tokens=args.max_tokens, temperature=0.0)
    analyst = scripted_analyst(tasks) if args.analyst == "scripted" else resolve_model(args.analyst)
    embedder = Embedder.default()
    embedder.embed(["warm up"])
    episodes: dict[str, Any] = {}

    def agent_for(task: Any) -> Any:
        episodes[task.id] = env.reset(task)
        return sql_agent(model, episodes[task.id].toolkit, planner="react", schema="hidden", max_steps=args.max_steps,
                         settings=settings)

    latencies: list[float] = []
    shown: list[int] = []

    def reward_fn(task: Any, trajectory: Any) -> float:
        latencies.append(trajectory.extras.get("notes_retrieval_s", 0.0))
        shown.append(len(trajectory.extras.get("notes", [])))
        episode = episodes.pop(task.id)
        try:
            return float(episode.score(trajectory)["execution"] == 1.0)
        finally:
            episode.close()

    with tempfile.TemporaryDirectory() as home:
        book = MistakeNotebook.open(Path(home) / "notes", embedder, threshold=args.threshold)
        steps: list[dict[str, Any]] = []
        previous = None
        started = time.perf_counter()
        for step in range(1, args.steps + 1):
            t1 = time.perf_counter()
            report = book.learn(tasks, reward_fn, agent_for, analyst=analyst, baseline_results=previous,
                                analyst_settings=GenerationSettings(max_tokens=384, temperature=0.0))
            previous = report.results
            steps.append({"step": step, "success_before": report.success_before,
                          "success_after": report.success_after, "wins": report.wins, "ties": report.ties,
                          "losses": report.losses, "failures": report.failures, "clusters": len(report.clusters),
                          "notes_added": len(report.notes_added), "notes_merged": len(report.notes_merged),
                          "accepted": report.accepted, "rolled_back": report.rolled_back,
                          "notes_in_book": len(book), "skipped": report.skipped,
                          "seconds": round(time.perf_counter() - t1, 1)})
            print(json.dumps(steps[-1]), flush=True)
        # Retrieval latency with the final notebook, on the same tasks (no model involved).
        probe = []
        for task in tasks:
            t2 = time.perf_counter()
            book.search(task.prompt)
            probe.append(time.perf_counter() - t2)
        cos = [max((s for _, s in book.search(t.prompt, k=3, threshold=-1.0)), default=None) for t in tasks]

    result = {
        "model": args.model, "analyst": args.analyst, "tasks": [t.id for t in tasks],
        "max_tokens": args.max_tokens, "max_steps": args.max_steps, "threshold": args.threshold,
        "model_load_s": round(load_s, 1), "total_s": round(time.perf_counter() - started, 1),
        "success_before": steps[0]["success_before"],
        "success_after_1_step": steps[0]["success_after"] if steps[0]["accepted"] else steps[0]["success_before"],
        "success_after_3_steps": (steps[-1]["success_after"] if steps[-1]["accepted"] else steps[-1]["success_before"])
        if len(steps) >= 3 else None,
        "steps": steps,
        "runs_with_notes_shown": sum(1 for n in shown if n), "runs": len(shown),
        "retrieval_ms_per_run_median": round(1000 * statistics.median(latencies), 2) if latencies else None,
        "retrieval_ms_per_task_final_book_median": round(1000 * statistics.median(probe), 2),
        "best_subject_cosine_per_task": [None if c is None else round(c, 3) for c in cos],
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
        md = args.out.with_suffix(".md")
        md.write_text(
            f"# Mistake notebook on {len(tasks)} easy Chinook tasks ({args.model}, analyst {args.analyst})\n\n"
            f"| | success |\n|---|---|\n| before | {result['success_before']:.0%} |\n"
            f"| after 1 step | {result['success_after_1_step']:.0%} |\n"
            + (f"| after 3 steps | {result['success_after_3_steps']:.0%} |\n"
               if result["success_after_3_steps"] is not None else "")
            + f"\nRetrieval latency per run: median {result['retrieval_ms_per_run_median']} ms.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
