"""Scripted agent and analyst for the learn tests (also run as a child process by the kill test)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from agentkit.environments.base import Task
from agentkit.messages import Message
from agentkit.testing import FunctionModel
from agentkit.trajectory import Trajectory

COUNT_SUBJECT = ("SQL over a music store database: counting how many tracks or albums belong to each "
                 "genre or artist, which needs GROUP BY with COUNT")
TASKS = [
    {"id": "genre", "prompt": "How many tracks are in each genre?", "expected": "per-genre counts"},
    {"id": "artist", "prompt": "How many albums does each artist have?", "expected": "per-artist counts"},
    {"id": "brazil", "prompt": "List the customers from Brazil.", "expected": "Brazilian customers"},
]


def reward(task: Task, trajectory: Trajectory) -> float:
    return float(trajectory.answer == task.data["expected"])


def agent_model(uses_notes: bool = True, delay: float = 0.0) -> FunctionModel:
    """Right on "brazil" always; right on the counting tasks only when the learnt note is in the prompt."""
    answers = {t["prompt"]: t["expected"] for t in TASKS}

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> str:
        time.sleep(delay)
        task = messages[-1].content
        if "Brazil" in task or (uses_notes and "within each group" in messages[0].content):
            return answers[task]
        return "0"

    return FunctionModel(reply, name="agent")


def note_json(**changes: Any) -> str:
    data = {
        "corrected_examples": ["Q: tracks per genre. Wrong: 0. Right: SELECT GenreId, COUNT(*) ... GROUP BY GenreId"],
        "correct_approach": "Group the rows by the entity asked about and COUNT within each group.",
        "mistake_summary": "The agent answered with one number instead of one count per group.",
        "generalisable_strategy": "'How many X per Y' questions need GROUP BY Y.",
        "anti_patterns": ["answering a per-group question with a single total"],
    }
    data.update(changes)
    return "Here is the note:\n```json\n" + json.dumps(data) + "\n```"


def analyst_model(subjects: Sequence[str] = (COUNT_SUBJECT,), note: str | None = None, delay: float = 0.0,
                  label_reuse: bool = True) -> FunctionModel:
    """Labels failures with `subjects` in turn (reusing an offered label when `label_reuse`), writes `note`."""
    state = {"label": 0}

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> str:
        time.sleep(delay)
        prompt = messages[1].content
        if "Name the subject" in prompt:
            offered = [line[2:] for line in prompt.split("Subjects already in use")[1].splitlines()
                       if line.startswith("- ")]
            if label_reuse and offered:
                return json.dumps({"subject": offered[0]})
            subject = subjects[min(state["label"], len(subjects) - 1)]
            state["label"] += 1
            return json.dumps({"subject": subject})
        return note if note is not None else note_json()

    return FunctionModel(reply, name="analyst")


def zygote(root: str, kills: int, seed_json: str) -> None:
    """Load the models once, then fork one child per learn step; the first child runs to the end (its
    duration is the window), each later one is SIGKILLed at a random moment. One JSON line per child."""
    import os
    import random
    import signal

    import torch

    torch.set_num_threads(1)  # no OpenMP pool in the parent, so forking is safe
    from agentkit import Agent
    from agentkit.memory.embeddings import Embedder
    from agentkit.memory.notebook import MistakeNotebook

    embedder = Embedder.default()
    embedder.embed(["warm up"])
    window, rng = 0.0, random.Random()
    for i in range(kills + 1):
        folder = os.path.join(root, f"step{i}")
        os.makedirs(folder)
        with open(os.path.join(folder, "notes.json"), "w") as f:
            f.write(seed_json)
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: one learn step in slow motion
            code = 1
            try:
                book = MistakeNotebook.open(folder, embedder, threshold=0.5)
                report = book.learn(TASKS, reward, Agent(agent_model(delay=0.02)),
                                    analyst=analyst_model(delay=0.02, label_reuse=False))
                code = 0 if report.accepted else 3
            finally:
                os._exit(code)
        if i == 0:
            _, status = os.waitpid(pid, 0)
            window = time.perf_counter() - started
            outcome = {"folder": folder, "exit": os.waitstatus_to_exitcode(status), "window": window}
        else:
            delay = rng.uniform(0.0, window)
            time.sleep(delay)
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            outcome = {"folder": folder, "exit": os.waitstatus_to_exitcode(status), "killed_after": delay}
        print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    zygote(sys.argv[1], int(sys.argv[2]), sys.argv[3])
