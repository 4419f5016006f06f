"""Checkpoints written atomically, and everything needed to continue a run exactly.

Layout of `OUT/ckpt-000120/`:
    trainable.pt   the trainable parameters (the LoRA adapter, or every weight), bit-exact
    optimizer.pt   optimizer state          scheduler.pt   LR scheduler state
    rng.pt         Python, torch (and CUDA) RNG states, one per process
    state.json     step, data position, counters
    config.yaml    the run's TrainConfig
    adapter/ or model/   the same weights in Transformers/peft format, for serving and `local:PATH`
A checkpoint is built in a temporary folder and renamed into place, and `OUT/latest` (a one-line
file) is replaced atomically afterwards, so a crash at any moment leaves the previous checkpoint whole.
Temporary folders a killed process left behind are removed on the next save or open (a checkpoint
that was being replaced is put back). Checkpoints are ordered by their step number, not their name.

Loading never runs code from the folder: every `.pt` file is read with `torch.load(weights_only=True)`
(tensors, numbers, strings, lists, tuples, dicts: all that optimizer, scheduler and RNG states hold),
so a crafted checkpoint cannot execute anything on `--resume`.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import torch
from torch import nn

from agentkit.files import atomic_write

log = logging.getLogger(__name__)

CKPT_PREFIX = "ckpt-"
_CKPT_NAME = re.compile(rf"^{CKPT_PREFIX}(\d+)$")
_TMP_NAME = re.compile(rf"^\.(?:tmp-{CKPT_PREFIX}(\d+)|latest)-(\d+)(-old)?$")


def checkpoint_step(path: Path) -> int | None:
    """The step of a checkpoint folder named `ckpt-STEP`, or None for any other name."""
    m = _CKPT_NAME.match(path.name)
    return int(m.group(1)) if m else None


def checkpoint_dirs(out_dir: str | Path) -> list[Path]:
    """The `ckpt-STEP` folders under `out_dir`, oldest step first (numeric: ckpt-1000000 after ckpt-999999)."""
    found = [(step, p) for p in Path(out_dir).glob(f"{CKPT_PREFIX}*") if (step := checkpoint_step(p)) is not None]
    return [p for _, p in sorted(found)]


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # our own leftovers: this process is not writing them now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temporaries(out_dir: str | Path) -> list[Path]:
    """Remove the temporary folders and files of saves whose process is gone (killed mid-save); a
    checkpoint moved aside to be replaced (`-old`) is put back if its replacement never arrived.
    Returns what was removed or restored."""
    out = Path(out_dir)
    touched = []
    for path in out.glob(".*"):
        m = _TMP_NAME.match(path.name)
        if not m or _alive(int(m.group(2))):
            continue
        if m.group(3) and m.group(1) is not None:
            final = out / f"{CKPT_PREFIX}{m.group(1)}"
            if not final.exists():
                os.replace(path, final)
                touched.append(final)
                continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        touched.append(path)
    return touched


def trainable_names(model: nn.Module) -> list[str]:
    """The trainable parameters' names, in the order the optimizer was given them."""
    return [n for n, p in model.named_parameters() if p.requires_grad]


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The trainable parameters by name (detached CPU copies)."""
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def rng_state() -> dict[str, Any]:
    """The Python and torch (and CUDA, when present) random generator states."""
    state: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore the generator states `rng_state` returned."""
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def restore_rng(saved: dict[str, Any], rank: int, world_size: int) -> bool:
    """Set this process's RNG from rng.pt's contents; False when the process count changed (not exact)."""
    states = saved.get("per_process") or [saved]  # checkpoints before per-process states held one
    if len(states) == world_size:
        set_rng_state(states[rank])
        return True
    set_rng_state(states[0])
    if rank:  # distinct streams per process again, derived from the rank
        torch.manual_seed(random.Random(rank).getrandbits(63))
    return False


def save_checkpoint(
    out_dir: str | Path,
    step: int,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    state: dict[str, Any],
    config_yaml: str,
    tokenizer: Any = None,
    export: bool = True,
    keep: int = 2,
    gathered: tuple[dict[str, Any], dict[str, Any]] | None = None,
    rng_states: list[dict[str, Any]] | None = None,
) -> Path:
    """Write checkpoint `step` under `out_dir` atomically and prune all but the newest `keep`.

    `gathered`: (whole state dict, name-keyed optimizer state) of a sharded model, from
    `distributed.full_state`; the files are then the same as one process would write.
    `rng_states`: every process's `rng_state()` in rank order (default: this process's).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    clean_stale_temporaries(out)
    final = out / f"{CKPT_PREFIX}{step:06d}"
    tmp = out / f".tmp-{CKPT_PREFIX}{step:06d}-{os.getpid()}"
    tmp.mkdir()
    if gathered is None:
        torch.save(trainable_state(model), tmp / "trainable.pt")
        torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    else:
        whole, named_optimizer = gathered
        names = trainable_names(model)
        torch.save({n: whole[n] for n in names}, tmp / "trainable.pt")
        torch.save(optimizer_by_index(named_optimizer, names), tmp / "optimizer.pt")
    torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
    torch.save({"per_process": rng_states or [rng_state()]}, tmp / "rng.pt")
    (tmp / "state.json").write_text(json.dumps({"step": step, **state}, indent=2))
    (tmp / "config.yaml").write_text(config_yaml)
    if export:
        _export(model, tokenizer, tmp, None if gathered is None else gathered[0])
    for f in tmp.rglob("*"):
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
    aside = out / f"{tmp.name}-old"
    if final.exists():  # the same step saved again: move the old one aside (put back if we are killed)
        os.replace(final, aside)
    os.replace(tmp, final)
    shutil.rmtree(aside, ignore_errors=True)
    atomic_write(out / "latest", final.name + "\n", durable=False)
    if keep > 0:
        others = [p for p in checkpoint_dirs(out) if p != final]
        for old in others[: max(0, len(others) - (keep - 1))]:
            shutil.rmtree(old, ignore_errors=True)
    return final


def _export(model: nn.Module, tokenizer: Any, folder: Path, state_dict: dict[str, Any] | None = None) -> None:
    """Save the weights in Transformers/peft format beside the exact state (best effort, logged)."""
    is_peft = hasattr(model, "peft_config")
    target = folder / ("adapter" if is_peft else "model")
    try:
        if not is_peft:
            quantizer = getattr(model, "hf_quantizer", None)
            if quantizer is not None and all(p.is_floating_point() for p in model.parameters()):
                # A GGUF-loaded model keeps a quantizer although every weight is dense (DESIGN.md).
                quantizer.remove_quantization_config(model)
        model.save_pretrained(target, state_dict=state_dict)  # type: ignore[operator]
        if tokenizer is not None and hasattr(tokenizer, "save_pretrained"):
            tokenizer.save_pretrained(target)
    except Exception as exc:  # the exact state above is what resume needs; the export is a convenience
        log.warning("could not export %s in Transformers format (%s); trainable.pt holds the weights", target, exc)


def optimizer_by_index(state: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """A name-keyed optimizer state (torch.distributed.checkpoint's) in `Optimizer.state_dict()` form.

    `names` are the trainable parameters in the order the optimizer was given them."""
    index = {n: i for i, n in enumerate(names)}
    return {"state": {index[n]: v for n, v in state["state"].items()},
            "param_groups": [{**g, "params": [index[n] for n in g["params"]]} for g in state["param_groups"]]}


def optimizer_by_name(state: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The inverse of `optimizer_by_index`."""
    return {"state": {names[i]: v for i, v in state["state"].items()},
            "param_groups": [{**g, "params": [names[i] for i in g["params"]]} for g in state["param_groups"]]}


def latest_checkpoint(out_dir: str | Path) -> Path | None:
    """The newest complete checkpoint under `out_dir` (or `out_dir` itself if it is one)."""
    out = Path(out_dir)
    if (out / "state.json").exists():
        return out
    if out.is_dir():
        clean_stale_temporaries(out)
    pointer = out / "latest"
    if pointer.exists():
        path = out / pointer.read_text().strip()
        if (path / "state.json").exists():
            return path
    found = [p for p in checkpoint_dirs(out) if (p / "state.json").exists()]
    return found[-1] if found else None


def load_checkpoint(
    path: str | Path, *, model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any
) -> dict[str, Any]:
    """Restore weights, optimizer, scheduler and RNG from `path`; return its state.json."""
    from agentkit.training import distributed

    path = Path(path)
    weights = torch.load(path / "trainable.pt", map_location="cpu", weights_only=True)
    params = dict(model.named_parameters())
    missing = [n for n in weights if n not in params]
    if missing:
        raise ValueError(f"checkpoint {path} has parameters this model lacks (first: {missing[0]}); "
                         "resume with the same model and LoRA settings")
    optimizer_state = torch.load(path / "optimizer.pt", map_location="cpu", weights_only=True)
    if distributed.is_sharded(model):
        named = optimizer_by_name(optimizer_state, trainable_names(model))
        distributed.load_full_state(model, optimizer, weights, named)
    else:
        with torch.no_grad():
            for name, value in weights.items():
                params[name].copy_(value.to(params[name].device))
        optimizer.load_state_dict(optimizer_state)
    scheduler.load_state_dict(torch.load(path / "scheduler.pt", map_location="cpu", weights_only=True))
    saved_rng = torch.load(path / "rng.pt", weights_only=True)
    if not restore_rng(saved_rng, distributed.rank(), distributed.world_size()):
        log.warning("%s was written by %d process(es), this run has %d: random streams are re-seeded, so the "
                    "run continues but not bit-exactly", path, len(saved_rng.get("per_process") or [0]),
                    distributed.world_size())
    state: dict[str, Any] = json.loads((path / "state.json").read_text())
    return state
