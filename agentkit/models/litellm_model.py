"""LiteLLM backend: every provider LiteLLM knows (`litellm:anthropic/claude-sonnet-4`, `litellm:ollama/qwen3`, ...).

LiteLLM is imported lazily, and only after `LITELLM_LOCAL_MODEL_COST_MAP=True` is set, so that importing
it does not fetch the model cost map from the network. Responses use the OpenAI wire format, so the
conversion (tool calls read leniently, streamed tool-call deltas assembled, malformed replies turned into
replies the model can correct) is shared with the OpenAI backend. A response LiteLLM itself cannot read (it
reports those as server errors) is such a reply too, not an error out of the run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from agentkit.messages import Message
from agentkit.models.boundary import unreadable_reply
from agentkit.models.litellm_env import import_litellm
from agentkit.models.openai_compat import (
    callable_tools,
    generate_with_choice,
    native_tool_choice,
    priced,
    request_options,
    to_openai_messages,
)
from agentkit.models.openai_response import parse_completion
from agentkit.models.openai_stream import BrokenStream, parse_stream
from agentkit.models.protocol import (
    GenerationSettings,
    ModelConfigError,
    ModelResponse,
    StreamItem,
    TextDelta,
    ToolSpecs,
    TransientModelError,
)

_TRANSIENT_STATUS = {408, 409, 425, 429}
_UNREADABLE = ("Invalid response object", "Empty or invalid response")  # LiteLLM's words for a malformed answer
log = logging.getLogger(__name__)


class UnreadableResponse(RuntimeError):
    """The server answered, but LiteLLM could not turn the answer into a response (the model is asked again)."""


@contextmanager
def litellm_errors(model: str) -> Iterator[None]:
    """Map LiteLLM exceptions to TransientModelError (retry) or ModelConfigError (fix the setup); an answer LiteLLM
    could not read (a malformed tool call, no choices: it says so as a server error) is `UnreadableResponse`."""
    litellm = import_litellm()
    try:
        yield
    except (litellm.Timeout, litellm.RateLimitError, litellm.APIConnectionError, litellm.ServiceUnavailableError,
            litellm.InternalServerError, litellm.BadGatewayError) as exc:
        if any(sign in str(exc) for sign in _UNREADABLE):
            raise UnreadableResponse(f"{model}: the server answered, but LiteLLM could not read the answer") from exc
        raise TransientModelError(f"{model}: {type(exc).__name__}: {exc}") from exc
    except litellm.AuthenticationError as exc:
        raise ModelConfigError(f"{model}: the provider rejected the API key ({exc})") from exc
    except litellm.NotFoundError as exc:
        raise ModelConfigError(f"{model}: model not found ({exc}); check the provider/model name") from exc
    except (litellm.BadRequestError, litellm.UnsupportedParamsError, litellm.PermissionDeniedError,
            litellm.UnprocessableEntityError) as exc:
        raise ModelConfigError(f"{model}: request rejected: {exc}") from exc
    except litellm.APIError as exc:
        status = int(getattr(exc, "status_code", 500) or 500)
        if status >= 500 or status in _TRANSIENT_STATUS:
            raise TransientModelError(f"{model}: server error {status}: {exc}") from exc
        raise ModelConfigError(f"{model}: request rejected ({status}): {exc}") from exc


UNREADABLE_REPLY = "the model server's reply could not be read (a malformed answer): reply again"


def _readable(chunks: Any) -> Iterator[Any]:
    """LiteLLM's stream, with an error it raises because a chunk was malformed (not because the connection
    failed) turned into `BrokenStream`, which ends the stream where it broke."""
    iterator = iter(chunks)
    while True:
        try:
            chunk = next(iterator)
        except StopIteration:
            return
        except Exception as exc:
            if _malformed(exc):
                raise BrokenStream(str(exc)[:300]) from exc
            raise
        yield chunk


def _malformed(exc: BaseException) -> bool:
    """Whether `exc`, or an error it wraps, is a reading error (a value of the wrong shape), with no network error
    among them."""
    import httpx

    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(seen) < 10 and current not in seen:
        seen.append(current)
        current = getattr(current, "original_exception", None) or current.__cause__ or current.__context__
    if any(isinstance(e, httpx.TransportError | ConnectionError | TimeoutError) for e in seen):
        return False
    return any(isinstance(e, ValueError | TypeError | AttributeError | KeyError | IndexError) for e in seen)


class LiteLLMModel:
    """A chat model reached through LiteLLM.

    Args:
        name: LiteLLM's model string, "PROVIDER/MODEL" (e.g. "anthropic/claude-sonnet-4").
        api_base: a custom endpoint (e.g. an OpenAI-compatible server for "openai/NAME").
        api_key: the provider key; default: the provider's environment variable.
        native_tools: send tool specs natively; False renders them into the prompt (text protocol).
        timeout: seconds per request.
        num_retries: LiteLLM's own retries before a `TransientModelError` surfaces.
        **extra: passed to `litellm.completion` on every call (e.g. api_version, custom_llm_provider).
    """

    def __init__(self, name: str, *, api_base: str | None = None, api_key: str | None = None,
                 native_tools: bool = True, timeout: float = 120.0, num_retries: int = 0, **extra: Any) -> None:
        self.name = name
        self.api_base = api_base or extra.pop("base_url", None)
        self.native_tools = native_tools
        self.timeout = timeout
        self.num_retries = num_retries
        self.extra = extra
        litellm = import_litellm()
        if api_key is None:
            try:
                env = litellm.validate_environment(model=name, api_base=self.api_base)
            except Exception as exc:  # an unknown provider: report it now, not at the first call
                raise ModelConfigError(f"litellm does not know the model {name!r}: {exc}") from exc
            missing = env.get("missing_keys") or []
            if missing and self.api_base is None:
                raise ModelConfigError(f"litellm:{name} needs {', '.join(missing)} set in the environment "
                                       "(or pass api_key=...)")
            if missing:
                api_key = "EMPTY"  # a self-hosted endpoint usually takes any key
        self.api_key = api_key

    def generate(self, messages: Sequence[Message], tools: ToolSpecs = (),
                 settings: GenerationSettings | None = None) -> ModelResponse:
        """One reply through LiteLLM (see `Model.generate`); tools as text when the model has no native calling."""
        settings = settings or GenerationSettings()
        if not self.native_tools:
            return generate_with_choice(self._generate_once, messages, tools, settings)
        return self._generate_once(messages, tools, settings)

    def _generate_once(self, messages: Sequence[Message], tools: ToolSpecs,
                       settings: GenerationSettings) -> ModelResponse:
        try:
            with litellm_errors(self.name):
                response = self._completion(messages, tools, settings, stream=False)
        except UnreadableResponse as exc:
            log.warning("%s", exc.__cause__ or exc)
            return unreadable_reply(UNREADABLE_REPLY)
        return priced(self.name, parse_completion(response, callable_tools(tools, settings),
                                                   native_tools=self.native_tools))

    def stream(self, messages: Sequence[Message], tools: ToolSpecs = (),
               settings: GenerationSettings | None = None) -> Iterator[StreamItem]:
        """The reply as text deltas, then the `ModelResponse` (see `Model.stream`)."""
        settings = settings or GenerationSettings()
        if not self.native_tools and settings.tool_choice not in (None, "auto"):
            response = self.generate(messages, tools, settings)
            if response.message.content:
                yield TextDelta(response.message.content)
            yield response
            return
        try:
            with litellm_errors(self.name):
                chunks = self._completion(messages, tools, settings, stream=True)
                for item in parse_stream(_readable(chunks), callable_tools(tools, settings),
                                         native_tools=self.native_tools):
                    yield priced(self.name, item) if isinstance(item, ModelResponse) else item
        except UnreadableResponse as exc:
            log.warning("%s", exc.__cause__ or exc)
            yield unreadable_reply(UNREADABLE_REPLY)

    def _completion(self, messages: Sequence[Message], tools: ToolSpecs, settings: GenerationSettings,
                    *, stream: bool) -> Any:
        litellm = import_litellm()
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": to_openai_messages(messages, tools, native_tools=self.native_tools),
            "timeout": self.timeout,
            "num_retries": self.num_retries,
            **request_options(settings),
            **self.extra,
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        if tools and self.native_tools:
            kwargs["tools"] = list(tools)
            choice = native_tool_choice(tools, settings.tool_choice)
            if choice is not None:
                kwargs["tool_choice"] = choice
            # litellm (1.10x) routes any call with tools through its MCP proxy gateway, which imports
            # `mcp` and needs the 2.x API where agentkit[mcp] pins 1.x; agentkit runs MCP servers itself
            # (agentkit.tools.mcp) and hands litellm plain tools, so the gateway is always skipped.
            kwargs["_skip_mcp_handler"] = True
        if stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return litellm.completion(**kwargs)

    def __repr__(self) -> str:
        return f"LiteLLMModel({self.name!r})"
