"""Trajectories: JSONL round trips, damaged logs, concurrent writers and token deltas."""

from __future__ import annotations

import json
import multiprocessing as mp
import os

import pytest

from agentkit import Agent, Message, tool
from agentkit.models.protocol import TokenRecord
from agentkit.testing import ScriptedModel, call
from agentkit.trajectory import SCHEMA_VERSION, NewerSchemaError, Trajectory, append_jsonl, iter_jsonl, read_jsonl


@tool
def echo(text: str) -> str:
    """Echo text."""
    return text


def make(task: str) -> Trajectory:
    return Agent(ScriptedModel([call("echo", text=task), f"said {task}"]), tools=[echo]).run(task).trajectory


def test_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = make("hi")
    t.reward, t.rewards, t.extras = 1.0, {"execution": 1.0}, {"skills": {"used": None}}
    path = tmp_path / "log.jsonl"
    append_jsonl(path, t)
    [back] = read_jsonl(path)
    assert back == t
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION


def test_damaged_log_keeps_the_good_records(tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "log.jsonl"
    good = [make(f"t{i}") for i in range(3)]
    append_jsonl(path, good[0])
    with open(path, "a") as f:
        f.write("garbage {{{ not json\n")
        f.write('{"schema_version": 1, "turns": "wrong type"}\n')
    append_jsonl(path, good[1])
    line = good[2].model_dump_json()
    with open(path, "a") as f:
        f.write(line[: len(line) // 2])  # killed mid-write
    assert [t.id for t in read_jsonl(path)] == [good[0].id, good[1].id]
    assert "skipping unreadable record" in caplog.text
    # The next writer closes the torn line off, so its own record survives intact.
    append_jsonl(path, good[2])
    assert [t.id for t in read_jsonl(path)] == [g.id for g in good]


def test_newer_schema_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1}) + "\n")
    with pytest.raises(NewerSchemaError, match="Upgrade agentkit"):
        list(iter_jsonl(path))


def _writer(path: str, n: int, tag: str) -> None:
    for i in range(n):
        append_jsonl(path, Trajectory(task=f"{tag}-{i}", messages=[Message.user("x" * 5000)]))


def test_concurrent_writers_lose_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "log.jsonl")
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, 40, f"p{k}")) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    tasks = sorted(t.task for t in read_jsonl(path))
    assert len(tasks) == 120 and len(set(tasks)) == 120
    assert os.path.getsize(path) > 120 * 5000


def test_token_ids_are_stored_as_deltas_and_rebuilt() -> None:
    t = Trajectory()
    rec = lambda p, c: TokenRecord(prompt_ids=p, completion_ids=c, logprobs=[-0.5] * len(c))  # noqa: E731
    a = t.add_turn(Message.assistant("a"), phase="act", tokens=rec([1, 2, 3], [4, 5]))
    side = t.add_turn(Message.assistant("q"), phase="query", context="skills.query", input=[Message.user("q")],
                      tokens=rec([9, 9], [8]))
    b = t.add_turn(Message.assistant("b"), phase="act", tokens=rec([1, 2, 3, 4, 5, 6, 7], [10]))
    c = t.add_turn(Message.assistant("c"), phase="act", tokens=rec([1, 2, 3, 4, 5, 6, 7, 10, 11], [12, 13]))
    fresh = t.add_turn(Message.assistant("d"), phase="act", tokens=rec([1, 2, 99], [3]))
    assert (a.extends, a.prompt_ids) == (None, [1, 2, 3])
    assert (side.extends, side.prompt_ids) == (None, [9, 9])
    assert (b.extends, b.prompt_ids) == (0, [6, 7])
    assert (c.extends, c.prompt_ids) == (2, [11])
    assert (fresh.extends, fresh.prompt_ids) == (None, [1, 2, 99])
    back = Trajectory.model_validate_json(t.model_dump_json())
    assert back.prompt_ids(3) == [1, 2, 3, 4, 5, 6, 7, 10, 11]
    assert back.prompt_ids(2) == [1, 2, 3, 4, 5, 6, 7]
    assert back.prompt_ids(1) == [9, 9]
    assert side.input == [Message.user("q")] and c.input is None and c.n_input == 0
    # the earlier turns are found from the turns themselves: a trajectory read back encodes its next turn alike
    d = back.add_turn(Message.assistant("e"), phase="act", tokens=rec([1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14], [15]))
    assert (d.extends, d.prompt_ids) == (3, [14]) and back.prompt_ids(d.index)[-3:] == [12, 13, 14]


def test_a_prompt_continues_only_one_of_the_latest_eight_token_turns() -> None:
    rec = lambda p, c: TokenRecord(prompt_ids=p, completion_ids=c, logprobs=[-0.5] * len(c))  # noqa: E731
    t = Trajectory()
    t.add_turn(Message.assistant("a"), phase="act", tokens=rec([1], [2]))
    for k in range(7):  # seven later turns with other tokens (and one without any, which does not count)
        t.add_turn(Message.assistant("x"), phase="act", tokens=rec([50 + k], [0]))
        if k == 3:
            t.add_turn(Message.assistant("y"), phase="act")
    assert t.add_turn(Message.assistant("b"), phase="act", tokens=rec([1, 2, 3], [4])).extends == 0
    late = t.add_turn(Message.assistant("c"), phase="act", tokens=rec([1, 2, 5], [4]))  # turn 0 is now 9th
    assert late.extends is None and late.prompt_ids == [1, 2, 5]
