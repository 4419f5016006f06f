"""The fast CPU engine: a GGUF model run by llama.cpp (`llama-cpp-python`, the `fast` extra).

Generation uses llama.cpp's low-level calls, not its sampler: the rendered prompt is tokenised here,
evaluated, and for each step the logits of the last position are read, log-softmaxed (at the
sampling temperature), a token picked (greedy, or sampled with temperature / top-p from a seeded
generator), recorded with its log-probability and fed back. So every turn records token ids and
log-probs, as the torch engine does, for training.

`parallel` slots (llama.cpp's own term) serve that many calls at once, each slot a llama.cpp context
with its own KV cache (the weights are memory-mapped once). A call takes the free slot that holds its
conversation so far; a call that starts a conversation takes the slot its thread used last, else the
slot used longest ago. So a conversation keeps its slot while it waits for its tools.

Greedy replies do not depend on which conversation a slot held before. llama.cpp's CPU kernels compute
the rows of a batch in groups (four rows for the repacked 4-bit weights) and a row left over at a batch's
end another way, which rounds differently; so a position's keys and values depend on where the batches
it was evaluated in began. A prompt that shares only a prefix with a slot's cached conversation (the
same system prompt, say) keeps the cached positions up to a multiple of `ALIGN` that were themselves
evaluated inside whole groups (`_Slot.exact`) and evaluates the rest from there: the very batches a
fresh evaluation of the prompt would make. A call continuing the slot's own conversation keeps all of
it, as every run of that conversation does.

Turns of one conversation reuse the KV cache: the new prompt's ids are compared with the ids in the
cache and only the suffix after their common prefix is evaluated. When the new prompt text extends
the previous prompt + completion, the previous ids are kept as they are and only the new text is
tokenised, so a conversation's token history stays linear (what training needs). A prompt that would
drop a long cached conversation (the agent's reply asked without tools, `tool_choice="none"`) parks it
first (its sequence's keys and values, `_Parked`) and the conversation's next turn takes it back.

Prompts are rendered with the GGUF's own chat template (`chat_format.render_template`, the same
rendering as `transformers`' `apply_chat_template`), with native tool calling where the template has
it (Qwen2.5) and the text protocol otherwise. Numerics differ slightly from the torch trainer's
(quantised weights here, dequantised float weights there): `tests/benchmarks/bench_local_engine.py`
measures by how much.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.messages import Message, Usage
from agentkit.models.boundary import checked_message
from agentkit.models.chat_format import (
    END_OF_TURN,
    IncrementalText,
    RawTexts,
    call_opening_ids,
    common_prefix,
    decode_tokens,
    has_native_tools,
    render_chat,
    render_template,
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

INSTALL_HINT = "pip install 'agentkit[fast]' (builds llama.cpp from source: several minutes)"
DEFAULT_CONTEXT = 8192


def llama_cpp_available() -> bool:
    """True when llama-cpp-python is installed."""
    return importlib.util.find_spec("llama_cpp") is not None


def default_threads() -> int:
    """Threads for llama.cpp: half the CPUs this process may run on (about the physical cores), 1 to 8.

    More threads than free cores is far slower, not a little (llama.cpp's threads wait for each other
    at every layer): on a busy two-core machine 2 threads decoded SmolLM2 8x slower than 1."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(8, n // 2))


@dataclass
class _CacheState:
    """The previous call: its prompt + completion ids and text (the last sampled token is not in the
    KV cache; `Llama.input_ids[:n_tokens]` says what is)."""

    ids: list[int]
    text: str


ALIGN = 32
"""Another conversation's cached prefix is kept in whole multiples of this many tokens (a multiple of every
CPU kernel's row group), so a prompt's batches start where a fresh evaluation's would."""

PARK_TOKENS = 256
"""A cached conversation longer than this, by tokens a new prompt would drop, is parked (`_Parked`)."""


@dataclass
class _Parked:
    """A conversation set aside from a slot's KV cache: the ids in the cache, the call that left them
    (`state`, for continuing its text), and llama.cpp's state of the sequence (keys and values, a few MB;
    `Llama.save_state` would copy a logits buffer of n_batch x vocabulary floats as well)."""

    ids: list[int]
    state: _CacheState | None
    data: Any  # the ctypes buffer llama.cpp wrote, read back as it is
    size: int
    exact: int = 0  # as `_Slot.exact`

    @classmethod
    def save(cls, llm: Any, state: _CacheState | None, exact: int) -> _Parked:
        """Park the whole cache of `llm` (its sequence 0); `exact` as `_Slot.exact`."""
        import ctypes

        import llama_cpp

        size = llama_cpp.llama_state_seq_get_size(llm._ctx.ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(llm._ctx.ctx, buffer, size, 0)
        return cls(ids=[int(i) for i in llm.input_ids[: llm.n_tokens]], state=state, data=buffer, size=written,
                   exact=exact)

    def restore(self, llm: Any) -> bool:
        """Put this conversation back as `llm`'s whole cache; False (and an empty cache) if llama.cpp
        refuses it."""
        import llama_cpp

        llm._ctx.kv_cache_seq_rm(0, 0, -1)
        if llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, self.data, self.size, 0) != self.size:
            llm._ctx.kv_cache_seq_rm(0, 0, -1)
            llm.n_tokens = 0
            return False
        llm.input_ids[: len(self.ids)] = self.ids
        llm.n_tokens = len(self.ids)
        return True


@dataclass
class _Slot:
    """One llama.cpp context and what its KV cache holds (and one conversation parked beside it)."""

    llm: Any
    state: _CacheState | None = None
    parked: _Parked | None = None
    busy: bool = False
    thread: int | None = None  # the thread that used it last
    used: int = 0  # when it was last taken (a count of acquisitions)
    adapter: Any = None  # the llama.cpp LoRA adapter its context runs (None: the base model)
    exact: int = 0  # cached positions evaluated inside whole row groups of batches begun at a multiple of ALIGN

    def set_lora(self, path: Path | None) -> None:
        """Run the GGUF LoRA at `path` (None: no LoRA) on this slot's context and free the one it replaces
        (llama.cpp frees the last one with the model). The KV cache was computed with the old weights: it
        is dropped. Unlike `Llama(lora_path=...)`, which turns memory-mapping off, the base weights stay
        mapped, so slots share them."""
        import ctypes

        import llama_cpp

        llm, new = self.llm, None
        if path is not None:
            # llama.cpp logs a line per tensor it cannot repack (at error level); a failure raises below
            llama_log = logging.getLogger("llama-cpp-python")
            level = llama_log.level
            llama_log.setLevel(logging.CRITICAL)
            try:
                new = llama_cpp.llama_adapter_lora_init(llm._model.model, str(path).encode())
            finally:
                llama_log.setLevel(level)
            if new is None:
                raise ModelConfigError(f"llama.cpp could not load the LoRA {path} on this model")
        adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(new) if new is not None else None
        scales = (ctypes.c_float * 1)(1.0) if new is not None else None
        if llama_cpp.llama_set_adapters_lora(llm._ctx.ctx, adapters, 1 if new is not None else 0, scales):
            if new is not None:
                llama_cpp.llama_adapter_lora_free(new)
            raise ModelConfigError(f"llama.cpp could not set the LoRA {path}")
        if self.adapter is not None:
            llama_cpp.llama_adapter_lora_free(self.adapter)
        self.adapter = new
        self.state = self.parked = None
        self.exact = 0
        llm.reset()

    def states(self) -> list[_CacheState]:
        """The calls whose text this slot can continue: the cached one, then the parked one."""
        parked = self.parked.state if self.parked is not None else None
        return [s for s in (self.state, parked) if s is not None]

    def shared_prefix(self, text: str) -> int:
        """Characters of `text` a conversation of this slot (cached or parked) already covers (0 when none
        is a prefix)."""
        return max((len(s.text) for s in self.states() if text.startswith(s.text)), default=0)


class LlamaCppModel:
    """A GGUF model on llama.cpp, with token ids and log-probs of every generated token.

    Args:
        model_path: the GGUF file.
        name: the model's name in trajectories.
        n_threads: CPU threads (default: `default_threads()`).
        n_ctx: context length (default 8192).
        text_tools: as `LocalModel`: None decides from the chat template.
        default_temperature: used when the settings leave temperature unset.
        max_new_tokens: used when the settings leave max_tokens unset.
        reuse_cache: keep the KV cache across calls of one conversation.
        parallel: calls served at once (threads calling `generate` together, e.g. `evaluate(concurrency=N)`),
            each in its own context of `n_threads`; more slots than free cores / threads is slower.
        lora: a GGUF LoRA file run on top of the model (`gguf_lora.gguf_adapter` writes one from a peft
            adapter); the base weights stay memory-mapped and shared.
        adapter: the peft folder `lora` was written from (training the model continues that adapter).
        source: what it was loaded by (an embedded model's name; default: the file), for loading the same
            model in torch to train it.
    """

    def __init__(self, model_path: str | Path, *, name: str = "local", n_threads: int | None = None,
                 n_ctx: int | None = None, text_tools: bool | None = None, default_temperature: float = 0.7,
                 max_new_tokens: int = 512, reuse_cache: bool = True, parallel: int = 1,
                 lora: str | Path | None = None, adapter: Path | None = None, source: str | None = None) -> None:
        if not llama_cpp_available():
            raise ModelConfigError(f"the llama.cpp engine needs llama-cpp-python: {INSTALL_HINT}")
        import numpy as np
        from llama_cpp import Llama

        self._np = np
        threads = n_threads or default_threads()
        path = Path(model_path)
        if not path.is_file():
            raise ModelConfigError(f"no GGUF file at {path}")
        if parallel < 1:
            raise ModelConfigError(f"parallel must be at least 1, not {parallel}")
        try:
            self._slots = [_Slot(Llama(str(path), n_ctx=n_ctx or DEFAULT_CONTEXT, n_threads=threads,
                                       n_threads_batch=threads, n_batch=512, logits_all=False, verbose=False))
                           for _ in range(parallel)]
        except (ValueError, RuntimeError) as exc:
            raise ModelConfigError(f"llama.cpp could not load {path}: {exc}") from exc
        self.llm = self._slots[0].llm  # tokeniser and metadata (the vocabulary is read-only, shared by calls)
        self.name = name
        self.model_path = path
        self.source = source or str(path)
        self.n_threads = threads
        self.default_temperature = default_temperature
        self.max_new_tokens = max_new_tokens
        self.reuse_cache = reuse_cache
        meta = self.llm.metadata
        self.chat_template: str | None = meta.get("tokenizer.chat_template")
        self.text_tools = not has_native_tools(self.chat_template) if text_tools is None else text_tools
        self._special: dict[str, Any] = {"bos_token": self._piece(self.llm.token_bos()),
                                         "eos_token": self._piece(self.llm.token_eos())}
        self._n_vocab = self.llm.n_vocab()
        self._stop_ids = self._find_stop_ids()
        self._free = threading.Condition()
        self._taken = 0  # slot acquisitions so far
        self._raw_texts = RawTexts()
        self._no_call: list[int] | None = None
        self.parking = {"parked": 0, "restored": 0}
        """How often a slot parked its conversation and took one back (see `_prefill`)."""
        self.lora: Path | None = None
        """The GGUF LoRA the model runs (None: the base model); `set_lora` changes it."""
        self.adapter = adapter
        """The peft adapter the model was loaded with (None: the base model), whatever `set_lora` runs since."""
        if lora is not None:
            self.set_lora(lora)

    # -- the Model protocol -----------------------------------------------------------------------
    def generate(self, messages: Sequence[Message], tools: ToolSpecs = (),
                 settings: GenerationSettings | None = None) -> ModelResponse:
        """One reply from the GGUF model (see `Model.generate`)."""
        return collect(self.stream(messages, tools, settings))

    def stream(self, messages: Sequence[Message], tools: ToolSpecs = (),
               settings: GenerationSettings | None = None) -> Iterator[StreamItem]:
        """The reply as text deltas, then the `ModelResponse` (see `Model.stream`)."""
        settings = settings or GenerationSettings()
        tools = tools_for_choice(list(tools), settings.tool_choice)
        # tool_choice required / a name: the reply is begun with the call's opening (part of the prompt,
        # not sampled), so it cannot be anything but that call.
        prefix = forced_prefix(settings.tool_choice, tools) if tools else ""
        prompt_text = self.render_prompt(messages, tools) + prefix
        if prefix:
            yield TextDelta(prefix)
        slot = self._acquire(prompt_text)
        try:
            result: Any = None
            no_call = self._call_openers() if tool_choice_kind(settings.tool_choice) == "none" else ()
            for item in self._decode(slot, prompt_text, settings, no_call):
                if isinstance(item, TextDelta):
                    yield item
                else:
                    result = item
        finally:
            self._release(slot)
        prompt_ids, completion_ids, logprobs, text, finish, temperature = result
        text = prefix + text
        message = checked_message(to_message(text, tools))  # the reply contract (agentkit.models.boundary)
        self._raw_texts.remember(message, text)
        tokens = TokenRecord(prompt_ids=prompt_ids, completion_ids=completion_ids, logprobs=logprobs,
                             temperature=temperature, prompt_text=prompt_text,
                             completion_text=self.detokenize(completion_ids))
        usage = Usage(input_tokens=len(prompt_ids), output_tokens=len(completion_ids), calls=1)
        yield ModelResponse(message=message, usage=usage, tokens=tokens, finish_reason=finish)

    def render_prompt(self, messages: Sequence[Message], tools: ToolSpecs = ()) -> str:
        """The exact prompt text the model sees for these messages and tools."""
        chat = render_chat(messages, tools, text_tools=self.text_tools, raw_text=self._raw_texts.get)
        return render_template(self.chat_template, chat, () if self.text_tools else tools, **self._special)

    @property
    def parallel(self) -> int:
        """How many calls this model serves at once."""
        return len(self._slots)

    def reset_cache(self) -> None:
        """Forget the KV cache of previous calls (waits for calls in progress)."""
        with self._idle():
            for slot in self._slots:
                slot.state = slot.parked = None
                slot.exact = 0
                slot.llm.reset()

    def set_lora(self, path: str | Path | None) -> None:
        """Run the GGUF LoRA at `path` on top of the model from the next call on (None: the base model);
        waits for calls in progress and drops the KV caches."""
        with self._idle():
            for slot in self._slots:
                slot.set_lora(Path(path) if path is not None else None)
            self.lora = Path(path) if path is not None else None

    def remember_text(self, message: Message, text: str) -> None:
        """Render the reply `message` as `text` in later prompts, as if this model had written it (a
        demonstration's replies, `agentkit.training.demonstrations`)."""
        self._raw_texts.remember(message, text)

    def tokenize(self, text: str) -> list[int]:
        """Token ids of `text`, special tokens included, no BOS added (as the torch engine's tokenizer)."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True) if text else []

    def detokenize(self, ids: Sequence[int]) -> str:
        """Text of token ids, special tokens written out."""
        text: str = self.llm.detokenize(list(ids), special=True).decode("utf-8", errors="replace")
        return text

    # -- slots ------------------------------------------------------------------------------------
    @contextmanager
    def _idle(self) -> Iterator[None]:
        """Hold every slot: waits until no call is in progress and keeps new ones out until the block ends."""
        with self._free:
            while any(slot.busy for slot in self._slots):
                self._free.wait()
            yield

    def _acquire(self, prompt_text: str) -> _Slot:
        """The free slot holding this conversation, else the one this thread used last, else the one used
        longest ago (waits while all are busy)."""
        thread = threading.get_ident()
        with self._free:
            while all(slot.busy for slot in self._slots):
                self._free.wait()
            slot = max((s for s in self._slots if not s.busy),
                       key=lambda s: (s.shared_prefix(prompt_text), s.thread == thread, -s.used))
            self._taken += 1
            slot.busy, slot.thread, slot.used = True, thread, self._taken
            return slot

    def _release(self, slot: _Slot) -> None:
        with self._free:
            slot.busy = False
            self._free.notify()

    # -- decoding ---------------------------------------------------------------------------------
    def _call_openers(self) -> list[int]:
        """The tokens that can begin a tool call (`call_opening_ids`), found once per model."""
        if self._no_call is None:
            self._no_call = call_opening_ids([self._piece(i) for i in range(self._n_vocab)])
        return self._no_call

    def _decode(self, slot: _Slot, prompt_text: str, settings: GenerationSettings,
                no_call: Sequence[int] = ()) -> Iterator[Any]:
        np = self._np
        temperature = self.default_temperature if settings.temperature is None else settings.temperature
        greedy = temperature <= 0
        record_temp = 1.0 if greedy else float(temperature)
        max_tokens = self.max_new_tokens if settings.max_tokens is None else settings.max_tokens
        rng = np.random.default_rng(settings.seed)
        limit = self.llm.n_ctx()

        prompt_ids = self._prompt_ids(slot, prompt_text)
        if len(prompt_ids) >= limit:
            raise ModelConfigError(f"prompt of {len(prompt_ids)} tokens does not fit the context of {limit} tokens")
        max_tokens = min(max_tokens, limit - len(prompt_ids))
        previous, slot.state = slot.state, None  # not reusable until the loop ends cleanly
        logits = self._prefill(slot, prompt_ids, previous)
        completion: list[int] = []
        logprobs: list[float] = []
        detok = IncrementalText(self.detokenize)
        def choose(logits: Any) -> tuple[int, float]:
            scaled = logits if greedy else logits / record_temp
            top = float(scaled.max())
            logp = scaled - (top + float(np.log(np.exp(scaled - top).sum())))
            token = int(scaled.argmax()) if greedy else _sample(np, logp, settings.top_p, rng)
            return token, float(logp[token])

        text, finish = yield from decode_tokens(
            logits, choose=choose, advance=lambda token: self._eval(slot.llm, [token]), max_tokens=max_tokens,
            stop_ids=self._stop_ids, stops=tuple(s for s in settings.stop if s), detok=detok,
            completion=completion, logprobs=logprobs, no_call=no_call)
        if self.reuse_cache:
            slot.state = _CacheState(ids=prompt_ids + completion, text=prompt_text + self.detokenize(completion))
        yield prompt_ids, completion, logprobs, text, finish, record_temp

    def _prompt_ids(self, slot: _Slot, prompt_text: str) -> list[int]:
        states = slot.states() if self.reuse_cache else []
        state = next((s for s in states if prompt_text.startswith(s.text) and len(prompt_text) > len(s.text)), None)
        if state is not None:
            ids = state.ids + self.tokenize(prompt_text[len(state.text):])
        else:
            ids = self.tokenize(prompt_text)
        if not ids:
            raise ModelConfigError("the rendered prompt is empty")
        return ids

    def _prefill(self, slot: _Slot, prompt_ids: list[int], previous: _CacheState | None) -> Any:
        """Evaluate what the KV cache lacks of `prompt_ids`; the logits of the last prompt position.
        `previous` is the call that left the cache as it is. What is kept of the cache is `reusable`.

        A prompt that would drop more than `PARK_TOKENS` of the slot's cached conversation (a reply asked
        without tools, say) parks that conversation first, and a later prompt it covers better than the
        cache does takes it back, so the conversation goes on without evaluating its prompt again (and
        with the very keys and values it had: greedy replies do not change)."""
        llm = slot.llm
        if not self.reuse_cache:
            slot.exact = llm.n_tokens = 0
            return self._eval(llm, prompt_ids)
        keep = reusable(list(llm.input_ids[: llm.n_tokens]), slot.exact, prompt_ids)
        parked = slot.parked
        if parked is not None and (covered := reusable(parked.ids, parked.exact, prompt_ids)) > keep + PARK_TOKENS:
            slot.parked = _Parked.save(llm, previous, slot.exact) if llm.n_tokens - keep > PARK_TOKENS else None
            restored = parked.restore(llm)
            keep, slot.exact = (covered, parked.exact) if restored else (0, 0)
            self.parking["restored"] += restored
        elif llm.n_tokens - keep > PARK_TOKENS:
            slot.parked = _Parked.save(llm, previous, slot.exact)
            self.parking["parked"] += 1
        if keep <= slot.exact:  # evaluated from a multiple of ALIGN, as a fresh prompt is
            slot.exact = len(prompt_ids) // ALIGN * ALIGN
        llm.n_tokens = keep  # `eval` drops the cache beyond n_tokens
        return self._eval(llm, prompt_ids[keep:])

    def _eval(self, llm: Any, ids: list[int]) -> Any:
        import llama_cpp

        llm.eval(ids)
        pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        return self._np.ctypeslib.as_array(pointer, shape=(self._n_vocab,)).astype(self._np.float64)

    # -- helpers ----------------------------------------------------------------------------------
    def _piece(self, token: int) -> str:
        return self.detokenize([token]) if token >= 0 else ""

    def _find_stop_ids(self) -> set[int]:
        ids = {self.llm.token_eos()}
        for text in END_OF_TURN:
            found = self.tokenize(text)
            if len(found) == 1:
                ids.add(found[0])
        return {i for i in ids if i >= 0}


def reusable(cached: list[int], exact: int, prompt: list[int]) -> int:
    """How many leading positions of a KV cache holding `cached` (the first `exact` of them evaluated inside
    whole row groups) a call with `prompt` keeps, so that its replies are those of a fresh evaluation: all
    of them when the prompt continues the cached conversation, else the shared prefix cut to the exact
    positions and down to a multiple of `ALIGN`. At least one prompt position is left to evaluate."""
    shared = common_prefix(cached, prompt)
    if shared == len(cached) and shared < len(prompt):
        return shared
    return min(shared, exact, len(prompt) - 1) // ALIGN * ALIGN


def _sample(np: Any, logp: Any, top_p: float | None, rng: Any) -> int:
    """Draw a token from exp(logp), restricted to the smallest set of mass >= top_p when given."""
    probs = np.exp(logp)
    if top_p is not None and top_p < 1.0:
        order = np.argsort(-probs)
        sorted_p = probs[order]
        keep = (np.cumsum(sorted_p) - sorted_p) < top_p
        keep[0] = True
        chosen = order[keep]
        weights = sorted_p[keep] / sorted_p[keep].sum()
        return int(chosen[min(int(np.searchsorted(np.cumsum(weights), rng.random())), len(chosen) - 1)])
    cdf = np.cumsum(probs)
    return int(min(int(np.searchsorted(cdf, rng.random() * cdf[-1])), len(probs) - 1))
