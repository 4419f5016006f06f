"""Random replies at the model boundary: response objects of any shape, type, size and nesting (unicode and lone
surrogates included) through each backend's conversion function and through the agent loop. Nothing raises,
what comes out keeps the reply contract (`agentkit.models.boundary`), and every trajectory is logged and read
back whole."""

from __future__ import annotations

import json
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit import Agent, tool
from agentkit.messages import Message, ToolCall, Usage, clean_text
from agentkit.models.boundary import _plain, _repaired, checked_message, checked_response
from agentkit.models.chat_format import to_message
from agentkit.models.openai_response import parse_completion
from agentkit.models.openai_stream import parse_stream
from agentkit.models.protocol import ModelResponse, TextDelta, TokenRecord
from agentkit.models.vllm_model import VLLMModel
from agentkit.tools.text_calls import MAX_REPLY_CHARS
from agentkit.trajectory import Trajectory, read_jsonl

FAST = settings(max_examples=60, deadline=timedelta(seconds=10),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@tool(timeout_s=2)
def echo(text: str = "") -> str:
    """Return the text.

    Args:
        text: anything.
    """
    return text


@tool(timeout_s=2, requires_approval=True)
def guarded(text: str = "") -> str:
    """Return the text, once a person has approved.

    Args:
        text: anything.
    """
    return text


SPECS = [echo.spec(), guarded.spec()]
NAMES = {"echo", "guarded"}

# -- strategies ------------------------------------------------------------------------------------------------------
TEXT = st.one_of(st.text(max_size=30), st.sampled_from(["", "echo", "guarded", "\ud800", "é\u200b", "null", "{}",
                                                         '{"text": "hi"}', "[" * 300, '{"a":' * 200]))
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                   st.floats(allow_nan=True, allow_infinity=True), TEXT)
JSONISH = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                       max_leaves=12)
BIG = st.sampled_from(["x" * 1_200_000, "[" * 150_000, '<tool_call>{"name": "echo", "arguments": {"text": '
                       + "[" * 50_000, "```json\n" * 20_000, "<tool_call>" * 30_000])
DEEP = st.integers(min_value=1, max_value=3_000).map(lambda d: "[" * d + "]" * d)


def maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`value`, or junk of any JSON type in its place."""
    return st.one_of(value, JSONISH)


ARGUMENTS = st.one_of(st.dictionaries(st.sampled_from(["text", "other"]), JSONISH, max_size=2).map(json.dumps),
                      st.dictionaries(st.sampled_from(["text", "other"]), JSONISH, max_size=2), DEEP, TEXT, JSONISH)
CALL = st.fixed_dictionaries({}, optional={
    "id": maybe(st.sampled_from(["c1", "c2", "", "c1"])), "type": maybe(st.just("function")),
    "index": maybe(st.integers(min_value=-2, max_value=3)),
    "function": maybe(st.fixed_dictionaries({}, optional={"name": maybe(st.sampled_from(["echo", "guarded", "nope",
                                                                                         "", " "])),
                                                          "arguments": ARGUMENTS}))})
CONTENT = st.one_of(st.none(), TEXT, DEEP, st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}),
                                                    max_size=3), JSONISH)
MESSAGE = st.fixed_dictionaries({}, optional={"role": maybe(st.just("assistant")), "content": CONTENT,
                                              "tool_calls": maybe(st.lists(CALL, max_size=4))})
TOKEN_IDS = maybe(st.lists(st.integers(min_value=-3, max_value=50), max_size=6))
CHOICE = st.fixed_dictionaries({}, optional={
    "message": maybe(MESSAGE), "finish_reason": maybe(st.sampled_from(["stop", "length", "tool_calls"])),
    "logprobs": maybe(st.fixed_dictionaries({"content": maybe(st.lists(st.fixed_dictionaries(
        {"token": maybe(st.sampled_from(["token_id:3", "token_id:x", "a"])),
         "logprob": maybe(st.floats(allow_nan=True))}), max_size=4))})),
    "token_ids": TOKEN_IDS, "prompt_token_ids": TOKEN_IDS})
USAGE = st.fixed_dictionaries({}, optional={"prompt_tokens": maybe(st.integers(min_value=-10**9, max_value=10**9)),
                                            "completion_tokens": maybe(st.floats(allow_nan=True))})
COMPLETION = st.one_of(
    st.fixed_dictionaries({}, optional={"choices": maybe(st.lists(maybe(CHOICE), max_size=2)), "usage": maybe(USAGE),
                                        "prompt_token_ids": TOKEN_IDS}),
    JSONISH,
    BIG.map(lambda text: {"choices": [{"message": {"role": "assistant", "content": text}}]}),
)
CHUNK = st.one_of(st.fixed_dictionaries({}, optional={
    "choices": maybe(st.lists(st.fixed_dictionaries({}, optional={
        "delta": maybe(st.fixed_dictionaries({}, optional={"content": maybe(TEXT),
                                                           "tool_calls": maybe(st.lists(CALL, max_size=2))})),
        "finish_reason": maybe(st.sampled_from(["stop", "tool_calls"])), "token_ids": TOKEN_IDS}), max_size=2)),
    "usage": maybe(USAGE), "prompt_token_ids": TOKEN_IDS}), JSONISH)


def assert_valid(response: ModelResponse) -> None:
    """`response` keeps the reply contract: checking it again changes nothing."""
    assert isinstance(response, ModelResponse)
    assert checked_message(response.message) is response.message
    assert _repaired(response.message) is response.message  # the shortcut and the full check agree
    assert checked_response(response) is response or checked_response(response).message is response.message
    assert response.usage.input_tokens >= 0 and response.usage.output_tokens >= 0
    Trajectory().add_turn(response.message, phase="act", tokens=response.tokens, usage=response.usage)


ODD_TEXT = st.sampled_from(["", "ok", "ok", " ", "x" * (MAX_REPLY_CHARS + 1), "é", "\ud800", None, 5])
BUILT_CALL = st.builds(lambda name, call_id, arguments: ToolCall.model_construct(name=name, id=call_id,
                                                                                  arguments=arguments),
                       st.sampled_from(["add", "add", "", " ", "x" * 300, "é", None, 5]),
                       st.sampled_from(["c1", "c1", "c2", "", " ", "x" * 300, "é", None]),
                       st.sampled_from([{}, {"a": 1}, {"a": "é"}, {"a": "\ud800"}, {"a": [1]}, {1: 2}, [1], None]))


@settings(max_examples=2000, deadline=None)
@given(content=ODD_TEXT, calls=st.lists(st.one_of(BUILT_CALL, st.just({"name": "add"})), max_size=2),
       parse_error=st.sampled_from([None, None, "x", "é"]))
def test_the_one_pass_check_takes_only_what_the_full_check_keeps(content: Any, calls: list[Any],
                                                                   parse_error: Any) -> None:
    message = Message.model_construct(role="assistant", content=content, tool_calls=calls, parse_error=parse_error,
                                      tool_call_id=None, name=None, is_error=False)
    if _plain(message):
        assert _repaired(message) is message
    checked = checked_message(message)
    assert checked_message(checked) is checked


# -- each backend's conversion ---------------------------------------------------------------------------------------
@FAST
@given(body=COMPLETION, native=st.booleans())
def test_openai_and_litellm_responses_convert_without_raising(body: Any, native: bool) -> None:
    assert_valid(parse_completion(body, SPECS, native_tools=native))


@FAST
@given(chunks=st.lists(CHUNK, max_size=5), native=st.booleans())
def test_streamed_chunks_convert_without_raising(chunks: list[Any], native: bool) -> None:
    items = list(parse_stream(iter(chunks), SPECS, native_tools=native))
    assert all(isinstance(i, TextDelta) for i in items[:-1])
    assert_valid(items[-1])


VLLM_CHOICE = st.fixed_dictionaries({}, optional={
    "text": maybe(TEXT), "token_ids": TOKEN_IDS, "finish_reason": maybe(st.sampled_from(["stop", "length"])),
    "stop_reason": maybe(st.integers(min_value=0, max_value=5)),
    "logprobs": maybe(st.fixed_dictionaries({"token_logprobs": maybe(st.lists(maybe(st.floats(max_value=0)),
                                                                              max_size=6))}))})


@FAST
@given(body=st.one_of(st.fixed_dictionaries({}, optional={"choices": maybe(st.lists(maybe(VLLM_CHOICE), max_size=2)),
                                                          "usage": maybe(USAGE)}), JSONISH),
       prefix=st.sampled_from(["", "<tool_call>"]))
def test_vllm_token_path_responses_convert_without_raising(body: Any, prefix: str) -> None:
    model = VLLMModel("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    response = model._token_response(body, [Message.user("x")], [1, 2, 3], prefix, SPECS)
    assert_valid(response)


@FAST
@given(text=st.one_of(TEXT, DEEP, BIG, st.text(max_size=200)))
def test_llamacpp_generated_text_converts_without_raising(text: str) -> None:
    message = checked_message(to_message(text, SPECS))  # what LlamaCppModel.stream makes of its text
    assert checked_message(message) is message and len(message.content) <= MAX_REPLY_CHARS


# -- the loop --------------------------------------------------------------------------------------------------------
class Replies:
    """A model whose replies come from a list: payloads through the OpenAI conversion, or objects as they are
    (built without validation, as a careless `Model` might); then "done" for ever. Its stream keeps the
    protocol's one rule about shape, that it ends with an item that is not a `TextDelta` (None stands for
    nothing at all and is not passed on)."""

    name = "replies"

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)

    def generate(self, messages: Any, tools: Any = (), settings: Any = None) -> Any:
        if not self.replies:
            return ModelResponse(message=Message.assistant("done"))
        kind, item = self.replies.pop(0)
        return parse_completion(item, tools) if kind == "payload" else item

    def stream(self, messages: Any, tools: Any = (), settings: Any = None) -> Any:
        response = self.generate(messages, tools, settings)
        content = getattr(getattr(response, "message", None), "content", None)
        if isinstance(content, str) and content:
            yield TextDelta(content)
        yield response if response is not None else ModelResponse(message=Message.assistant("done"))


ODD_CALL = st.builds(lambda name, args, cid: ToolCall.model_construct(id=cid, name=name, arguments=args),
                     maybe(st.sampled_from(["echo", "guarded", "nope"])), maybe(st.just({"text": "hi"})),
                     maybe(st.sampled_from(["c1", "c1", ""])))
ODD_MESSAGE = st.builds(lambda content, calls, error: Message.model_construct(role="assistant", content=content,
                                                                             tool_calls=calls, parse_error=error,
                                                                             tool_call_id=None, name=None,
                                                                             is_error=False),
                        maybe(TEXT), maybe(st.lists(ODD_CALL, max_size=3)), st.one_of(st.none(), JSONISH))
ODD_RESPONSE = st.one_of(
    st.builds(lambda message, usage, tokens, finish: ModelResponse(message=message, usage=usage, tokens=tokens,
                                                                   finish_reason=finish),
              ODD_MESSAGE,
              st.builds(lambda a, b: Usage.model_construct(input_tokens=a, output_tokens=b, calls=1, cost_usd=None),
                        maybe(st.integers(min_value=-5, max_value=5)), maybe(st.integers(min_value=-5, max_value=5))),
              st.one_of(st.none(), st.builds(lambda p, c, lp: TokenRecord(prompt_ids=p, completion_ids=c, logprobs=lp),
                                             maybe(st.lists(st.integers(min_value=-1, max_value=9), max_size=3)),
                                             maybe(st.lists(st.integers(min_value=-1, max_value=9), max_size=3)),
                                             maybe(st.lists(st.floats(allow_nan=True), max_size=3)))),
              maybe(st.just("stop"))),
    JSONISH,
)
SCRIPT = st.lists(st.one_of(st.tuples(st.just("payload"), COMPLETION), st.tuples(st.just("object"), ODD_RESPONSE)),
                  max_size=3)


def logged_run(agent: Agent, how: str) -> Trajectory:
    """Run `agent` by `how` (run, stream or resume: approve what a paused run waits for), to the end."""
    if how == "run":
        result = agent.run("go")
    else:
        events = list(agent.stream("go"))
        result = events[-1].result
    while how == "resume" and result.stop_reason == "paused":
        result = agent.resume(result, {c.id: True for c in result.pending})
    return result.trajectory


@settings(max_examples=50, deadline=timedelta(seconds=20),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(script=SCRIPT, how=st.sampled_from(["run", "stream", "resume"]))
def test_no_reply_makes_the_loop_raise_and_every_trajectory_reads_back(script: list[Any], how: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "log.jsonl"
        agent = Agent(Replies(script), tools=[echo, guarded], max_steps=6, max_retries=0, log=log)
        try:
            trajectory = logged_run(agent, how)
        finally:
            agent.close()
        assert trajectory.stop_reason
        back = Trajectory.model_validate_json(trajectory.model_dump_json())
        assert back.model_dump() == trajectory.model_dump()
        if trajectory.stop_reason != "paused":
            [logged] = read_jsonl(log)
            assert logged.model_dump() == trajectory.model_dump()


def test_lone_surrogates_in_a_reply_become_replacement_characters_and_the_run_logs() -> None:
    """JSON's "\\ud800" decodes to a lone surrogate, which UTF-8 (the log, the terminal) cannot write; a `Model`
    may build its reply without validation."""
    call = ToolCall.model_construct(id="c1", name="echo", arguments={"": "\ud800", "text": ["ok", "\udc00"]})
    reply = Message.model_construct(role="assistant", content="\ud800 text", tool_calls=[call], parse_error=None,
                                    tool_call_id=None, name=None, is_error=False)
    checked = checked_message(reply)
    assert checked.content == "\ufffd text"
    assert checked.tool_calls[0].arguments == {"": "\ufffd", "text": ["ok", "\ufffd"]}
    plain = Message(role="assistant", content="hi", tool_calls=[ToolCall(id="c1", name="echo", arguments={"t": "é"})])
    assert checked_message(plain) is plain  # nothing to repair: the very message
    clean = {"t": ["é", ("x", 1)], "n": None}
    assert clean_text(clean) is clean  # nothing copied on the hot path when nothing needs replacing
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "log.jsonl"
        script = [("object", ModelResponse(message=reply, usage=Usage(calls=1))),
                  ("object", ModelResponse(message=Message.assistant("done"), usage=Usage(calls=1)))]
        agent = Agent(Replies(script), tools=[echo], max_steps=3, max_retries=0, log=log)
        try:
            result = agent.run("go")
        finally:
            agent.close()
        [logged] = read_jsonl(log)
        assert result.answer == "done" and logged.model_dump() == result.trajectory.model_dump()
