"""OpenTelemetry spans of agent runs, checked with the SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentkit import Agent, tool
from agentkit.loop.extensions import RunContext
from agentkit.messages import Message
from agentkit.runs.approval import approve
from agentkit.testing import ScriptedModel, call, calls


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def boom() -> str:
    """Always fails."""
    raise RuntimeError("kaput")


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def by_name(exporter: InMemorySpanExporter) -> dict[str, list]:
    out: dict[str, list] = {}
    for span in exporter.get_finished_spans():
        out.setdefault(span.name, []).append(span)
    return out


def test_run_model_and_tool_spans_with_genai_attributes(spans) -> None:
    provider, exporter = spans
    model = ScriptedModel([calls(("add", {"a": 2, "b": 40}), ("boom", {})), "42"], name="tiny-test")
    result = Agent(model, tools=[add, boom], tracing=provider).run("2 + 40?")
    assert result.answer == "42"
    found = by_name(exporter)
    assert sorted(found) == ["chat tiny-test", "execute_tool add", "execute_tool boom", "invoke_agent"]
    [run] = found["invoke_agent"]
    chats = found["chat tiny-test"]
    [ok], [failed] = found["execute_tool add"], found["execute_tool boom"]
    assert len(chats) == 2
    # Structure: one trace, the run is the root, model and tool calls its children.
    assert run.parent is None
    for child in [*chats, ok, failed]:
        assert child.parent.span_id == run.context.span_id and child.context.trace_id == run.context.trace_id
    # Attributes of the GenAI semantic conventions.
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.conversation.id"] == result.trajectory.id
    assert run.attributes["gen_ai.usage.input_tokens"] == result.usage.input_tokens > 0
    assert chats[0].kind is SpanKind.CLIENT
    assert chats[0].attributes["gen_ai.operation.name"] == "chat"
    assert chats[0].attributes["gen_ai.request.model"] == "tiny-test"
    assert chats[0].attributes["gen_ai.usage.input_tokens"] == result.trajectory.turns[0].usage.input_tokens
    assert chats[1].attributes["gen_ai.usage.output_tokens"] == 1
    assert ok.attributes["gen_ai.operation.name"] == "execute_tool"
    assert ok.attributes["gen_ai.tool.name"] == "add"
    assert ok.attributes["gen_ai.tool.call.id"] == result.trajectory.messages[2].tool_calls[0].id
    assert ok.status.status_code is StatusCode.UNSET and "error.type" not in ok.attributes
    # The failing tool: error status and type.
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "RuntimeError"
    assert run.status.status_code is StatusCode.UNSET
    # Spans are timed in order: tools after the first model call, the run around everything.
    assert chats[0].end_time <= ok.start_time and ok.end_time <= chats[1].start_time
    assert run.start_time <= chats[0].start_time and chats[1].end_time <= run.end_time


def test_a_failing_model_call_marks_the_model_and_run_spans(spans) -> None:
    provider, exporter = spans
    agent = Agent(ScriptedModel([call("add", a=1, b=1)]), tools=[add], tracing=provider)
    with pytest.raises(RuntimeError):
        agent.run("t")  # the script has no second reply
    found = by_name(exporter)
    [run] = found["invoke_agent"]
    failed_chat = found["chat scripted"][-1]
    assert failed_chat.status.status_code is StatusCode.ERROR
    assert failed_chat.attributes["error.type"] == "ScriptExhausted"
    assert run.status.status_code is StatusCode.ERROR and run.attributes["error.type"] == "ScriptExhausted"


def test_streaming_extension_calls_and_a_paused_run(spans) -> None:
    provider, exporter = spans

    class Queries:
        name = "queries"

        def before_run(self, run: RunContext) -> None:
            run.call_model([Message.user("write a query")], phase="query")

        def after_run(self, run: RunContext) -> None:
            pass

    @tool(requires_approval=True)
    def send(text: str) -> str:
        """Send a message."""
        return f"sent {text}"

    model = ScriptedModel(["a query", call("send", text="hi"), "sent it"])
    agent = Agent(model, tools=[send], extensions=[Queries()], tracing=provider)
    paused = [e for e in agent.stream("t")][-1].result
    assert paused.stop_reason == "paused"
    runs = by_name(exporter)["invoke_agent"]
    assert [r.attributes["agentkit.stop_reason"] for r in runs] == ["paused"]
    assert len(by_name(exporter)["chat scripted"]) == 2  # the extension's call is traced too
    done = agent.resume(paused.state, {paused.pending[0].id: approve()})
    first, second = by_name(exporter)["invoke_agent"]
    assert second.attributes["agentkit.resumed"] is True and second.attributes["agentkit.stop_reason"] == "final"
    conversation = second.attributes["gen_ai.conversation.id"]
    assert conversation == first.attributes["gen_ai.conversation.id"] == done.trajectory.id
    [sent] = by_name(exporter)["execute_tool send"]
    assert sent.parent.span_id == second.context.span_id


def test_off_by_default_and_opentelemetry_not_imported() -> None:
    code = ("import sys; from agentkit import Agent; from agentkit.testing import ScriptedModel;"
            "r = Agent(ScriptedModel(['hi'])).run('t'); assert r.answer == 'hi';"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry') or m == 'agentkit.tracing'))")
    env_off = {k: v for k, v in __import__("os").environ.items() if k != "AGENTKIT_OTEL"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env_off, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    # AGENTKIT_OTEL=1 turns it on (spans go to the global provider: none configured here, so nowhere).
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env_off, "AGENTKIT_OTEL": "1"}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "'agentkit.tracing'" in out.stdout and "'opentelemetry.trace'" in out.stdout


def test_exporting_provider_prints_spans_without_an_endpoint(monkeypatch) -> None:
    import io
    import json

    from agentkit.tracing import exporting_provider

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    stream = io.StringIO()
    provider = exporting_provider(stream)
    Agent(ScriptedModel(["hi"]), tracing=provider).run("t")
    provider.shutdown()
    text = stream.getvalue()
    assert '"name": "invoke_agent"' in text and '"name": "chat scripted"' in text
    first = json.loads(text[: text.index("\n}") + 2])
    assert first["resource"]["attributes"]["service.name"] == "agentkit"


class OTLPCollector:
    """A real HTTP endpoint that takes what an OTLP/HTTP exporter posts (protobuf bodies)."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.posts: list[tuple[str, bytes]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.posts.append((self.path, body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_chat_otel_exports_over_otlp_when_an_endpoint_is_set_else_to_stderr(tmp_path) -> None:
    import json
    import os

    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"tool": "calculator", "arguments": {"expression": "6 * 7"}}, "42"]))
    argv = [sys.executable, "-m", "agentkit.cli.main", "chat", "--model", f"script:{script}", "--otel"]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AGENTKIT_OTEL"))}
    collector = OTLPCollector()
    try:
        proc = subprocess.run(argv, input="6*7?\n", capture_output=True, text=True, timeout=120,
                              env={**base_env, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url})
    finally:
        collector.close()
    assert proc.returncode == 0, proc.stderr
    assert "42" in proc.stdout and "invoke_agent" not in proc.stderr
    paths = {path for path, _ in collector.posts}
    body = b"".join(b for _, b in collector.posts)
    assert paths == {"/v1/traces"}
    for name in (b"invoke_agent", b"chat script:", b"execute_tool calculator", b"gen_ai.tool.call.id"):
        assert name in body
    # No endpoint: the spans are printed to stderr as JSON; stdout stays the chat's.
    proc = subprocess.run(argv, input="6*7?\n", capture_output=True, text=True, timeout=120, env=base_env)
    assert proc.returncode == 0, proc.stderr
    assert '"name": "execute_tool calculator"' in proc.stderr and "execute_tool" not in proc.stdout
