"""The OpenAI-compatible backend against a small OpenAI-compatible HTTP server on 127.0.0.1.

The server is a stand-in for OpenAI/vLLM (stdlib http.server): it records each request and answers
with canned chat.completions JSON or SSE streams. The real `openai` client talks to it over HTTP.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentkit import Agent, tool
from agentkit.messages import Message, ToolCall
from agentkit.models import ModelConfigError, TransientModelError, resolve_model
from agentkit.models.openai_compat import OpenAIModel
from agentkit.models.protocol import GenerationSettings, ModelResponse, TextDelta


class ChatServer:
    """An OpenAI-compatible /v1/chat/completions endpoint answering from a queue of canned replies."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.replies: list[tuple[int, Any, bool]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                status, payload, sse = server.replies.pop(0) if server.replies else (500, {"error": "no reply"}, False)
                if sse:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for chunk in payload:
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def reply(self, payload: dict[str, Any], status: int = 200) -> None:
        self.replies.append((status, payload, False))

    def reply_error(self, status: int, message: str = "nope") -> None:
        self.replies.append((status, {"error": {"message": message, "type": "error", "code": status}}, False))

    def reply_stream(self, chunks: list[dict[str, Any]]) -> None:
        self.replies.append((200, chunks, True))

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def completion(content: str | None = "", tool_calls: list[dict[str, Any]] | None = None, *,
               finish: str = "stop", logprobs: list[tuple[str, float]] | None = None,
               **extra: Any) -> dict[str, Any]:
    """A chat.completions response body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
    if logprobs is not None:
        choice["logprobs"] = {"content": [{"token": t, "logprob": lp, "bytes": None, "top_logprobs": []}
                                          for t, lp in logprobs]}
    choice.update(extra.pop("choice_extra", {}))
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}, **extra}


def tool_call(name: str, arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, **extra}]}


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first number
        b: second number
    """
    return a + b


@pytest.fixture
def server() -> Iterator[ChatServer]:
    s = ChatServer()
    yield s
    s.close()


def model_for(server: ChatServer, **kw: Any) -> OpenAIModel:
    return OpenAIModel("served", base_url=server.url, api_key="sk-test", max_retries=0, timeout=10, **kw)


def test_plain_reply_usage_and_request_shape(server: ChatServer) -> None:
    server.reply(completion("Paris."))
    r = model_for(server).generate([Message.system("Be brief."), Message.user("Capital of France?")],
                                   settings=GenerationSettings(temperature=0.2, max_tokens=20, stop=("\n\n",), seed=3))
    assert r.message.content == "Paris." and not r.message.tool_calls
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.calls) == (11, 5, 1)
    assert r.tokens is None and r.finish_reason == "stop"
    req = server.requests[0]
    assert req["model"] == "served" and req["temperature"] == 0.2 and req["max_tokens"] == 20
    assert req["stop"] == ["\n\n"] and req["seed"] == 3 and "tools" not in req
    assert req["messages"] == [{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": "Capital of France?"}]
    assert server.headers[0]["Authorization"] == "Bearer sk-test"


def test_native_tool_calls_parse_leniently_and_round_trip(server: ChatServer) -> None:
    server.reply(completion(None, [tool_call("add", "{'a': 2, 'b': 40,}", "call_A")], finish="tool_calls"))
    model = model_for(server)
    r = model.generate([Message.user("2+40?")], [add.spec()])
    assert r.finish_reason == "tool_calls" and r.message.parse_error is None
    assert [(c.id, c.name, c.arguments) for c in r.message.tool_calls] == [("call_A", "add", {"a": 2, "b": 40})]
    assert server.requests[0]["tools"] == [add.spec()]
    server.reply(completion("42"))
    call = r.message.tool_calls[0]
    model.generate([Message.user("2+40?"), r.message, Message.tool(call, "42")], [add.spec()])
    sent = server.requests[1]["messages"]
    assert sent[1]["tool_calls"] == [{"id": "call_A", "type": "function",
                                      "function": {"name": "add", "arguments": '{"a": 2, "b": 40}'}}]
    assert sent[2] == {"role": "tool", "tool_call_id": "call_A", "content": "42"}


def test_unreadable_arguments_become_a_parse_error(server: ChatServer) -> None:
    server.reply(completion("", [tool_call("add", "a equals two")], finish="tool_calls"))
    r = model_for(server).generate([Message.user("2+40?")], [add.spec()])
    assert r.message.parse_error and "not a JSON object" in r.message.parse_error
    assert not r.message.tool_calls and "a equals two" in r.message.content


@pytest.mark.parametrize("text", ['```json\n{"name": "add", "arguments": {"a": 2, "b": 40}}\n```',
                                  '{"name": "add", "arguments": {"a": 2, "b": 40}}',
                                  '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 40}}\n</tool_call>'])
def test_a_call_written_as_text_is_read_when_the_server_parsed_none(server: ChatServer, text: str) -> None:
    """vLLM's hermes parser misses the fenced and bare JSON small models write: the reply is still a call."""
    server.reply_stream([chunk({"role": "assistant", "content": text[:9]}), chunk({"content": text[9:]}),
                         chunk({}, finish="stop")])
    server.reply(completion(text))
    model = model_for(server)
    streamed = list(model.stream([Message.user("2+40?")], [add.spec()]))[-1]
    assert isinstance(streamed, ModelResponse)
    for reply in (model.generate([Message.user("2+40?")], [add.spec()]).message, streamed.message):
        assert [(c.name, c.arguments) for c in reply.tool_calls] == [("add", {"a": 2, "b": 40})]
        assert reply.content == "" and reply.parse_error is None


@pytest.mark.parametrize(("text", "tools"), [('{"name": "add", "arguments": {"a": 2, "b": 40}}', False),  # none offered
                                             ('Use {"a": 2, "b": 40} with add.', True),  # prose, not a call
                                             ('{"a": 2, "b": 40}', True)])  # JSON, not shaped as a call
def test_text_that_is_not_a_call_stays_the_answer(server: ChatServer, text: str, tools: bool) -> None:
    server.reply(completion(text))
    reply = model_for(server).generate([Message.user("2+40?")], [add.spec()] if tools else []).message
    assert reply.content == text and not reply.tool_calls and reply.parse_error is None


def test_a_text_call_to_a_tool_that_does_not_exist_is_a_parse_error_the_agent_returns(server: ChatServer) -> None:
    """Small models invent tools ("sum_invoices_totals"): as with a local model, the run goes on with the
    error in front of the model instead of ending with the call as its answer."""
    invented = '```json\n{"name": "sum_numbers", "arguments": {"a": 2, "b": 40}}\n```'
    server.reply(completion(invented))
    server.reply(completion('{"name": "add", "arguments": {"a": 2, "b": 40}}'))
    server.reply(completion("42"))
    result = Agent(model_for(server), tools=[add]).run("2+40?")
    assert result.answer == "42" and result.stop_reason == "final"
    first = result.trajectory.messages[2]
    assert first.parse_error and "sum_numbers" in first.parse_error and not first.tool_calls
    assert "sum_numbers" in server.requests[1]["messages"][-1]["content"]  # the model was told


def test_stream_text_and_tool_call_deltas_are_assembled(server: ChatServer) -> None:
    server.reply_stream([
        chunk({"role": "assistant", "content": "Let me "}),
        chunk({"content": "add."}),
        chunk({"tool_calls": [{"index": 0, "id": "call_S", "type": "function",
                               "function": {"name": "add", "arguments": '{"a": '}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '2, "b": 40}'}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_T", "type": "function",
                               "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}}]}),
        chunk({}, finish="tool_calls"),
        {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
         "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}},
    ])
    items = list(model_for(server).stream([Message.user("2+40?")], [add.spec()]))
    assert [i.text for i in items if isinstance(i, TextDelta)] == ["Let me ", "add."]
    final = items[-1]
    assert isinstance(final, ModelResponse) and final.finish_reason == "tool_calls"
    assert final.message.content == "Let me add."
    assert [(c.id, c.arguments) for c in final.message.tool_calls] == [("call_S", {"a": 2, "b": 40}),
                                                                       ("call_T", {"a": 1, "b": 1})]
    assert (final.usage.input_tokens, final.usage.output_tokens) == (30, 12)
    assert server.requests[0]["stream"] is True and server.requests[0]["stream_options"] == {"include_usage": True}


def test_vllm_token_ids_and_logprobs_fill_the_token_record(server: ChatServer) -> None:
    server.reply(completion("Hi!", logprobs=[("token_id:17", -0.5), ("token_id:4", -0.25)],
                            prompt_token_ids=[1, 2, 3]))
    r = model_for(server).generate([Message.user("hello")], settings=GenerationSettings(logprobs=True))
    assert r.tokens is not None
    assert (r.tokens.prompt_ids, r.tokens.completion_ids, r.tokens.logprobs) == ([1, 2, 3], [17, 4], [-0.5, -0.25])
    assert r.tokens.completion_text == "Hi!"
    req = server.requests[0]
    assert req["logprobs"] is True and req["return_token_ids"] is True and req["return_tokens_as_token_ids"] is True


def test_streamed_vllm_token_ids(server: ChatServer) -> None:
    lp = {"content": [{"token": "token_id:9", "logprob": -1.0, "bytes": None, "top_logprobs": []}]}
    server.reply_stream([
        {**chunk({"role": "assistant", "content": ""}), "prompt_token_ids": [5, 6]},
        chunk({"content": "ok"}, logprobs=lp, token_ids=[9]),
        chunk({}, finish="stop"),
    ])
    final = list(model_for(server).stream([Message.user("x")], settings=GenerationSettings(logprobs=True)))[-1]
    assert isinstance(final, ModelResponse) and final.tokens is not None
    assert (final.tokens.prompt_ids, final.tokens.completion_ids, final.tokens.logprobs) == ([5, 6], [9], [-1.0])


def test_logprobs_without_token_ids_give_no_record_and_server_without_extras_is_retried(server: ChatServer) -> None:
    server.reply_error(400, "unknown field return_token_ids")
    server.reply(completion("Hi", logprobs=[("Hi", -0.1)]))
    model = model_for(server)
    r = model.generate([Message.user("x")], settings=GenerationSettings(logprobs=True))
    assert r.message.content == "Hi" and r.tokens is None
    assert "return_token_ids" in server.requests[0] and "return_token_ids" not in server.requests[1]
    assert model.token_ids is False


@pytest.mark.parametrize(("status", "error", "match"), [
    (429, TransientModelError, "RateLimitError"),
    (503, TransientModelError, "InternalServerError"),
    (401, ModelConfigError, "OPENAI_API_KEY"),
    (404, ModelConfigError, "not found"),
    (400, ModelConfigError, "rejected"),
])
def test_errors_are_mapped(server: ChatServer, status: int, error: type[Exception], match: str) -> None:
    server.reply_error(status)
    with pytest.raises(error, match=match):
        model_for(server).generate([Message.user("x")])


def test_stream_errors_are_mapped(server: ChatServer) -> None:
    server.reply_error(502)
    with pytest.raises(TransientModelError):
        list(model_for(server).stream([Message.user("x")]))


def test_connection_refused_is_transient() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout=5)
    with pytest.raises(TransientModelError, match="APIConnectionError"):
        model.generate([Message.user("x")])


def test_missing_api_key_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o-mini")


def test_text_tool_protocol_when_native_tools_are_off(server: ChatServer) -> None:
    server.reply(completion('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'))
    model = model_for(server, native_tools=False)
    r = model.generate([Message.system("Sys."), Message.user("1+2?")], [add.spec()])
    assert [(c.name, c.arguments) for c in r.message.tool_calls] == [("add", {"a": 1, "b": 2})]
    req = server.requests[0]
    assert "tools" not in req and "add: Add two integers." in req["messages"][0]["content"]
    server.reply(completion("3"))
    call = r.message.tool_calls[0]
    model.generate([Message.user("1+2?"), r.message, Message.tool(call, "3")], [add.spec()])
    sent = server.requests[1]["messages"]
    assert sent[2]["content"].startswith("<tool_call>") and sent[3] == {"role": "user",
                                                                         "content": "Tool result (add):\n3"}


def test_agent_runs_through_a_vllm_url(server: ChatServer) -> None:
    server.reply(completion(None, [tool_call("add", '{"a": 2, "b": 40}')], finish="tool_calls"))
    server.reply(completion("The sum is 42."))
    agent = Agent(f"vllm:{server.url}/served", tools=[add], max_retries=0)
    result = agent.run("What is 2 + 40?")
    assert result.answer == "The sum is 42."
    assert server.requests[0]["model"] == "served"
    tool_msg = server.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["content"] == "42"
    assert isinstance(result.trajectory.messages[2].tool_calls[0], ToolCall)
