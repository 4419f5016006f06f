"""Text-to-SQL evaluation on Chinook: the oracle-policy upper bound, and the embedded model.

1. The scripted oracle policy (the four phases with the gold SQL) over the whole Chinook set, under
   react, map-then-act and the four-phase recipe: it must reach 100%, which validates the reward code
   and the harness.
2. With --embedded, the packaged SmolLM2-135M (`local:smollm2-135m`) on a subset of easy tasks under
   the same three configurations: success, tokens and wall time per task.

    python tests/benchmarks/bench_sql_eval.py                        # oracle only (seconds)
    python tests/benchmarks/bench_sql_eval.py --embedded --tasks 15  # + SmolLM2 (minutes on 2 cores)

Results go to --out (default bench-out/sql-eval): results.json, results.md, report.html per part.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CONFIGS = ("react", "map-then-act", "recipe")


def build_configs(env: Any, model: Any, *, max_steps: int, max_tokens: int | None, explore_steps: int,
                  map_steps: int, persist: bool, priors_cache: Any = None) -> list[Any]:
    from agentkit.cli.eval_cmd import agent_factory
    from agentkit.evaluation import EvalConfig
    from agentkit.models import GenerationSettings

    settings = GenerationSettings(temperature=0.0, max_tokens=max_tokens)
    return [EvalConfig(name, agent_factory(name, env, model, max_steps=max_steps, settings=settings,
                                           explore_steps=explore_steps, map_steps=map_steps,
                                           persist_priors=persist, priors_cache=priors_cache))
            for name in CONFIGS]


def run_part(title: str, env: Any, tasks: list[Any], configs: list[Any], out: Path) -> list[Any]:
    from agentkit.evaluation import evaluate
    from agentkit.evaluation.reports import write_report

    runs = []
    for config in configs:
        t0 = time.perf_counter()
        done = [0]

        def tick(result: Any, name: str = config.label, done: list[int] = done) -> None:
            done[0] += 1
            mark = "ok " if result.success else "err" if result.error else "-- "
            print(f"  [{name}] {done[0]:>3}/{len(tasks)} {mark} {result.task_id} "
                  f"reward={result.reward} steps={result.steps} tokens={result.tokens} {result.wall_s:.1f}s",
                  flush=True)

        runs.append(evaluate(env, config, tasks=tasks, log=out / f"trajectories-{config.label}.jsonl",
                             on_result=tick))
        print(f"  {config.label}: {time.perf_counter() - t0:.1f}s", flush=True)
    write_report(runs, out, title=title)
    print(f"\n{title}")
    for r in runs:
        print("  " + json.dumps(r.summary()))
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedded", action="store_true", help="also run the embedded SmolLM2-135M")
    parser.add_argument("--tasks", type=int, default=15, help="easy tasks for the embedded model")
    parser.add_argument("--difficulty", default="easy")
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--explore-steps", type=int, default=2)
    parser.add_argument("--map-steps", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--out", type=Path, default=Path("bench-out/sql-eval"))
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # Priors explored here are this benchmark's own: a fresh cache, so the one exploration is measured.
    priors_cache = Path(tempfile.mkdtemp(prefix="agentkit-bench-priors-"))

    from agentkit.environments.sql import SQLEnvironment
    from agentkit.evaluation import oracle_model, oracle_script_for

    env = SQLEnvironment.chinook()
    everything = env.tasks()
    summary: dict[str, Any] = {"environment": env.name, "identity": env.identity()}

    print(f"== oracle policy over all {len(everything)} Chinook tasks")
    oracle = oracle_model(everything, oracle_script_for(env))
    configs = build_configs(env, oracle, max_steps=8, max_tokens=None, explore_steps=args.explore_steps,
                            map_steps=args.map_steps, persist=False)
    runs = run_part("Chinook · oracle policy", env, everything, configs, args.out / "oracle")
    summary["oracle"] = [r.summary() for r in runs]
    failed = [(r.config, x.task_id, x.rewards, x.error) for r in runs for x in r.results if not x.success]
    if failed:
        print("ORACLE FAILURES (reward code or harness bug):", failed[:10])

    if args.embedded:
        import torch

        torch.set_num_threads(args.threads)
        from agentkit.models import resolve_model

        subset = [t for t in everything if str(t.data.get("difficulty")) == args.difficulty][: args.tasks]
        print(f"\n== local:smollm2-135m on {len(subset)} {args.difficulty} tasks "
              f"(max {args.max_steps} steps, {args.max_tokens} tokens/reply, greedy)")
        t0 = time.perf_counter()
        model = resolve_model("local:smollm2-135m")
        print(f"  model loaded in {time.perf_counter() - t0:.1f}s", flush=True)
        configs = build_configs(env, model, max_steps=args.max_steps, max_tokens=args.max_tokens,
                                explore_steps=args.explore_steps, map_steps=args.map_steps, persist=True,
                                priors_cache=priors_cache)
        runs = run_part("Chinook · SmolLM2-135M", env, subset, configs, args.out / "embedded")
        summary["embedded"] = {"tasks": [t.id for t in subset], "max_steps": args.max_steps,
                               "max_tokens": args.max_tokens, "runs": [r.summary() for r in runs]}

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"\nwritten under {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
