"""Malformed replies from a real OpenAI-compatible HTTP server on 127.0.0.1, through the real `openai` client
(and LiteLLM, and vLLM's token path): each becomes a repaired call or an observation the model can correct,
and the run goes on or ends with a stop reason; nothing escapes `Agent.run` or `Agent.stream`."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentkit import Agent, tool
from agentkit.messages import Message
from agentkit.models.boundary import checked_response
from agentkit.models.openai_compat import OpenAIModel
from agentkit.models.openai_response import EMPTY_REPLY, NO_CHOICES
from agentkit.models.protocol import GenerationSettings, ModelResponse
from agentkit.models.vllm_model import VLLMModel
from agentkit.tools.text_calls import MAX_REPLY_CHARS
from agentkit.trajectory import Trajectory

Body = bytes | dict[str, Any] | list[Any]


class RawServer:
    """/v1/chat/completions, /v1/completions and /tokenize answering from a queue of raw bodies: a dict or list
    is sent as JSON, bytes as they are, and ("sse", [chunks]) as an event stream. When the queue is empty the
    answer is a plain "done"."""

    def __init__(self) -> None:
        self.replies: list[tuple[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.tokenize: list[Any] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path == "/tokenize":
                    answer = server.tokenize.pop(0) if server.tokenize else {"tokens": [1, 2, 3],
                                                                               "max_model_len": 4096}
                    self._send(answer)
                    return
                server.requests.append(body)
                kind, payload = server.replies.pop(0) if server.replies else ("json", done_reply())
                if kind == "sse":
                    data = b"".join(b"data: " + (c if isinstance(c, bytes) else json.dumps(c).encode()) + b"\n\n"
                                    for c in payload) + b"data: [DONE]\n\n"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self._send(payload)

            def _send(self, payload: Any) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(200)
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

    def reply(self, body: Body) -> None:
        self.replies.append(("json", body))

    def stream(self, chunks: list[Any]) -> None:
        self.replies.append(("sse", chunks))

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def done_reply(text: str = "done") -> dict[str, Any]:
    return completion({"role": "assistant", "content": text})


def completion(message: Any, **extra: Any) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}, **extra}


def calls_reply(*calls: dict[str, Any], content: Any = None) -> dict[str, Any]:
    return completion({"role": "assistant", "content": content, "tool_calls": list(calls)})


def call(name: Any = "add", arguments: Any = '{"a": 2, "b": 3}', call_id: Any = "c1") -> dict[str, Any]:
    fn: dict[str, Any] = {}
    if name is not ...:
        fn["name"] = name
    if arguments is not ...:
        fn["arguments"] = arguments
    out: dict[str, Any] = {"type": "function", "function": fn}
    if call_id is not ...:
        out["id"] = call_id
    return out


def chunk(delta: Any, finish: Any = None, **extra: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first number
        b: second number
    """
    return a + b


@pytest.fixture
def server() -> Iterator[RawServer]:
    s = RawServer()
    yield s
    s.close()


def openai_model(server: RawServer, **options: Any) -> OpenAIModel:
    return OpenAIModel("m", base_url=server.url, api_key="k", max_retries=0, timeout=20, **options)


def run(model: Any, *, streaming: bool = False) -> Any:
    agent = Agent(model, tools=[add], max_steps=4, max_retries=0)
    try:
        if not streaming:
            return agent.run("add 2 and 3")
        return list(agent.stream("add 2 and 3"))[-1].result
    finally:
        agent.close()


def assert_round_trip(trajectory: Trajectory) -> None:
    back = Trajectory.model_validate_json(trajectory.model_dump_json())
    assert back.model_dump() == trajectory.model_dump()


# -- each malformed reply, through the openai client and the loop ---------------------------------------------------
MALFORMED: dict[str, Body] = {
    "name is None": calls_reply(call(name=None)),
    "no name at all": calls_reply(call(name=...)),
    "name is a number": calls_reply(call(name=7)),
    "arguments are an object": calls_reply(call(arguments={"a": 2, "b": 3})),
    "arguments are a number": calls_reply(call(arguments=5)),
    "arguments are a list": calls_reply(call(arguments='[1, 2]')),
    "arguments are not JSON": calls_reply(call(arguments="a equals two")),
    "arguments nest 100,000 deep": calls_reply(call(arguments="[" * 100_000 + "]" * 100_000)),
    "no id": calls_reply(call(call_id=...)),
    "id is a number": calls_reply(call(call_id=12)),
    "duplicate ids": calls_reply(call(call_id="same"), call(arguments='{"a": 1, "b": 1}', call_id="same")),
    "tool_calls is a string": completion({"role": "assistant", "content": None, "tool_calls": "add"}),
    "content null, no calls": completion({"role": "assistant", "content": None}),
    "content is a list of parts": completion({"role": "assistant", "content": [{"type": "text", "text": "fi"},
                                                                               {"type": "text", "text": "ve"}]}),
    "content is a number": completion({"role": "assistant", "content": 5}),
    "no message": {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                   "choices": [{"index": 0, "finish_reason": "stop"}]},
    "empty choices": {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []},
    "choices is null": {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": None},
    "no choices key": {"id": "x", "object": "chat.completion"},
    "negative usage": completion({"role": "assistant", "content": "five"},
                                 ) | {"usage": {"prompt_tokens": -5, "completion_tokens": -1e9, "total_tokens": -3}},
    "usage of strings": completion({"role": "assistant", "content": "five"}) | {"usage": {"prompt_tokens": "x"}},
    "bad token ids": completion({"role": "assistant", "content": "five"}, prompt_token_ids=["a", None, 1.5]),
    "a 10 MB reply": completion({"role": "assistant", "content": "x" * 10_000_000}),
    "a reply nesting 100,000 deep": completion({"role": "assistant", "content": "[" * 100_000}),
    "the body is a list": [1, 2, 3],
    "the body is a string": b'"just text"',
}


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_reply_neither_crashes_nor_ends_the_run_without_a_reason(server: RawServer, case: str,
                                                                              streaming: bool) -> None:
    server.reply(MALFORMED[case])
    result = run(openai_model(server), streaming=streaming)
    assert result.stop_reason in ("final", "max_steps")
    assert_round_trip(result.trajectory)


@pytest.mark.parametrize("case", ["name is None", "no name at all", "name is a number", "arguments are a number",
                                  "arguments are a list", "arguments are not JSON", "arguments nest 100,000 deep",
                                  "content null, no calls", "empty choices", "choices is null", "no message",
                                  "a 10 MB reply", "a reply nesting 100,000 deep"])
def test_what_cannot_be_used_is_shown_to_the_model_and_it_answers_again(server: RawServer, case: str) -> None:
    server.reply(MALFORMED[case])
    result = run(openai_model(server))
    assert result.stop_reason == "final" and result.answer == "done"
    first = result.trajectory.messages[2]
    assert first.role == "assistant" and first.parse_error and not first.tool_calls
    told = server.requests[1]["messages"][-1]
    assert told["role"] == "user" and first.parse_error in told["content"]  # the model saw why
    assert len(json.dumps(server.requests[1])) < MAX_REPLY_CHARS + 100_000  # a huge reply is not sent back whole


def test_a_body_that_is_not_json_is_retried_as_a_server_error(server: RawServer) -> None:
    server.reply(b"<html>502 Bad Gateway</html>")
    agent = Agent(openai_model(server), tools=[add], max_retries=1)
    result = agent.run("add 2 and 3")
    assert result.stop_reason == "final" and result.answer == "done" and len(server.requests) == 2


def test_the_problems_are_named() -> None:
    model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    from agentkit.models.openai_response import parse_completion

    def error(body: Any) -> str:
        return parse_completion(body, [add.spec()]).message.parse_error or ""

    assert "without a tool name" in error(MALFORMED["name is None"])
    assert "not a JSON object" in error(MALFORMED["arguments are a number"])
    assert "too deeply nested to read (depth > 100)" in error(MALFORMED["arguments nest 100,000 deep"])
    assert error(MALFORMED["content null, no calls"]) == EMPTY_REPLY
    assert error(MALFORMED["empty choices"]) == NO_CHOICES
    assert error(MALFORMED["a 10 MB reply"]).startswith("reply too long to read (10,000,000 characters")
    assert "too deeply nested to read" in error(MALFORMED["a reply nesting 100,000 deep"])
    assert model.name == "m"


@pytest.mark.parametrize("case", ["arguments are an object", "no id", "id is a number", "duplicate ids"])
def test_repairable_calls_are_repaired_and_run(server: RawServer, case: str) -> None:
    server.reply(MALFORMED[case])
    result = run(openai_model(server))
    assert result.stop_reason == "final" and result.answer == "done"
    reply = result.trajectory.messages[2]
    assert reply.parse_error is None and reply.tool_calls and reply.tool_calls[0].arguments["a"] == 2
    ids = [c.id for c in reply.tool_calls]
    assert all(ids) and len(set(ids)) == len(ids)
    results = [m for m in result.trajectory.messages if m.role == "tool"]
    assert [m.tool_call_id for m in results] == ids and not any(m.is_error for m in results)


def test_negative_and_unreadable_usage_count_as_zero(server: RawServer) -> None:
    server.reply(MALFORMED["negative usage"])
    r = openai_model(server).generate([Message.user("x")])
    assert (r.usage.input_tokens, r.usage.output_tokens) == (0, 0) and r.message.content == "five"
    server.reply(MALFORMED["usage of strings"])
    assert openai_model(server).generate([Message.user("x")]).usage.input_tokens == 0


def test_token_ids_that_are_not_ids_give_no_token_record(server: RawServer) -> None:
    server.reply(MALFORMED["bad token ids"])
    r = openai_model(server).generate([Message.user("x")], settings=GenerationSettings(logprobs=True))
    assert r.tokens is None and r.message.content == "five"


# -- streams -------------------------------------------------------------------------------------------------------
STREAMS: dict[str, list[Any]] = {
    "name is None in a delta": [chunk({"role": "assistant", "tool_calls": [
        {"index": 0, "id": "c1", "type": "function", "function": {"name": None, "arguments": "{}"}}]}),
        chunk({}, finish="tool_calls")],
    "index is a string": [chunk({"tool_calls": [{"index": "zero", "id": "c1", "type": "function",
                                                 "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]}),
                          chunk({}, finish="tool_calls")],
    "arguments as an object": [chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                      "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}]}),
                               chunk({}, finish="tool_calls")],
    "a chunk that is not JSON": [chunk({"content": "fi"}), b"{not json", chunk({"content": "ve"}, finish="stop")],
    "content of the wrong type": [chunk({"content": 5}), chunk({"content": "five"}, finish="stop")],
    "choices of the wrong type": [{"id": "c", "object": "chat.completion.chunk", "choices": "x"},
                                  chunk({"content": "five"}, finish="stop")],
    "nothing at all": [],
    "a 2 MB reply in pieces": [chunk({"content": "y" * 100_000}) for _ in range(20)],
}


@pytest.mark.parametrize("case", list(STREAMS))
def test_a_malformed_stream_neither_crashes_nor_stalls(server: RawServer, case: str) -> None:
    server.stream(STREAMS[case])
    result = run(openai_model(server), streaming=True)
    assert result.stop_reason in ("final", "max_steps")
    assert_round_trip(result.trajectory)


def test_a_streamed_reply_past_the_limit_is_kept_short_and_named(server: RawServer) -> None:
    server.stream(STREAMS["a 2 MB reply in pieces"])
    final = list(openai_model(server).stream([Message.user("x")], [add.spec()]))[-1]
    assert isinstance(final, ModelResponse)
    assert final.message.parse_error and "2,000,000 characters" in final.message.parse_error
    assert len(final.message.content) < 10_000


# -- LiteLLM, the same server ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["name is None", "arguments are a number", "arguments nest 100,000 deep",
                                  "duplicate ids", "content null, no calls", "empty choices", "negative usage",
                                  "a 10 MB reply", "the body is a list"])
def test_litellm_turns_malformed_replies_into_observations(server: RawServer, case: str) -> None:
    from agentkit.models.litellm_model import LiteLLMModel

    server.reply(MALFORMED[case])
    result = run(LiteLLMModel("openai/m", api_base=server.url, api_key="k", timeout=20))
    assert result.stop_reason in ("final", "max_steps")
    assert_round_trip(result.trajectory)


# -- vLLM's token path (/tokenize, then /v1/completions) ----------------------------------------------------------
def completions(choice: Any, **extra: Any) -> dict[str, Any]:
    return {"id": "x", "object": "text_completion", "created": 0, "model": "m",
            "choices": [choice] if choice is not None else [], **extra}


TOKEN_PATH: dict[str, tuple[list[Any], Body]] = {
    "no choices": ([], completions(None)),
    "ids that are not ids": ([], completions({"text": "done", "token_ids": ["a"], "finish_reason": "stop",
                                              "logprobs": {"token_logprobs": [-0.1]}})),
    "log-probs that do not match": ([], completions({"text": "done", "token_ids": [5, 6], "finish_reason": "stop",
                                                     "logprobs": {"token_logprobs": [-0.1]}})),
    "text of the wrong type": ([], completions({"text": 5, "token_ids": [5], "finish_reason": "stop",
                                                "logprobs": {"token_logprobs": [-0.1]}})),
    "tokenize without tokens": ([{"error": "x"}], completions({"text": "done", "token_ids": [5],
                                                               "finish_reason": "stop",
                                                               "logprobs": {"token_logprobs": [-0.1]}})),
    "tokenize not JSON": ([b"<html>"], completions({"text": "done", "token_ids": [5], "finish_reason": "stop",
                                                    "logprobs": {"token_logprobs": [-0.1]}})),
}


@pytest.mark.parametrize("case", list(TOKEN_PATH))
def test_vllm_token_path_reads_malformed_replies(server: RawServer, case: str) -> None:
    tokenize, body = TOKEN_PATH[case]
    server.tokenize.extend(tokenize)
    server.reply(body)
    model = VLLMModel("m", base_url=server.url, api_key="k", max_retries=0, timeout=20)
    agent = Agent(model, tools=[add], max_steps=3, max_retries=0, settings=GenerationSettings(logprobs=True))
    try:
        result = agent.run("add 2 and 3")
    finally:
        agent.close()
    assert result.stop_reason in ("final", "max_steps")
    assert_round_trip(result.trajectory)


# -- any Model: the loop checks what it is handed -----------------------------------------------------------------
def test_the_loop_repairs_a_reply_any_model_builds_without_validation() -> None:
    from agentkit.messages import ToolCall
    from agentkit.testing import FunctionModel

    replies = iter([Message.assistant(tool_calls=[ToolCall.model_construct(id="c", name=None, arguments={})]),
                    Message.assistant("done")])
    model = FunctionModel(lambda messages, tools: next(replies))
    result = Agent(model, tools=[add], max_retries=0).run("x")
    assert result.stop_reason == "final" and result.answer == "done"
    assert "without a tool name" in (result.trajectory.messages[2].parse_error or "")
    assert_round_trip(result.trajectory)


def test_checked_response_leaves_a_good_reply_as_it_is() -> None:
    good = ModelResponse(message=Message.assistant("hi"))
    assert checked_response(good) is good
    odd = checked_response("not a response")
    assert odd.message.parse_error and odd.message.role == "assistant"
    assert MAX_REPLY_CHARS == 1_000_000


@pytest.mark.parametrize("case", ["name is None in a delta", "arguments as an object", "a chunk that is not JSON",
                                  "choices of the wrong type", "nothing at all"])
def test_litellm_streams_malformed_chunks_without_raising(server: RawServer, case: str) -> None:
    from agentkit.models.litellm_model import LiteLLMModel

    server.stream(STREAMS[case])
    result = run(LiteLLMModel("openai/m", api_base=server.url, api_key="k", timeout=20), streaming=True)
    assert result.stop_reason in ("final", "max_steps")
    assert_round_trip(result.trajectory)
