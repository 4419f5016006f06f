"""How agentkit serves a model with vLLM on the FP8 decode path: the choices, as a pure function.

`plan_serve(model_config, gpu, vllm_version, options)` turns a model's `config.json`, the GPU's
compute capability and the installed vLLM version into the exact `vllm serve` command (and the
environment it needs). Nothing in the plan starts a process or touches a GPU, so every choice is
unit-tested without one; `agentkit.models.vllm_server` runs the plan.

The package, by concern: `plan` (the pure function, `plan_serve`), `fp8` (the FP8 KV-cache, attention
backend and weight choices), `options` (`ServeOptions`, `GpuInfo`, `ServePlan`), `facts` (the data tables:
version gates, backends, tool parsers), `environment` (reading the world: GPU, installed vLLM, CPU,
config.json, adapter ranks). Import from `agentkit.serving`.

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

from agentkit.serving.environment import (
    VLLM_PYTHON_ENV,
    cpu_count,
    cpu_dtype_for_this_cpu,
    cpu_supports_fp8_kv,
    detect_gpu,
    installed_vllm_version,
    lora_rank,
    max_adapter_rank,
    read_model_config,
    vllm_distribution,
    vllm_python,
)
from agentkit.serving.facts import ASSUMED_VLLM_VERSION, LORA_RANKS, MIN_VLLM
from agentkit.serving.model_info import is_mla, parse_version
from agentkit.serving.options import MASK, GpuInfo, ServeOptions, ServePlan, UnsupportedServeConfig, mask_secrets
from agentkit.serving.plan import known_tool_parser, plan_serve, vllm_args

__all__ = [
    "ASSUMED_VLLM_VERSION",
    "LORA_RANKS",
    "MASK",
    "MIN_VLLM",
    "VLLM_PYTHON_ENV",
    "GpuInfo",
    "ServeOptions",
    "ServePlan",
    "UnsupportedServeConfig",
    "cpu_count",
    "cpu_dtype_for_this_cpu",
    "cpu_supports_fp8_kv",
    "detect_gpu",
    "installed_vllm_version",
    "is_mla",
    "known_tool_parser",
    "lora_rank",
    "mask_secrets",
    "max_adapter_rank",
    "parse_version",
    "plan_serve",
    "read_model_config",
    "vllm_args",
    "vllm_distribution",
    "vllm_python",
]
