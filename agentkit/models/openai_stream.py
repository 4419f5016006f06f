"""Reading a streamed OpenAI chat.completions reply as `TextDelta`s and one final `ModelResponse`.

`parse_stream(chunks, tools)` takes the chunks of a `stream=True` request (SDK objects or dicts) and yields
each piece of text as it arrives, then the whole reply with its tool-call pieces assembled, its token ids,
log-probs and usage; it never raises on a chunk's shape and reads a stream of any length in bounded memory.
A client whose iterator cannot decode an event raises `BrokenStream` (or `json.JSONDecodeError`) from it:
the stream ends there and the reply asks the model to reply again. The OpenAI-compatible and LiteLLM
backends stream through it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from agentkit.jsontext import MAX_JSON_CHARS
from agentkit.messages import Message, Usage
from agentkit.models.boundary import MAX_NAME_CHARS, token_ids, too_long
from agentkit.models.openai_response import (
    _finish,
    _get,
    _logprob,
    _logprob_items,
    _token_text,
    _usage,
    assistant_message,
    nonempty_message,
    token_record,
)
from agentkit.models.protocol import ModelResponse, StreamItem, TextDelta, ToolSpecs
from agentkit.tools.text_calls import MAX_CALLS_READ, MAX_REPLY_CHARS

log = logging.getLogger(__name__)


class BrokenStream(ValueError):
    """A client could not read a streamed event (malformed, not a dropped connection): the stream ends there."""


def parse_stream(chunks: Iterator[Any], tools: ToolSpecs, *, native_tools: bool = True) -> Iterator[StreamItem]:
    """Turn streamed chunks into `TextDelta`s and one final `ModelResponse` (tool-call deltas assembled).

    A chunk of the wrong shape is skipped (and logged); an event the client cannot decode (`json.JSONDecodeError`
    or `BrokenStream` from the iterator) ends the stream, and the reply then asks the model to reply again.
    The text kept and each call's arguments stop growing past their limits (`MAX_REPLY_CHARS`,
    `MAX_JSON_CHARS`), so a stream of any length is read in bounded memory, and the final reply says it was
    too long."""
    state = _StreamState()
    iterator = iter(chunks)
    while True:
        try:
            chunk = next(iterator)
        except StopIteration:
            break
        except (json.JSONDecodeError, BrokenStream) as exc:  # the next event could not be read: the stream ends
            log.warning("a streamed event could not be read (%s); the stream was read up to it", exc)
            state.broken = True
            break
        try:
            texts = state.read(chunk)
        except Exception as exc:  # one malformed chunk: the rest of the stream is still read
            log.warning("a streamed chunk could not be read: %r", exc)
            state.skipped += 1
            continue
        for text in texts:
            yield TextDelta(text)
    yield state.response(tools, native_tools)


class _StreamState:
    """What a stream has said so far: text, tool-call pieces, token ids and log-probs, usage."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.length = 0  # of all the text, kept or not
        self.calls: dict[int, list[Any]] = {}  # index -> [id, name, arguments (a string, or an object)]
        self.logprobs: list[float] = []
        self.token_strings: list[str] = []
        self.token_ids: list[int] = []
        self.saw_token_ids = False
        self.first: Any = None
        self.prompt_holder: Any = None
        self.usage = Usage(calls=1)
        self.finish = "stop"
        self.skipped = 0
        self.bad_tokens = False
        self.broken = False  # an event could not be read, and the stream ended there

    def read(self, chunk: Any) -> list[str]:
        """Take in one chunk; the texts to pass on."""
        self.first = self.first if self.first is not None else chunk
        if _get(chunk, "prompt_token_ids") is not None:
            self.prompt_holder = chunk
        if _get(chunk, "usage") is not None:
            self.usage = _usage(_get(chunk, "usage"))
        choices = _get(chunk, "choices")
        texts: list[str] = []
        for choice in choices if isinstance(choices, list | tuple) else []:
            if _get(choice, "prompt_token_ids") is not None:
                self.prompt_holder = choice
            delta = _get(choice, "delta")
            text = _get(delta, "content")
            if isinstance(text, str) and text:
                if self.length <= MAX_REPLY_CHARS:
                    self.content.append(text)
                self.length += len(text)
                texts.append(text)
            tool_calls = _get(delta, "tool_calls")
            for tc in tool_calls if isinstance(tool_calls, list | tuple) else []:
                self._call_piece(tc)
            for item in _logprob_items(choice):
                self.logprobs.append(_logprob(item))
                self.token_strings.append(_token_text(item))
            ids = token_ids(_get(choice, "token_ids"))
            if ids is not None:
                self.saw_token_ids = True
                self.token_ids.extend(ids)
            elif _get(choice, "token_ids") is not None:
                self.bad_tokens = True  # ids that are not ids: no token record
            if _get(choice, "finish_reason"):
                self.finish = _finish(_get(choice, "finish_reason"))
        return texts

    def _call_piece(self, tc: Any) -> None:
        index = _get(tc, "index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = len(self.calls)
        if index not in self.calls and len(self.calls) > MAX_CALLS_READ:
            return
        slot = self.calls.setdefault(index, [None, "", ""])
        call_id = _get(tc, "id")
        if slot[0] is None and isinstance(call_id, str):
            slot[0] = call_id
        fn = _get(tc, "function")
        name, arguments = _get(fn, "name"), _get(fn, "arguments")
        if isinstance(name, str) and len(slot[1]) <= MAX_NAME_CHARS:
            slot[1] += name
        if isinstance(arguments, str):
            if isinstance(slot[2], str) and len(slot[2]) <= MAX_JSON_CHARS:
                slot[2] += arguments
        elif arguments is not None:
            slot[2] = arguments  # a server that sends the arguments as an object, whole

    def response(self, tools: ToolSpecs, native_tools: bool) -> ModelResponse:
        """The final `ModelResponse` of the stream."""
        text = "".join(self.content)
        raw_calls = [tuple(self.calls[i]) for i in sorted(self.calls)]
        holder = self.prompt_holder if self.prompt_holder is not None else self.first
        tokens = None if self.bad_tokens else token_record(
            holder, holder, self.logprobs, text, self.token_ids if self.saw_token_ids else None, self.token_strings)
        if self.length > MAX_REPLY_CHARS:
            log.warning("a streamed reply of %d characters was not read (at most %d)", self.length, MAX_REPLY_CHARS)
            kept, problem = too_long(text, length=self.length)
            message = Message(role="assistant", content=kept, parse_error=problem)
        elif self.broken:
            message = Message(role="assistant", content=text, parse_error=BROKEN_STREAM)
        else:
            message = nonempty_message(assistant_message(text, raw_calls, tools, native_tools=native_tools))
        return ModelResponse(message=message, usage=self.usage, tokens=tokens, finish_reason=self.finish)


BROKEN_STREAM = "the model server's stream broke off (an event that could not be read): reply again"


def _whole(response: ModelResponse) -> Iterator[StreamItem]:
    """A finished response as a stream: its text at once, then the response."""
    if response.message.content:
        yield TextDelta(response.message.content)
    yield response
