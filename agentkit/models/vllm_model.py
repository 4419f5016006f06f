"""The `vllm:` backend: an OpenAI-compatible model that keeps a conversation's tokens exact for training.

The chat API re-tokenises the whole history every turn, so turn k's prompt ids need not start with
turn k-1's prompt + completion ids (the sampled tokens and their re-tokenised text can differ). When
log-probs are asked for (a logged or trained run) this backend sends token ids instead:

    prompt_k = prompt_{k-1} + completion_{k-1} + trailer + observation_k

through vLLM's `/v1/completions` (which takes a token-id prompt). `observation_k` is the chat template's
delta: the server's `/tokenize` renders the history up to the last reply (no generation prompt) and the
whole new history (with it), and the new tokens are those after the first rendering. `trailer` is what
the template writes after the end-of-turn token the model sampled (ChatML's newline). So every turn
extends the previous one token for token, and `Trajectory` stores each as a delta (`Turn.extends`).

Tool calls are parsed from the completion text in the `<tool_call>{json}</tool_call>` format (what
vLLM's hermes parser reads: Qwen, Hermes, and SmolLM2 served with agentkit's template). For another
family's format pass `token_prompts=False` (the chat API then parses calls, without the exact chain).
`tool_choice` "none" offers no tools, "required" or a name begins the reply with the call's opening
(`<tool_call>`, and the name), as `LocalModel` does. Without log-probs requests go through the chat API.
What the server sends back is checked: a completion without choices is a reply the model is asked to
redo, token ids or log-probs that do not fit leave the reply without a token record, and a /tokenize answer
without token ids sends that one call through the chat API.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from agentkit.messages import Message, Usage
from agentkit.models.boundary import count, log_probs, reply_text, token_ids, unreadable_reply
from agentkit.models.openai_compat import OpenAIModel, openai_errors, to_openai_messages
from agentkit.models.openai_response import NO_CHOICES, _get, assistant_message, nonempty_message
from agentkit.models.protocol import (
    GenerationSettings,
    ModelResponse,
    StreamItem,
    TextDelta,
    TokenRecord,
    ToolSpecs,
    TransientModelError,
)
from agentkit.tools.text_calls import forced_prefix, tools_for_choice

__all__ = ["VLLMModel"]

log = logging.getLogger(__name__)

MEMORY = 1024  # conversations whose last token sequence is remembered
MAX_TRAILER = 4  # tokens a template may write after the end-of-turn token (ChatML: "\n")


class UnreadableTokens(ValueError):
    """The server's /tokenize answer could not be read as token ids (the call then goes through the chat API)."""


@dataclass
class _Chain:
    ids: list[int]  # prompt + completion of the last call
    finished: bool  # the completion ended on an end-of-turn token


def _message_key(messages: Sequence[Message]) -> str:
    digest = hashlib.sha256()
    for m in messages:
        digest.update(m.model_dump_json(include={"role", "content", "tool_calls", "tool_call_id"}).encode())
        digest.update(b"\x00")
    return digest.hexdigest()


class VLLMModel(OpenAIModel):
    """A model served by vLLM (`vllm:http://host:port/v1/NAME`); see the module docstring.

    Args:
        token_prompts: send token-id prompts that extend the previous turn when log-probs are asked for.
        **options: as for `OpenAIModel`.
    """

    def __init__(self, name: str, *, token_prompts: bool = True, **options: Any) -> None:
        super().__init__(name, **options)
        from agentkit.models.vllm_admin import VLLMAdmin

        self.token_prompts = token_prompts
        self.admin = VLLMAdmin(self.base_url or "", options.get("api_key"))
        self._chains: OrderedDict[str, _Chain] = OrderedDict()
        self._chain_lock = threading.Lock()
        self.stats = {"extended": 0, "fresh": 0, "retokenised": 0}
        self._end_of_turn: int | None = None  # learned from the first reply that ended on its own

    def _token_path(self, settings: GenerationSettings) -> bool:
        return self.token_prompts and settings.logprobs

    def generate(self, messages: Sequence[Message], tools: ToolSpecs = (),
                 settings: GenerationSettings | None = None) -> ModelResponse:
        """One reply from the vLLM server, with token ids and log-probs when asked (see `Model.generate`)."""
        settings = settings or GenerationSettings()
        if self._token_path(settings):
            from agentkit.models.vllm_admin import VLLMAdminError

            try:
                return self._generate_tokens(messages, tools, settings)
            except VLLMAdminError as exc:
                if exc.status not in (404, 405):
                    raise
                # not vLLM after all (no /tokenize): the chat API, with whatever tokens it returns
                log.warning("%s: %s; falling back to the chat API (turns are re-tokenised)", self.name, exc)
                self.token_prompts = False
            except UnreadableTokens as exc:  # this once: the chat API answers the call
                log.warning("%s: %s; this call goes through the chat API", self.name, exc)
        return super().generate(messages, tools, settings)

    def stream(self, messages: Sequence[Message], tools: ToolSpecs = (),
               settings: GenerationSettings | None = None) -> Iterator[StreamItem]:
        """The reply as text deltas, then the `ModelResponse` (see `Model.stream`)."""
        settings = settings or GenerationSettings()
        if not self._token_path(settings):
            yield from super().stream(messages, tools, settings)
            return
        response = self.generate(messages, tools, settings)
        if response.message.content:
            yield TextDelta(response.message.content)
        yield response

    # -- the token path -------------------------------------------------------------------------------
    def prompt_ids(self, messages: Sequence[Message], tools: ToolSpecs = ()) -> tuple[list[int], int | None]:
        """The prompt ids for `messages` (extending a remembered earlier turn where one matches) and the
        server's context length."""
        wire_tools = list(tools) or None
        rendered = self._tokenize(messages, wire_tools, generation_prompt=True)
        full = list(rendered["tokens"])
        context = rendered.get("max_model_len")
        for n in range(len(messages) - 1, 0, -1):
            if messages[n - 1].role != "assistant":
                continue
            with self._chain_lock:
                chain = self._chains.get(_message_key(messages[:n]))
            if chain is None:
                continue
            before = list(self._tokenize(messages[:n], wire_tools, generation_prompt=False)["tokens"])
            if not chain.finished and self._end_of_turn is None:
                self._end_of_turn = self._template_end_of_turn()
            if not chain.finished and self._end_of_turn is not None:
                # cut off (max_tokens, a stop string): the turn is closed with the end-of-turn token, as the
                # template closes it (an observation token, never trained on)
                chain = _Chain([*chain.ids, self._end_of_turn], finished=True)
            extended = _extend(chain, before, full)
            if extended is not None:
                self.stats["extended"] += 1
                return extended, context
            break
        self.stats["retokenised" if any(m.role == "assistant" for m in messages) else "fresh"] += 1
        return full, context

    def _template_end_of_turn(self) -> int | None:
        """The token the chat template closes a turn with: the first token of the common suffix of two
        one-turn conversations that differ only in their text ([eot, trailer...])."""
        one, two = ([*self._tokenize([Message.user(text)], None, generation_prompt=False)["tokens"]]
                    for text in ("x", "y"))
        k = 0
        while k < min(len(one), len(two)) and one[-1 - k] == two[-1 - k]:
            k += 1
        return one[-k] if 0 < k <= MAX_TRAILER + 1 else None

    def _tokenize(self, messages: Sequence[Message], tools: list[Any] | None, *, generation_prompt: bool
                  ) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.name, "messages": to_openai_messages(messages, tools or ()),
                                   "add_generation_prompt": generation_prompt, "add_special_tokens": False}
        if tools:
            payload["tools"] = tools
        return self._tokenized(payload)

    def _tokenized(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The server's /tokenize answer to `payload`, checked: `tokens` a list of ids, `max_model_len` a whole
        number or None. Raises `UnreadableTokens` when the answer is not that, TransientModelError when the
        server failed."""
        from agentkit.models.vllm_admin import VLLMAdminError

        try:
            answer = self.admin.tokenize(payload)
        except VLLMAdminError as exc:
            if exc.status >= 500:
                raise TransientModelError(f"{self.name}: /tokenize: {exc}") from exc
            raise
        except OSError as exc:
            raise TransientModelError(f"{self.name}: /tokenize: {exc}") from exc
        except ValueError as exc:  # the body was not JSON
            raise UnreadableTokens(f"/tokenize answered with something that is not JSON ({exc})") from exc
        ids = token_ids(answer.get("tokens")) if isinstance(answer, dict) else None
        if ids is None:
            raise UnreadableTokens("/tokenize answered without a list of token ids")
        context = answer.get("max_model_len")
        return {"tokens": ids, "max_model_len": context if type(context) is int and context > 0 else None}

    def _generate_tokens(self, messages: Sequence[Message], tools: ToolSpecs,
                         settings: GenerationSettings) -> ModelResponse:
        offered = tools_for_choice(list(tools), settings.tool_choice)
        prefix = forced_prefix(settings.tool_choice, offered) if offered else ""
        prompt, context = self.prompt_ids(messages, offered)
        if prefix:  # tool_choice required / a name: the reply begins with the call (prompt, not sample)
            prompt = prompt + self._tokenized({"model": self.name, "prompt": prefix,
                                               "add_special_tokens": False})["tokens"]
        max_tokens = settings.max_tokens
        if context:
            room = int(context) - len(prompt)
            if room <= 0:
                from agentkit.models.protocol import ModelConfigError

                raise ModelConfigError(f"{self.name}: prompt of {len(prompt)} tokens does not fit the context of "
                                       f"{context}")
            max_tokens = min(max_tokens or room, room)
        kwargs: dict[str, Any] = {"model": self.name, "prompt": prompt, "max_tokens": max_tokens or 512,
                                  "logprobs": 0}
        if settings.temperature is not None:
            kwargs["temperature"] = settings.temperature
        if settings.top_p is not None:
            kwargs["top_p"] = settings.top_p
        if settings.stop:
            kwargs["stop"] = list(settings.stop)
        if settings.seed is not None:
            kwargs["seed"] = settings.seed
        kwargs["extra_body"] = {"return_token_ids": True, "return_tokens_as_token_ids": True}
        with openai_errors(self.name):
            response = self.client.completions.create(**kwargs)
        return self._token_response(response, messages, prompt, prefix, offered)

    def _token_response(self, response: Any, messages: Sequence[Message], prompt: list[int], prefix: str,
                        offered: ToolSpecs) -> ModelResponse:
        """A /v1/completions response as the reply, its tokens remembered for the conversation's next turn.

        Never raises on what the server sent: no choices is a reply whose `parse_error` says so; token ids that
        are not ids, or log-probs that do not match them, leave the reply without a token record (and the
        conversation's next prompt is rendered afresh)."""
        usage_obj = _get(response, "usage")
        choices = _get(response, "choices")
        if not isinstance(choices, list | tuple) or not choices:
            log.warning("%s: the completion had no choices", self.name)
            return unreadable_reply(NO_CHOICES, raw=response,
                                    usage=Usage(input_tokens=count(_get(usage_obj, "prompt_tokens", len(prompt))),
                                                calls=1))
        choice = choices[0]
        text = prefix + reply_text(_get(choice, "text"))
        completion = token_ids(_get(choice, "token_ids", []))
        logprobs = log_probs(_get(_get(choice, "logprobs"), "token_logprobs", []))
        finish = _get(choice, "finish_reason")
        finish = finish if isinstance(finish, str) and finish else "stop"
        message = nonempty_message(assistant_message(text, [], offered, native_tools=False))
        usage = Usage(input_tokens=count(_get(usage_obj, "prompt_tokens", len(prompt))),
                      output_tokens=count(_get(usage_obj, "completion_tokens", len(completion or []))), calls=1)
        if completion is None or logprobs is None or len(logprobs) != len(completion):
            log.warning("%s: the completion's token ids and log-probs do not match (%s ids, %s log-probs); the "
                        "reply has no token record", self.name, None if completion is None else len(completion),
                        None if logprobs is None else len(logprobs))
            return ModelResponse(message=message, usage=usage, finish_reason=finish, raw=response)
        tokens = TokenRecord(prompt_ids=list(prompt), completion_ids=completion, logprobs=logprobs,
                             temperature=1.0, completion_text=text)
        # Ended on an end-of-turn token (EOS, or a stop token id such as <|im_end|>), not on a stop string:
        stop_reason = _get(choice, "stop_reason")
        finished = finish == "stop" and (stop_reason is None or type(stop_reason) is int) and bool(completion)
        if finished:
            self._end_of_turn = completion[-1]
        with self._chain_lock:
            self._chains[_message_key([*messages, message])] = _Chain(list(prompt) + completion, finished)
            while len(self._chains) > MEMORY:
                self._chains.popitem(last=False)
        return ModelResponse(message=message, usage=usage, tokens=tokens, finish_reason=finish, raw=response)

    def __repr__(self) -> str:
        return f"VLLMModel({self.name!r}, base_url={self.base_url!r})"


def _extend(chain: _Chain, before: list[int], full: list[int]) -> list[int] | None:
    """`chain.ids` + trailer + observation, or None when the template's delta cannot be found.

    `before` renders the history up to the last reply, `full` the whole history with the generation prompt;
    the observation is `full[len(before):]`. The trailer is what `before` has after its last end-of-turn
    token (the token the model itself sampled last)."""
    if not chain.finished or not chain.ids or full[: len(before)] != before:
        return None
    end_of_turn = chain.ids[-1]
    tail = before[-(MAX_TRAILER + 1):]
    if end_of_turn not in tail:
        return None
    trailer = tail[len(tail) - 1 - tail[::-1].index(end_of_turn) + 1:]
    return chain.ids + trailer + full[len(before):]
