"""kill -9 durable runs at random moments and resume them in fresh processes (issue 43).

    python tests/durable_worker.py run STORE EFFECTS [--steps N] [--tool-s S]          # one run, in this process
    python tests/durable_worker.py resume STORE EFFECTS RUN_ID [--steps N] [--tool-s S]
    python tests/durable_worker.py drive OUT_DIR --runs R --kills K [--steps N] [--tool-s S] [--seed X] [--nested]

`run` and `resume` print "ready" before the run starts and its answer as JSON when it ends. The agent's model
is a `FunctionModel` whose replies follow from the conversation (so a resumed run is asked what the killed one
would have been): it works through steps 0 .. N-2 with the slow tool `work(i)` (every third step with the
idempotent `lookup(i)` beside it, in parallel), then answers with the total of the results. Told a call was
interrupted (`agentkit.runs.durable.INTERRUPTED`), it asks the read-only `check(i)` whether step i took effect and
does it again only if not. Every tool appends to EFFECTS ("start i", "end i", "lookup i"), so executions can be
counted. With `--nested` the run's agent does the work through one call of an agent called as a tool, which
does the steps as above (the store then holds the run and its agent call's child run).

`drive` starts R runs (a fresh store each), SIGKILLs each process at a random moment up to K times per run,
resumes it in a new process after each kill, and prints one JSON object: for each run its answer, the answer of
an unkilled run, how often each step's `work` completed, and where each kill landed (the checkpoint's status
and calls in flight just after it). Used by tests/test_durable_kills.py (a few kills) and
tests/benchmarks/bench_durable.py (50).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MODEL_S = 0.02  # each model reply takes this long


def build_agent(store: str, effects: Path, steps: int, tool_s: float, nested: bool = False) -> Any:
    """The durable agent of the kill tests (see the module docstring); `nested`: an agent whose one call asks it,
    as an agent called as a tool, to do the work."""
    from agentkit import Agent, Message, tool
    from agentkit.runs.durable import INTERRUPTED
    from agentkit.testing import FunctionModel, call, calls

    def note(line: str) -> None:
        with open(effects, "a") as f:
            f.write(line + "\n")

    @tool
    def work(i: int) -> int:
        """Do step i (slow, with an effect): returns its value.

        Args:
            i: the step.
        """
        note(f"start {i}")
        time.sleep(tool_s)
        note(f"end {i}")
        return i * i + 1

    @tool(idempotent=True)
    def lookup(i: int) -> int:
        """Look up the bonus of step i (safe to repeat).

        Args:
            i: the step.
        """
        note(f"lookup {i}")
        time.sleep(tool_s / 2)
        return 2 * i

    @tool(read_only=True)
    def check(i: int, attempt: int) -> str:
        """Say whether step i took effect, and its value if it did.

        Args:
            i: the step.
            attempt: how many times step i was checked before.
        """
        done = f"end {i}" in effects.read_text().splitlines() if effects.exists() else False
        return f"step {i} done: {i * i + 1}" if done else f"step {i} not done"

    def decide(messages: Sequence[Message], tools: Any) -> Message | str:
        time.sleep(MODEL_S)
        asked = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}
        values: dict[int, int] = {}
        bonus: dict[int, int] = {}
        unknown: set[int] = set()
        checks: Counter[int] = Counter()
        for m in messages:
            if m.role != "tool" or m.tool_call_id not in asked:
                continue
            c = asked[m.tool_call_id]
            i = int(c.arguments["i"])
            if m.content == INTERRUPTED:
                unknown.add(i)
            elif c.name == "work":
                values[i] = int(m.content)
            elif c.name == "lookup":
                bonus[i] = int(m.content)
            elif c.name == "check":
                checks[i] += 1
                unknown.discard(i)
                if "done:" in m.content:
                    values[i] = int(m.content.rsplit(": ", 1)[1])
        if unknown:
            return call("check", i=min(unknown), attempt=checks[min(unknown)])
        todo = [i for i in range(steps - 1) if i not in values]
        if not todo:
            return f"total {sum(values.values()) + sum(bonus.values())}"
        i = todo[0]
        return calls(("work", {"i": i}), ("lookup", {"i": i})) if i % 3 == 2 else call("work", i=i)

    if not nested:
        return Agent(FunctionModel(decide), tools=[work, lookup, check], max_steps=3 * steps, store=store)

    def boss(messages: Sequence[Message], tools: Any) -> Message | str:
        time.sleep(MODEL_S)
        seen = [m.content for m in messages if m.role == "tool"]
        return seen[-1] if seen else call("stepper", request="do every step and add them up")

    stepper = Agent(FunctionModel(decide), tools=[work, lookup, check], max_steps=3 * steps, name="stepper")
    return Agent(FunctionModel(boss), tools=[stepper.as_tool("stepper", "Does the steps.")], name="boss", store=store)


def expected_answer(steps: int) -> str:
    """The answer of an unkilled run."""
    return f"total {sum(i * i + 1 for i in range(steps - 1)) + sum(2 * i for i in range(steps - 1) if i % 3 == 2)}"


def work_run(args: argparse.Namespace) -> None:
    from agentkit.runs.durable import INTERRUPTED

    agent = build_agent(args.store, Path(args.effects), args.steps, args.tool_s, args.nested)
    print("ready", flush=True)
    result = agent.resume(args.run_id) if args.command == "resume" else agent.run("do every step and add them up")
    interrupted = sum(1 for t in (result.trajectory, *result.trajectory.children) for m in t.messages
                      if m.role == "tool" and m.content == INTERRUPTED)
    print(json.dumps({"answer": result.answer, "run_id": result.trajectory.id, "interrupted": interrupted,
                      "stop_reason": result.stop_reason}), flush=True)


# -- the driver --------------------------------------------------------------------------------------


class Worker:
    """A worker process: its stdout read line by line, its stderr in a file."""

    def __init__(self, command: list[str]) -> None:
        fd, name = tempfile.mkstemp(prefix="durable-worker-", suffix=".err")
        os.close(fd)
        self.errors = Path(name)
        with open(self.errors, "w") as err:
            self.proc = subprocess.Popen([sys.executable, __file__, *command], stdout=subprocess.PIPE, stderr=err,
                                         text=True)

    def stderr(self) -> str:
        text = self.errors.read_text()[-3000:]
        self.errors.unlink(missing_ok=True)
        return text


def _worker(command: list[str]) -> Worker:
    """Start a worker and wait for its "ready"."""
    worker = Worker(command)
    assert worker.proc.stdout is not None
    line = worker.proc.stdout.readline()
    if line.strip() != "ready":
        worker.proc.wait()
        raise RuntimeError(f"worker did not start: {line!r} {worker.stderr()}")
    return worker


def _finish(worker: Worker) -> dict[str, Any]:
    """The JSON a worker printed when its run ended (the rest of its stdout, read through the same buffer as
    "ready" was)."""
    proc = worker.proc
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.wait(timeout=300)
    err = worker.stderr()
    if proc.returncode != 0 or not out.strip():
        raise RuntimeError(f"worker failed ({proc.returncode}): {err}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def _ends(effects: Path) -> Counter[str]:
    return Counter(effects.read_text().splitlines()) if effects.exists() else Counter()


def one_run(root: Path, kills: int, steps: int, tool_s: float, rng: random.Random,
            nested: bool = False) -> dict[str, Any]:
    """One run killed up to `kills` times at random moments and resumed after each kill; what happened."""
    from agentkit.runs.durable import DirectoryStore

    store, effects = root / "store", root / "effects.txt"
    shared = [str(store), str(effects), "--steps", str(steps), "--tool-s", str(tool_s),
              *(["--nested"] if nested else [])]
    landed: list[dict[str, Any]] = []
    run_id: str | None = None
    unstarted = 0  # kills before the run's first checkpoint (nothing ran: the run is started again)
    started = time.perf_counter()
    while True:
        worker = _worker(["run", *shared] if run_id is None else ["resume", *shared, run_id])
        proc = worker.proc
        if len(landed) >= kills:
            break
        done = sum(1 for i in range(steps - 1) if _ends(effects)[f"end {i}"])
        left = (steps - 1 - done) * (tool_s + 2 * MODEL_S) + 0.1
        time.sleep(rng.uniform(0.0, left))
        if proc.poll() is not None:  # it finished first
            break
        proc.kill()
        proc.wait()
        worker.stderr()
        saved = [DirectoryStore(store).load(i) for i in DirectoryStore(store).run_ids()]
        if not saved:
            unstarted += 1
            assert not effects.exists(), "a tool ran before the run's first checkpoint"
            landed.append({"status": "not started", "in_flight": 0, "finished": 0})
            continue
        [state] = [s for s in saved if s.trajectory.parent_id is None]  # the run; the others: its agent calls'
        run_id = state.run_id
        landed.append({"status": state.status, "in_flight": sum(len(s.in_flight) for s in saved),
                       "finished": sum(len(s.finished) for s in saved), "runs": len(saved)})
    result = _finish(worker)
    seconds = time.perf_counter() - started
    again = _finish(_worker(["resume", *shared, result["run_id"]]))  # a finished run: its result, nothing run
    counts = _ends(effects)
    return {
        "answer": result["answer"], "answer_on_second_resume": again["answer"], "kills": len(landed),
        "unstarted_kills": unstarted, "landed": landed, "interrupted_observations": result["interrupted"],
        "work_completed": [counts[f"end {i}"] for i in range(steps - 1)],
        "work_started": [counts[f"start {i}"] for i in range(steps - 1)],
        "lookups": sum(n for line, n in counts.items() if line.startswith("lookup")),
        "status": DirectoryStore(store).load(result["run_id"]).status, "seconds": round(seconds, 2),
    }


def drive(args: argparse.Namespace) -> None:
    out = Path(args.out_dir)
    rng = random.Random(args.seed)
    reference = out / "unkilled"
    reference.mkdir(parents=True)
    unkilled = _finish(_worker(["run", str(reference / "store"), str(reference / "effects.txt"),
                                "--steps", str(args.steps), "--tool-s", str(args.tool_s),
                                *(["--nested"] if args.nested else [])]))
    runs = []
    for r in range(args.runs):
        root = out / f"run-{r}"
        root.mkdir()
        runs.append(one_run(root, args.kills, args.steps, args.tool_s, rng, args.nested))
    print(json.dumps({"steps": args.steps, "tool_s": args.tool_s, "seed": args.seed, "nested": args.nested,
                      "expected": expected_answer(
        args.steps), "unkilled": unkilled["answer"], "runs": runs}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "resume"):
        p = sub.add_parser(name)
        p.add_argument("store")
        p.add_argument("effects")
        if name == "resume":
            p.add_argument("run_id")
        p.add_argument("--steps", type=int, default=10)
        p.add_argument("--tool-s", type=float, default=0.2)
        p.add_argument("--nested", action="store_true")
    d = sub.add_parser("drive")
    d.add_argument("--nested", action="store_true", help="the work is done by an agent called as a tool")
    d.add_argument("out_dir")
    d.add_argument("--runs", type=int, default=1)
    d.add_argument("--kills", type=int, default=4)
    d.add_argument("--steps", type=int, default=10)
    d.add_argument("--tool-s", type=float, default=0.2)
    d.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.command == "drive":
        drive(args)
    else:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        work_run(args)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    os.environ.setdefault("AGENTKIT_HOME", str(Path(os.environ.get("TMPDIR", "/tmp")) / "agentkit-durable-home"))
    main()
