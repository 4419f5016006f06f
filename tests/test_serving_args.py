"""`plan_serve`: the vLLM command for a table of model families × GPUs × vLLM versions, no GPU needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentkit.serving import (
    GpuInfo,
    ServeOptions,
    UnsupportedServeConfig,
    detect_gpu,
    is_mla,
    lora_rank,
    max_adapter_rank,
    plan_serve,
    read_model_config,
    vllm_args,
)

# Trimmed config.json files of real model families (the fields the plan reads).
LLAMA3 = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128}
QWEN3 = {"model_type": "qwen3", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128}
QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_attention_heads": 32, "head_dim": 128}
MISTRAL = {"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32}
DSV2_LITE = {"model_type": "deepseek_v2", "hidden_size": 2048, "num_attention_heads": 16, "kv_lora_rank": 512,
             "qk_rope_head_dim": 64}
DSV3 = {"model_type": "deepseek_v3", "num_attention_heads": 128, "kv_lora_rank": 512,
        "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}
DSV32 = {"model_type": "deepseek_v32", "num_attention_heads": 128, "kv_lora_rank": 512, "index_topk": 2048,
         "quantization_config": {"quant_method": "fp8"}}
KIMI_K2 = {"model_type": "kimi_k2", "num_attention_heads": 64, "kv_lora_rank": 512}
GPT_OSS = {"model_type": "gpt_oss", "num_attention_heads": 64, "head_dim": 64,
           "quantization_config": {"quant_method": "mxfp4"}}
GEMMA3_MM = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "num_attention_heads": 8,
                                                     "head_dim": 256, "hidden_size": 2560}}
ODD_HEADS = {"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32}  # head_dim 80

H100, H200, L40S, A100, B200, RTX5090 = (GpuInfo.from_spec(n) for n in ("h100", "h200", "l40s", "a100", "b200",
                                                                        "rtx5090"))

# (case, config, model name, gpu, vllm, expected kv dtype, backend, weight quant, tool parser)
TABLE = [
    ("llama3 hopper", LLAMA3, "meta-llama/Llama-3.1-8B-Instruct", H100, "0.12.0", "fp8", "FLASH_ATTN", "fp8",
     "llama3_json"),
    ("llama3 ada", LLAMA3, "meta-llama/Llama-3.1-8B-Instruct", L40S, "0.12.0", "fp8", "FLASHINFER", "fp8",
     "llama3_json"),
    ("llama3 blackwell", LLAMA3, "meta-llama/Llama-3.1-8B-Instruct", B200, "0.12.0", "fp8", "FLASHINFER", "fp8",
     "llama3_json"),
    ("llama3 consumer blackwell", LLAMA3, "x/llama", RTX5090, "0.12.0", "fp8", "TRITON_ATTN", "fp8", "llama3_json"),
    ("qwen3 ada", QWEN3, "Qwen/Qwen3-8B", L40S, "0.11.0", "fp8", "FLASHINFER", "fp8", "hermes"),
    ("qwen3-coder", QWEN3_MOE, "Qwen/Qwen3-Coder-30B-A3B-Instruct", H100, "0.12.0", "fp8", "FLASH_ATTN", "fp8",
     "qwen3_coder"),
    ("mistral hopper", MISTRAL, "mistralai/Mistral-7B-Instruct-v0.3", H200, "0.12.0", "fp8", "FLASH_ATTN", "fp8",
     "mistral"),
    ("head size 80 on ada", ODD_HEADS, "microsoft/phi-2", L40S, "0.12.0", "fp8", "TRITON_ATTN", "fp8", None),
    ("deepseek-v2-lite hopper", DSV2_LITE, "deepseek-ai/DeepSeek-V2-Lite-Chat", H100, "0.12.0", "fp8", "FLASHMLA",
     "fp8", None),
    ("deepseek-v3 already fp8", DSV3, "deepseek-ai/DeepSeek-V3", H200, "0.12.0", "fp8", "FLASHMLA", None,
     "deepseek_v3"),
    ("deepseek-v3.1 parser", DSV3, "deepseek-ai/DeepSeek-V3.1", H200, "0.12.0", "fp8", "FLASHMLA", None,
     "deepseek_v31"),
    ("deepseek-v3.2 own fp8 mla", DSV32, "deepseek-ai/DeepSeek-V3.2", H200, "0.12.0", "fp8_ds_mla",
     "FLASHMLA_SPARSE", None, "deepseek_v32"),
    ("kimi-k2 blackwell", KIMI_K2, "moonshotai/Kimi-K2-Instruct", B200, "0.12.0", "fp8", "FLASHINFER_MLA", "fp8",
     "kimi_k2"),
    ("gpt-oss sinks on ada", GPT_OSS, "openai/gpt-oss-20b", L40S, "0.12.0", "fp8", "TRITON_ATTN", None, "openai"),
    ("gemma3 multimodal", GEMMA3_MM, "google/gemma-3-4b-it", H100, "0.12.0", "fp8", "FLASH_ATTN", "fp8", None),
]


@pytest.mark.parametrize(("case", "config", "name", "gpu", "version", "kv", "backend", "quant", "parser"), TABLE,
                         ids=[row[0] for row in TABLE])
def test_family_table(case, config, name, gpu, version, kv, backend, quant, parser) -> None:
    plan = plan_serve(config, gpu, version, ServeOptions(model=name, port=8123))
    args = plan.args
    assert args[:3] == ["vllm", "serve", name]
    assert (plan.kv_cache_dtype, plan.attention_backend, plan.weight_quantization, plan.tool_parser) == (
        kv, backend, quant, parser)
    assert args[args.index("--kv-cache-dtype") + 1] == kv
    if version >= "0.12":  # --attention-backend from vLLM 0.12 (vllm#26315), the variable before
        assert args[args.index("--attention-backend") + 1] == backend and not plan.env
    else:
        assert plan.env == {"VLLM_ATTENTION_BACKEND": backend} and "--attention-backend" not in args
    assert ("--quantization" in args) == (quant is not None)
    if parser:
        assert args[args.index("--tool-call-parser") + 1] == parser
        assert "--enable-auto-tool-choice" in args
    else:
        assert "--enable-auto-tool-choice" not in args
        assert any("tool-call parser" in note for note in plan.notes)
    assert args[args.index("--port") + 1] == "8123"
    assert vllm_args(config, gpu, version, ServeOptions(model=name, port=8123)) == args


def test_mla_backends_fix_their_block_size() -> None:
    flashmla = plan_serve(DSV2_LITE, H100, "0.12.0", ServeOptions(model="dsv2")).args
    assert flashmla[flashmla.index("--block-size") + 1] == "64"
    plain = plan_serve(LLAMA3, H100, "0.12.0", ServeOptions(model="llama")).args
    assert "--block-size" not in plain


def test_older_vllm_selects_backend_through_environment() -> None:
    plan = plan_serve(DSV2_LITE, H100, "0.11.0", ServeOptions(model="dsv2"))
    assert plan.env == {"VLLM_ATTENTION_BACKEND": "FLASHMLA"}
    assert "--attention-backend" not in plan.args
    assert plan.command_line().startswith("VLLM_ATTENTION_BACKEND=FLASHMLA vllm serve dsv2 ")


def test_fp8_kv_on_ampere_is_refused_with_the_reason() -> None:
    with pytest.raises(UnsupportedServeConfig, match=r"compute capability >= 8\.9.*8\.0.*--no-fp8"):
        plan_serve(LLAMA3, A100, "0.12.0", ServeOptions(model="llama", fp8=True))


def test_fp8_mla_off_hopper_is_refused_with_the_reason() -> None:
    with pytest.raises(UnsupportedServeConfig, match=r"Hopper \(sm90\).*sm89"):
        plan_serve(DSV2_LITE, L40S, "0.12.0", ServeOptions(model="dsv2", fp8=True))


def test_fp8_flashmla_needs_a_recent_vllm() -> None:
    with pytest.raises(UnsupportedServeConfig, match=r"FLASHMLA .*vLLM >= 0\.10\.2"):
        plan_serve(DSV2_LITE, H100, "0.10.1", ServeOptions(model="dsv2", fp8=True))


def test_auto_mode_falls_back_to_bf16_and_says_why() -> None:
    plan = plan_serve(DSV2_LITE, L40S, "0.12.0", ServeOptions(model="dsv2"))
    assert plan.kv_cache_dtype == "auto" and plan.attention_backend is None and plan.weight_quantization is None
    assert "--kv-cache-dtype" not in plan.args and "--quantization" not in plan.args
    assert any(note.startswith("FP8 left off") and "Hopper" in note for note in plan.notes)


def test_no_fp8_and_no_gpu() -> None:
    off = plan_serve(LLAMA3, H100, "0.12.0", ServeOptions(model="llama", fp8=False))
    assert "--kv-cache-dtype" not in off.args and "--quantization" not in off.args
    unknown = plan_serve(LLAMA3, None, "0.12.0", ServeOptions(model="llama"))
    assert unknown.kv_cache_dtype == "auto" and any("no GPU" in n for n in unknown.notes)
    forced = plan_serve(LLAMA3, None, "0.12.0", ServeOptions(model="llama", fp8=True))
    assert forced.kv_cache_dtype == "fp8" and forced.attention_backend is None


def test_fp8_kv_with_bf16_weights_for_rollouts() -> None:
    plan = plan_serve(LLAMA3, H100, "0.12.0", ServeOptions(model="llama", fp8_weights=False))
    assert plan.kv_cache_dtype == "fp8" and "--quantization" not in plan.args


def test_backend_override_is_checked_for_fp8() -> None:
    slow = plan_serve(DSV2_LITE, L40S, "0.12.0", ServeOptions(model="dsv2", fp8=True, attention_backend="TRITON_MLA"))
    assert (slow.kv_cache_dtype, slow.attention_backend) == ("fp8", "TRITON_MLA")  # the error message's advice
    with pytest.raises(UnsupportedServeConfig, match=r"FLASH_ATTN reads an FP8 KV cache only on .*9\.0 to 9\.9"):
        plan_serve(LLAMA3, L40S, "0.12.0", ServeOptions(model="llama", fp8=True, attention_backend="FLASH_ATTN"))
    with pytest.raises(UnsupportedServeConfig, match="no FP8 KV cache support"):
        plan_serve(DSV2_LITE, H100, "0.12.0", ServeOptions(model="d", fp8=True, attention_backend="FLASH_ATTN_MLA"))


def test_overrides_of_parser_and_backend() -> None:
    plan = plan_serve(LLAMA3, H100, "0.12.0", ServeOptions(model="llama", tool_parser="pythonic",
                                                           attention_backend="FLASHINFER"))
    assert plan.tool_parser == "pythonic" and plan.attention_backend == "FLASHINFER"
    off = plan_serve(LLAMA3, H100, "0.12.0", ServeOptions(model="llama", tool_parser="none"))
    assert "--tool-call-parser" not in off.args
    smol = plan_serve(LLAMA3, H100, "0.12.0", ServeOptions(model="HuggingFaceTB/SmolLM2-135M-Instruct"))
    assert smol.tool_parser is None


def test_tool_parser_newer_than_vllm_is_left_off() -> None:
    plan = plan_serve(QWEN3_MOE, H100, "0.9.2", ServeOptions(model="Qwen/Qwen3-Coder-30B-A3B-Instruct"))
    assert plan.tool_parser is None and any("qwen3_coder needs vLLM >= 0.10.0" in n for n in plan.notes)


def test_lora_arguments_and_runtime_switch() -> None:
    options = ServeOptions(model="llama", lora=("sql=/ads/sql", "/ads/chat"), runtime_lora=True,
                           max_lora_rank=48, max_loras=2)
    plan = plan_serve(LLAMA3, H100, "0.12.0", options)
    args = plan.args
    assert "--enable-lora" in args
    assert args[args.index("--max-lora-rank") + 1] == "64"  # 48 rounds up to a rank vLLM accepts
    assert args[args.index("--max-loras") + 1] == "2"
    i = args.index("--lora-modules")
    assert args[i + 1: i + 3] == ["sql=/ads/sql", "chat=/ads/chat"]
    assert plan.env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"
    static = plan_serve(LLAMA3, H100, "0.12.0", ServeOptions(model="llama", lora=("/ads/chat",)))
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING" not in static.env
    with pytest.raises(UnsupportedServeConfig, match="maximum 512"):
        plan_serve(LLAMA3, H100, "0.12.0", ServeOptions(model="llama", runtime_lora=True, max_lora_rank=1024))


def test_parallelism_and_version_checks() -> None:
    with pytest.raises(UnsupportedServeConfig, match="does not divide the model's 32 attention heads"):
        plan_serve(LLAMA3, GpuInfo.from_spec("h100", count=4), "0.12.0", ServeOptions(model="l", tensor_parallel=3))
    with pytest.raises(UnsupportedServeConfig, match="needs 2 GPUs; 1 found"):
        plan_serve(LLAMA3, H100, "0.12.0", ServeOptions(model="l", tensor_parallel=2))
    tp = plan_serve(LLAMA3, GpuInfo.from_spec("h100", count=8), "0.12.0", ServeOptions(model="l", tensor_parallel=8))
    assert tp.args[tp.args.index("--tensor-parallel-size") + 1] == "8"
    with pytest.raises(UnsupportedServeConfig, match=r"too old.*>= 0\.8\.0"):
        plan_serve(LLAMA3, H100, "0.7.3", ServeOptions(model="l"))
    assert plan_serve(LLAMA3, H100, "0.11.1rc2.dev17+g1234abc", ServeOptions(model="l")).env


def test_gpu_specs() -> None:
    assert GpuInfo.from_spec("NVIDIA H100").capability == (9, 0)
    assert GpuInfo.from_spec("8.9").arch == "ada"
    assert GpuInfo.from_spec("sm100").arch == "blackwell"
    assert GpuInfo.from_spec("sm120").capability == (12, 0)
    with pytest.raises(UnsupportedServeConfig, match="unknown GPU"):
        GpuInfo.from_spec("potato")


def test_detect_gpu_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    gpu = detect_gpu()
    assert (gpu is None) == (not torch.cuda.is_available())


def test_is_mla() -> None:
    assert is_mla(DSV2_LITE) and is_mla(KIMI_K2) and is_mla({"model_type": "new_thing", "kv_lora_rank": 256})
    assert not is_mla(LLAMA3) and not is_mla(GEMMA3_MM)


def test_read_model_config_from_dir_and_hf_cache(tmp_path: Path) -> None:
    local = tmp_path / "model"
    local.mkdir()
    (local / "config.json").write_text(json.dumps(LLAMA3))
    assert read_model_config(str(local)) == LLAMA3

    cache = tmp_path / "hub"
    snapshot = cache / "models--org--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(DSV2_LITE))
    (cache / "models--org--tiny" / "refs").mkdir()
    (cache / "models--org--tiny" / "refs" / "main").write_text("abc123")
    assert read_model_config("org/tiny", cache_dir=cache) == DSV2_LITE

    with pytest.raises(UnsupportedServeConfig, match=r"huggingface-cli download org/missing config\.json"):
        read_model_config("org/missing", cache_dir=cache)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UnsupportedServeConfig, match=r"no config\.json"):
        read_model_config(str(tmp_path / "empty"))


def test_adapter_rank(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "adapter_config.json").write_text(json.dumps({"r": 32, "peft_type": "LORA"}))
    assert lora_rank(tmp_path / "a") == 32
    assert max_adapter_rank([f"x={tmp_path / 'a'}"]) == 32 and max_adapter_rank([]) is None
    with pytest.raises(UnsupportedServeConfig, match="not a LoRA adapter directory"):
        lora_rank(tmp_path)


def test_cli_dry_run_prints_the_command(tmp_path: Path) -> None:
    from agentkit.cli.main import app

    (tmp_path / "config.json").write_text(json.dumps(DSV2_LITE))
    result = CliRunner().invoke(app, ["serve", str(tmp_path), "--dry-run", "--gpu", "h100", "--vllm-version",
                                      "0.11.0", "--port", "8011", "--", "--max-num-seqs", "64"])
    assert result.exit_code == 0, result.output
    assert "VLLM_ATTENTION_BACKEND=FLASHMLA vllm serve" in result.output
    assert "--kv-cache-dtype fp8" in result.output and "--max-num-seqs 64" in result.output
    assert f"vllm:http://127.0.0.1:8011/v1/{tmp_path.name}" in result.output

    refused = CliRunner().invoke(app, ["serve", str(tmp_path), "--dry-run", "--gpu", "l40s", "--fp8",
                                       "--vllm-version", "0.12.0"])
    assert refused.exit_code == 2 and "Hopper" in refused.output


# -- vLLM's CPU build ----------------------------------------------------------------------------------
SMOLLM2 = {"model_type": "llama", "hidden_size": 576, "num_attention_heads": 9, "num_key_value_heads": 3}


def cpu_plan(**options: object):
    return plan_serve(SMOLLM2, None, "0.32.0", ServeOptions(model="/m/smollm2-135m", platform="cpu",
                                                             python="/venv/bin/python", **options))  # type: ignore[arg-type]


def test_cpu_plan_runs_the_module_of_the_vllm_environment_eager() -> None:
    plan = cpu_plan(cpu_threads=2, runtime_lora=True)
    assert plan.args[:5] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model",
                             "/m/smollm2-135m"]
    assert plan.args[plan.model_arg] == "/m/smollm2-135m"
    assert "--enforce-eager" in plan.args and plan.args[plan.args.index("--dtype") + 1] == "bfloat16"
    assert plan.env["VLLM_CPU_KVCACHE_SPACE"] == "1" and plan.env["VLLM_CPU_OMP_THREADS_BIND"] == "0-1"
    assert plan.kv_cache_dtype == "auto" and plan.weight_quantization is None
    assert any("eager" in note for note in plan.notes)


def test_cpu_plan_serves_float32_when_asked() -> None:
    plan = cpu_plan(cpu_dtype="float32", runtime_lora=True)
    assert plan.args[plan.args.index("--dtype") + 1] == "float32" and any("fp32 weights" in n for n in plan.notes)
    with pytest.raises(UnsupportedServeConfig, match="bfloat16 or float32"):
        cpu_plan(cpu_dtype="float16")


@pytest.mark.parametrize(("flags", "dtype"), [("fpu sse avx2 avx512f avx512_bf16", "bfloat16"),
                                              ("fpu sse avx2 amx_bf16 amx_tile", "bfloat16"),
                                              ("fpu sse avx2 fma", "float32"),  # bf16 emulated: fp32 is faster
                                              ("fp asimd", "bfloat16")])  # not x86: vLLM's default
def test_the_cpu_dtype_follows_native_bf16_support(flags: str, dtype: str) -> None:
    from agentkit.serving import cpu_dtype_for_this_cpu

    assert cpu_dtype_for_this_cpu(f"processor : 0\nflags : {flags}\n") == dtype


def test_cpu_plan_allows_an_fp8_kv_cache_and_refuses_fp8_weights() -> None:
    plan = cpu_plan(fp8=True)
    assert plan.args[plan.args.index("--kv-cache-dtype") + 1] == "fp8"
    assert "--quantization" not in plan.args and "--attention-backend" not in plan.args
    assert any("FP8 KV cache" in note and "weights stay bf16" in note for note in plan.notes)
    with pytest.raises(UnsupportedServeConfig, match="needs AVX-512 or AMX"):
        cpu_plan(fp8=True, cpu_fp8_kv=False)
    with pytest.raises(UnsupportedServeConfig, match=r"FP8 weights .* fail on vLLM's CPU build"):
        cpu_plan(fp8=True, fp8_weights=True)
    with pytest.raises(UnsupportedServeConfig, match="no choice on CPU"):
        cpu_plan(attention_backend="FLASH_ATTN")
    with pytest.raises(UnsupportedServeConfig, match="unknown platform"):
        plan_serve(SMOLLM2, None, "0.32.0", ServeOptions(model="m", platform="tpu"))


def test_unknown_family_gets_hermes_with_agentkit_template() -> None:
    bare = cpu_plan()
    assert bare.tool_parser is None and any("no tool-call parser" in n for n in bare.notes)
    templated = cpu_plan(chat_template="/m/agentkit_tools.jinja")
    assert templated.tool_parser == "hermes"
    assert templated.args[templated.args.index("--chat-template") + 1] == "/m/agentkit_tools.jinja"
    # A family with its own parser keeps it, template or not.
    qwen = plan_serve(QWEN3, None, "0.32.0", ServeOptions(model="Qwen/Qwen3-8B", platform="cpu",
                                                          chat_template="/t.jinja"))
    assert qwen.tool_parser == "hermes" and "--enable-auto-tool-choice" in qwen.args


def test_serve_cli_asks_for_a_vllm_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from agentkit.cli.main import app

    monkeypatch.setenv("AGENTKIT_VLLM_PYTHON", str(tmp_path / "nope" / "python"))
    result = CliRunner().invoke(app, ["serve", str(tmp_path)])
    said = " ".join(result.output.split())  # rich wraps lines
    assert result.exit_code == 2 and "does not exist" in said and "make vllm-cpu" in said
