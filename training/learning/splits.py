"""The split of a learning run's tasks into train, validation and held-out, and the check that no held-out or
validation task reached learning.

    from agentkit.training.learning.splits import check_no_leak, split_tasks, validation_split

    train, held = split_tasks(env.tasks(), 0.3, seed=0)  # the same seed and task ids give the same split
    learning, check = validation_split(train, 0.25, seed=0)  # tasks to learn from, tasks to validate on
    check_no_leak(report, out)  # after a run: raises if a held-out or validation task reached learning
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

from agentkit.environments.base import Environment, Task
from agentkit.memory.experience import Experience
from agentkit.training.learning.report import LearningReport
from agentkit.trajectory import read_jsonl


def split_tasks(tasks: Sequence[Task], fraction: float, seed: int) -> tuple[list[Task], list[Task]]:
    """A seeded train/held-out split: the same seed and task ids always give the same split."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"heldout fraction must be between 0 and 1, not {fraction}")
    if len(tasks) < 2:
        raise ValueError(f"need at least 2 tasks to split into train and held-out, got {len(tasks)}")
    ordered = sorted(tasks, key=lambda t: t.id)
    random.Random(seed).shuffle(ordered)
    n_held = min(len(ordered) - 1, max(1, round(fraction * len(ordered))))
    held = {t.id for t in ordered[:n_held]}
    return [t for t in tasks if t.id not in held], [t for t in tasks if t.id in held]


MIN_VALIDATION = 4  # fewer validation (or remaining train) tasks than this: no validation check


def validation_split(train: Sequence[Task], fraction: float, seed: int) -> tuple[list[Task], list[Task]]:
    """The train split's learning tasks and its validation tasks (seeded); no validation tasks when
    `fraction` is 0 or either side would hold fewer than MIN_VALIDATION tasks."""
    if fraction == 0.0 or len(train) < 2 * MIN_VALIDATION:
        return list(train), []
    learning, check = split_tasks(train, fraction, seed + 7919)  # another seed than the held-out split's
    if len(check) < MIN_VALIDATION or len(learning) < MIN_VALIDATION:
        return list(train), []
    return learning, check


def _split(env: Environment, heldout: Environment | Sequence[str] | None, fraction: float,
           seed: int) -> tuple[list[Task], list[Task], Environment]:
    tasks = list(env.tasks())
    if heldout is None:
        train, held = split_tasks(tasks, fraction, seed)
        return train, held, env
    if isinstance(heldout, str):
        raise TypeError("heldout takes task ids (a list) or an environment, not a string")
    if hasattr(heldout, "tasks") and hasattr(heldout, "reset"):
        held = list(heldout.tasks())
        ids = {t.id for t in held}
        prompts = {t.prompt for t in held}
        train = [t for t in tasks if t.id not in ids and t.prompt not in prompts]
        if len(train) < len(tasks):
            dropped = len(tasks) - len(train)
            if not train:
                raise ValueError("every train task is also a held-out task; give a held-out set that differs")
            import logging

            logging.getLogger(__name__).warning("%d train task(s) also appear in the held-out set and are "
                                                "left out of learning", dropped)
        return train, held, heldout  # type: ignore[return-value]
    wanted = set(heldout)
    missing = wanted - {t.id for t in tasks}
    if missing:
        raise ValueError(f"held-out task ids not in the environment: {', '.join(sorted(missing)[:5])}")
    train = [t for t in tasks if t.id not in wanted]
    if not train:
        raise ValueError("no train tasks left after holding out")
    return train, [t for t in tasks if t.id in wanted], env


def check_no_leak(report: LearningReport, out: Path) -> None:
    """Raise if any learning trajectory, learned note or worked example came from a held-out or validation task."""
    held = set(report.heldout_tasks) | set(report.validation_tasks)
    leaks: list[str] = []
    paths = [p for p in (out / "trajectories").glob("train-*.jsonl")]
    if (out / "rl" / "rollouts.jsonl").exists():
        paths.append(out / "rl" / "rollouts.jsonl")
    for path in paths:
        leaks += [f"{path.name}: {t.task_id}" for t in read_jsonl([path]) if t.task_id in held]
    notes_file = out / "notes" / "notes.json"
    if notes_file.exists():
        for note in json.loads(notes_file.read_text()).get("notes", []):
            leaks += [f"note {note['id']}: {tid}" for tid in note.get("source_tasks", []) if tid in held]
    if (out / "experience.json").exists():
        leaks += [f"example {e.id}: {e.task_id}" for e in Experience.load(out / "experience.json").examples
                  if e.task_id in held]
    if leaks:
        raise AssertionError(f"held-out or validation tasks reached learning: {', '.join(leaks[:5])}")
