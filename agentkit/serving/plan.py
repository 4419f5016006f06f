"""The pure function: a model's config, the GPU (or CPU) and the vLLM version in, the `vllm serve` command out."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentkit.serving.facts import (
    ATTENTION_BACKEND_FLAG_SINCE,
    BACKEND_BLOCK_SIZE,
    LORA_RANKS,
    MIN_VLLM,
    TOOL_PARSER_BY_MODEL_TYPE,
    TOOL_PARSER_BY_NAME,
    TOOL_PARSER_SINCE,
)
from agentkit.serving.fp8 import _choose_kv_and_backend, _choose_weight_quantization
from agentkit.serving.model_info import fmt_version, parse_version, text_config
from agentkit.serving.options import GpuInfo, ServeOptions, ServePlan, UnsupportedServeConfig


def plan_serve(
    model_config: Mapping[str, Any],
    gpu: GpuInfo | None,
    vllm_version: str,
    options: ServeOptions,
) -> ServePlan:
    """Choose the `vllm serve` arguments for this model, GPU and vLLM version.

    Raises `UnsupportedServeConfig` naming the reason when FP8 (or anything else asked) cannot work
    here, instead of letting vLLM fail later with a kernel error.
    """
    version = parse_version(vllm_version)
    if version < MIN_VLLM:
        raise UnsupportedServeConfig(
            f"vLLM {vllm_version} is too old: agentkit serve needs vLLM >= {fmt_version(MIN_VLLM)} "
            "(pip install 'agentkit[serve]')"
        )
    cfg = text_config(model_config)
    notes: list[str] = []
    env: dict[str, str] = {}
    served_name = options.served_name or _default_served_name(options.model)
    if options.python:  # vLLM in its own environment; its `vllm` script may not find its own metadata
        args = [options.python, "-m", "vllm.entrypoints.openai.api_server", "--model", options.model]
    else:
        args = ["vllm", "serve", options.model]
    model_arg = len(args) - 1
    args += ["--served-model-name", served_name, "--host", options.host, "--port", str(options.port)]

    cpu = options.platform == "cpu"
    if options.platform not in ("cuda", "cpu"):
        raise UnsupportedServeConfig(f"unknown platform {options.platform!r}: cuda or cpu")
    if cpu:
        gpu = None
    _check_parallelism(cfg, gpu, options)
    if options.tensor_parallel > 1:
        args += ["--tensor-parallel-size", str(options.tensor_parallel)]

    if cpu:
        kv_dtype, backend = _plan_cpu(options, args, env, notes)
    else:
        kv_dtype, backend = _choose_kv_and_backend(cfg, gpu, version, options, notes)
    if kv_dtype != "auto":
        args += ["--kv-cache-dtype", kv_dtype]
    if backend is not None:
        if version >= ATTENTION_BACKEND_FLAG_SINCE:
            args += ["--attention-backend", backend]
        else:
            env["VLLM_ATTENTION_BACKEND"] = backend
        if backend in BACKEND_BLOCK_SIZE:
            args += ["--block-size", str(BACKEND_BLOCK_SIZE[backend])]

    weight_quant = _choose_weight_quantization(cfg, kv_dtype, options, notes, cpu=cpu)
    if weight_quant:
        args += ["--quantization", weight_quant]

    parser = _choose_tool_parser(cfg, options, version, notes)
    if parser:
        args += ["--enable-auto-tool-choice", "--tool-call-parser", parser]
    if options.chat_template:
        args += ["--chat-template", options.chat_template]

    args += _lora_args(options, env)

    if options.max_model_len:
        args += ["--max-model-len", str(options.max_model_len)]
    if options.gpu_memory_utilization and not cpu:
        args += ["--gpu-memory-utilization", str(options.gpu_memory_utilization)]
    if options.trust_remote_code:
        args.append("--trust-remote-code")
    if options.api_key:
        args += ["--api-key", options.api_key]
    args += list(options.extra_args)
    return ServePlan(
        args=args, env=env, host=options.host, port=options.port, served_name=served_name,
        kv_cache_dtype=kv_dtype, attention_backend=backend, weight_quantization=weight_quant,
        tool_parser=parser, notes=notes, api_key=options.api_key, model_arg=model_arg,
    )


def vllm_args(
    model_config: Mapping[str, Any], gpu: GpuInfo | None, vllm_version: str, options: ServeOptions
) -> list[str]:
    """The argv of `plan_serve` (its `env` carries what older vLLM needs as variables)."""
    return plan_serve(model_config, gpu, vllm_version, options).args


def _default_served_name(model: str) -> str:
    path = Path(model)
    if path.exists():
        return path.resolve().name
    return model


def _check_parallelism(cfg: Mapping[str, Any], gpu: GpuInfo | None, options: ServeOptions) -> None:
    tp = options.tensor_parallel
    if tp < 1:
        raise UnsupportedServeConfig(f"--tp must be >= 1, got {tp}")
    if gpu is not None and tp > gpu.count:
        raise UnsupportedServeConfig(f"--tp {tp} needs {tp} GPUs; {gpu.count} found")
    heads = cfg.get("num_attention_heads")
    if heads and int(heads) % tp:
        raise UnsupportedServeConfig(
            f"--tp {tp} does not divide the model's {heads} attention heads; pick a divisor of {heads}"
        )


def _plan_cpu(options: ServeOptions, args: list[str], env: dict[str, str], notes: list[str]) -> tuple[str, None]:
    """vLLM's CPU build: eager, bf16 or fp32, its KV cache in RAM; an FP8 KV cache works there, FP8 weights do not."""
    if options.cpu_dtype not in ("bfloat16", "float32"):
        raise UnsupportedServeConfig(f"CPU dtype {options.cpu_dtype!r}: vLLM's CPU build serves bfloat16 or float32")
    args += ["--enforce-eager", "--dtype", options.cpu_dtype]
    weights = "bf16" if options.cpu_dtype == "bfloat16" else "fp32"
    notes.append("CPU: eager mode (compiling the graphs makes start-up ~4x slower and LoRA needs eager "
                 f"anyway), {weights} weights")
    env["VLLM_CPU_KVCACHE_SPACE"] = f"{options.cpu_kv_cache_gib:g}"
    if options.cpu_threads:
        env["VLLM_CPU_OMP_THREADS_BIND"] = f"0-{options.cpu_threads - 1}" if options.cpu_threads > 1 else "0"
    if options.attention_backend:
        raise UnsupportedServeConfig("--attention-backend has no choice on CPU: vLLM's CPU attention is the only one")
    if options.fp8 and options.cpu_fp8_kv is False:
        raise UnsupportedServeConfig("an FP8 KV cache on CPU needs AVX-512 or AMX (vLLM's CPU kernels), which "
                                     "this CPU lacks: drop --fp8")
    if options.fp8:
        notes.append(f"CPU: FP8 KV cache (fp8_e4m3, half the cache memory); weights stay {weights}")
        return "fp8", None
    return "auto", None


def known_tool_parser(model_config: Mapping[str, Any], model_name: str) -> str | None:
    """vLLM's tool-call parser for this model family (by name first, then model_type); None or "" for none."""
    name = model_name.lower()
    parser = next((p for key, p in TOOL_PARSER_BY_NAME if key in name), None)
    if parser is None:
        parser = TOOL_PARSER_BY_MODEL_TYPE.get(str(text_config(model_config).get("model_type", "")))
    return parser


def _choose_tool_parser(
    cfg: Mapping[str, Any], options: ServeOptions, version: tuple[int, int, int], notes: list[str]
) -> str | None:
    if options.tool_parser:
        if options.tool_parser.lower() == "none":
            notes.append("native tool calling off (--tool-parser none): use agentkit's text tool protocol")
            return None
        return options.tool_parser
    parser = known_tool_parser(cfg, f"{options.model} {options.served_name or ''}")
    if not parser and options.chat_template:
        notes.append("tool calls in agentkit's <tool_call> JSON format (the served chat template renders the tools), "
                     "parsed by vLLM's hermes parser")
        return "hermes"
    if not parser:
        notes.append(
            f"no tool-call parser known for {options.model} (model_type {cfg.get('model_type')!r}): "
            "native tool calling off (agentkit's text tool protocol still works; pass --tool-parser NAME to force one)"
        )
        return None
    since = TOOL_PARSER_SINCE.get(parser)
    if since and version < since:
        notes.append(f"tool-call parser {parser} needs vLLM >= {fmt_version(since)}: native tool calling off")
        return None
    return parser


def _lora_args(options: ServeOptions, env: dict[str, str]) -> list[str]:
    if not options.lora and not options.runtime_lora:
        return []
    args = ["--enable-lora"]
    rank = options.max_lora_rank or 16
    allowed = next((r for r in LORA_RANKS if r >= rank), None)
    if allowed is None:
        raise UnsupportedServeConfig(f"LoRA rank {rank} is above vLLM's maximum {LORA_RANKS[-1]}")
    args += ["--max-lora-rank", str(allowed)]
    if options.max_loras:
        args += ["--max-loras", str(options.max_loras)]
    if options.lora:
        modules = []
        for item in options.lora:
            name, sep, path = item.partition("=")
            if not sep:
                name, path = Path(item).name, item
            if not name or not path:
                raise UnsupportedServeConfig(f"--lora {item!r}: give DIR or NAME=DIR")
            modules.append(f"{name}={path}")
        args += ["--lora-modules", *modules]
    if options.runtime_lora:
        env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
    return args
