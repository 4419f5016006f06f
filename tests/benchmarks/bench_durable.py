"""Durable runs under kill -9: SIGKILL a 10-step run with slow tools at random moments, resume it in a fresh
process after each kill, and count what was lost or done twice (issue 43). Also the cost of checkpointing.

    python tests/benchmarks/bench_durable.py --kills 50 --out tests/benchmarks/results/durable.json
    python tests/benchmarks/bench_durable.py --kills 50 --parts nested --out tests/benchmarks/results/durable.json

Runs come one after another (a fresh store each), each killed up to `--per-run` times, until `--kills` kills
have landed (a kill drawn after the process already finished does not count). The agent, its scripted model and
its tools are tests/durable_worker.py's: 9 steps of `work(i)` (sleeps `--tool-s`, appends "start i" and "end i"
to a file), every third with the idempotent `lookup(i)` beside it, then the total as the answer. A run is lost
when its store has no finished state with the unkilled run's answer; a completed call is run twice when some
step's "end i" appears twice. `nested` does the same with the work done by an agent called as a tool (kills
land inside the agent call's run too; both runs are checkpointed in the store). The overhead part times a
10-step run with trivial tools, with and without a store (median of `--overhead-runs`), on this machine's disk.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _worker() -> Any:
    spec = importlib.util.spec_from_file_location("durable_worker", ROOT / "tests" / "durable_worker.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["durable_worker"] = module
    spec.loader.exec_module(module)
    return module


def kills(total: int, per_run: int, steps: int, tool_s: float, seed: int, nested: bool = False) -> dict[str, Any]:
    worker = _worker()
    rng = random.Random(seed)
    out = Path(tempfile.mkdtemp(prefix="bench-durable-"))
    reference = out / "unkilled"
    reference.mkdir()
    unkilled = worker._finish(worker._worker(["run", str(reference / "store"), str(reference / "effects.txt"),
                                              "--steps", str(steps), "--tool-s", str(tool_s),
                                              *(["--nested"] if nested else [])]))["answer"]
    runs: list[dict[str, Any]] = []
    started = time.perf_counter()
    while sum(r["kills"] for r in runs) < total:
        root = out / f"run-{len(runs)}"
        root.mkdir()
        left = total - sum(r["kills"] for r in runs)
        runs.append(worker.one_run(root, min(per_run, left), steps, tool_s, rng, nested))
    landed = [k for r in runs for k in r["landed"]]
    return {
        "steps": steps, "tool_s": tool_s, "seed": seed, "nested": nested, "unkilled_answer": unkilled,
        "expected_answer": worker.expected_answer(steps),
        "runs": len(runs), "kills": len(landed),
        "runs_lost": sum(1 for r in runs if r["status"] != "finished" or r["answer"] != unkilled),
        "same_answer_as_unkilled": sum(1 for r in runs if r["answer"] == unkilled),
        "same_answer_on_a_second_resume": sum(1 for r in runs if r["answer_on_second_resume"] == unkilled),
        "completed_calls_run_twice": sum(max(0, n - 1) for r in runs for n in r["work_completed"]),
        "steps_never_completed": sum(1 for r in runs for n in r["work_completed"] if n == 0),
        "kills_before_the_first_checkpoint": sum(r["unstarted_kills"] for r in runs),
        "kills_with_calls_in_flight": sum(1 for k in landed if k["in_flight"]),
        "kills_between_steps": sum(1 for k in landed if k["status"] == "running" and not k["in_flight"]),
        "kills_with_a_call_saved_mid_reply": sum(1 for k in landed if k["finished"]),
        "kills_inside_an_agent_call": sum(1 for k in landed if k.get("runs", 1) > 1 and k["status"] == "running"
                                          and k["in_flight"] >= 2),
        "interrupted_observations": sum(r["interrupted_observations"] for r in runs),
        "work_started_again_after_a_check": sum(n - 1 for r in runs for n in r["work_started"] if n > 1),
        "lookups_run": sum(r["lookups"] for r in runs),
        "seconds": round(time.perf_counter() - started, 1),
    }


def overhead(runs: int, steps: int) -> dict[str, Any]:
    """Median wall time of a `steps`-step run with trivial tools, with and without a store."""
    from agentkit import Agent, tool
    from agentkit.testing import ScriptedModel, call

    @tool(timeout_s=None)
    def ping(x: int) -> int:
        """Return x."""
        return x

    def once(store: Path | None) -> float:
        script = [*(call("ping", x=i) for i in range(steps - 1)), "done"]
        agent = Agent(ScriptedModel(script), tools=[ping], max_steps=steps, store=store)
        t0 = time.perf_counter()
        assert agent.run("go").answer == "done"
        return time.perf_counter() - t0

    with tempfile.TemporaryDirectory(prefix="bench-durable-store-") as tmp:
        plain = statistics.median(once(None) for _ in range(runs))
        durable = statistics.median(once(Path(tmp) / f"s{i}") for i in range(runs))
    saves = steps + (steps - 1) * 2 + 1  # before every step, calls in flight, each result, finished
    return {"steps": steps, "runs": runs, "plain_ms": round(plain * 1e3, 2), "durable_ms": round(durable * 1e3, 2),
            "saves_per_run": saves, "ms_per_save": round((durable - plain) * 1e3 / saves, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--per-run", type=int, default=5, help="most kills of one run")
    parser.add_argument("--steps", type=int, default=10, help="model calls of an unkilled run")
    parser.add_argument("--tool-s", type=float, default=0.2, help="seconds each work call takes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--overhead-runs", type=int, default=20)
    parser.add_argument("--parts", default="kills,nested,overhead",
                        help="which parts to run (kills: a plain run; nested: the work done by an agent called as a "
                             "tool; overhead); with --out, the other parts of an existing file are kept")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    report: dict[str, Any] = (json.loads(args.out.read_text()) if args.out and args.out.exists() and
                              parts != {"kills", "nested", "overhead"} else {})
    if "kills" in parts:
        report["kills"] = kills(args.kills, args.per_run, args.steps, args.tool_s, args.seed)
        print(json.dumps({"kills": report["kills"]}, indent=1), flush=True)
    if "nested" in parts:
        report["nested_kills"] = kills(args.kills, args.per_run, args.steps, args.tool_s, args.seed, nested=True)
        print(json.dumps({"nested_kills": report["nested_kills"]}, indent=1), flush=True)
    if "overhead" in parts:
        report["overhead"] = overhead(args.overhead_runs, args.steps)
        print(json.dumps({"overhead": report["overhead"]}, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
