"""A tiny random Llama with the real SmolLM2 tokenizer, for fast tests (no download, no training).

    from agentkit.models.tiny import tiny_llama, tiny_local_model
    model, tokenizer = tiny_llama(seed=0)
    local = tiny_local_model(seed=0)        # a LocalModel around it
"""

from __future__ import annotations

from typing import Any

from agentkit.extras import require
from agentkit.models.embedded import load_embedded_tokenizer

_tokenizer: Any = None


def shared_tokenizer() -> Any:
    """The SmolLM2 tokenizer, loaded once per process (it is not modified by the models)."""
    global _tokenizer
    if _tokenizer is None:
        _tokenizer = load_embedded_tokenizer()
    return _tokenizer


def tiny_llama(seed: int = 0, hidden: int = 64, layers: int = 2, heads: int = 4, kv_heads: int = 2,
               intermediate: int = 128, max_positions: int = 2048, tie_embeddings: bool = True) -> tuple[Any, Any]:
    """A random `LlamaForCausalLM` (float32, eval mode) built from a config, and the SmolLM2 tokenizer.

    The vocabulary is the tokenizer's (49152 tokens), so chat templates, special tokens and the text
    tool-call protocol work exactly as with the real model; the weights are random (`seed`).
    """
    require("torch", "transformers", extra="local", feature="tiny test models")
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = shared_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=tie_embeddings,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.train(False)  # inference mode (what .eval() does)
    return model, tokenizer


def tiny_local_model(seed: int = 0, *, name: str = "local:tiny", **kw: Any) -> Any:
    """A `LocalModel` around `tiny_llama`. Keyword arguments go to `tiny_llama` when they are its
    size options (hidden, layers, heads, kv_heads, intermediate, max_positions) and to `LocalModel` otherwise."""
    from agentkit.models.local import LocalModel

    size_keys = {"hidden", "layers", "heads", "kv_heads", "intermediate", "max_positions", "tie_embeddings"}
    size = {k: kw.pop(k) for k in list(kw) if k in size_keys}
    model, tokenizer = tiny_llama(seed=seed, **size)
    return LocalModel(model, tokenizer, name=name, **kw)
