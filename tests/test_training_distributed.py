"""Data parallel under torchrun or accelerate launch (2 CPU processes, gloo): the same step as one process."""

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
    data = sampled(model, tok)[:12]
    model, tok = tiny_llama(seed=0)
    trainer = Trainer(model, cfg(lora=LoraConfig(enabled=False), kl_coef=0.01, max_grad_norm=1e9, micro_batch_size=2),
                      tokenizer=tok, out_dir={out!r})
    grads = []
    trainer.optimizer.step = lambda: grads.extend(p.grad.clone() for p in trainer.params)
    record = trainer.train_on(data)
    if dist.is_main():
        torch.save({{"grads": grads, "loss": record["loss"], "kl": record["kl"],
                    "world": dist.world_size()}}, {result!r})
    """
)


@pytest.mark.slow
def test_two_processes_match_one(tmp_path: Path) -> None:
    tests = str(Path(__file__).parent)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--master_port", "29502", "--nproc_per_node"]
    # accelerate's multi-process launch (--multi_gpu runs torchrun underneath; on CPU it uses gloo too)
    accelerate = [str(Path(sys.executable).parent / "accelerate"), "launch", "--multi_gpu", "--num_machines", "1",
                  "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29503",
                  "--num_processes"]
    results = {}
    for name, launcher, procs in [("one", torchrun, 1), ("torchrun", torchrun, 2), ("accelerate", accelerate, 2)]:
        script = tmp_path / f"worker_{name}.py"  # not accelerate.py: the script's folder is on sys.path
        result = tmp_path / f"{name}.pt"
        script.write_text(WORKER.format(tests=tests, out=str(tmp_path / name), result=str(result)))
        env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
        done = subprocess.run([*launcher, str(procs), str(script)], capture_output=True, text=True, timeout=600,
                              env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        results[name] = torch.load(result)
    one = results.pop("one")
    assert one["world"] == 1
    for many in results.values():
        assert many["world"] == 2
        assert one["loss"] == pytest.approx(many["loss"], abs=1e-6)
        assert one["kl"] == pytest.approx(many["kl"], abs=1e-7)
        for a, b in zip(one["grads"], many["grads"], strict=True):
            assert torch.allclose(a, b, atol=1e-6, rtol=1e-4)


ONLINE_WORKER = textwrap.dedent(
    """
    import sys, torch
    torch.set_num_threads(1)
    sys.path.insert(0, {tests!r})
    from test_training_online import LengthEnv
    from test_training_trainer import cfg
    from agentkit.models.tiny import tiny_llama
    from agentkit.training.config import LoraConfig
    from agentkit.training.trainer import Trainer

    model, tok = tiny_llama(seed=0)
    config = cfg(lora=LoraConfig(enabled=False), max_steps={steps}, tasks_per_step=2, group_size=4,
                 max_new_tokens=8, max_turns=1, lr=1e-2, micro_batch_size=2)
    trainer = Trainer(model, config, tokenizer=tok, out_dir={out!r})
    if {resume}:
        trainer.resume()
    trainer.fit(LengthEnv())
    """
)


def _torchrun(script: Path, procs: int = 2) -> None:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(procs), "--master_port", "29511",
           str(script)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]


def _step_rollouts(out: Path, step: int) -> list[tuple[str, list[int]]]:
    from agentkit.trajectory import read_jsonl

    runs = [t for t in read_jsonl(out / "rollouts.jsonl") if t.metadata.get("train_step") == step]
    return [(t.task_id, [tok for turn in t.turns for tok in turn.completion_ids]) for t in runs]


@pytest.mark.slow
def test_resumed_online_run_samples_what_the_uninterrupted_run_sampled(tmp_path: Path) -> None:
    """Every process's RNG is checkpointed: after resume, each process draws the rollouts it would have."""
    tests = str(Path(__file__).parent)
    runs = {"whole": [(2, False)], "split": [(1, False), (2, True)]}
    for name, legs in runs.items():
        for i, (steps, resume) in enumerate(legs):
            script = tmp_path / f"{name}{i}.py"
            script.write_text(ONLINE_WORKER.format(tests=tests, out=str(tmp_path / name), steps=steps, resume=resume))
            _torchrun(script)
    whole, split = _step_rollouts(tmp_path / "whole", 1), _step_rollouts(tmp_path / "split", 1)
    assert len(whole) == 8 and len({t for t, _ in whole}) == 2  # two processes, one task of 4 rollouts each
    assert whole == split
    assert _step_rollouts(tmp_path / "whole", 0) == _step_rollouts(tmp_path / "split", 0)
