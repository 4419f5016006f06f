"""Feedback on runs: `agentkit.feedback.rate` from the SDK, `/good` and `/bad [why]` in the chat, and the verdict
read from approval decisions; rated runs land in the chat's log, each id's last line counting."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from agentkit import Agent
from agentkit.cli.chat import ChatConfig, run_chat
from agentkit.feedback import feedback_of, rate
from agentkit.records import FEEDBACK
from agentkit.testing import ScriptedModel
from agentkit.trajectory import ApprovalRecord, Trajectory, iter_jsonl, read_jsonl


def test_rate_stores_the_verdict_on_the_trajectory_and_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    result = Agent(ScriptedModel(["42"]), log=log).run("What is 6 * 7?")
    verdict = rate(result.trajectory, good=False, why="  it is 42, but say why  ", log=log)
    assert verdict.good is False and verdict.why == "it is 42, but say why" and verdict.source == "user"
    assert result.trajectory.records.get(FEEDBACK) == verdict
    assert len(list(iter_jsonl(log))) == 2  # logged when it finished, and again rated
    # what reads logs (learn --from-runs, the trainer) sees the run once, rated
    runs = read_jsonl(log)
    assert len(runs) == 1 and runs[0].records.get(FEEDBACK) == verdict
    rate(result.trajectory, good=True, source="callback", log=log)  # a later verdict replaces it
    assert [feedback_of(t).good for t in read_jsonl([log, log])] == [True]  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="source must be one of"):
        rate(result.trajectory, good=True, source="the boss")


def test_approval_decisions_are_a_verdict_when_nobody_rated_the_run() -> None:
    def decided(*approved: bool) -> Trajectory:
        return Trajectory(approvals=[ApprovalRecord(call_id=f"c{i}", tool="write_file", approved=a,
                                                    reason=None if a else "wrong folder")
                                     for i, a in enumerate(approved)])

    assert feedback_of(Trajectory()) is None
    good = feedback_of(decided(True, True))
    assert good is not None and good.good and good.source == "approval"
    bad = feedback_of(decided(True, False))
    assert bad is not None and not bad.good and bad.why == "wrong folder" and bad.source == "approval"
    rated = decided(False)
    rate(rated, good=True)  # the person's own rating wins over what their decisions imply
    assert feedback_of(rated).good is True  # type: ignore[union-attr]


def test_good_and_bad_in_the_chat_rate_the_last_reply_and_append_it_to_the_log(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["Paris.", "Lyon.", "Berlin."]))
    log = tmp_path / "chat.jsonl"
    out = StringIO()
    lines = ["/good", "capital of France?", "/good", "capital of Germany?", "/bad it is Berlin", "and of Spain?"]
    code = run_chat(ChatConfig(model=f"script:{script}", tools="none", log=log), console=Console(file=out, width=200),
                    stdin=StringIO("\n".join(lines) + "\n"))
    text = out.getvalue()
    assert code == 0
    assert "nothing to rate yet" in text and f"rated the last reply good; appended to {log}" in text
    assert "rated the last reply bad" in text
    runs = read_jsonl(log)
    assert [t.task for t in runs] == ["capital of France?", "capital of Germany?", "and of Spain?"]
    verdicts = [t.records.get(FEEDBACK) for t in runs]
    assert verdicts[0] is not None and verdicts[0].good and verdicts[0].why is None
    assert verdicts[1] is not None and not verdicts[1].good and verdicts[1].why == "it is Berlin"
    assert verdicts[2] is None  # not rated
    assert len(list(iter_jsonl(log))) == 5  # three runs, two of them appended again when rated
    # without --log the rating stays on the session's trajectory, and the chat says how to keep it
    out2 = StringIO()
    run_chat(ChatConfig(model=f"script:{script}", tools="none"), console=Console(file=out2, width=200),
             stdin=StringIO("hello\n/bad\n"))
    assert "start the chat with --log FILE" in out2.getvalue()
    assert "/good" in _help(script)


def _help(script: Path) -> str:
    out = StringIO()
    run_chat(ChatConfig(model=f"script:{script}", tools="none"), console=Console(file=out, width=200),
             stdin=StringIO("/help\n"))
    return out.getvalue()
