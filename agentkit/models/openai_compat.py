"""OpenAI-compatible chat backend: OpenAI itself, vLLM, and any server speaking /v1/chat/completions.

Native tool calling by default (tool specs in the request, `tool_calls` back); `native_tools=False`
uses the text protocol of `agentkit.tools.text_calls` for servers without it. With `settings.logprobs`,
log-probs are requested; a vLLM server is also asked for token ids (`return_token_ids`,
`return_tokens_as_token_ids`) so the response carries a full `TokenRecord` for training (vLLM reports
raw log-probs, i.e. at temperature 1).

The request/response conversion here is shared with the LiteLLM backend (same wire format). It reads a
response field by field, whatever the server or a proxy sent, and never raises on its shape: a tool call
without a name or with arguments that are not a JSON object, no choices, `content: null` without calls, an
event that is not JSON, a reply past `MAX_REPLY_CHARS` become a reply whose `parse_error` the model is
shown; a missing or repeated call id, arguments sent as an object and negative or unreadable usage counts
are repaired (see `agentkit.models.boundary`). Each is logged as a warning. A body that is not JSON at all
is a `TransientModelError` (retried, as a server error).
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from agentkit.jsontext import MAX_JSON_CHARS, JSONLimitError, lenient_json
from agentkit.messages import Message, ToolCall, Usage, new_id
from agentkit.models.boundary import (
    MAX_ID_CHARS,
    MAX_NAME_CHARS,
    arguments_problem,
    count,
    reply_text,
    token_ids,
    too_long,
    unreadable_reply,
)
from agentkit.models.protocol import (
    GenerationSettings,
    ModelConfigError,
    ModelResponse,
    StreamItem,
    TextDelta,
    TokenRecord,
    ToolSpecs,
    TransientModelError,
)
from agentkit.tools.text_calls import (
    MAX_CALLS_READ,
    MAX_REPLY_CHARS,
    choice_reminder,
    choice_satisfied,
    parse_tool_calls,
    tool_choice_kind,
    tools_for_choice,
)

log = logging.getLogger(__name__)

_TRANSIENT_STATUS = {408, 409, 425, 429}


# -- request ------------------------------------------------------------------------------------
def to_openai_messages(messages: Sequence[Message], tools: ToolSpecs = (), *, native_tools: bool = True
                       ) -> list[dict[str, Any]]:
    """agentkit messages in the OpenAI chat format (tool calls native, or in the text protocol)."""
    if not native_tools:
        from agentkit.models.chat_format import render_chat

        return render_chat(messages, tools, text_tools=True)
    out: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": msg.content or None}
            if msg.tool_calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in msg.tool_calls
                ]
            elif entry["content"] is None:
                entry["content"] = ""
            out.append(entry)
        elif msg.role == "tool":
            out.append({"role": "tool", "tool_call_id": msg.tool_call_id or "", "content": msg.content})
        else:
            out.append({"role": msg.role, "content": msg.content})
    return out


def request_options(settings: GenerationSettings, *, max_tokens_key: str = "max_tokens") -> dict[str, Any]:
    """The sampling part of a chat.completions request."""
    opts: dict[str, Any] = {}
    if settings.temperature is not None:
        opts["temperature"] = settings.temperature
    if settings.top_p is not None:
        opts["top_p"] = settings.top_p
    if settings.max_tokens is not None:
        opts[max_tokens_key] = settings.max_tokens
    if settings.stop:
        opts["stop"] = list(settings.stop)
    if settings.seed is not None:
        opts["seed"] = settings.seed
    if settings.logprobs:
        opts["logprobs"] = True
    return opts


def native_tool_choice(tools: ToolSpecs, choice: str | None) -> Any:
    """The request's `tool_choice` field for native tool calling (None: leave it out).

    A name becomes `{"type": "function", "function": {"name": NAME}}`; a name that is not among the
    offered tools raises ValueError before any request is sent."""
    kind = tool_choice_kind(choice)
    if kind == "auto" or not tools:
        return None
    if kind == "named":
        tools_for_choice(list(tools), choice)
        return {"type": "function", "function": {"name": choice}}
    return kind


def callable_tools(tools: ToolSpecs, settings: GenerationSettings) -> ToolSpecs:
    """The tools a reply's text may be read as calling: none under `tool_choice="none"` (a reply that writes
    a call's JSON there is text, as the choice asked)."""
    return () if tool_choice_kind(settings.tool_choice) == "none" else tools


def generate_with_choice(generate_once: Callable[..., ModelResponse], messages: Sequence[Message],
                         tools: ToolSpecs, settings: GenerationSettings) -> ModelResponse:
    """The text protocol's `tool_choice`: offer only the tools the choice allows, and when a reply must call
    a tool but does not, re-ask once with a reminder (the second reply is returned, usage summed)."""
    offered = tools_for_choice(list(tools), settings.tool_choice)
    response = generate_once(messages, offered, settings)
    kind = tool_choice_kind(settings.tool_choice)
    if kind not in ("required", "named") or choice_satisfied(response.message.tool_calls, settings.tool_choice):
        return response
    again = [*messages, response.message, Message.user(choice_reminder(settings.tool_choice))]
    second = generate_once(again, offered, settings)
    second.usage = second.usage + response.usage
    return second


# -- response -----------------------------------------------------------------------------------
# A response is read field by field, each checked for its type: whatever a server or proxy sends (a tool call
# without a name, arguments that are not a JSON object, no choices, negative usage, a reply of megabytes)
# becomes a reply the model can correct (its `parse_error`) or a repaired one, never an exception.
def _get(obj: Any, key: str, default: Any = None) -> Any:
    """Field of an SDK object or a dict, including extra fields servers add (vLLM token ids)."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        value = obj.get(key)
        return default if value is None else value
    value = getattr(obj, key, None)
    if value is None:
        extra = getattr(obj, "model_extra", None)
        value = extra.get(key) if isinstance(extra, dict) else None
    return default if value is None else value


def assistant_message(content: str, raw_calls: Sequence[tuple[Any, Any, Any]], tools: ToolSpecs,
                      *, native_tools: bool = True) -> Message:
    """Build the assistant message from text and raw (id, name, arguments) tool calls as the server sent them.

    Arguments (a JSON string, read leniently, or an object) must give a JSON object; a call without a name or
    with unreadable arguments makes the whole message a `parse_error` (its calls shown as text) so the model
    can correct itself. A missing or repeated id gets a fresh one; at most `MAX_CALLS_READ` calls are read.
    A reply without native calls (the text protocol, or a server whose parser missed a call written as a
    ```json fence, bare JSON or `<tool_call>` tags, as small open models served by vLLM write them) is read by
    the text protocol's parser: its calls, or a `parse_error` when a call names no offered tool or cannot be
    read. A reply past `MAX_REPLY_CHARS` keeps its beginning and becomes a `parse_error`."""
    if len(content) > MAX_REPLY_CHARS:
        kept, too_long_problem = too_long(content)
        log.warning("a reply of %d characters was not read (at most %d)", len(content), MAX_REPLY_CHARS)
        return Message(role="assistant", content=kept, parse_error=too_long_problem)
    if not native_tools or not raw_calls:
        if not tools:
            return Message.assistant(content)
        parsed = parse_tool_calls(content, {_get(s.get("function", s), "name") for s in tools})
        if parsed.error:
            return Message(role="assistant", content=content, parse_error=parsed.error)
        return Message.assistant(parsed.content if parsed.calls else content, parsed.calls)
    if len(raw_calls) > MAX_CALLS_READ:
        log.warning("a reply made %d tool calls; the first %d were read", len(raw_calls), MAX_CALLS_READ)
    calls: list[ToolCall] = []
    errors: list[str] = []
    ids: set[str] = set()
    for call_id, raw_name, arguments in raw_calls[:MAX_CALLS_READ]:
        name = raw_name.strip() if isinstance(raw_name, str) else ""
        args, problem = _arguments(name, arguments)
        if not name:
            errors.append("a tool call without a tool name")
        elif len(name) > MAX_NAME_CHARS:
            errors.append(f"a tool name longer than {MAX_NAME_CHARS} characters")
        elif problem is not None:
            errors.append(problem)
        else:
            if not (isinstance(call_id, str) and call_id.strip() and len(call_id) <= MAX_ID_CHARS) or call_id in ids:
                call_id = new_id()
            ids.add(call_id)
            calls.append(ToolCall(id=call_id, name=name, arguments=args))
    if errors:
        for error in errors:
            log.warning("a tool call was not used: %s", error)
        shown = "\n".join(f"{reply_text(name)[:MAX_NAME_CHARS]}({reply_text(arguments)[:2000]})"
                          for _, name, arguments in raw_calls[:MAX_CALLS_READ])
        text = f"{content}\n{shown}".strip()
        return Message(role="assistant", content=text,
                       parse_error="; ".join(errors) + ". Call the tool again with JSON object arguments.")
    return Message.assistant(content, calls)


def _arguments(name: str, arguments: Any) -> tuple[dict[str, Any], str | None]:
    """A call's arguments as sent (a JSON string, an object, or nothing) as a dict, or why they are unusable."""
    shown = name[:80] or "the call"
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}, None
    if isinstance(arguments, str):
        try:
            value = lenient_json(arguments, raise_limits=True)
        except JSONLimitError as exc:
            return {}, f"the arguments of {shown} are {exc}"
        if isinstance(value, dict):
            return value, None
        return {}, f"the arguments of {shown} are not a JSON object: {arguments[:120]!r}"
    if isinstance(arguments, dict):
        problem = arguments_problem(shown, arguments)
        return (arguments, None) if problem is None else ({}, problem)
    return {}, f"the arguments of {shown} are not a JSON object: {reply_text(arguments)[:120]!r}"


def _raw_calls(value: Any) -> list[tuple[Any, Any, Any]]:
    """(id, name, arguments) of each tool call of a message's `tool_calls` field, as sent."""
    if not isinstance(value, list | tuple):
        return []
    calls = []
    for item in value[: MAX_CALLS_READ + 1]:
        fn = _get(item, "function")
        calls.append((_get(item, "id"), _get(fn, "name"), _get(fn, "arguments")))
    return calls


def _usage(value: Any) -> Usage:
    """A response's `usage` field as `Usage` (counts below 0, or not numbers, read as 0)."""
    return Usage(input_tokens=count(_get(value, "prompt_tokens", 0)),
                 output_tokens=count(_get(value, "completion_tokens", 0)), calls=1)


def _finish(value: Any) -> str:
    return value if isinstance(value, str) and value else "stop"


def nonempty_message(message: Message) -> Message:
    """`message`, or a reply whose `parse_error` asks for an answer when it has neither text nor calls (a server's
    `content: null` with no tool calls)."""
    if message.content.strip() or message.tool_calls or message.parse_error:
        return message
    log.warning("the model server's reply had no text and no tool calls")
    return Message(role="assistant", content="", parse_error=EMPTY_REPLY)


EMPTY_REPLY = "the reply was empty: answer in text, or call a tool"


def _token_id(token: str) -> int | None:
    if token.startswith("token_id:"):
        try:
            value = int(token[len("token_id:"):])
        except ValueError:
            return None
        return value if value >= 0 else None
    return None


def token_record(response: Any, choice: Any, logprobs: list[float], completion_text: str,
                 completion_ids: list[int] | None, token_strings: list[str]) -> TokenRecord | None:
    """A `TokenRecord` when the server gave both prompt and completion token ids (vLLM), else None (also when
    they are not lists of ids, or the log-probs do not match the completion)."""
    prompt_ids = token_ids(_get(choice, "prompt_token_ids") or _get(response, "prompt_token_ids"))
    if completion_ids is None:
        ids = [_token_id(t) for t in token_strings]
        completion_ids = [i for i in ids if i is not None] if ids and all(i is not None for i in ids) else None
    if not prompt_ids or completion_ids is None:
        return None
    if logprobs and len(logprobs) != len(completion_ids):
        return None
    if not all(math.isfinite(x) for x in logprobs):
        return None
    return TokenRecord(prompt_ids=list(prompt_ids), completion_ids=list(completion_ids), logprobs=list(logprobs),
                       temperature=1.0, completion_text=completion_text)


def _logprob_items(choice: Any) -> list[Any]:
    lp = _get(choice, "logprobs")
    items = _get(lp, "content") if lp is not None else None
    return list(items) if isinstance(items, list | tuple) else []


def _logprob(item: Any) -> float:
    value = _get(item, "logprob", 0.0)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def _token_text(item: Any) -> str:
    value = _get(item, "token", "")
    return value if isinstance(value, str) else ""


def parse_completion(response: Any, tools: ToolSpecs, *, native_tools: bool = True) -> ModelResponse:
    """A chat.completions response (SDK object or dict) as a `ModelResponse`. Never raises: a response with no
    choices, or one that cannot be read at all, is a reply whose `parse_error` says so (the loop asks again)."""
    try:
        return _completion(response, tools, native_tools)
    except Exception as exc:  # a shape nothing above expected
        log.warning("a model server's response could not be read: %r", exc)
        return unreadable_reply(f"the model server's reply could not be read ({type(exc).__name__})", raw=response)


def _completion(response: Any, tools: ToolSpecs, native_tools: bool) -> ModelResponse:
    usage = _usage(_get(response, "usage"))
    choices = _get(response, "choices")
    if not isinstance(choices, list | tuple) or not choices:
        log.warning("a model server's response had no choices")
        return unreadable_reply(NO_CHOICES, raw=response, usage=usage)
    choice = choices[0]
    msg = _get(choice, "message")
    content = reply_text(_get(msg, "content"))
    items = _logprob_items(choice)
    tokens = token_record(response, choice, [_logprob(i) for i in items], content,
                          token_ids(_get(choice, "token_ids")), [_token_text(i) for i in items])
    message = assistant_message(content, _raw_calls(_get(msg, "tool_calls")), tools, native_tools=native_tools)
    return ModelResponse(message=nonempty_message(message), usage=usage, tokens=tokens,
                         finish_reason=_finish(_get(choice, "finish_reason")), raw=response)


NO_CHOICES = "the model server returned no reply (no choices): reply again"


def priced(model: str, response: ModelResponse) -> ModelResponse:
    """`response` with the call's cost in its usage when the model's price is known (agentkit.models.cost)."""
    from agentkit.models.cost import with_cost

    response.usage = with_cost(model, response.usage)
    return response


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


# -- errors -------------------------------------------------------------------------------------
@contextmanager
def openai_errors(model: str) -> Iterator[None]:
    """Map `openai` exceptions to TransientModelError (retry) or ModelConfigError (fix the setup); an answer
    that is not JSON at all is a TransientModelError too."""
    import openai

    try:
        yield
    except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
            openai.InternalServerError) as exc:
        raise TransientModelError(f"{model}: {type(exc).__name__}: {exc}") from exc
    except json.JSONDecodeError as exc:  # a body that is not JSON (a proxy's error page): as a server error
        raise TransientModelError(f"{model}: the server's answer is not JSON ({exc})") from exc
    except openai.AuthenticationError as exc:
        raise ModelConfigError(f"{model}: the API key was rejected ({exc}); check OPENAI_API_KEY") from exc
    except openai.NotFoundError as exc:
        raise ModelConfigError(f"{model}: model or endpoint not found ({exc}); check the model name and "
                               "base URL") from exc
    except openai.APIStatusError as exc:
        if exc.status_code >= 500 or exc.status_code in _TRANSIENT_STATUS:
            raise TransientModelError(f"{model}: server error {exc.status_code}: {exc}") from exc
        raise ModelConfigError(f"{model}: request rejected ({exc.status_code}): {exc}") from exc


# -- the backend --------------------------------------------------------------------------------
class OpenAIModel:
    """A chat model behind an OpenAI-compatible API.

    Args:
        name: the model id on the server (e.g. "gpt-4o-mini" or the name vLLM serves).
        base_url: the API base (default `OPENAI_BASE_URL`, else api.openai.com).
        api_key: default `OPENAI_API_KEY`; a custom base URL without a key sends "EMPTY".
        native_tools: send tool specs natively; False renders them into the prompt (text protocol).
        client: an existing `openai.OpenAI` client to use instead of building one.
        timeout: seconds per request.
        max_retries: retries inside the client before a `TransientModelError` surfaces.
        token_ids: ask for vLLM token ids with log-probs; default: when a custom base URL is used.
    """

    def __init__(self, name: str, *, base_url: str | None = None, api_key: str | None = None,
                 native_tools: bool = True, client: Any = None, timeout: float = 120.0, max_retries: int = 2,
                 token_ids: bool | None = None) -> None:
        self.name = name
        self.native_tools = native_tools
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.base_url = base_url
        self.token_ids = token_ids if token_ids is not None else bool(base_url and "api.openai.com" not in base_url)
        if client is None:
            try:
                import openai
            except ImportError as exc:  # pragma: no cover - openai is a core dependency
                raise ModelConfigError("the openai backend needs the openai package: pip install openai") from exc
            key = api_key or os.environ.get("OPENAI_API_KEY")
            if not key:
                if base_url is None:
                    raise ModelConfigError(
                        f"openai:{name} needs an API key: set OPENAI_API_KEY (or pass api_key=...), or point "
                        "OPENAI_BASE_URL at a compatible server")
                key = "EMPTY"
            client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        self.client = client

    def generate(self, messages: Sequence[Message], tools: ToolSpecs = (),
                 settings: GenerationSettings | None = None) -> ModelResponse:
        """One reply from the OpenAI-compatible endpoint (see `Model.generate`)."""
        settings = settings or GenerationSettings()
        if not self.native_tools:
            return generate_with_choice(self._generate_once, messages, tools, settings)
        return self._generate_once(messages, tools, settings)

    def _generate_once(self, messages: Sequence[Message], tools: ToolSpecs,
                       settings: GenerationSettings) -> ModelResponse:
        with openai_errors(self.name):
            response = self._create(messages, tools, settings, stream=False)
        return priced(self.name, parse_completion(response, callable_tools(tools, settings),
                                                   native_tools=self.native_tools))

    def stream(self, messages: Sequence[Message], tools: ToolSpecs = (),
               settings: GenerationSettings | None = None) -> Iterator[StreamItem]:
        """The reply as text deltas, then the `ModelResponse` (see `Model.stream`)."""
        settings = settings or GenerationSettings()
        if not self.native_tools and tool_choice_kind(settings.tool_choice) != "auto":
            yield from _whole(self.generate(messages, tools, settings))
            return
        with openai_errors(self.name):
            chunks = self._create(messages, tools, settings, stream=True)
            for item in parse_stream(iter(chunks), callable_tools(tools, settings), native_tools=self.native_tools):
                yield priced(self.name, item) if isinstance(item, ModelResponse) else item

    def _create(self, messages: Sequence[Message], tools: ToolSpecs, settings: GenerationSettings,
                *, stream: bool) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": to_openai_messages(messages, tools, native_tools=self.native_tools),
            **request_options(settings, max_tokens_key="max_tokens" if self.base_url else "max_completion_tokens"),
        }
        if tools and self.native_tools:
            kwargs["tools"] = list(tools)
            choice = native_tool_choice(tools, settings.tool_choice)
            if choice is not None:
                kwargs["tool_choice"] = choice
        if stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        extras = settings.logprobs and self.token_ids
        if extras:
            kwargs["extra_body"] = {"return_token_ids": True, "return_tokens_as_token_ids": True}
        try:
            return self.client.chat.completions.create(**kwargs)
        except Exception as exc:
            import openai

            if extras and isinstance(exc, openai.BadRequestError):  # a server without vLLM's extras
                self.token_ids = False
                kwargs.pop("extra_body")
                return self.client.chat.completions.create(**kwargs)
            raise

    def __repr__(self) -> str:
        return f"OpenAIModel({self.name!r}, base_url={self.base_url!r})"

