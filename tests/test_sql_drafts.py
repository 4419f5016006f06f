"""agentkit.training.sql_drafts on runs of the real draft planner over a generated SQLite database (the task
engine's bakery_orders): each completion is scored on its own, so a run's right sampled draft is kept although
the run as a whole answered wrongly, and equal queries and the per-task cap hold. The model stands for the model's
choices and returns token ids of its own, as a local backend records them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from test_experience import build_train_db

from agentkit.agent import Agent
from agentkit.environments.sql import SQLEnvironment
from agentkit.messages import Message
from agentkit.models import GenerationSettings
from agentkit.models.protocol import ModelResponse, TokenRecord
from agentkit.sql.draft import VOTE_SEED, SQLDraftPlanner
from agentkit.testing import FunctionModel
from agentkit.training.sql_drafts import KIND, verified_drafts
from agentkit.trajectory import Trajectory


class Drafts(FunctionModel):
    """Replies from `fn`, with token ids: two for the prompt, the reply's first characters as the completion."""

    def generate(self, messages: Sequence[Message], tools: Any = (), settings: GenerationSettings | None = None
                 ) -> ModelResponse:
        response = super().generate(messages, tools, settings)
        text = response.message.content[:20] or " "
        tokens = TokenRecord(prompt_ids=[len(messages), 7], completion_ids=[ord(c) for c in text],
                             logprobs=[-0.5] * len(text), temperature=settings.temperature or 0.0 if settings else 0.0)
        return ModelResponse(message=response.message, usage=response.usage, tokens=tokens)


def run_all(env: SQLEnvironment, model: Any) -> list[Trajectory]:
    """One run of the draft planner (three drafts voting) per task of `env`, scored by the environment."""
    runs = []
    for task in env.tasks():
        episode = env.reset(task)
        agent = Agent(model, list(episode.tools), instructions=env.instructions, max_steps=2,
                      planner=SQLDraftPlanner(votes=3), settings=GenerationSettings(temperature=0.0))
        trajectory = agent.run(task.prompt, task_id=task.id).trajectory
        trajectory.reward = episode.score(trajectory)["reward"]
        episode.close()
        runs.append(trajectory)
    return runs


def test_each_draft_is_scored_on_its_own_and_only_right_ones_are_kept(tmp_path: Path) -> None:
    _, records = build_train_db(tmp_path / "sqlgen")
    rows = [r for r in records if r["id"] in ("bakery_orders-003", "bakery_orders-004", "bakery_orders-002")]
    tasks = tmp_path / "sqlgen" / "three.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = SQLEnvironment(tasks=tasks, schema="tables", name="sql-train")
    sql = {r["question"]: r["sql"] for r in rows}
    wrong = "SELECT COUNT(*) + 12345 FROM Shop"
    districts, employees, products = (next(r["question"] for r in rows if r["id"] == f"bakery_orders-00{n}")
                                      for n in (3, 4, 2))
    drafts = {  # per question: the greedy draft, then the two sampled ones
        districts: [wrong, wrong, sql[districts]],  # two wrong drafts outvote the right one
        employees: [sql[employees], sql[employees].lower() + ";", "SELECT count(EmployeeId) FROM Employee"],
        products: ["SELECT nonsense FROM nowhere"] * 3,  # never runs
    }

    def reply(messages: Sequence[Message], tools: Any) -> str:
        question = next(q for q in drafts if q in messages[1].content)
        settings = model.settings[-1]
        if len(messages) > 2:  # a repair, after a draft that failed
            return f"```sql\n{drafts[question][0]}\n```"
        i = 0 if settings is None or not settings.temperature else 1 + int(settings.seed or 0) - VOTE_SEED
        return f"```sql\n{drafts[question][i]}\n```"

    model = Drafts(reply, name="drafts")
    runs = run_all(env, model)
    ids = {r["question"]: r["id"] for r in rows}
    assert [t.reward for t in runs] == [0.0, 0.2, 1.0]  # products, districts (the wrong query won), employees
    kept = verified_drafts(runs, env, per_task=2)
    assert [(t.task_id, t.answer) for t in kept] == [
        (ids[districts], sql[districts]),  # the one right sampled draft of a run that failed
        (ids[employees], sql[employees]),  # the greedy draft; its lower-case copy is the same query
        (ids[employees], "SELECT count(EmployeeId) FROM Employee"),
    ]
    for t in kept:
        assert t.reward == 1.0 and t.metadata["kind"] == KIND and t.metadata["source"] in {r.id for r in runs}
        (turn,) = t.turns
        assert turn.phase == "draft" and turn.completion_ids and turn.prompt_ids and turn.extends is None
    assert kept[0].turns[0].temperature > 0 and kept[1].turns[0].temperature == 0.0  # sampled; the greedy one
    assert [t.answer for t in verified_drafts(runs, env, per_task=1)] == [sql[districts], sql[employees]]
    assert len(verified_drafts([*runs, *runs], env, per_task=2)) == 3  # the same runs again add nothing
    with pytest.raises(ValueError, match="per_task"):
        verified_drafts(runs, env, per_task=0)
    env.close()


def test_kept_questions_that_paraphrase_or_share_sql_with_a_benchmark_question_are_dropped(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
    from sql_drafts_data import drop_benchmark_twins

    _, records = build_train_db(tmp_path / "sqlgen")
    env = SQLEnvironment(tasks=tmp_path / "sqlgen" / "train.jsonl", name="sql-train")
    by_id = {r["id"]: r for r in records}
    kept = [Trajectory(task=f"Question: {by_id[i]['question']}", task_id=i, reward=1.0)
            for i in ("bakery_orders-002", "bakery_orders-003", "bakery_orders-004")]
    benchmark = [
        {"question": "Which products have more than five order lines? Give their names.", "sql": "SELECT 1"},
        {"question": "How many rangers patrol the park?", "sql": by_id["bakery_orders-004"]["sql"].lower()},
        {"question": "List the ferry routes that sail on Sundays.", "sql": "SELECT route FROM ferry"},
    ]
    out, report = drop_benchmark_twins(kept, env, benchmark)
    assert [t.task_id for t in out] == ["bakery_orders-003"]
    assert [(d["task"], d["why"]) for d in report["dropped"]] == [("bakery_orders-002", "paraphrase"),
                                                                   ("bakery_orders-004", "same gold SQL")]
    assert report["dropped"][0]["similarity"] >= 0.85 and report["nearest_max"] >= 0.85
    assert report["benchmark_questions"] == 3
    env.close()


def test_the_script_writes_the_checked_data_and_its_report(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
    from sql_drafts_data import main

    from agentkit.sql.taskgen import build_tasks
    from agentkit.trajectory import append_jsonl, read_jsonl

    data = tmp_path / "sqlgen"
    build_tasks(data, splits=("train",))
    rows = [json.loads(line) for line in (data / "train.jsonl").read_text().splitlines()[:4]]
    (data / "four.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = SQLEnvironment(tasks=data / "four.jsonl", schema="tables", name="sql-train")
    gold = {r["question"]: r["sql"] for r in rows}

    def reply(messages: Sequence[Message], tools: Any) -> str:
        return f"```sql\n{next(s for q, s in gold.items() if q in messages[1].content)}\n```"

    log = tmp_path / "runs.jsonl"
    for run in run_all(env, Drafts(reply, name="drafts")):
        append_jsonl(log, run)
    env.close()
    out = tmp_path / "sql-drafts.jsonl"
    assert main(["--runs", str(log), "--data", str(data), "--out", str(out)]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    kept = read_jsonl([out])
    assert report["runs"] == 4 and report["runs_right"] == 4 and report["kept_before_check"] == 4
    assert report["kept"] == len(kept) == 4 - len(report["leakage"]["dropped"])
    assert report["leakage"]["benchmark_questions"] > 100  # every dev and test question
    assert all(t.reward == 1.0 and len(t.turns) == 1 for t in kept)


class Templated(FunctionModel):
    """Replies from `fn`, with the prompt rendered by a real chat template and tokenised as a local backend
    records it; the completion's ids are its characters."""

    def __init__(self, fn: Any, tokenizer: Any) -> None:
        super().__init__(fn, name="templated")
        self.tokenizer = tokenizer

    def generate(self, messages: Sequence[Message], tools: Any = (), settings: GenerationSettings | None = None
                 ) -> ModelResponse:
        response = super().generate(messages, tools, settings)
        prompt = self.tokenizer.apply_chat_template([{"role": m.role, "content": m.content} for m in messages],
                                                    tokenize=False, add_generation_prompt=True)
        text = response.message.content
        tokens = TokenRecord(prompt_ids=self.tokenizer(prompt, add_special_tokens=False)["input_ids"],
                             completion_ids=[ord(c) for c in text], logprobs=[-0.5] * len(text),
                             temperature=settings.temperature or 0.0 if settings else 0.0, prompt_text=prompt,
                             completion_text=text)
        return ModelResponse(message=response.message, usage=response.usage, tokens=tokens)


def test_skeleton_hint_masks_every_name_and_value() -> None:
    from agentkit.training.sql_drafts import HINT_LEAD, skeleton_hint

    hint = skeleton_hint("SELECT p.name, COUNT(c.id) FROM race AS p LEFT JOIN race_result AS c ON c.race_id = p.id "
                         "WHERE p.season = '2024' GROUP BY p.id")
    assert hint == HINT_LEAD + "SELECT _ , COUNT ( _ ) FROM _ LEFT JOIN _ ON _ = _ WHERE _ = _ GROUP BY _"


def test_missed_questions_asked_with_a_hint_are_kept_without_it(tmp_path: Path) -> None:
    """Rationalisation end to end: the script writes the questions no draft answered as a hinted task file, the
    draft planner runs on it, and the kept drafts' prompts are the plain questions' prompts, token for token."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
    from sql_drafts_data import main

    from agentkit.models.embedded import load_embedded_tokenizer
    from agentkit.sql.taskgen import build_tasks
    from agentkit.trajectory import append_jsonl, read_jsonl

    data = tmp_path / "sqlgen"
    build_tasks(data, splits=("train",))
    rows = [json.loads(line) for line in (data / "train.jsonl").read_text().splitlines()[:3]]
    (data / "three.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    gold = {r["question"]: r["sql"] for r in rows}
    hinted_question = rows[1]["question"]  # answered only when the hint is shown

    def reply(messages: Sequence[Message], tools: Any) -> str:
        user = messages[1].content
        question = next(q for q in gold if q in user)
        right = question != hinted_question or "Hint: " in user
        return f"```sql\n{gold[question] if right else 'SELECT 12345'}\n```"

    tokenizer = load_embedded_tokenizer("smollm2-135m")
    model = Templated(reply, tokenizer)
    plain_log, hinted_log = tmp_path / "plain.jsonl", tmp_path / "hinted.jsonl"
    env = SQLEnvironment(tasks=data / "three.jsonl", schema="tables", name="sql-train")
    plain_runs = run_all(env, model)
    env.close()
    for run in plain_runs:
        append_jsonl(plain_log, run)
    missed = tmp_path / "missed.jsonl"
    assert main(["--runs", str(plain_log), "--data", str(data), "--out", str(tmp_path / "d1.jsonl"),
                 "--missed", str(missed)]) == 0
    (record,) = [json.loads(line) for line in missed.read_text().splitlines()]
    assert record["id"] == rows[1]["id"] and record["evidence"].startswith("a right query has this shape")
    assert "_" in record["evidence"] and Path(record["db"]).is_absolute()

    env = SQLEnvironment(tasks=missed, schema="tables", name="sql-train")
    (hinted_run,) = run_all(env, model)
    env.close()
    assert hinted_run.reward == 1.0 and "Hint: " in hinted_run.turns[0].prompt_text
    append_jsonl(hinted_log, hinted_run)
    out = tmp_path / "d3.jsonl"
    assert main(["--runs", str(hinted_log), "--data", str(data), "--tasks", str(missed), "--tokenizer",
                 "smollm2-135m", "--out", str(out)]) == 0
    kept = read_jsonl([out])
    assert kept and json.loads(out.with_suffix(".json").read_text())["hints_removed"] == len(kept)
    plain_turn = next(r for r in plain_runs if r.task_id == rows[1]["id"]).turns[0]  # the same question, no hint
    for t in kept:
        (turn,) = t.turns
        assert "Hint:" not in turn.prompt_text and "Hint:" not in t.task and t.answer == gold[hinted_question]
        assert turn.prompt_text == plain_turn.prompt_text and turn.prompt_ids == plain_turn.prompt_ids
        assert turn.completion_ids == [ord(c) for c in turn.completion_text]
        assert all("Hint:" not in m.content for m in turn.input or [])
        assert t.metadata["hint_removed"] == record["evidence"]


def test_a_hint_the_prompt_does_not_show_cannot_be_removed() -> None:
    from agentkit.training.sql_drafts import without_hint
    from agentkit.trajectory import Turn

    turn = Turn(index=0, output=Message(role="assistant", content="SELECT 1"), prompt_ids=[1, 2],
                prompt_text="Question: how many?", completion_ids=[3])
    draft = Trajectory(task="Question: how many?", task_id="t-001", turns=[turn], reward=1.0)
    with pytest.raises(ValueError, match="does not show the hint"):
        without_hint(draft, "a right query has this shape: SELECT _", lambda text: [0])


def test_a_kept_repair_has_its_whole_prompt(tmp_path: Path) -> None:
    """A repair is recorded as the continuation of its draft's turn (`extends`); the kept one-turn trajectory
    carries the whole prompt the model saw, not only the repair's new tokens."""
    from agentkit.models.embedded import load_embedded_tokenizer

    _, records = build_train_db(tmp_path / "sqlgen")
    (row,) = [r for r in records if r["id"] == "bakery_orders-003"]
    tasks = tmp_path / "sqlgen" / "one.jsonl"
    tasks.write_text(json.dumps(row) + "\n")
    tokenizer = load_embedded_tokenizer("smollm2-135m")

    def reply(messages: Sequence[Message], tools: Any) -> str:  # the draft fails to run; the repair is right
        return f"```sql\n{row['sql'] if len(messages) > 2 else 'SELECT nonsense FROM nowhere'}\n```"

    class Continuing(Templated):
        def generate(self, messages: Sequence[Message], tools: Any = (), settings: GenerationSettings | None = None
                     ) -> ModelResponse:  # completion tokens as the template renders them, so prompts continue
            response = super().generate(messages, tools, settings)
            ids = self.tokenizer(response.message.content + "<|im_end|>", add_special_tokens=False)["input_ids"]
            assert response.tokens is not None
            tokens = TokenRecord(prompt_ids=response.tokens.prompt_ids, completion_ids=ids,
                                 logprobs=[-0.5] * len(ids), temperature=response.tokens.temperature,
                                 prompt_text=response.tokens.prompt_text,
                                 completion_text=response.message.content + "<|im_end|>")
            return ModelResponse(message=response.message, usage=response.usage, tokens=tokens)

    env = SQLEnvironment(tasks=tasks, schema="tables", name="sql-train")
    (run,) = run_all(env, Continuing(reply, tokenizer))
    repair = next(t for t in run.turns if t.phase == "repair")
    assert repair.extends is not None and len(repair.prompt_ids) < len(run.prompt_ids(repair.index))
    (kept,) = verified_drafts([run], env, per_task=2)
    (turn,) = kept.turns
    assert turn.phase == "repair" and turn.extends is None
    assert turn.prompt_ids == run.prompt_ids(repair.index)
    assert tokenizer.decode(turn.prompt_ids).startswith(tokenizer.decode(run.turns[0].prompt_ids))
    env.close()
