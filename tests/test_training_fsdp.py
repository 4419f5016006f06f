"""FSDP2 sharding under torchrun (2 CPU processes, gloo): the same step as one process, and checkpoints
that move between sharded and unsharded runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

WORKER = textwrap.dedent(
    """
    import sys, torch
    torch.set_num_threads(1)
    sys.path.insert(0, {tests!r})
    from test_training_trainer import sampled, cfg
    from agentkit.models.tiny import tiny_llama
    from agentkit.training import distributed as dist
    from agentkit.training.config import LoraConfig
    from agentkit.training.trainer import Trainer

    model, tok = tiny_llama(seed=0)
    data = sampled(model, tok)[:9]  # 5 + 4 sequences: 3 and 2 micro-batches, one process pads with a no-op pass
    model, tok = tiny_llama(seed=0)
    config = cfg(lora=LoraConfig(enabled={lora}, r=4, alpha=8), kl_coef=0.01, max_grad_norm=1e9,
                 micro_batch_size=2, fsdp={fsdp}, lr=1e-3)
    trainer = Trainer(model, config, tokenizer=tok, out_dir={out!r})
    grads = []
    step = trainer.optimizer.step

    def capture(*a, **k):
        for p in trainer.params:  # gathering a shard is collective: every process takes part
            grads.append((p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad).clone())
        return step(*a, **k)

    trainer.optimizer.step = capture
    out = {{"world": dist.world_size(), "sharded": dist.is_sharded(trainer.scorer)}}
    if {resume!r}:
        trainer.resume({resume!r})
        out["loss2"] = trainer.train_on(data)["loss"]
    else:
        first = trainer.train_on(data)
        trainer.save()
        out.update(loss=first["loss"], kl=first["kl"], grad_norm=first["grad_norm"], grads=grads[:])
        out["loss2"] = trainer.train_on(data)["loss"]
    if dist.is_main():
        torch.save(out, {result!r})
    """
)


ONLINE_WORKER = textwrap.dedent(
    """
    import json, sys, torch
    torch.set_num_threads(1)
    sys.path.insert(0, {tests!r})
    from test_training_online import LengthEnv
    from test_training_trainer import cfg
    from agentkit.models.tiny import tiny_llama
    from agentkit.training import distributed as dist
    from agentkit.training.config import LoraConfig
    from agentkit.training.trainer import Trainer

    model, tok = tiny_llama(seed=0)
    config = cfg(lora=LoraConfig(enabled=False), fsdp=True, old_logprobs="logged", max_steps=2, tasks_per_step=2,
                 group_size=4, max_new_tokens=8, max_turns=1, lr=1e-2, micro_batch_size=2)
    trainer = Trainer(model, config, tokenizer=tok, out_dir={out!r})
    summary = trainer.fit(LengthEnv())
    if dist.is_main():
        records = [json.loads(line) for line in open({out!r} + "/metrics.jsonl")]
        rollouts = sum(1 for _ in open({out!r} + "/rollouts.jsonl"))
        torch.save({{"summary": summary, "records": records, "rollouts": rollouts,
                    "sharded": dist.is_sharded(trainer.scorer)}}, {result!r})
    """
)


GATHER_WORKER = textwrap.dedent(
    """
    import pathlib, sys, torch
    torch.set_num_threads(1)
    sys.path.insert(0, {tests!r})
    from test_training_trainer import sampled, cfg
    from agentkit.models.tiny import tiny_llama
    from agentkit.training import distributed as dist
    from agentkit.training.config import LoraConfig
    from agentkit.training.trainer import Trainer
    from agentkit.training.vllm_rollout import adapter_effect, save_adapter

    model, tok = tiny_llama(seed=0)
    data = sampled(model, tok)[:8]
    model, tok = tiny_llama(seed=0)
    trainer = Trainer(model, cfg(lora=LoraConfig(r=4, alpha=8), fsdp={fsdp}, lr=1e-3, micro_batch_size=2,
                                 max_grad_norm=1e9), tokenizer=tok, out_dir={out!r})
    trainer.train_on(data)  # B moves away from 0
    state = dist.whole_trainable(trainer.policy)  # what VLLMRollout.sync gathers on every process
    effect = adapter_effect(trainer.policy)
    if dist.is_main():
        save_adapter(trainer.policy, pathlib.Path({out!r}) / "adapter", state)  # what rank 0 ships
        if dist.world_size() == 1:
            save_adapter(trainer.policy, pathlib.Path({out!r}) / "adapter_plain")
        torch.save({{"world": dist.world_size(), "sharded": dist.is_sharded(trainer.scorer), "state": state,
                    "effect": effect}}, {result!r})
    """
)


RELEASE = textwrap.dedent(
    """
    # A worker's trainer is a module global, so its sharded model and the collectives it holds would be freed
    # during interpreter shutdown, after the process group was torn down at exit; free them first, as a
    # function-local trainer (agentkit train) is.
    del trainer, model
    import gc
    gc.collect()
    """
)


def _run(tmp_path: Path, name: str, procs: int, *, fsdp: bool = False, lora: bool = False, resume: str = "",
         worker: str = WORKER) -> dict:
    script, result = tmp_path / f"{name}.py", tmp_path / f"{name}.pt"
    script.write_text(worker.format(tests=str(Path(__file__).parent), out=str(tmp_path / name), result=str(result),
                                    fsdp=fsdp, lora=lora, resume=resume) + RELEASE)
    port = 29600 + abs(hash(name)) % 300
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(procs), "--master_port", str(port),
           str(script)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONFAULTHANDLER": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return torch.load(result)


def _assert_same_step(one: dict, sharded: dict) -> None:
    assert one["world"] == 1 and not one["sharded"]
    assert sharded["world"] == 2 and sharded["sharded"]
    assert one["loss"] == pytest.approx(sharded["loss"], abs=1e-6)
    assert one["kl"] == pytest.approx(sharded["kl"], abs=1e-7)
    assert one["grad_norm"] == pytest.approx(sharded["grad_norm"], rel=1e-5)
    assert len(one["grads"]) == len(sharded["grads"]) > 0
    for a, b in zip(one["grads"], sharded["grads"], strict=True):
        assert torch.allclose(a, b, atol=1e-6, rtol=1e-4)
    assert one["loss2"] == pytest.approx(sharded["loss2"], abs=1e-5)  # after one optimiser step on shards


@pytest.mark.slow
def test_fsdp_full_matches_one_process_and_checkpoints_cross_over(tmp_path: Path) -> None:
    one = _run(tmp_path, "one", 1, fsdp=False)
    sharded = _run(tmp_path, "sharded", 2, fsdp=True)
    _assert_same_step(one, sharded)
    # The sharded run's checkpoint holds the same whole weights and optimizer state as one process's...
    a, b = tmp_path / "one" / "ckpt-000001", tmp_path / "sharded" / "ckpt-000001"
    wa, wb = torch.load(a / "trainable.pt"), torch.load(b / "trainable.pt")
    assert wa.keys() == wb.keys() and len(wa) > 0
    for name in wa:  # lr 1e-3: a wrong update is off by ~1e-3; Adam's first step amplifies round-off on tiny grads
        assert torch.allclose(wa[name], wb[name], atol=1e-4), name
    oa, ob = torch.load(a / "optimizer.pt", weights_only=False), torch.load(b / "optimizer.pt", weights_only=False)
    assert oa["state"].keys() == ob["state"].keys()
    for i in oa["state"]:
        assert torch.allclose(oa["state"][i]["exp_avg_sq"], ob["state"][i]["exp_avg_sq"], atol=1e-9, rtol=1e-4)
    assert (b / "model" / "config.json").exists()  # exported in Transformers format from the gathered weights
    # ...so each resumes in the other mode and takes the same next step.
    next_step = pytest.approx(one["loss2"], abs=1e-5)
    assert _run(tmp_path, "sharded_from_one", 2, fsdp=True, resume=str(a))["loss2"] == next_step
    assert _run(tmp_path, "one_from_sharded", 1, fsdp=False, resume=str(b))["loss2"] == next_step


@pytest.mark.slow
def test_fsdp_lora_matches_one_process(tmp_path: Path) -> None:
    _assert_same_step(_run(tmp_path, "lora_one", 1, fsdp=False, lora=True),
                      _run(tmp_path, "lora_sharded", 2, fsdp=True, lora=True))


@pytest.mark.slow
def test_fsdp_online_rollouts_sample_from_the_sharded_policy(tmp_path: Path) -> None:
    out = _run(tmp_path, "online", 2, worker=ONLINE_WORKER)
    assert out["sharded"] and out["summary"]["steps"] == 2
    assert out["rollouts"] == 2 * 2 * 4  # steps × tasks × group, gathered from both processes
    trained = [r for r in out["records"] if "ratio_max" in r]
    assert len(trained) >= 1
    for record in trained:  # logged log-probs = the policy being trained: rollouts used its gathered weights
        assert record["ratio_max"] == pytest.approx(1.0, abs=1e-3)
        assert record["skipped"] == 0 and record["loss"] == record["loss"]


@pytest.mark.slow
def test_adapter_gathered_from_shards_equals_the_unsharded_one(tmp_path: Path) -> None:
    """What VLLMRollout ships under FSDP: the LoRA weights gathered from 2 processes' shards, saved by rank 0,
    equal one process's adapter after the same step (peft format, the file vLLM loads)."""
    from safetensors.torch import load_file

    one = _run(tmp_path, "gather_one", 1, worker=GATHER_WORKER)
    sharded = _run(tmp_path, "gather_sharded", 2, fsdp=True, worker=GATHER_WORKER)
    assert one["world"] == 1 and not one["sharded"] and sharded["world"] == 2 and sharded["sharded"]
    assert one["state"].keys() == sharded["state"].keys() and any("lora_B" in k for k in one["state"])
    for name, tensor in one["state"].items():
        assert tensor.shape == sharded["state"][name].shape  # whole, not a shard
        assert torch.allclose(tensor, sharded["state"][name], atol=1e-5), name
    assert any(float(t.abs().max()) > 1e-4 for k, t in one["state"].items() if "lora_B" in k)  # not the zero init
    assert sharded["effect"] == pytest.approx(one["effect"], rel=1e-3) and one["effect"] > 0
    plain = load_file(tmp_path / "gather_one" / "adapter_plain" / "adapter_model.safetensors")
    for folder in ("gather_one", "gather_sharded"):
        shipped = load_file(tmp_path / folder / "adapter" / "adapter_model.safetensors")
        assert shipped.keys() == plain.keys() and len(plain) > 0
        for name in plain:
            assert torch.allclose(shipped[name], plain[name], atol=1e-5), (folder, name)
    assert (tmp_path / "gather_sharded" / "adapter" / "adapter_config.json").is_file()


def test_optimizer_state_by_name_round_trip() -> None:
    from agentkit.training.checkpoint import optimizer_by_index, optimizer_by_name

    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    names = [n for n, _ in model.named_parameters()]
    by_name = optimizer_by_name(opt.state_dict(), names)
    assert set(by_name["state"]) == set(names) and by_name["param_groups"][0]["params"] == names
    back = optimizer_by_index(by_name, names)
    assert back["param_groups"] == opt.state_dict()["param_groups"]
    for i, state in opt.state_dict()["state"].items():
        assert torch.equal(back["state"][i]["exp_avg"], state["exp_avg"])

