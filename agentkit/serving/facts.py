"""What agentkit knows of vLLM, GPUs and model families: data tables the plan reads (edit these, not the
logic). Each entry says where the fact comes from."""

from __future__ import annotations

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
