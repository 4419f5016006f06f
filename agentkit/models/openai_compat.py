"""OpenAI-compatible chat backend: OpenAI itself, vLLM, and any server speaking /v1/chat/completions.

Native tool calling by default (tool specs in the request, `tool_calls` back); `native_tools=False`
uses the text protocol of `agentkit.tools.text_calls` for servers without it. With `settings.logprobs`,
log-probs are requested; a vLLM server is also asked for token ids (`return_token_ids`,
`return_tokens_as_token_ids`) so the response carries a full `TokenRecord` for training (vLLM reports
raw log-probs, i.e. at temperature 1).

The request conversion here is shared with the LiteLLM backend (same wire format), and so is the reading of
replies: `agentkit.models.openai_response` for a whole one, `agentkit.models.openai_stream` for a stream.
Neither raises on a reply's shape (what the model cannot use becomes a `parse_error` it is shown); a body
that is not JSON at all is a `TransientModelError` (retried, as a server error).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from agentkit.messages import Message
from agentkit.models.openai_response import parse_completion
from agentkit.models.openai_stream import _whole, parse_stream
from agentkit.models.protocol import (
    GenerationSettings,
    ModelConfigError,
    ModelResponse,
    StreamItem,
    ToolSpecs,
    TransientModelError,
)
from agentkit.tools.text_calls import (
    choice_reminder,
    choice_satisfied,
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


def priced(model: str, response: ModelResponse) -> ModelResponse:
    """`response` with the call's cost in its usage when the model's price is known (agentkit.models.cost)."""
    from agentkit.models.cost import with_cost

    response.usage = with_cost(model, response.usage)
    return response


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

