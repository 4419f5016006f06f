"""kill -9 at random moments while a store writes, then count the records lost (issue 16).

    python tests/kill_stores.py STORE ROUNDS SEED      # STORE: skills-replace, skills-merge, checkpoints

Prints one JSON object: rounds, records written before the kills, records lost, leftovers. Each round
forks a writer from this (single-threaded) driver, lets it write for a random time, SIGKILLs it, then
reopens the store the way a user would and checks every record the writer had reported as written.
Used by tests/test_hostile_stores.py (few rounds) and tests/benchmarks/bench_hostile.py (more).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _fork_writer(write: Callable[[int], None], report: Path, delay: float) -> None:
    """Run `write(i)` for i = 0, 1, ... in a child, appending i to `report` after each; kill it `delay`
    seconds after its first write returned."""
    pid = os.fork()
    if pid == 0:  # the writer
        try:
            i = 0
            while True:
                write(i)
                with open(report, "a") as f:
                    f.write(f"{i}\n")
                    f.flush()
                i += 1
        finally:
            os._exit(0)
    deadline = time.monotonic() + 120
    while not report.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _reported(report: Path) -> list[int]:
    if not report.exists():
        return []
    return [int(line) for line in report.read_text().split()]


def skills_replace(rounds: int, seed: int) -> dict:
    """Three skills replaced over and over (half the rounds with the move-aside fallback instead of the
    atomic exchange); after each kill, LibraryFolder.open_manifest must show all three, readable."""
    from agentkit.skills import Skill, skillmd
    from agentkit.skills.storage import LibraryFolder

    rng = random.Random(seed)
    root = Path(tempfile.mkdtemp(prefix="kill-skills-"))
    folder = LibraryFolder(root)
    folder.open_manifest({})
    names = ["alpha-skill", "beta-skill", "gamma-skill"]
    for name in names:
        skillmd.write_skill_dir(Skill(name=name, description=f"{name} v0"), folder.skills / name)
        (folder.skills / name / "notes.txt").write_text("carried along")
    writes = lost = 0
    fallback_rounds = 0
    for r in range(rounds):
        report = root / f"report-{r}"
        fallback = r % 2 == 1
        fallback_rounds += fallback

        def write(i: int, fallback: bool = fallback, r: int = r) -> None:
            if fallback:
                skillmd.exchange_paths = lambda a, b: False
            name = names[i % 3]
            with folder.lock():
                skillmd.write_skill_dir(Skill(name=name, description=f"{name} round {r} write {i}"),
                                        folder.skills / name, copy_from=folder.skills / name)

        _fork_writer(write, report, rng.uniform(0.0, 0.5))
        writes += len(_reported(report))
        LibraryFolder(root).open_manifest({})  # recovery on open
        for name in names:
            try:
                skill = skillmd.read_skill_dir(folder.skills / name)
                ok = skill.name == name and (folder.skills / name / "notes.txt").read_text() == "carried along"
            except Exception:
                ok = False
            lost += not ok
    leftovers = [p.name for p in folder.skills.iterdir() if p.name.startswith(".")]
    return {"store": "skills-replace", "rounds": rounds, "fallback_rounds": fallback_rounds, "writes": writes,
            "records": len(names), "lost": lost, "leftovers": leftovers}


def skills_merge(rounds: int, seed: int) -> dict:
    """Distilled near-duplicates merged into one skill through SkillLibrary.add; after each kill the
    reopened library must hold the skill with every lesson whose merge had returned. The writer is a
    fresh process (chromadb's state does not survive a fork), killed at a random moment of its merges."""
    import subprocess

    import numpy as np

    from agentkit.skills import Skill, SkillLibrary

    rng = random.Random(seed)
    root = Path(tempfile.mkdtemp(prefix="kill-merge-")) / "lib"
    base = Skill(name="base-lesson", description="How to count rows per group.", body="## Lessons\n- start",
                 source="distilled")
    library = SkillLibrary.open(root)
    assert library.add(base, embedding=_merge_vector(np)).status == "added"
    del library
    merged: list[str] = []
    lost = 0
    for r in range(rounds):
        report = root.parent / f"report-{r}"
        ready = root.parent / f"ready-{r}"
        child = subprocess.Popen([sys.executable, __file__, "merge-writer", str(root), str(report), str(ready), str(r)])
        deadline = time.monotonic() + 120
        while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 0.8))
        child.send_signal(signal.SIGKILL)
        child.wait()
        merged += [f"- lesson {r}.{i}" for i in _reported(report)]
        library = SkillLibrary.open(root)
        try:
            body = library.get("base-lesson").body
            lost += sum(line not in body for line in merged)
        except KeyError:
            lost += len(merged) + 1
        del library
    leftovers = [p.name for p in (root / "skills").iterdir() if p.name.startswith(".")]
    return {"store": "skills-merge", "rounds": rounds, "writes": len(merged), "lost": lost, "leftovers": leftovers}


def _merge_vector(np):  # numpy module in, unit vector out
    return np.ones(384, dtype=np.float32) / np.sqrt(384)


def _merge_writer(root: str, report: str, ready: str, r: int) -> None:
    import numpy as np

    from agentkit.skills import Skill, SkillLibrary

    library = SkillLibrary.open(root)
    Path(ready).write_text("ready")
    for i in range(100_000):
        lesson = Skill(name=f"lesson-{r}-{i}", description="How to count rows per group.",
                       body=f"## Lessons\n- lesson {r}.{i}", source="distilled")
        result = library.add(lesson, embedding=_merge_vector(np))
        if result.status != "merged":
            raise SystemExit(f"expected a merge, got {result}")
        with open(report, "a") as f:
            f.write(f"{i}\n")


def checkpoints(rounds: int, seed: int) -> dict:
    """Checkpoints saved with pruning (keep=2) across step 1,000,000; after each kill, the newest
    checkpoint must be at least the last step whose save had returned, whole and loadable."""
    import torch

    from agentkit.training.checkpoint import checkpoint_dirs, latest_checkpoint, load_checkpoint, save_checkpoint

    torch.manual_seed(seed)
    rng = random.Random(seed)
    out = Path(tempfile.mkdtemp(prefix="kill-ckpt-"))
    model = torch.nn.Linear(64, 64)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    first_step = 999_990
    step_of_round = [first_step]
    writes = lost = 0
    for r in range(rounds):
        report = out.parent / f"{out.name}-report-{r}"
        start = step_of_round[0]

        def write(i: int, start: int = start, r: int = r) -> None:
            model(torch.randn(2, 64)).sum().backward()
            optimizer.step()
            save_checkpoint(out, start + i, model=model, optimizer=optimizer, scheduler=scheduler,
                            state={"round": r}, config_yaml="", export=False, keep=2)

        _fork_writer(write, report, rng.uniform(0.0, 1.0))
        done = _reported(report)
        writes += len(done)
        expected = start + done[-1] if done else None
        found = latest_checkpoint(out)  # cleans up the killed save's temporaries
        steps = [int(p.name.split("-")[1]) for p in checkpoint_dirs(out)]
        if expected is not None:
            ok = found is not None and int(found.name.split("-")[1]) >= expected
            if ok:
                try:
                    load_checkpoint(found, model=model, optimizer=optimizer, scheduler=scheduler)
                except Exception:
                    ok = False
            lost += not ok
        step_of_round[0] = (max(steps) + 1) if steps else start
    leftovers = [p.name for p in out.iterdir() if p.name.startswith(".")]
    return {"store": "checkpoints", "rounds": rounds, "writes": writes, "lost": lost, "leftovers": leftovers,
            "last_step": step_of_round[0] - 1, "kept": [p.name for p in checkpoint_dirs(out)]}


STORES = {"skills-replace": skills_replace, "skills-merge": skills_merge, "checkpoints": checkpoints}

if __name__ == "__main__":
    if sys.argv[1] == "merge-writer":
        _merge_writer(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        sys.exit(0)
    store, rounds, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    started = time.perf_counter()
    result = STORES[store](rounds, seed)
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))
