"""OpenAI-compatible chat backend: OpenAI itself, vLLM, and any server speaking /v1/chat/completions.

Native tool calling by default (tool specs in the request, `tool_calls` back); `native_tools=False`
uses the text protocol of `agentkit.toolcall_text` for servers without it. With `settings.logprobs`,
log-probs are requested; a vLLM server is also asked for token ids (`return_token_ids`,
`return_tokens_as_token_ids`) so the response carries a full `TokenRecord` for training (vLLM reports
raw log-probs, i.e. at temperature 1).

The request/response conversion here is shared with the LiteLLM backend (same wire format).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from agentkit.jsontext import lenient_json
from agentkit.messages import Message, ToolCall, Usage
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
from agentkit.toolcall_text import (
    choice_reminder,
    choice_satisfied,
    parse_tool_calls,
    tool_choice_kind,
    tools_for_choice,
)

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
def _get(obj: Any, key: str, default: Any = None) -> Any:
    """Field of an SDK object or a dict, including extra fields servers add (vLLM token ids)."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(key, default)
    value = getattr(obj, key, None)
    if value is None:
        extra = getattr(obj, "model_extra", None) or {}
        value = extra.get(key)
    return default if value is None else value


def assistant_message(content: str, raw_calls: Sequence[tuple[str, str, str]], tools: ToolSpecs,
                      *, native_tools: bool = True) -> Message:
    """Build the assistant message from text and raw (id, name, arguments-JSON) tool calls.

    Arguments are read leniently; a call whose arguments are unreadable makes the whole message a
    `parse_error` (its calls shown as text) so the model can correct itself. A reply without native calls
    (the text protocol, or a server whose parser missed a call written as a ```json fence, bare JSON or
    `<tool_call>` tags, as small open models served by vLLM write them) is read by the text protocol's
    parser: its calls, or a `parse_error` when a call names no offered tool or cannot be read."""
    if not native_tools or not raw_calls:
        if not tools:
            return Message.assistant(content)
        parsed = parse_tool_calls(content, {_get(s.get("function", s), "name") for s in tools})
        if parsed.error:
            return Message(role="assistant", content=content, parse_error=parsed.error)
        return Message.assistant(parsed.content if parsed.calls else content, parsed.calls)
    calls: list[ToolCall] = []
    errors: list[str] = []
    for call_id, name, arguments in raw_calls:
        args = lenient_json(arguments) if arguments and arguments.strip() else {}
        if not name:
            errors.append("a tool call without a tool name")
        elif not isinstance(args, dict):
            errors.append(f"the arguments of {name} are not a JSON object: {arguments[:120]!r}")
        else:
            calls.append(ToolCall(id=call_id, name=name, arguments=args) if call_id
                         else ToolCall(name=name, arguments=args))
    if errors:
        shown = "\n".join(f"{name}({arguments})" for _, name, arguments in raw_calls)
        text = f"{content}\n{shown}".strip()
        return Message(role="assistant", content=text,
                       parse_error="; ".join(errors) + ". Call the tool again with JSON object arguments.")
    return Message.assistant(content, calls)


def _token_id(token: str) -> int | None:
    if token.startswith("token_id:"):
        try:
            return int(token[len("token_id:"):])
        except ValueError:
            return None
    return None


def token_record(response: Any, choice: Any, logprobs: list[float], completion_text: str,
                 completion_ids: list[int] | None, token_strings: list[str]) -> TokenRecord | None:
    """A `TokenRecord` when the server gave both prompt and completion token ids (vLLM), else None."""
    prompt_ids = _get(choice, "prompt_token_ids") or _get(response, "prompt_token_ids")
    if completion_ids is None:
        ids = [_token_id(t) for t in token_strings]
        completion_ids = [i for i in ids if i is not None] if ids and all(i is not None for i in ids) else None
    if not prompt_ids or completion_ids is None:
        return None
    if logprobs and len(logprobs) != len(completion_ids):
        return None
    return TokenRecord(prompt_ids=list(prompt_ids), completion_ids=list(completion_ids), logprobs=list(logprobs),
                       temperature=1.0, completion_text=completion_text)


def _logprob_items(choice: Any) -> list[Any]:
    lp = _get(choice, "logprobs")
    return list(_get(lp, "content") or []) if lp is not None else []


def parse_completion(response: Any, tools: ToolSpecs, *, native_tools: bool = True) -> ModelResponse:
    """A chat.completions response (SDK object or dict) as a `ModelResponse`."""
    choices = _get(response, "choices") or []
    if not choices:
        raise TransientModelError("the model server returned no choices")
    choice = choices[0]
    msg = _get(choice, "message")
    content = _get(msg, "content") or ""
    raw_calls = [(_get(c, "id") or "", _get(_get(c, "function"), "name") or "",
                  _get(_get(c, "function"), "arguments") or "") for c in (_get(msg, "tool_calls") or [])]
    items = _logprob_items(choice)
    tokens = token_record(response, choice, [float(_get(i, "logprob", 0.0)) for i in items], content,
                          _get(choice, "token_ids"), [str(_get(i, "token", "")) for i in items])
    usage_obj = _get(response, "usage")
    usage = Usage(input_tokens=int(_get(usage_obj, "prompt_tokens", 0)),
                  output_tokens=int(_get(usage_obj, "completion_tokens", 0)), calls=1)
    return ModelResponse(message=assistant_message(content, raw_calls, tools, native_tools=native_tools),
                         usage=usage, tokens=tokens, finish_reason=_get(choice, "finish_reason") or "stop",
                         raw=response)


def priced(model: str, response: ModelResponse) -> ModelResponse:
    """`response` with the call's cost in its usage when the model's price is known (agentkit.cost)."""
    from agentkit.cost import with_cost

    response.usage = with_cost(model, response.usage)
    return response


def parse_stream(chunks: Iterator[Any], tools: ToolSpecs, *, native_tools: bool = True) -> Iterator[StreamItem]:
    """Turn streamed chunks into `TextDelta`s and one final `ModelResponse` (tool-call deltas assembled)."""
    content: list[str] = []
    calls: dict[int, list[str]] = {}
    logprobs: list[float] = []
    token_strings: list[str] = []
    token_ids: list[int] = []
    saw_token_ids = False
    first: Any = None
    prompt_holder: Any = None
    usage = Usage(calls=1)
    finish = "stop"
    for chunk in chunks:
        first = first if first is not None else chunk
        if _get(chunk, "prompt_token_ids") is not None:
            prompt_holder = chunk
        if _get(chunk, "usage") is not None:
            u = _get(chunk, "usage")
            usage = Usage(input_tokens=int(_get(u, "prompt_tokens", 0)),
                          output_tokens=int(_get(u, "completion_tokens", 0)), calls=1)
        for choice in _get(chunk, "choices") or []:
            if _get(choice, "prompt_token_ids") is not None:
                prompt_holder = choice
            delta = _get(choice, "delta")
            text = _get(delta, "content")
            if text:
                content.append(text)
                yield TextDelta(text)
            for tc in _get(delta, "tool_calls") or []:
                slot = calls.setdefault(int(_get(tc, "index", len(calls))), ["", "", ""])
                fn = _get(tc, "function")
                slot[0] = slot[0] or (_get(tc, "id") or "")
                slot[1] += _get(fn, "name") or ""
                slot[2] += _get(fn, "arguments") or ""
            for item in _logprob_items(choice):
                logprobs.append(float(_get(item, "logprob", 0.0)))
                token_strings.append(str(_get(item, "token", "")))
            if _get(choice, "token_ids") is not None:
                saw_token_ids = True
                token_ids.extend(int(t) for t in _get(choice, "token_ids"))
            if _get(choice, "finish_reason"):
                finish = _get(choice, "finish_reason")
    text = "".join(content)
    raw_calls = [tuple(calls[i]) for i in sorted(calls)]
    holder = prompt_holder if prompt_holder is not None else first
    tokens = token_record(holder, holder, logprobs, text, token_ids if saw_token_ids else None, token_strings)
    message = assistant_message(text, raw_calls, tools, native_tools=native_tools)  # type: ignore[arg-type]
    yield ModelResponse(message=message, usage=usage, tokens=tokens, finish_reason=finish)


def _whole(response: ModelResponse) -> Iterator[StreamItem]:
    """A finished response as a stream: its text at once, then the response."""
    if response.message.content:
        yield TextDelta(response.message.content)
    yield response


# -- errors -------------------------------------------------------------------------------------
@contextmanager
def openai_errors(model: str) -> Iterator[None]:
    """Map `openai` exceptions to TransientModelError (retry) or ModelConfigError (fix the setup)."""
    import openai

    try:
        yield
    except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
            openai.InternalServerError) as exc:
        raise TransientModelError(f"{model}: {type(exc).__name__}: {exc}") from exc
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

