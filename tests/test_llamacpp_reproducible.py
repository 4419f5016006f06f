"""Greedy replies of the llama.cpp engine do not depend on what a slot's cache held before."""

from __future__ import annotations

import importlib.util

import pytest

from agentkit.messages import Message
from agentkit.models import GenerationSettings
from agentkit.models.chat_format import common_prefix
from agentkit.models.embedded import EMBEDDED_MODELS, embedded_gguf_path
from agentkit.models.llamacpp import ALIGN, reusable

DEFAULT = EMBEDDED_MODELS["qwen2.5-coder-1.5b"]
HAS_QWEN = importlib.util.find_spec("llama_cpp") is not None and all(
    importlib.util.find_spec(p.package) is not None for p in DEFAULT.parts)


def test_reusable_keeps_a_continuation_whole_and_cuts_a_shared_prefix_to_aligned_exact_positions() -> None:
    cached = list(range(100))
    assert reusable(cached, 64, [*cached, 7, 8]) == 100  # the same conversation goes on: all of it
    other = [*range(70), 999, 1000]
    assert reusable(cached, 96, other) == 64  # shared 70, cut to a multiple of ALIGN
    assert reusable(cached, 32, other) == 32  # never beyond the positions evaluated inside whole groups
    assert reusable(cached, 96, list(range(50))) == 32  # a prompt the cache covers: one position is left
    assert reusable([], 0, [1, 2, 3]) == 0
    assert ALIGN % 4 == 0


@pytest.mark.skipif(not HAS_QWEN, reason=f"needs llama-cpp-python and the default model ({DEFAULT.install_hint})")
def test_a_prompt_sharing_an_unaligned_prefix_with_the_cache_gets_the_fresh_replies_bit_for_bit() -> None:
    """The default's 4-bit kernels round a batch's leftover rows differently; evaluating a prompt from the
    end of another conversation's shared prefix changed its log-probs (and now and then a greedy token)."""
    from agentkit.models.llamacpp import LlamaCppModel

    model = LlamaCppModel(embedded_gguf_path("qwen2.5-coder-1.5b"), n_threads=2, n_ctx=2048)
    greedy = GenerationSettings(temperature=0, max_tokens=6)
    system = Message.system("You answer questions about a database of shops, orders and customers. " * 6)
    before = [system, Message.user("How many orders did shop 7 take in 2003?")]
    after = [system, Message.user("How many orders were late in 2004?")]
    shared = common_prefix(model.tokenize(model.render_prompt(before)), model.tokenize(model.render_prompt(after)))
    assert shared % 4 != 0  # the premise: a batch begun there would not start a row group where a fresh one does
    fresh = model.generate(after, settings=greedy).tokens
    model.reset_cache()
    model.generate(before, settings=greedy)
    reused = model.generate(after, settings=greedy).tokens
    assert fresh is not None and reused is not None
    assert reused.completion_ids == fresh.completion_ids
    assert reused.logprobs == fresh.logprobs
