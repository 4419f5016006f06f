"""agentkit.training — RL on the agent's own trajectories: GRPO, SDAR, Skill1 credit, Dual-Track GRPO.

    from agentkit.training import Trainer, TrainConfig
    Trainer("local:smollm2-135m", TrainConfig(algo="grpo", lr=1e-5), out_dir="ckpt").fit(read_jsonl("runs.jsonl"))

Modules, in the order data flows through them:
    config      TrainConfig: every hyperparameter of METHODS.md with its published default (YAML/TOML)
    sequences   trajectory → token sequences (recorded ids, never re-tokenised), loss masks, phases
    credit      per-algorithm tracks: which advantage each generated token carries
    advantages  group normalisation, NDCG, Skill1 rewards (pure functions)
    logprobs    chunked fused log-probs/entropies of generated tokens only (no [N, V] float32 tensor)
    losses      PPO-clip, k3 KL, SDAR, entropy (pure functions, token-mean over the global batch)
    trainer     Trainer: optimiser steps, NaN guard, checkpoints, offline loop
    online      rollouts with the current policy between updates
    rollout     the RolloutEngine seam (LocalRollout; vLLM plugs in here) and a batched sampler
    checkpoint  atomic checkpoints, exact resume        metrics   metrics.jsonl (+ TensorBoard, wandb)
    report      `agentkit train report` PNG             distributed  data parallel under torchrun

Precision: bf16 autocast on GPUs that support it (`dtype="auto"`), fp32 on CPU; master weights and
optimizer state stay fp32; log-probs are always computed in fp32.

Multi-GPU (and multi-process CPU): launch the very same entry point under torchrun,

    torchrun --nproc_per_node 4 -m agentkit.cli.main train --data 'runs/*.jsonl' --out ckpt/
    accelerate launch --num_processes 4 -m agentkit.cli.main train ...   # same thing via accelerate

Each process joins the process group (NCCL on GPUs, gloo on CPU), holds a full replica of the model,
trains on every WORLD_SIZE-th sequence of each batch, and gradients are summed across processes before
the step; every loss is a token-mean over the global batch, so N processes compute the same update as
one. Online, each process rolls out its share of the step's tasks and the trajectories are exchanged.
Rank 0 writes metrics and checkpoints. Limits, stated plainly: parameters are replicated (data
parallel), not sharded — FSDP sharding for models that do not fit one device is NOT implemented yet
(the fused log-prob reads the output layer's weight directly, which FSDP2 would need to gather; that
is where the work lies); exact resume is tested in one process.
"""

from agentkit.training.config import LoraConfig, TrainConfig
from agentkit.training.rollout import LocalRollout, RolloutEngine
from agentkit.training.trainer import Trainer

__all__ = ["LocalRollout", "LoraConfig", "RolloutEngine", "TrainConfig", "Trainer"]
