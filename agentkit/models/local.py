"""In-process Transformers backend: an embedded model by name (`default`, `smollm2-135m`, ...), any causal LM by path.

Generation is a plain KV-cached decode loop (it records the log-probability of every sampled token
for training). Turns of one conversation reuse the cache: when the newly rendered prompt extends the
text of the previous call (prompt + completion), only the new suffix is tokenised and prefilled, so
the prompt ids of a later turn start with the exact ids of the earlier turn. Otherwise the longest
common token prefix of the cache is kept. The cache is dropped when the weights change in place
(training between rollouts) or the module is replaced.

Models whose chat template has no tool calling (SmolLM2) get the tools rendered into the system prompt and
their calls parsed back with the text protocol of `agentkit.tools.text_calls`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.extras import require
from agentkit.messages import Message, Usage
from agentkit.models.chat_format import (
    CHATML_FALLBACK,
    END_OF_TURN,
    IncrementalText,
    RawTexts,
    call_opening_ids,
    common_prefix,
    decode_tokens,
    has_native_tools,
    render_chat,
    to_message,
)
from agentkit.models.protocol import (
    GenerationSettings,
    ModelConfigError,
    ModelResponse,
    StreamItem,
    TextDelta,
    TokenRecord,
    ToolSpecs,
    collect,
)
from agentkit.tools.text_calls import forced_prefix, tool_choice_kind, tools_for_choice


@dataclass
class _CacheState:
    """What the KV cache holds: `cached_ids` are in the cache; `ids`/`text` are the last prompt +
    completion (the final sampled token is not yet in the cache)."""

    cache: Any
    cached_ids: list[int]
    ids: list[int]
    text: str
    fingerprint: tuple[int, int, int]


class LocalModel:
    """A Hugging Face causal LM run in-process, with token ids and log-probs for training.

    Args:
        model: a `PreTrainedModel` (e.g. `LlamaForCausalLM`); used as is, never copied, so weights
            updated in place by a trainer are used by the next call.
        tokenizer: its tokenizer; its chat template renders the prompt (ChatML when it has none).
        name: the model's name in trajectories.
        device: move the model there (in place); default: where it already is.
        text_tools: True renders tools into the prompt with the text protocol (models without native
            tool calling); False passes tools and tool messages to the chat template (Qwen, Hermes);
            None (default) decides from the template (see `chat_format.has_native_tools`).
        default_temperature: used when the settings leave temperature unset.
        max_new_tokens: used when the settings leave max_tokens unset.
        reuse_cache: keep the KV cache across calls of one conversation.
        autocast_bf16: run matmuls in bfloat16 (faster on CPUs with AVX512-BF16/AMX, less exact).
    """

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "local", device: Any = None,
                 text_tools: bool | None = None, default_temperature: float = 0.7, max_new_tokens: int = 512,
                 reuse_cache: bool = True, autocast_bf16: bool = False) -> None:
        require("torch", "transformers", extra="local", feature="the local model backend")
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.text_tools = not has_native_tools(getattr(tokenizer, "chat_template", None)) if text_tools is None \
            else text_tools
        self.default_temperature = default_temperature
        self.max_new_tokens = max_new_tokens
        self.reuse_cache = reuse_cache
        self.autocast_bf16 = autocast_bf16
        if device is not None:
            model.to(device)
        self._torch = torch
        self._lock = threading.RLock()
        self._state: _CacheState | None = None
        self._stop_ids = self._find_stop_ids()
        self._raw_texts = RawTexts()
        self._no_call: list[int] | None = None
        self.adapter: Path | None = None
        """The peft adapter folder put on the model (`adapter.load_with_adapter`), None for the base weights."""
        self.peft: Any = None
        """The `peft.PeftModel` wrapping `model` with that adapter; a `Trainer` continues training it."""

    # -- loading ----------------------------------------------------------------------------------
    @classmethod
    def load(cls, spec: str = "default", *, dtype: Any = None, **options: Any) -> LocalModel:
        """Load a model's weights by name: an embedded model ("default" = Qwen2.5-Coder-1.5B, "smollm2-135m"),
        a saved Hugging Face model folder, a `.gguf` file, or an ORG/NAME hub id (needs the network or
        the local HF cache). The base weights only: `load_local` puts an embedded name's adapter on top."""
        from agentkit.models.embedded import (
            detach_gguf_quantizer,
            embedded_model,
            load_embedded,
            load_embedded_tokenizer,
        )

        dtype = _torch_dtype(dtype)
        options.setdefault("name", f"local:{spec or 'default'}")
        if embedded_model(spec) is not None:
            model, tokenizer = load_embedded(spec, dtype=dtype)
            return cls(model, tokenizer, **options)
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = Path(spec).expanduser()
        try:
            if path.is_file() and path.suffix == ".gguf":
                tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
                model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=dtype)
                detach_gguf_quantizer(model)
            elif path.is_dir():
                if not (path / "config.json").exists():
                    raise ModelConfigError(f"{path} is not a saved Hugging Face model (no config.json)")
                model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
                try:
                    tokenizer = AutoTokenizer.from_pretrained(str(path))
                except (OSError, ValueError):  # a checkpoint of an embedded model saved without tokenizer
                    qwen = getattr(model.config, "model_type", "") == "qwen2"
                    tokenizer = load_embedded_tokenizer("qwen2.5-coder-0.5b" if qwen else "smollm2-135m")
            elif spec.count("/") == 1 and not spec.startswith((".", "/", "~")):
                model = AutoModelForCausalLM.from_pretrained(spec, dtype=dtype)
                tokenizer = AutoTokenizer.from_pretrained(spec)
            else:
                raise ModelConfigError(
                    f"unknown local model {spec!r}: use local:default, local:smollm2-135m, local:PATH (a saved model "
                    "folder or a .gguf file) or local:ORG/NAME (a Hugging Face hub id)"
                )
        except OSError as exc:
            offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
            hint = " (HF_HUB_OFFLINE is set: only models already in the local cache load)" if offline else ""
            raise ModelConfigError(f"could not load local model {spec!r}{hint}: {exc}") from exc
        model.train(False)  # inference mode (what .eval() does)
        return cls(model, tokenizer, **options)

    # -- the Model protocol -----------------------------------------------------------------------
    def generate(self, messages: Sequence[Message], tools: ToolSpecs = (),
                 settings: GenerationSettings | None = None) -> ModelResponse:
        """One reply from the in-process model, with token ids and log-probs (see `Model.generate`)."""
        return collect(self.stream(messages, tools, settings))

    def stream(self, messages: Sequence[Message], tools: ToolSpecs = (),
               settings: GenerationSettings | None = None) -> Iterator[StreamItem]:
        """The reply as text deltas, then the `ModelResponse` (see `Model.stream`)."""
        settings = settings or GenerationSettings()
        tools = tools_for_choice(list(tools), settings.tool_choice)
        # tool_choice required / a name: the reply is begun with the call's opening (part of the prompt,
        # not sampled), so it cannot be anything but that call.
        prefix = forced_prefix(settings.tool_choice, tools) if tools and self.text_tools else ""
        prompt_text = self.render_prompt(messages, tools) + prefix
        if prefix:
            yield TextDelta(prefix)
        with self._lock:
            completion_ids, logprobs, finish = [], [], "stop"
            text = ""
            temperature = 1.0
            prompt_ids: list[int] = []
            no_call = self._call_openers() if tool_choice_kind(settings.tool_choice) == "none" else ()
            for item in self._decode(prompt_text, settings, no_call):
                if isinstance(item, TextDelta):
                    yield item
                else:
                    prompt_ids, completion_ids, logprobs, text, finish, temperature = item
        text = prefix + text
        completion_text = self._detok(completion_ids)
        message = to_message(text, tools)
        self._raw_texts.remember(message, text)
        tokens = TokenRecord(prompt_ids=prompt_ids, completion_ids=completion_ids, logprobs=logprobs,
                             temperature=temperature, prompt_text=prompt_text, completion_text=completion_text)
        usage = Usage(input_tokens=len(prompt_ids), output_tokens=len(completion_ids), calls=1)
        yield ModelResponse(message=message, usage=usage, tokens=tokens, finish_reason=finish)

    def render_prompt(self, messages: Sequence[Message], tools: ToolSpecs = ()) -> str:
        """The exact prompt text the model sees for these messages and tools."""
        chat = render_chat(messages, tools, text_tools=self.text_tools, raw_text=self._raw_texts.get)
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": True}
        if tools and not self.text_tools:
            kwargs["tools"] = list(tools)
        if not getattr(self.tokenizer, "chat_template", None):
            kwargs["chat_template"] = CHATML_FALLBACK
        text: str = self.tokenizer.apply_chat_template(chat, **kwargs)
        return text

    def reset_cache(self) -> None:
        """Forget the KV cache of the previous call."""
        with self._lock:
            self._state = None

    # -- decoding ---------------------------------------------------------------------------------
    def _call_openers(self) -> list[int]:
        """The tokens that can begin a tool call (`call_opening_ids`), found once per tokenizer."""
        if self._no_call is None:
            pieces = self.tokenizer.batch_decode([[i] for i in range(len(self.tokenizer))],
                                                 skip_special_tokens=False, clean_up_tokenization_spaces=False)
            self._no_call = call_opening_ids(pieces)
        return self._no_call

    def _decode(self, prompt_text: str, settings: GenerationSettings,
                no_call: Sequence[int] = ()) -> Iterator[Any]:
        torch = self._torch
        temperature = self.default_temperature if settings.temperature is None else settings.temperature
        greedy = temperature <= 0
        record_temp = 1.0 if greedy else float(temperature)
        max_tokens = self.max_new_tokens if settings.max_tokens is None else settings.max_tokens
        limit = getattr(self.model.config, "max_position_embeddings", None)
        generator = None
        if settings.seed is not None and not greedy:
            generator = torch.Generator(device=self._device()).manual_seed(settings.seed)

        prompt_ids, cache, new_ids = self._prepare(prompt_text)
        if limit and len(prompt_ids) >= limit:
            self._state = None
            raise ModelConfigError(f"prompt of {len(prompt_ids)} tokens does not fit the model's "
                                   f"context of {limit} tokens")
        if limit:
            max_tokens = min(max_tokens, limit - len(prompt_ids))
        completion: list[int] = []
        logprobs: list[float] = []
        detok = IncrementalText(self._detok)
        self._state = None  # the cache is being extended: not reusable until the loop ends cleanly
        # (`_state` then records what was generated so the next prompt continues these exact ids)

        def choose(logits: Any) -> tuple[int, float]:
            logp = torch.log_softmax(logits if greedy else logits / record_temp, dim=-1)
            if greedy:
                token = int(torch.argmax(logits))
            else:
                token = int(torch.multinomial(_top_p(logp.exp(), settings.top_p), 1, generator=generator))
            return token, float(logp[token])

        with torch.inference_mode(), self._autocast(), _eval_mode(self.model):
            logits = self._forward(new_ids, cache)
            if cache.get_seq_length() != len(prompt_ids):
                raise RuntimeError(f"the model did not fill its KV cache ({cache.get_seq_length()} of "
                                   f"{len(prompt_ids)} positions); it cannot be used with LocalModel")
            text, finish = yield from decode_tokens(
                logits, choose=choose, advance=lambda token: self._forward([token], cache),
                max_tokens=max_tokens, stop_ids=self._stop_ids, stops=tuple(s for s in settings.stop if s),
                detok=detok, completion=completion, logprobs=logprobs, no_call=no_call)
        if self.reuse_cache:
            self._state = _CacheState(cache=cache, cached_ids=prompt_ids + completion[:-1],
                                      ids=prompt_ids + completion,
                                      text=prompt_text + self._detok(completion), fingerprint=self._fingerprint())
        yield prompt_ids, completion, logprobs, text, finish, record_temp

    def _prepare(self, prompt_text: str) -> tuple[list[int], Any, list[int]]:
        """Prompt ids, a KV cache and the ids still to prefill (reusing the previous call's cache).

        The prompt ids continue the previous call's ids whenever the text does, even when the cache
        itself had to be dropped (new weights), so a conversation's token history stays linear."""
        from transformers import DynamicCache

        state = self._state if self.reuse_cache else None
        if state is not None and prompt_text.startswith(state.text) and len(prompt_text) > len(state.text):
            prompt_ids = state.ids + self.tokenize(prompt_text[len(state.text):])
        else:
            prompt_ids = self.tokenize(prompt_text)
        if not prompt_ids:
            raise ModelConfigError("the rendered prompt is empty")
        if state is None or state.cache is None or state.fingerprint != self._fingerprint():
            return prompt_ids, DynamicCache(config=self.model.config), prompt_ids
        keep = common_prefix(state.cached_ids, prompt_ids)
        keep = min(keep, len(prompt_ids) - 1)  # at least one token is fed to get the next logits
        if keep == 0:
            return prompt_ids, DynamicCache(config=self.model.config), prompt_ids
        cache = state.cache
        surplus = cache.get_seq_length() - keep
        if surplus > 0:
            cache.crop(-surplus)  # a negative count removes tokens from the end (transformers 4 and 5)
        return prompt_ids, cache, prompt_ids[keep:]

    def _forward(self, ids: list[int], cache: Any) -> Any:
        torch = self._torch
        input_ids = torch.tensor([ids], dtype=torch.long, device=self._device())
        out = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        return out.logits[0, -1].float()

    # -- helpers ----------------------------------------------------------------------------------
    def remember_text(self, message: Message, text: str) -> None:
        """Render the reply `message` as `text` in later prompts, as if this model had written it (a
        demonstration's replies, `agentkit.training.demonstrations`)."""
        self._raw_texts.remember(message, text)

    def tokenize(self, text: str) -> list[int]:
        """Token ids of `text`, special tokens included, no BOS added (as `LlamaCppModel.tokenize`)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _detok(self, ids: list[int]) -> str:
        text: str = self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        return text

    def _device(self) -> Any:
        return next(self.model.parameters()).device

    def _fingerprint(self) -> tuple[int, int, int]:
        """Changes when the module is replaced, gains parameters (adapters) or any weight is modified
        in place (every in-place tensor update bumps the tensor's version counter)."""
        params = list(self.model.parameters())
        return id(self.model), len(params), sum(p._version for p in params)

    def _autocast(self) -> Any:
        import contextlib

        if not self.autocast_bf16:
            return contextlib.nullcontext()
        return self._torch.autocast(self._device().type, dtype=self._torch.bfloat16)

    def _find_stop_ids(self) -> set[int]:
        ids: set[int] = set()
        for source in (self.tokenizer.eos_token_id, getattr(self.model.generation_config, "eos_token_id", None)
                       if getattr(self.model, "generation_config", None) is not None else None):
            if isinstance(source, int):
                ids.add(source)
            elif isinstance(source, list | tuple):
                ids.update(int(x) for x in source)
        for token in END_OF_TURN:
            tid = self.tokenizer.convert_tokens_to_ids(token)
            if isinstance(tid, int) and tid != self.tokenizer.unk_token_id and tid >= 0:
                ids.add(tid)
        return ids


@contextmanager
def _eval_mode(module: Any) -> Iterator[None]:
    """Generate in eval mode (no dropout; gradient checkpointing would switch the KV cache off), and
    give a module that was training back in training mode."""
    was_training = module.training
    if was_training:
        module.eval()
    try:
        yield
    finally:
        if was_training:
            module.train()


def _top_p(probs: Any, top_p: float | None) -> Any:
    if top_p is None or top_p >= 1.0:
        return probs
    import torch

    sorted_p, order = torch.sort(probs, descending=True)
    keep = torch.cumsum(sorted_p, dim=-1) - sorted_p < top_p
    keep[0] = True
    filtered = torch.zeros_like(probs)
    filtered[order[keep]] = sorted_p[keep]
    return filtered


def _torch_dtype(dtype: Any) -> Any:
    if dtype is None or not isinstance(dtype, str):
        return dtype
    import torch

    value = getattr(torch, dtype, None)
    if not isinstance(value, torch.dtype):
        raise ModelConfigError(f"unknown dtype {dtype!r} (float32, bfloat16, float16)")
    return value
