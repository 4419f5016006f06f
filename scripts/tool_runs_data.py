"""SFT data for multi-step tool use from the agent's own runs (rejection sampling, then rationalisation with the
plan as a hint), on synthetic requests over the training tool families.

    python scripts/tool_runs_data.py --model local:default --conversations 150 --seed 7 --concurrency 2 \\
        --out runs/tool-runs-1.5b/runs.jsonl           # then: agentkit train --data ... --algo sft

Draws `--conversations` one-request conversations of `--kinds` (`agentkit.training.synthetic`; by default the kinds
of more than one call, `sequence`, `chain3`, `compute`, alike; `KIND:WEIGHT` gives a kind its share) and plays
each through the agent loop with `--model`, greedy, `--max-steps` steps; a wrong run is played again with the
request's plan in the system prompt, and every right run is kept with the plan removed
(`agentkit.training.tool_runs`). The requests come from the generator the tool LoRA's recipes use, whose every text
is checked against the benchmarks by `tests/benchmarks/check_leakage.py` (this recipe is one of its `RECIPES`).
Writes the kept trajectories as JSONL at `--out`, every run played (plain and hinted) at `--log`, and beside `--out`
(`.json`) a report: per kind the requests played, right at the first try, played again with the plan, right then,
and kept.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit.models import Model, resolve_model
from agentkit.training.synthetic import synthetic_conversations
from agentkit.training.tool_runs import COLLECT_KINDS, PlayedRequest, collect_tool_runs, kind_weights
from agentkit.trajectory import append_jsonl


def report(played: Sequence[PlayedRequest]) -> dict[str, Any]:
    """Per kind and in all: requests played, right at the first try, played with the plan, right then, kept."""
    out: dict[str, Any] = {}
    for kind in ("all", *sorted({p.kind for p in played})):
        sel = [p for p in played if kind == "all" or p.kind == kind]
        out[kind] = {"played": len(sel), "first_right": sum(p.first_right for p in sel),
                     "hinted_played": sum(p.hinted is not None for p in sel),
                     "hinted_right": sum(p.hinted_right is True for p in sel),
                     "kept": sum(p.kept is not None for p in sel)}
    return out


def main(argv: list[str] | None = None, model: Model | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="local:default", help="the model that plays the requests")
    parser.add_argument("--conversations", type=int, default=150)
    parser.add_argument("--seed", type=int, default=7, help="the generator's seed")
    parser.add_argument("--kinds", default=",".join(COLLECT_KINDS),
                        help="conversation kinds and their shares, KIND[:WEIGHT],... (no weight: 1)")
    parser.add_argument("--concurrency", type=int, default=1, help="requests at once (llama.cpp slots)")
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--no-hints", action="store_true", help="do not play wrong requests again with the plan")
    parser.add_argument("--out", type=Path, required=True, help="JSONL of the kept trajectories (replaced)")
    parser.add_argument("--log", type=Path, default=None, help="JSONL of every run played (default: beside --out)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        kinds = kind_weights(args.kinds)
    except ValueError as exc:
        parser.error(str(exc))
    conversations = synthetic_conversations(args.conversations, seed=args.seed, weights=kinds,
                                            refusals=False, fresh_names=0.5)
    played_by = model or resolve_model(args.model, parallel=args.concurrency)
    log = args.log or args.out.with_name(args.out.stem + ".played.jsonl")
    for path in (args.out, log):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    started = time.perf_counter()

    def progress(p: PlayedRequest) -> None:  # from the worker threads; append_jsonl locks the file
        for run in (p.first, p.hinted):
            if run is not None:
                append_jsonl(log, run)
        if p.kept is not None:
            append_jsonl(args.out, p.kept)
        print(f"  {p.index:>4} {p.kind:<9} first={'ok' if p.first_right else '--'} "
              f"plan={'' if p.hinted_right is None else 'ok' if p.hinted_right else '--'} "
              f"{time.perf_counter() - started:>6.0f}s", flush=True)

    played = collect_tool_runs(played_by, conversations, hints=not args.no_hints, max_steps=args.max_steps,
                               max_tokens=args.max_tokens, concurrency=args.concurrency, on_played=progress)
    summary = {"model": args.model if model is None else getattr(model, "name", type(model).__name__),
               "conversations": args.conversations, "seed": args.seed, "kinds": kinds, "hints": not args.no_hints,
               "max_steps": args.max_steps, "minutes": round((time.perf_counter() - started) / 60, 1),
               "data_kind": "train (synthetic requests over the training tool families)", "per_kind": report(played)}
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    total = summary["per_kind"]["all"]
    print(f"{total['played']} requests: {total['first_right']} right at once, {total['hinted_right']} of "
          f"{total['hinted_played']} with the plan; {total['kept']} kept -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
