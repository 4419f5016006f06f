"""`agentkit learn --method experience` end to end on a train-split database of the SQL task engine, and the
report's attribution of every flipped held-out task to what its run was shown or used. The scripted model solves
a question it has seen solved (a learning task) or one shown worked examples; everything else is real."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from test_experience import build_train_db

from agentkit.environments.base import Task, succeeded
from agentkit.environments.sql import SQLEnvironment
from agentkit.memory.experience import TITLE, Experience
from agentkit.messages import Message, ToolCall
from agentkit.records import (
    EXPERIENCE,
    NOTES,
    SKILLS,
    ExperienceRecord,
    NotesRecord,
    ShownExample,
    ShownNote,
    SkillsRecord,
)
from agentkit.sql.recipe import SQL_INSTRUCTIONS_SINGLE_SHOT
from agentkit.testing import FunctionModel
from agentkit.training.learning import learn, split_tasks
from agentkit.training.learning.methods import HINT_TITLE
from agentkit.training.learning.report import Score, artefacts_used, flipped
from agentkit.training.learning.splits import validation_split
from agentkit.training.sql_drafts import HINT_LEAD, skeleton_hint
from agentkit.trajectory import Trajectory, read_jsonl


class ExamplesScript(FunctionModel):
    """Confirms the gold query of a question it has solved before (`known`) or when worked examples are in its
    prompt; else a wrong query. Answers a pre-prediction with the gold query in a block."""

    def __init__(self, env: SQLEnvironment, known: set[str]) -> None:
        super().__init__(self.reply, name="examples-script")
        self.gold = {t.prompt: t.data["gold_sql"] for t in env.tasks()}
        self.known = known
        self.helped: list[str] = []

    def read(self, messages: Sequence[Message]) -> tuple[str, str]:
        """The system prompt and the task question of a request."""
        system = messages[0].content if messages and messages[0].role == "system" else ""
        user = next((m.content for m in messages if m.role == "user"), "")
        return system, next(p for p in sorted(self.gold, key=len, reverse=True) if p in user)

    def reply(self, messages: Sequence[Message], tools: Any) -> Message | str:
        system, prompt = self.read(messages)
        if system.startswith(SQL_INSTRUCTIONS_SINGLE_SHOT):
            return f"```sql\n{self.gold[prompt]}\n```"
        helped = f"## {TITLE}" in system
        if helped:
            self.helped.append(prompt)
        sql = self.gold[prompt] if helped or prompt in self.known else "SELECT 0"
        return Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": sql})])


def bakery(tmp_path: Path) -> tuple[SQLEnvironment, list[Task], list[Task], list[Task]]:
    """A 20-question environment on one generated database, and `learn`'s split of it with seed 0: the learning
    tasks, the validation tasks and the held-out tasks."""
    _, records = build_train_db(tmp_path / "sqlgen")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps({**r, "db": str(tmp_path / "sqlgen" / r["db"])}) for r in records[:20]))
    env = SQLEnvironment(tasks=tasks, name="sql-bakery")
    train, held = split_tasks(env.tasks(), 0.3, 0)
    learning, check = validation_split(train, 0.25, 0)
    return env, learning, check, held


def test_experience_learned_from_train_runs_flips_heldout_tasks_and_the_report_says_by_which(
        tmp_path: Path) -> None:
    env, learning, check, held = bakery(tmp_path)
    assert len(held) == 6 and len(check) == 4 and len(learning) == 10
    model = ExamplesScript(env, {t.prompt for t in learning})
    out = tmp_path / "run"
    # every example shown whatever its question similarity: the scripted model is helped by any example
    report = learn(env, model, budget="30ep", methods=("experience",), out=out, seed=0, max_steps=3,
                   experience_options={"min_similarity": 0.0})
    env.close()
    # before: the held-out and validation questions were never solved; with the examples of the learning runs,
    # every one is
    assert report.before.successes == 0 and report.after.successes == 6
    assert [s.successes for s in report.validation] == [0, 4] and "set_aside" not in report.details["experience"]
    details = report.details["experience"]
    assert details["examples"] == details["admitted"] == 10 and details["episodes"] == 10  # one pass
    experience = Experience.load(out / "experience.json")
    assert experience.min_similarity == 0.0  # the floor it was learned and validated with travels in the file
    assert {e.task_id for e in experience.examples} == {t.id for t in learning}  # train runs only
    assert all(e.verified_by == "gold" for e in experience.examples)
    assert report.artefacts["experience"] == str(out / "experience.json")
    # every flip is attributed to the examples its run was shown
    assert len(report.flips) == 6 and {f.task for f in report.flips} == {t.id for t in held}
    runs = {t.task_id: t for t in read_jsonl([out / "trajectories" / "heldout-after-experience.jsonl"])}
    for flip in report.flips:
        assert flip.before == "before" and flip.after == "after-experience" and flip.became == "right"
        shown = runs[flip.task].records.get(EXPERIENCE)
        assert shown is not None and len(shown.shown) == 3 and shown.draft_sql  # > k examples: pre-predicted
        assert flip.artefacts == [f"example {s.id}" for s in shown.shown]
        assert flip.use in ("copied", "adapted", "own") and flip.use == shown.use
    page = (out / "report.html").read_text()
    assert "Flipped held-out tasks" in page and f"example {report.flips[0].artefacts[0][8:]}" in page
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema_version"] == 2 and len(summary["flips"]) == 6
    from agentkit.memory import load_memory

    assert [type(e) for e in load_memory(out)] == [Experience]
    # an example of a held-out task would be a leak, and the run's own check catches it
    from agentkit.memory.experience import WorkedExample
    from agentkit.training.learning import check_no_leak

    leaked = held[0]
    experience.add(WorkedExample(database="db", question=leaked.data["question"], sql=leaked.data["gold_sql"],
                                 skeleton="", verified_by="gold", task_id=leaked.id))
    experience.save(out / "experience.json")
    with pytest.raises(AssertionError, match=f"example .*: {leaked.id}"):
        check_no_leak(report, out)


def score(label: str, solved: dict[str, bool]) -> Score:
    wins = sum(solved.values())
    return Score(label=label, environment="sql", tasks=len(solved), successes=wins, success_rate=wins / len(solved),
                 ci_low=0.0, ci_high=1.0, per_task=solved)


def test_a_flip_is_attributed_to_what_its_run_was_shown_or_used_and_otherwise_to_noise() -> None:
    shown = Trajectory(task_id="a")
    shown.records.set(EXPERIENCE, ExperienceRecord(database="db", shown=[ShownExample(id="ex-1")], use="adapted"))
    shown.records.set(NOTES, NotesRecord([ShownNote(id="note-7")]))
    shown.records.set(SKILLS, SkillsRecord(used="count-rows"))
    fixed = Trajectory(task_id="b", extras={"shape_checks": {"fixed": [{"slip": "extra_limit"}]},
                                            "pacing": {"declined": [3]}, "repairs": {"shown": [{"kind": "no_column"}]}})
    noise = Trajectory(task_id="c")
    before = score("before", {"a": False, "b": True, "c": True, "d": False})
    after = score("after-x", {"a": True, "b": False, "c": False, "d": False})
    flips = {f.task: f for f in flipped(before, after, {"a": shown, "b": fixed, "c": noise})}
    assert set(flips) == {"a", "b", "c"}  # "d" did not change
    assert flips["a"].became == "right" and flips["a"].use == "adapted"
    assert flips["a"].artefacts == ["example ex-1", "skill count-rows", "note note-7"]
    assert flips["b"].became == "wrong" and flips["b"].artefacts == ["check extra_limit", "pacing", "repair no_column"]
    assert flips["c"].artefacts == []  # nothing learned acted: the engine's run-to-run difference
    assert artefacts_used(noise, adapter=True) == ["adapter"]
    with_adapter = flipped(before, after, {"c": noise}, adapter=True)
    assert {f.task: f.artefacts for f in with_adapter}["c"] == ["adapter"]


def test_the_toolkits_limit_check_is_named_when_it_refused_a_query() -> None:
    from agentkit.sql.toolkit import UNORDERED_LIMIT

    refused = Message.tool(ToolCall(name="confirm_answer", arguments={"sql": "SELECT a FROM t LIMIT 1"}),
                           f"Error: {UNORDERED_LIMIT}", is_error=True)
    assert artefacts_used(Trajectory(task_id="a", messages=[refused])) == ["limit check (toolkit)"]


def test_experience_after_another_method_plays_only_the_questions_no_verified_run_answered(tmp_path: Path) -> None:
    env, learning, _, _ = bakery(tmp_path)
    known = {t.prompt for t in learning[:5]}
    model = ExamplesScript(env, known)
    out = tmp_path / "run"
    report = learn(env, model, budget="30ep", methods=("notes", "experience"), out=out, seed=0, max_steps=3,
                   experience_options={"min_similarity": 0.0})
    env.close()
    notes_runs = read_jsonl([out / "trajectories" / "train-notes.jsonl"])
    solved_by_notes = {t.task_id for t in notes_runs if succeeded(t)}
    assert solved_by_notes == {t.id for t in learning if t.prompt in known}
    experience_runs = read_jsonl([out / "trajectories" / "train-experience.jsonl"])
    # the notes phase's verified runs became examples without another run; the experience phase played the rest
    assert sorted(t.task_id or "" for t in experience_runs) == sorted(t.id for t in learning if t.prompt not in known)
    details = report.details["experience"]
    assert details["episodes"] == 5 and details["examples"] == 10
    assert {e.task_id for e in Experience.load(out / "experience.json").examples} == {t.id for t in learning}


class HintScript(ExamplesScript):
    """`ExamplesScript`, and also right when its system prompt shows the hint of the question's gold query."""

    def reply(self, messages: Sequence[Message], tools: Any) -> Message | str:
        system, prompt = self.read(messages)
        if f"## {HINT_TITLE}" in system and skeleton_hint(self.gold[prompt]) in system:
            return Message.assistant(tool_calls=[ToolCall(name="confirm_answer",
                                                          arguments={"sql": self.gold[prompt]})])
        return super().reply(messages, tools)


@pytest.mark.parametrize("hints", [False, True])
def test_hinted_retries_turn_questions_the_agent_never_answers_into_examples_no_heldout_run_sees_a_hint(
        tmp_path: Path, hints: bool) -> None:
    env, learning, _, held = bakery(tmp_path)
    model = HintScript(env, known=set())  # by itself it answers no question
    out = tmp_path / "run"
    report = learn(env, model, budget="30ep", methods=("experience",), out=out, seed=0, max_steps=3,
                   experience_options={"min_similarity": 0.0}, hinted_retries=hints)
    env.close()
    details = report.details["experience"]
    if not hints:  # nothing verified, nothing to show: the agent after is the agent before
        assert details["examples"] == 0 and "hinted" not in details and report.after.successes == 0
        return
    runs = read_jsonl([out / "trajectories" / "train-experience.jsonl"])
    retried = [t for t in runs if t.metadata.get("hinted")]
    # the first question failed and was retried with its hint, which made the first example; later questions
    # were answered with examples shown
    assert details["hinted"] == len(retried) >= 1 and details["hinted_admitted"] == sum(map(succeeded, retried)) >= 1
    assert details["examples"] == len(learning)
    gold = {t.id: t.data["gold_sql"] for t in learning}
    for trajectory in retried:
        system = trajectory.messages[0].content
        assert f"## {HINT_TITLE}" in system and skeleton_hint(gold[trajectory.task_id or ""]) in system
    examples = {e.task_id: e for e in Experience.load(out / "experience.json").examples}
    for trajectory in retried:  # the example holds the plain question and the query the hint led to
        example = examples[trajectory.task_id]
        assert example.question == next(t.data["question"] for t in learning if t.id == trajectory.task_id)
        assert HINT_LEAD not in example.question and example.sql == gold[trajectory.task_id or ""]
        assert example.hinted
    assert sum(e.hinted for e in examples.values()) == details["hinted_admitted"]
    assert report.after.successes == len(held) and report.before.successes == 0
    heldout_runs = read_jsonl(sorted((out / "trajectories").glob("heldout-*.jsonl")))
    assert heldout_runs and not any(HINT_LEAD in m.content for t in heldout_runs for m in t.messages)
    assert json.loads((out / "state.json").read_text())["config"]["hinted_retries"] is True
