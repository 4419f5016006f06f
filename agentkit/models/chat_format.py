"""How an in-process model sees a conversation: messages → chat-template text, generated text → message.

Both in-process engines (torch `LocalModel`, llama.cpp `LlamaCppModel`) render the prompt with the
model's own chat template and parse its replies here, so chat, logged trajectories and training see
the same tokens whichever engine generated them.

Two tool-call formats:

- **native**: the chat template renders tools itself (Qwen2.5, Hermes: the tool list in the system
  prompt, `<tool_call>{json}</tool_call>` in assistant turns, results as `<tool_response>` in a user
  turn). Messages go to the template with OpenAI-style `tool_calls` and `tool` roles, exactly as the
  model was trained on them.
- **text**: templates without tool support get the tools and the call format written into the system
  prompt by `agentkit.tools.text_calls`, and tool results as user turns.

Replies are parsed by `agentkit.tools.text_calls.parse_tool_calls` in both cases: it reads `<tool_call>`
tags and also the bare JSON and ```json fences models often write instead. Whatever the format, the
exact generated text of an assistant message is remembered (`RawTexts`) and re-rendered verbatim, so a
later prompt starts with the exact token ids of the earlier turn.

`render_template` renders a template string the way `transformers`' `apply_chat_template` does (same
Jinja environment: sandboxed, `trim_blocks`, `lstrip_blocks`, loop controls, its `tojson`), without
importing transformers; tests check both give the same text.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from agentkit.messages import Message
from agentkit.models.protocol import TextDelta, ToolSpecs
from agentkit.tools.text_calls import CLOSE_TAG, OPEN_TAG, call_json, parse_tool_calls, render_tools

TOOL_RESULT_PREFIX = "Tool result ({name}):\n"
TOOL_ERROR_PREFIX = "Tool error ({name}):\n"
RAW_TEXT_MEMORY = 512  # assistant messages whose generated text is remembered for exact re-rendering
END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>")
"""Tokens that end a turn in the chat templates of the models agentkit runs (ChatML, Llama 3, Gemma)."""

CHATML_FALLBACK = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def has_native_tools(template: str | None) -> bool:
    """True when a chat template renders a tool list and tool calls itself (Qwen2.5, Hermes, Llama 3.1)."""
    return bool(template) and "tools" in template and "tool_call" in template  # type: ignore[operator]


def render_chat(messages: Sequence[Message], tools: ToolSpecs = (), *, text_tools: bool = True,
                raw_text: Callable[[Message], str | None] | None = None) -> list[dict[str, Any]]:
    """Messages as chat-template dicts. With `text_tools`, tools go into the system prompt, assistant
    tool calls become `<tool_call>` lines and tool results become user turns with a clear prefix.
    `raw_text` may return the exact text a model generated for an assistant message, used instead."""
    out: list[dict[str, Any]] = []
    tool_section = render_tools(list(tools)) if tools and text_tools else ""
    for msg in messages:
        if msg.role == "system":
            content = f"{msg.content}\n\n{tool_section}" if tool_section else msg.content
            tool_section = ""
            out.append({"role": "system", "content": content.strip()})
        elif msg.role == "assistant":
            raw = raw_text(msg) if raw_text is not None else None
            if raw is not None:
                out.append({"role": "assistant", "content": raw})
            elif text_tools:
                lines = [msg.content] if msg.content else []
                lines += [f"{OPEN_TAG}{call_json(c)}{CLOSE_TAG}" for c in msg.tool_calls]
                out.append({"role": "assistant", "content": "\n".join(lines)})
            else:
                entry: dict[str, Any] = {"role": "assistant", "content": msg.content}
                if msg.tool_calls:
                    entry["tool_calls"] = [{"id": c.id, "type": "function",
                                            "function": {"name": c.name, "arguments": c.arguments}}
                                           for c in msg.tool_calls]
                out.append(entry)
        elif msg.role == "tool":
            if text_tools:
                prefix = TOOL_ERROR_PREFIX if msg.is_error else TOOL_RESULT_PREFIX
                out.append({"role": "user", "content": prefix.format(name=msg.name or "tool") + msg.content})
            else:
                content = f"Error: {msg.content}" if msg.is_error else msg.content
                out.append({"role": "tool", "content": content, "tool_call_id": msg.tool_call_id,
                            "name": msg.name})
        else:
            out.append({"role": msg.role, "content": msg.content})
    if tool_section:  # no system message: the tools get one of their own
        out.insert(0, {"role": "system", "content": tool_section})
    return out


@lru_cache(maxsize=8)
def _compile(template: str) -> Any:
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template)


def render_template(template: str | None, chat: list[dict[str, Any]], tools: ToolSpecs = (), *,
                    add_generation_prompt: bool = True, **special_tokens: Any) -> str:
    """Render chat dicts with a Jinja chat template as `apply_chat_template(..., tokenize=False)` does."""
    compiled = _compile(template or CHATML_FALLBACK)
    text: str = compiled.render(messages=chat, tools=list(tools) or None, documents=None,
                                add_generation_prompt=add_generation_prompt, **special_tokens)
    return text


class RawTexts:
    """The exact generated text behind parsed assistant messages (thread-safe, bounded), so that
    re-rendering a conversation reproduces what the model wrote and its ids prefix the next prompt."""

    def __init__(self, size: int = RAW_TEXT_MEMORY) -> None:
        self._size = size
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(message: Message) -> str:
        return json.dumps([message.content, [(c.name, c.arguments) for c in message.tool_calls]], sort_keys=True,
                          default=str)

    def remember(self, message: Message, text: str) -> None:
        """Keep the raw text a reply with tool calls was generated as (the oldest are dropped past the size)."""
        if not message.tool_calls or message.parse_error:
            return  # the content already is the text
        with self._lock:
            self._texts[self._key(message)] = text
            while len(self._texts) > self._size:
                self._texts.popitem(last=False)

    def get(self, message: Message) -> str | None:
        """The raw text remembered for this reply, or None (no tool calls, or not seen)."""
        if not message.tool_calls:
            return None
        with self._lock:
            return self._texts.get(self._key(message))


def to_message(text: str, tools: ToolSpecs) -> Message:
    """A generated reply as an assistant message: tool calls when it holds readable ones, a parse
    error (shown to the model) when it holds a call-like text that cannot be read."""
    if not tools:
        return Message.assistant(text)
    functions = {fn.get("name"): fn for fn in (spec.get("function", spec) for spec in tools)}
    parsed = parse_tool_calls(text, set(functions))
    if parsed.error:
        return Message(role="assistant", content=text, parse_error=parsed.error)
    for call in parsed.calls:
        known = (functions.get(call.name) or {}).get("parameters", {}).get("properties", {})
        for key in [k for k in call.arguments if k in _SCHEMA_WORDS and k not in known]:
            del call.arguments[key]  # schema text copied into the call ("required": [...]), not an argument
    return Message.assistant(parsed.content if parsed.calls else text, parsed.calls)


_SCHEMA_WORDS = frozenset({"required", "type", "properties", "additionalProperties", "description"})


class IncrementalText:
    """Detokenise token by token without splitting multi-byte characters: text is released only
    once the bytes of a character are complete (the decoder yields U+FFFD until then)."""

    def __init__(self, decode: Callable[[list[int]], str]) -> None:
        self._decode = decode
        self.ids: list[int] = []
        self.text = ""
        self._prefix = 0
        self._read = 0

    def push(self, token: int) -> str:
        """Add one token; returns the text so far (up to the last complete character)."""
        self.ids.append(token)
        before = self._decode(self.ids[self._prefix:self._read])
        after = self._decode(self.ids[self._prefix:])
        if len(after) > len(before) and not after.endswith("\ufffd"):
            self.text += after[len(before):]
            self._prefix, self._read = self._read, len(self.ids)
        return self.text

    def final(self) -> str:
        """Decode every token pushed (a trailing partial character included); returns the whole text."""
        self.text = self._decode(self.ids)
        return self.text


def find_stop(text: str, stops: tuple[str, ...]) -> int | None:
    """Where the first stop string starts in `text`, or None."""
    hits = [i for i in (text.find(s) for s in stops) if i >= 0]
    return min(hits) if hits else None


def stop_prefix_len(text: str, stops: tuple[str, ...]) -> int:
    """Length of the longest end of `text` that could be the start of a stop string (held back)."""
    best = 0
    for s in stops:
        for n in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:n]):
                best = n
                break
    return best


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the common prefix of two id lists."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


CALL_OPENERS = "{[`<"
"""The characters a tool call begins with in model text: a JSON object or list, a code fence, a tag."""


def call_opening_ids(pieces: Sequence[str]) -> list[int]:
    """The ids of the tokens (given each token's text, by id) that could begin a tool call in a reply: one
    of `CALL_OPENERS` comes in their text before any letter or digit ('{', ' {"', '>{', '```', '<tool_call>')."""
    def opens(piece: str) -> bool:
        for ch in piece:
            if ch in CALL_OPENERS:
                return True
            if ch.isalnum():
                return False
        return False

    return [i for i, piece in enumerate(pieces) if opens(piece)]


def decode_tokens(logits: Any, *, choose: Callable[[Any], tuple[int, float]], advance: Callable[[int], Any],
                  max_tokens: int, stop_ids: set[int], stops: tuple[str, ...], detok: IncrementalText,
                  completion: list[int], logprobs: list[float],
                  no_call: Sequence[int] = ()) -> Generator[TextDelta, None, tuple[str, str]]:
    """The decoding loop both local engines share. `choose(logits)` picks a token and returns it with its
    log-prob; `advance(token)` feeds it and returns the next logits. Tokens and log-probs are appended to
    `completion` and `logprobs`; the loop stops at an end-of-turn token, a stop string or `max_tokens`,
    and streams only text that can no longer turn into a stop string. Returns (text, finish reason).

    `no_call` (token ids, `call_opening_ids`) are never chosen before the reply's first letter or digit:
    under `tool_choice="none"` a reply cannot begin as a tool call (a model may write a call's JSON even
    with no tools offered, also after a stray ">"). Their logits are set to -inf in place, so the recorded
    log-probs are those of the distribution actually sampled from."""
    emitted, text, finish, cut_by_string = 0, "", "length", False
    masked = list(no_call)  # emptied once the reply has a letter or digit
    for _ in range(max(max_tokens, 0)):
        if masked and any(ch.isalnum() for ch in text):
            masked = []
        if masked:
            logits[masked] = float("-inf")
        token, logprob = choose(logits)
        completion.append(token)
        logprobs.append(logprob)
        if token in stop_ids:
            finish = "stop"
            break
        text = detok.push(token)
        cut = find_stop(text, stops)
        if cut is not None:
            text, finish, cut_by_string = text[:cut], "stop", True
            break
        safe = len(text) - stop_prefix_len(text, stops)
        if safe > emitted:
            yield TextDelta(text[emitted:safe])
            emitted = safe
        if len(completion) == max_tokens:
            break
        logits = advance(token)
    if not cut_by_string:
        text = detok.final()
    if len(text) > emitted:
        yield TextDelta(text[emitted:])
    return text, finish

