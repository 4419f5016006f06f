"""Training across processes launched by `torchrun` (or `accelerate launch`): replicated or sharded.

Every process takes every `world`-th sequence of each batch. Replicated (the default, like DDP): each
process holds the whole model and the gradients are summed across processes before the step. Sharded
(`TrainConfig.fsdp`, FSDP2): `shard` splits parameters, gradients and optimizer state across the
processes, one unit per decoder layer plus a root unit for the rest (embeddings, final norm, output
layer); a unit's weights are gathered just for its forward and backward, and its gradients are summed
(reduce-scatter) straight into the shards. Because every loss is a
token-mean over the GLOBAL batch (the denominators are summed across processes first), the result
equals one process training on the whole batch. Rank 0 alone writes metrics and checkpoints.
Online, each process rolls out its share of the step's tasks and the trajectories are exchanged, so
every process sees the same batch and takes the same decisions (groups dropped, steps skipped).

Nothing here is active in a single process: `world_size()` is 1 and every helper is a no-op.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn


def setup() -> torch.device | None:
    """Join the process group when launched by torchrun (WORLD_SIZE > 1); return this process's device."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or not dist.is_available():
        return None
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
        atexit.register(_leave)
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return torch.device("cuda", local)
    return torch.device("cpu")


def _leave() -> None:
    """Leave together, then destroy the process group `setup` created, before the interpreter exits. A
    process that tore its gloo group down while another was still working (rank 0 saving the adapter)
    aborted now and then under load ("terminate called without an active exception", SIGABRT), turning a
    finished run into a failed one; the barrier makes every process wait until all are done. Garbage still held
    in reference cycles (a sharded model's pending collectives among it) is freed first, while the interpreter is
    whole, not during its shutdown after the group is gone."""
    gc.collect()
    if dist.is_initialized():
        with contextlib.suppress(RuntimeError):  # a peer already gone: nothing to wait for
            dist.barrier()
        dist.destroy_process_group()


def active() -> bool:
    """Whether torch.distributed is initialised with more than one process."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    """This process's rank (0 without distributed training)."""
    return dist.get_rank() if active() else 0


def world_size() -> int:
    """The number of processes (1 without distributed training)."""
    return dist.get_world_size() if active() else 1


def is_main() -> bool:
    """Whether this is the process that writes logs and checkpoints."""
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


def max_int(value: int, device: torch.device) -> int:
    """The largest `value` over all processes."""
    if not active():
        return value
    t = torch.tensor([value], dtype=torch.int64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def shard(root: nn.Module, layers: list[nn.Module]) -> None:
    """FSDP2 in place: each of `layers` is its own unit, `root` holds every other parameter.

    Gradients are SUMMED across processes (not averaged): every loss here is already a token-mean
    over the global batch. Gloo (CPU) lacks the pre-scaled sum FSDP would use, so sums are forced.
    """
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import FSDPModule, fully_shard

    device = next(root.parameters()).device
    mesh = init_device_mesh(device.type, (world_size(),))
    for layer in layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(root, mesh=mesh)
    for module in root.modules():
        if isinstance(module, FSDPModule):
            module.set_gradient_divide_factor(1.0)
            if dist.get_backend() == "gloo":
                module.set_force_sum_reduction_for_comms(True)


def is_sharded(module: nn.Module) -> bool:
    """Whether `module` holds FSDP-sharded parameters."""
    from torch.distributed.fsdp import FSDPModule

    return any(isinstance(m, FSDPModule) for m in module.modules())


@contextlib.contextmanager
def whole_weights(root: nn.Module) -> Iterator[None]:
    """Inside, every process holds the whole (unsharded) weights of a sharded `root`, and forwards
    through any part of it run locally, without collectives — so each process can roll out on its
    own, for as many tokens as it likes. One all-gather on entry (every process must enter), freed on exit.
    The root must have run one forward first (FSDP picks its root then)."""
    from torch.distributed.fsdp import FSDPModule

    units = [m for m in root.modules() if isinstance(m, FSDPModule)]
    layers = [u for u in units if u is not root]  # `shard` left them resharding after forward; the root not
    for unit in layers:
        unit.set_reshard_after_forward(False, recurse=False)
    for unit in units:
        unit.unshard()
    try:
        yield
    finally:
        for unit in units:
            unit.reshard()
        for unit in layers:
            unit.set_reshard_after_forward(True, recurse=False)


def full_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict[str, Any], dict[str, Any]]:
    """Gather a sharded model's whole state dict and its optimizer state (keyed by parameter name) onto
    rank 0's CPU; the other ranks get empty dicts. A collective: every process must call it."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, get_optimizer_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(model, options=options), get_optimizer_state_dict(model, optimizer, options=options)


def load_full_state(model: nn.Module, optimizer: torch.optim.Optimizer, weights: dict[str, torch.Tensor],
                    optimizer_state: dict[str, Any]) -> None:
    """Scatter whole (unsharded) weights and name-keyed optimizer state into a sharded model's shards."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict, set_optimizer_state_dict

    options = StateDictOptions(full_state_dict=True, strict=False)
    set_model_state_dict(model, dict(weights), options=options)
    set_optimizer_state_dict(model, optimizer, optimizer_state, options=options)


def gather_objects(items: list[Any]) -> list[Any]:
    """Concatenate every process's list, in rank order."""
    if not active():
        return items
    parts: list[Any] = [None] * world_size()
    dist.all_gather_object(parts, items)
    return [x for part in parts for x in part]


def whole_trainable(model: nn.Module) -> dict[str, torch.Tensor]:
    """Whole CPU copies of the trainable parameters by name (a LoRA adapter's weights), gathered from the
    shards of a sharded model. A collective when sharded: every process must call it, and each gets
    the whole tensors."""
    from torch.distributed.tensor import DTensor

    whole: dict[str, torch.Tensor] = {}
    for name, param in model.named_parameters():
        if param.requires_grad:
            tensor = param.detach()
            if isinstance(tensor, DTensor):
                tensor = tensor.full_tensor()
            whole[name] = tensor.cpu().clone()
    return whole


def broadcast_object(value: Any, src: int = 0) -> Any:
    """`value` as process `src` holds it, on every process (a picklable object)."""
    if not active():
        return value
    box = [value]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def barrier() -> None:
    """Wait for every process (nothing to do in one process)."""
    if active():
        dist.barrier()
