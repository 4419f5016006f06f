"""agentkit.training — RL on the agent's own trajectories: GRPO, SDAR, Skill1 credit, Dual-Track GRPO.

    from agentkit.training import Trainer, TrainConfig
    Trainer("local:smollm2-135m", TrainConfig(algo="grpo", lr=1e-5), out_dir="ckpt").fit(read_jsonl("runs.jsonl"))

Modules, in the order data flows through them:
    config      TrainConfig: every hyperparameter of the methods with its published default (YAML/TOML)
    sequences   trajectory → token sequences (recorded ids, never re-tokenised), loss masks, phases
    credit      per-algorithm tracks: which advantage each generated token carries
    advantages  group normalisation, NDCG, Skill1 rewards (pure functions)
    logprobs    chunked fused log-probs/entropies of generated tokens only (no [N, V] float32 tensor)
    losses      PPO-clip, k3 KL, SDAR, entropy (pure functions, token-mean over the global batch)
    trainer     Trainer: optimiser steps, NaN guard, checkpoints, offline loop
    online      rollouts with the current policy between updates, or overlapping them (max_staleness)
    rollout     the RolloutEngine seam (LocalRollout, SnapshotRollout; vLLM plugs in here), a batched sampler
    checkpoint  atomic checkpoints, exact resume        metrics   metrics.jsonl (+ TensorBoard, wandb)
    report      `agentkit train report` PNG             distributed  data parallel or FSDP2 under torchrun
    allocator   CPU: keep freed memory for reuse instead of page-faulting it in again

Precision: bf16 autocast on GPUs that support it (`dtype="auto"`), fp32 on CPU; master weights and
optimizer state stay fp32; log-probs are always computed in fp32.

Multi-GPU (and multi-process CPU): launch the very same entry point under torchrun,

    torchrun --nproc_per_node 4 -m agentkit.cli.main train --data 'runs/*.jsonl' --out ckpt/
    torchrun --nproc_per_node 4 -m agentkit.cli.main train --data 'runs/*.jsonl' --fsdp --out ckpt/
    accelerate launch --multi_gpu --num_processes 4 -m agentkit.cli.main train ...   # the same via accelerate

(`--multi_gpu` starts the N processes, on CPU as well; with `--cpu` instead, accelerate started one
process here. Both launchers tested: 2 processes take the same step as 1.)

Each process joins the process group (NCCL on GPUs, gloo on CPU) and trains on every WORLD_SIZE-th
sequence of each batch; every loss is a token-mean over the global batch, so N processes compute the
same update as one (tested: 2 processes = 1, replicated and sharded). Replicated (default): each
process holds the whole model and gradients are summed before the step. `--fsdp` (`fsdp: true`):
FSDP2 shards parameters, gradients and AdamW state — one unit per decoder layer plus a root
`TokenLogProbs` module that owns the rest, so the fused log-prob's output-layer weight is gathered
like any other — and checkpoints are gathered to rank 0 in the same files one process writes (a
sharded run resumes unsharded and back). Online under FSDP, each process gathers the whole policy
for its rollouts (`distributed.whole_weights`: one all-gather, then sampling without collectives)
and frees it before the update — rollout memory is the full model, training memory is sharded.
Rank 0 writes metrics and checkpoints; a checkpoint holds every process's RNG state, so a resumed
multi-process online run draws the rollouts the uninterrupted one would have (tested). Resumed with
a different process count, the run continues with re-seeded streams, not bit-exactly (a warning says
so). With a vLLM engine under torchrun, rank 0 gathers the LoRA adapter from the shards and ships it
(the others wait for it and sample from the name it chose); shipping full weights to vLLM under
torchrun is not implemented (it raises and says so), nor are asynchronous rollouts (one process only).
"""

from agentkit.extras import require

require("torch", "transformers", extra="train", feature="training")

from agentkit.training.config import LoraConfig, TrainConfig
from agentkit.training.rollout import LocalRollout, RolloutEngine, SnapshotRollout
from agentkit.training.trainer import Trainer

__all__ = ["LocalRollout", "LoraConfig", "RolloutEngine", "SnapshotRollout", "TrainConfig", "Trainer"]
