"""FP8 choices: which KV-cache format and attention backend read FP8 on this GPU, and whether to quantise
the weights (see the package docstring for the vLLM facts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentkit.serving.facts import BACKEND_SINCE, FLASHINFER_HEAD_SIZES, FP8_BACKEND_CAPABILITY, MODELS_WITH_SINKS
from agentkit.serving.model_info import fmt_version, head_dim, is_mla, is_sparse_mla
from agentkit.serving.options import GpuInfo, ServeOptions, UnsupportedServeConfig


def _choose_kv_and_backend(
    cfg: Mapping[str, Any],
    gpu: GpuInfo | None,
    version: tuple[int, int, int],
    options: ServeOptions,
    notes: list[str],
) -> tuple[str, str | None]:
    """(kv-cache dtype, attention backend or None to let vLLM pick)."""
    asked = options.fp8
    if asked is False:
        notes.append("FP8 off (--no-fp8): BF16 KV cache, vLLM's default backend")
        return "auto", options.attention_backend
    if gpu is None:
        if asked:
            notes.append("no GPU detected: FP8 KV cache requested without a backend choice; vLLM picks one")
            return "fp8", options.attention_backend
        notes.append("no GPU detected: FP8 left off (pass --gpu NAME to plan for a GPU, or --fp8)")
        return "auto", options.attention_backend

    mla = is_mla(cfg)
    try:
        if options.attention_backend:
            backend = options.attention_backend
            kv = "fp8_ds_mla" if mla and is_sparse_mla(cfg) else "fp8"
            _check_backend_reads_fp8(backend, gpu)
        else:
            kv, backend = (_mla_fp8(cfg, gpu) if mla else _mha_fp8(cfg, gpu))
        since = BACKEND_SINCE.get(backend)
        if since and version < since:
            raise UnsupportedServeConfig(
                f"{backend} with an FP8 KV cache needs vLLM >= {fmt_version(since)}; installed {fmt_version(version)}. "
                "Upgrade vLLM or use --no-fp8"
            )
    except UnsupportedServeConfig as reason:
        if asked:
            raise
        notes.append(f"FP8 left off: {reason}")
        return "auto", options.attention_backend
    notes.append(f"FP8 KV cache ({kv}) on {gpu.name} ({gpu.sm}, {gpu.arch}) with {backend}"
                 + (" (MLA)" if mla else ""))
    return kv, backend


def _check_backend_reads_fp8(backend: str, gpu: GpuInfo) -> None:
    span = FP8_BACKEND_CAPABILITY.get(backend)
    if span is None:
        raise UnsupportedServeConfig(
            f"attention backend {backend} has no FP8 KV cache support agentkit knows of "
            f"(known: {', '.join(FP8_BACKEND_CAPABILITY)}); use --no-fp8 with it"
        )
    low, high = span
    if not low <= gpu.capability <= high:
        raise UnsupportedServeConfig(
            f"{backend} reads an FP8 KV cache only on compute capability {low[0]}.{low[1]} to {high[0]}.{high[1]}; "
            f"{gpu.name} is {gpu.capability[0]}.{gpu.capability[1]}"
        )


def _mla_fp8(cfg: Mapping[str, Any], gpu: GpuInfo) -> tuple[str, str]:
    major = gpu.capability[0]
    if major not in (9, 10):
        raise UnsupportedServeConfig(
            f"an FP8 MLA decode backend (FLASHMLA, FLASHINFER_MLA, CUTLASS_MLA) needs a Hopper (sm90) or "
            f"datacenter Blackwell (sm100) GPU; {gpu.name} is {gpu.sm}. Use --no-fp8 for a BF16 cache "
            "(TRITON_MLA can read FP8 anywhere, but without the speed-up: pass --attention-backend TRITON_MLA --fp8)"
        )
    if is_sparse_mla(cfg):
        return "fp8_ds_mla", "FLASHMLA_SPARSE"
    return "fp8", ("FLASHMLA" if major == 9 else "FLASHINFER_MLA")


def _mha_fp8(cfg: Mapping[str, Any], gpu: GpuInfo) -> tuple[str, str]:
    if gpu.capability < (8, 9):
        raise UnsupportedServeConfig(
            f"an FP8 KV cache needs compute capability >= 8.9 (Ada, Hopper, Blackwell) for the fast path "
            f"with native FP8 conversion; {gpu.name} is {gpu.capability[0]}.{gpu.capability[1]}. Use --no-fp8"
        )
    major = gpu.capability[0]
    head = head_dim(cfg)
    sinks = cfg.get("model_type") in MODELS_WITH_SINKS
    if major == 9:
        return "fp8", "FLASH_ATTN"  # FA3: FP8 attention in the quantised domain
    if major == 10:
        return "fp8", "FLASHINFER"  # TRT-LLM kernels on sm100, sinks included
    if head in FLASHINFER_HEAD_SIZES and not sinks and major < 10:
        return "fp8", "FLASHINFER"
    return "fp8", "TRITON_ATTN"


def _choose_weight_quantization(
    cfg: Mapping[str, Any], kv_dtype: str, options: ServeOptions, notes: list[str], *, cpu: bool = False
) -> str | None:
    if cpu:
        if options.fp8_weights:
            raise UnsupportedServeConfig(
                "FP8 weights (--quantization fp8) fail on vLLM's CPU build (no FP8 linear kernels there): "
                "drop --fp8-weights; --fp8 alone gives an FP8 KV cache on CPU"
            )
        return None
    want = options.fp8_weights if options.fp8_weights is not None else kv_dtype != "auto"
    if not want:
        return None
    quant = cfg.get("quantization_config")
    if quant:
        method = quant.get("quant_method", "?") if isinstance(quant, Mapping) else "?"
        notes.append(f"weights kept as the checkpoint's own quantisation ({method})")
        return None
    return "fp8"
