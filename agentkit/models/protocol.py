"""The `Model` protocol every backend implements, and what a model call returns."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentkit.messages import Message, Usage, clean_text

ToolSpecs = Sequence[dict[str, Any]]
"""OpenAI-style function specs, as `Tool.spec()` returns them."""


@dataclass(frozen=True)
class GenerationSettings:
    """Sampling settings for one model call. `None` leaves the backend's default."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    logprobs: bool = False
    tool_choice: str | None = None
    """"auto" (the model decides; also None), "required" (some tool), "none" (no tool), or a tool's name."""


@dataclass
class TokenRecord:
    """The exact tokens of one model call, for training.

    `prompt_ids` is the whole rendered prompt as the model saw it; `completion_ids` the sampled
    tokens and `logprobs` their log-probabilities under the sampling distribution (logits divided
    by `temperature`). `prompt_text` and `completion_text` are the decoded strings.
    """

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    temperature: float = 1.0
    prompt_text: str = ""
    completion_text: str = ""


@dataclass
class ModelResponse:
    """The result of one model call: the assistant message, usage and (when known) tokens."""

    message: Message
    usage: Usage = field(default_factory=Usage)
    tokens: TokenRecord | None = None
    finish_reason: str = "stop"
    raw: Any = None


@dataclass(frozen=True)
class TextDelta:
    """A piece of generated text, streamed as it is produced (lone surrogates replaced, see `clean_text`)."""

    text: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", clean_text(self.text))


StreamItem = TextDelta | ModelResponse


@runtime_checkable
class Model(Protocol):
    """A chat model: messages and tool specs in, one assistant message out.

    `stream` yields `TextDelta`s as text is generated and ends with exactly one `ModelResponse`.
    Tool specs are JSON-schema function descriptions (`Tool.spec()`); a backend without native tool
    calling renders them into the prompt and parses calls back (see `agentkit.tools.text_calls`).
    """

    name: str

    def generate(
        self, messages: Sequence[Message], tools: ToolSpecs = (), settings: GenerationSettings | None = None
    ) -> ModelResponse:
        """One assistant message for `messages`, offered `tools` (with tokens and log-probs when the
        backend has them)."""
        ...

    def stream(
        self, messages: Sequence[Message], tools: ToolSpecs = (), settings: GenerationSettings | None = None
    ) -> Iterator[StreamItem]:
        """As `generate`, yielding `TextDelta`s as text is produced and the `ModelResponse` last."""
        ...


def collect(stream: Iterator[StreamItem]) -> ModelResponse:
    """Drain a stream and return its final `ModelResponse`."""
    final: ModelResponse | None = None
    for item in stream:
        if isinstance(item, ModelResponse):
            final = item
    if final is None:
        raise RuntimeError("model stream ended without a ModelResponse")
    return final


class ModelConfigError(ValueError):
    """The model is misconfigured (unknown name, missing API key, missing extra): fix and retry."""


class TransientModelError(RuntimeError):
    """A model call failed in a way worth retrying (rate limit, time-out, server error)."""
