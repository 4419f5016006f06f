"""OpenTelemetry spans for agent runs, following the OpenTelemetry GenAI semantic conventions.

Off by default. `Agent(tracing=True)` (or the environment variable `AGENTKIT_OTEL=1`) turns it on;
the agent then imports this module (and OpenTelemetry) and makes, per run:

- `invoke_agent` (the run; a paused run's resumption is a new `invoke_agent` span with the same
  `gen_ai.conversation.id`, the trajectory id),
- `chat {model}` for each model call (extensions' and planners' calls included), with
  `gen_ai.usage.input_tokens` / `output_tokens`,
- `execute_tool {name}` for each tool call that runs, with `gen_ai.tool.name` and
  `gen_ai.tool.call.id`; a failed call has status ERROR and `error.type` (the exception's class, or
  timeout / invalid_arguments / unknown_tool). Denied calls do not run and have no span; nor has the
  typed-output `final_result` call, which is checked in-process (see `trajectory.output_checks`).

Like any library, agentkit only uses the OpenTelemetry API: spans go to the application's global
tracer provider (or to the provider passed as `Agent(tracing=provider)`), and are sent nowhere unless
the application configured an exporter. `exporting_provider()` is what `agentkit chat --otel`
configures: the OTLP/HTTP exporter when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, else spans printed as JSON to stderr.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

try:
    from opentelemetry import trace
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("tracing needs OpenTelemetry: pip install 'agentkit[otel]'") from exc

from agentkit.messages import Message, ToolCall

if TYPE_CHECKING:
    from agentkit.models.protocol import GenerationSettings, Model, ModelResponse
    from agentkit.tools import ToolOutcome
    from agentkit.trajectory import Trajectory

_SCOPE = "agentkit"


def provider_name(model: Model) -> str | None:
    """`gen_ai.provider.name` for a model: its `provider` attribute, else guessed from its backend."""
    explicit = getattr(model, "provider", None)
    if isinstance(explicit, str):
        return explicit
    module = type(model).__module__
    if module.endswith("openai_compat"):
        return "openai"
    if module.endswith("litellm_model"):
        name = getattr(model, "name", "")
        return name.split("/", 1)[0] if "/" in name else "litellm"
    return None


class RunTracer:
    """Makes the spans of agent runs; one per agent."""

    def __init__(self, provider: Any = None) -> None:
        from agentkit.version import __version__

        provider = provider if provider is not None else trace.get_tracer_provider()
        self._tracer = provider.get_tracer(_SCOPE, __version__)

    def start_run(self, trajectory: Trajectory, model: Model, resumed: bool = False) -> RunSpans:
        """Open the `invoke_agent` span of a run (a child of whatever span is current)."""
        model_name = getattr(model, "name", type(model).__name__)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "agentkit",
            "gen_ai.request.model": model_name,
            "gen_ai.conversation.id": trajectory.id,
            "agentkit.planner": trajectory.planner,
            "agentkit.resumed": resumed,
        }
        provider = provider_name(model)
        if provider:
            attrs["gen_ai.provider.name"] = provider
        span = self._tracer.start_span("invoke_agent", kind=SpanKind.INTERNAL, attributes=attrs)
        return RunSpans(self._tracer, span, provider)


class RunSpans:
    """The spans of one run: model and tool calls are children of its `invoke_agent` span."""

    def __init__(self, tracer: Any, span: Span, provider: str | None) -> None:
        self._tracer = tracer
        self.span = span
        self._context = trace.set_span_in_context(span)
        self._provider = provider
        self.ended = False

    def start_model_call(self, model: Model, settings: GenerationSettings) -> Span:
        """Open a `chat {model}` span."""
        name = getattr(model, "name", type(model).__name__)
        attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": name}
        if self._provider:
            attrs["gen_ai.provider.name"] = self._provider
        for key, value in (("temperature", settings.temperature), ("top_p", settings.top_p),
                           ("max_tokens", settings.max_tokens), ("seed", settings.seed)):
            if value is not None:
                attrs[f"gen_ai.request.{key}"] = value
        span: Span = self._tracer.start_span(f"chat {name}", context=self._context, kind=SpanKind.CLIENT,
                                             attributes=attrs)
        return span

    @staticmethod
    def end_model_call(span: Span, response: ModelResponse | None, error: BaseException | None = None) -> None:
        """Close a `chat` span with the token usage, or with the error that ended the call."""
        if response is not None:
            span.set_attribute("gen_ai.usage.input_tokens", response.usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", response.usage.output_tokens)
            reason = "tool_calls" if response.message.tool_calls else "stop"
            span.set_attribute("gen_ai.response.finish_reasons", [reason])
        if error is not None:
            _fail(span, "cancelled" if isinstance(error, GeneratorExit) else type(error).__qualname__, str(error))
        span.end()

    def traced_call(self, call: Callable[..., ModelResponse]) -> Callable[..., ModelResponse]:
        """Wrap a `(model, messages, specs, settings) -> ModelResponse` function so each call is a span."""

        def wrapped(model: Model, messages: Sequence[Message], specs: Any, settings: GenerationSettings) -> Any:
            span = self.start_model_call(model, settings)
            try:
                response = call(model, messages, specs, settings)
            except BaseException as exc:
                self.end_model_call(span, None, exc)
                raise
            self.end_model_call(span, response)
            return response

        return wrapped

    def start_tool_call(self, call: ToolCall, description: str | None) -> tuple[Span, int]:
        """Open an `execute_tool {name}` span; returns it with its start time (ns)."""
        attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name,
                                 "gen_ai.tool.call.id": call.id, "gen_ai.tool.type": "function"}
        if description:
            attrs["gen_ai.tool.description"] = description
        start = time.time_ns()
        span = self._tracer.start_span(f"execute_tool {call.name}", context=self._context, kind=SpanKind.INTERNAL,
                                       attributes=attrs, start_time=start)
        return span, start

    @staticmethod
    def end_tool_call(span: Span, start_ns: int, outcome: ToolOutcome) -> None:
        """Close a tool span at its start + the call's duration; a failed call gets status ERROR."""
        if outcome.is_error:
            _fail(span, tool_error_type(outcome.content), outcome.content[:200])
        span.end(end_time=start_ns + int(outcome.duration_s * 1e9) if outcome.duration_s else None)

    def end(self, trajectory: Trajectory, error: BaseException | None = None) -> None:
        """Close the run span with the run's totals and how it stopped."""
        span = self.span
        span.set_attribute("gen_ai.usage.input_tokens", trajectory.usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", trajectory.usage.output_tokens)
        if trajectory.stop_reason:
            span.set_attribute("agentkit.stop_reason", trajectory.stop_reason)
        if error is not None:
            _fail(span, "cancelled" if isinstance(error, GeneratorExit) else type(error).__qualname__, str(error))
        span.end()
        self.ended = True


def tool_error_type(observation: str) -> str:
    """A low-cardinality `error.type` for a failed tool call, read from its observation."""
    if observation.startswith("Tool ") and " raised " in observation:
        name = observation.split(" raised ", 1)[1].split(":", 1)[0].strip()
        if name.isidentifier():
            return name
    if " timed out " in observation:
        return "timeout"
    if observation.startswith("Unknown tool"):
        return "unknown_tool"
    if observation.startswith("Invalid arguments"):
        return "invalid_arguments"
    if observation.startswith("The user denied"):
        return "denied"
    return "tool_error"


def _fail(span: Span, error_type: str, description: str) -> None:
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, description or None))


def exporting_provider(stream: TextIO | None = None) -> Any:
    """An SDK tracer provider for applications (what `agentkit chat --otel` uses): OTLP/HTTP when
    `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, else JSON spans to
    `stream` (stderr). Call `.shutdown()` at exit to flush."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME",
                                                                                      "agentkit")}))
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=stream or sys.stderr)))
    return provider
