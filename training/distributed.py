"""Data-parallel training across processes launched by `torchrun` (or `accelerate launch`).

Every process holds the whole model (replicated, like DDP), takes every `world`-th sequence of each
batch, and the gradients are summed across processes before the step. Because every loss is a
token-mean over the GLOBAL batch (the denominators are summed across processes first), the result
equals one process training on the whole batch. Rank 0 alone writes metrics and checkpoints.
Online, each process rolls out its share of the step's tasks and the trajectories are exchanged, so
every process sees the same batch and takes the same decisions (groups dropped, steps skipped).

Nothing here is active in a single process: `world_size()` is 1 and every helper is a no-op.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist


def setup() -> torch.device | None:
    """Join the process group when launched by torchrun (WORLD_SIZE > 1); return this process's device."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or not dist.is_available():
        return None
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return torch.device("cuda", local)
    return torch.device("cpu")


def active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def is_main() -> bool:
    return rank() == 0


def sum_floats(values: list[float], device: torch.device) -> list[float]:
    """Element-wise sum of a list of floats across processes."""
    if not active() or not values:
        return values
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def all_true(flag: bool, device: torch.device) -> bool:
    """Whether `flag` holds on every process."""
    if not active():
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item() > 0)


def sum_gradients(params: list[torch.nn.Parameter]) -> None:
    """Sum each parameter's gradient across processes (a missing gradient counts as zeros)."""
    if not active():
        return
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        dist.all_reduce(p.grad)


def gather_objects(items: list[Any]) -> list[Any]:
    """Concatenate every process's list, in rank order."""
    if not active():
        return items
    parts: list[Any] = [None] * world_size()
    dist.all_gather_object(parts, items)
    return [x for part in parts for x in part]


def barrier() -> None:
    if active():
        dist.barrier()
