"""Reading what the plan switches on: vLLM version strings and a model's config.json (text part, MLA,
head size)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentkit.serving.facts import MLA_MODEL_TYPES
from agentkit.serving.options import UnsupportedServeConfig


def parse_version(version: str) -> tuple[int, int, int]:
    """`"0.11.2rc1.dev5+gabc"` → (0, 11, 2)."""
    from packaging.version import InvalidVersion, Version

    try:
        release = Version(version).release
    except InvalidVersion:
        raise UnsupportedServeConfig(f"cannot read vLLM version {version!r}") from None
    return (*release, 0, 0, 0)[:3]  # type: ignore[return-value]


def fmt_version(version: tuple[int, int, int]) -> str:
    """A version tuple as text, e.g. (0, 11, 2) → "0.11.2"."""
    return ".".join(str(p) for p in version)


def is_mla(model_config: Mapping[str, Any]) -> bool:
    """Whether the model uses Multi-head Latent Attention (DeepSeek-V2/V3 style latent KV)."""
    cfg = text_config(model_config)
    return cfg.get("model_type") in MLA_MODEL_TYPES or cfg.get("kv_lora_rank") is not None


def is_sparse_mla(cfg: Mapping[str, Any]) -> bool:
    """Whether the (text) config is DeepSeek's sparse MLA (V3.2, with an indexer)."""
    return cfg.get("model_type") == "deepseek_v32" or cfg.get("index_topk") is not None


def text_config(model_config: Mapping[str, Any]) -> Mapping[str, Any]:
    """Multimodal configs nest the language model under `text_config`."""
    text = model_config.get("text_config")
    if isinstance(text, Mapping) and text.get("model_type"):
        merged = dict(text)
        merged.setdefault("quantization_config", model_config.get("quantization_config"))
        return merged
    return model_config


def head_dim(cfg: Mapping[str, Any]) -> int | None:
    """The attention head size: `head_dim`, else hidden size / heads, else None."""
    if cfg.get("head_dim"):
        return int(cfg["head_dim"])
    heads, hidden = cfg.get("num_attention_heads"), cfg.get("hidden_size")
    return int(hidden) // int(heads) if heads and hidden else None
