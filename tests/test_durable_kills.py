"""kill -9 at random moments (issue 43): a durable run in a real process, SIGKILLed mid-run and resumed in a
fresh process each time, is not lost, runs no completed call twice and ends with the answer of an unkilled run
(tests/durable_worker.py; 50 kills: tests/benchmarks/bench_durable.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).parent / "durable_worker.py"


def test_a_run_killed_four_times_ends_as_an_unkilled_run_with_every_step_done_once(tmp_path) -> None:
    proc = subprocess.run([sys.executable, str(WORKER), "drive", str(tmp_path / "out"), "--runs", "1", "--kills",
                           "4", "--steps", "6", "--tool-s", "0.15", "--seed", "3"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["unkilled"] == report["expected"]
    [run] = report["runs"]
    # (a kill before the run's first checkpoint restarts it; the driver checks that no tool had run then)
    assert run["kills"] == 4
    assert run["answer"] == report["unkilled"] and run["answer_on_second_resume"] == report["unkilled"]
    assert run["status"] == "finished"
    assert run["work_completed"] == [1] * 5  # each step's effect happened exactly once, whatever the kills hit
    assert any(k["in_flight"] for k in run["landed"])  # at least one kill hit a call while it ran
    store = tmp_path / "out" / "run-0" / "store"
    assert [p.suffix for p in store.iterdir()] == [".json"]  # one state, no temporary file left


def test_a_run_killed_inside_an_agent_call_ends_as_an_unkilled_run_with_every_step_done_once(tmp_path) -> None:
    proc = subprocess.run([sys.executable, str(WORKER), "drive", str(tmp_path / "out"), "--runs", "1", "--kills",
                           "4", "--steps", "6", "--tool-s", "0.15", "--seed", "7", "--nested"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["unkilled"] == report["expected"]
    [run] = report["runs"]
    assert run["kills"] >= 2 and run["status"] == "finished"  # (the run may finish before a late kill)
    assert run["answer"] == report["unkilled"] and run["answer_on_second_resume"] == report["unkilled"]
    assert run["work_completed"] == [1] * 5  # whatever the kills hit, inside the agent call or out
    # a kill landed while a call of the agent call's run ran (in flight: it, and the agent call itself)
    assert any(k.get("runs") == 2 and k["in_flight"] >= 2 for k in run["landed"])
    store = tmp_path / "out" / "run-0" / "store"
    assert sorted(p.suffix for p in store.iterdir()) == [".json", ".json"]  # the run and its agent call's run
