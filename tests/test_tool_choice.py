"""`GenerationSettings.tool_choice` (auto / required / none / a tool's name) through every backend:
native on OpenAI-compatible servers and LiteLLM, the text protocol by offering only the allowed tools and
re-asking, and the local model by beginning the reply with the call."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_models_openai import ChatServer, add, completion, tool_call

from agentkit import tool
from agentkit.messages import Message
from agentkit.models.chat_format import call_opening_ids
from agentkit.models.litellm_model import LiteLLMModel
from agentkit.models.openai_compat import OpenAIModel, native_tool_choice
from agentkit.models.protocol import GenerationSettings
from agentkit.models.tiny import tiny_local_model
from agentkit.tools.text_calls import (
    choice_satisfied,
    forced_prefix,
    parse_tool_calls,
    tool_choice_kind,
    tools_for_choice,
)


@tool
def shout(text: str) -> str:
    """Upper-case a text.

    Args:
        text: what to shout
    """
    return text.upper()


SPECS = [add.spec(), shout.spec()]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    s = ChatServer()
    yield s
    s.close()


def test_choice_helpers() -> None:
    assert [tool_choice_kind(c) for c in (None, "auto", "required", "none", "add")] == [
        "auto", "auto", "required", "none", "named"]
    assert tools_for_choice(SPECS, "none") == []
    assert tools_for_choice(SPECS, "shout") == [shout.spec()]
    assert tools_for_choice(SPECS, "required") == SPECS
    with pytest.raises(ValueError, match=r"names no offered tool .*add, shout"):
        tools_for_choice(SPECS, "multiply")
    with pytest.raises(ValueError, match="empty"):
        tool_choice_kind("  ")
    assert native_tool_choice(SPECS, None) is None and native_tool_choice(SPECS, "auto") is None
    assert native_tool_choice(SPECS, "required") == "required" and native_tool_choice(SPECS, "none") == "none"
    assert native_tool_choice(SPECS, "add") == {"type": "function", "function": {"name": "add"}}
    assert native_tool_choice([], "required") is None  # no tools: nothing to choose from, nothing sent
    # The forced prefix of a named choice, completed by a model, parses as a call to that tool.
    completed = forced_prefix("add") + '"a": 1, "b": 2}}</tool_call>'
    parsed = parse_tool_calls(completed, {"add"})
    assert [(c.name, c.arguments) for c in parsed.calls] == [("add", {"a": 1, "b": 2})]
    assert choice_satisfied(parsed.calls, "add") and not choice_satisfied(parsed.calls, "shout")
    # Given the tool's schema, the prefix also opens its first required argument.
    opened = forced_prefix("add", SPECS)
    assert opened.endswith('"arguments": {"a": ')
    parsed = parse_tool_calls(opened + '1, "b": 2}}</tool_call>', {"add"})
    assert [(c.name, c.arguments) for c in parsed.calls] == [("add", {"a": 1, "b": 2})]
    # A string's opening quote too: the model can only write text there, not the number it just answered.
    quoted = forced_prefix("shout", SPECS)
    assert quoted.endswith('"arguments": {"text": "')
    parsed = parse_tool_calls(quoted + 'hi"}}</tool_call>', {"shout"})
    assert [(c.name, c.arguments) for c in parsed.calls] == [("shout", {"text": "hi"})]
    assert not choice_satisfied([], "required") and choice_satisfied([], "auto")


@pytest.mark.parametrize(("choice", "sent"), [
    ("required", "required"), ("none", "none"), ("shout", {"type": "function", "function": {"name": "shout"}}),
    (None, None), ("auto", None)])
def test_native_tool_choice_is_sent(server: ChatServer, choice: str | None, sent: object) -> None:
    server.reply(completion(None, [tool_call("shout", '{"text": "hi"}')], finish="tool_calls"))
    model = OpenAIModel("m", base_url=server.url, api_key="k")
    reply = model.generate([Message.user("hi")], SPECS, GenerationSettings(tool_choice=choice))
    assert reply.message.tool_calls[0].name == "shout"
    assert server.requests[0].get("tool_choice") == sent
    assert len(server.requests[0]["tools"]) == 2


def test_native_tool_choice_naming_an_unknown_tool_sends_nothing(server: ChatServer) -> None:
    model = OpenAIModel("m", base_url=server.url, api_key="k")
    with pytest.raises(ValueError, match="multiply"):
        model.generate([Message.user("hi")], SPECS, GenerationSettings(tool_choice="multiply"))
    assert server.requests == []


def test_under_none_a_served_reply_that_writes_a_call_is_text(server: ChatServer) -> None:
    """A server model asked with tool_choice="none" that writes a call's JSON anyway gives text, not a call
    (with "auto" the same text is read as the call, as small models write calls)."""
    written = '{"name": "add", "arguments": {"a": 1, "b": 2}}'
    model = OpenAIModel("m", base_url=server.url, api_key="k")
    server.reply(completion(written))
    assert model.generate([Message.user("1+2")], SPECS).message.tool_calls[0].name == "add"
    server.reply(completion(written))
    none = model.generate([Message.user("1+2")], SPECS, GenerationSettings(tool_choice="none"))
    assert not none.message.tool_calls and none.message.content == written
    assert server.requests[1]["tool_choice"] == "none"


def test_text_protocol_none_offers_no_tools(server: ChatServer) -> None:
    server.reply(completion("plain answer"))
    model = OpenAIModel("m", base_url=server.url, api_key="k", native_tools=False)
    reply = model.generate([Message.system("sys"), Message.user("hi")], SPECS, GenerationSettings(tool_choice="none"))
    assert reply.message.content == "plain answer"
    system = server.requests[0]["messages"][0]["content"]
    assert "add:" not in system and "<tool_call>" not in system and "tools" not in server.requests[0]


def test_text_protocol_required_re_asks_once(server: ChatServer) -> None:
    server.reply(completion("I will not call anything."))
    server.reply(completion('<tool_call>{"name": "shout", "arguments": {"text": "ok"}}</tool_call>'))
    model = OpenAIModel("m", base_url=server.url, api_key="k", native_tools=False)
    reply = model.generate([Message.user("hi")], SPECS, GenerationSettings(tool_choice="shout"))
    assert [(c.name, c.arguments) for c in reply.message.tool_calls] == [("shout", {"text": "ok"})]
    assert len(server.requests) == 2
    first_system = server.requests[0]["messages"][0]["content"]
    assert "shout:" in first_system and "add:" not in first_system  # only the named tool is offered
    reminder = server.requests[1]["messages"][-1]
    assert reminder["role"] == "user" and "You must call the tool shout" in reminder["content"]
    assert reply.usage.calls == 2  # both calls are counted


def test_text_protocol_satisfied_first_time_asks_once(server: ChatServer) -> None:
    server.reply(completion('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'))
    model = OpenAIModel("m", base_url=server.url, api_key="k", native_tools=False)
    reply = model.generate([Message.user("1+2")], SPECS, GenerationSettings(tool_choice="required"))
    assert reply.message.tool_calls[0].name == "add" and len(server.requests) == 1


def test_litellm_sends_native_tool_choice(server: ChatServer) -> None:
    server.reply(completion(None, [tool_call("add", '{"a": 1, "b": 2}')], finish="tool_calls"))
    model = LiteLLMModel("openai/served", api_base=server.url, api_key="k")
    reply = model.generate([Message.user("1+2")], SPECS, GenerationSettings(tool_choice="add"))
    assert reply.message.tool_calls[0].name == "add"
    assert server.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "add"}}


def test_litellm_text_protocol_re_asks(server: ChatServer) -> None:
    server.reply(completion("no"))
    server.reply(completion('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'))
    model = LiteLLMModel("openai/served", api_base=server.url, api_key="k", native_tools=False)
    reply = model.generate([Message.user("1+2")], SPECS, GenerationSettings(tool_choice="required"))
    assert reply.message.tool_calls[0].name == "add" and len(server.requests) == 2


def test_local_model_begins_the_reply_with_the_call() -> None:
    local = tiny_local_model(seed=0)
    settings = GenerationSettings(max_tokens=6, temperature=0, tool_choice="shout", logprobs=True)
    reply = local.generate([Message.user("hi")], SPECS, settings)
    assert reply.tokens is not None and reply.tokens.prompt_text.endswith(forced_prefix("shout", SPECS))
    assert "shout:" in reply.tokens.prompt_text and "add:" not in reply.tokens.prompt_text
    # The forced text is prompt, not sample: the completion ids are only what the model generated.
    assert len(reply.tokens.completion_ids) <= 6
    # A random tiny model cannot finish the JSON, but the reply is a call attempt, never a plain answer.
    assert reply.message.tool_calls or reply.message.parse_error
    none = local.generate([Message.user("hi")], SPECS, GenerationSettings(max_tokens=4, tool_choice="none"))
    assert none.tokens is not None and "<tool_call>" not in none.tokens.prompt_text
    assert not none.message.tool_calls


def test_call_opening_ids_are_tokens_that_can_begin_a_call() -> None:
    pieces = ["hello", " {", "{\"", "[", " `", "```", "<tool_call>", ">{", " The", "42", "}", "a{", ">", "\n"]
    found = call_opening_ids(pieces)
    assert [pieces[i] for i in found] == [" {", "{\"", "[", " `", "```", "<tool_call>", ">{"]


def test_under_tool_choice_none_a_local_reply_cannot_begin_as_a_call() -> None:
    """A model whose first choice is a call's "{" (a hook on the head of a real tiny model makes it so)
    writes text under tool_choice="none"; the log-prob recorded is under the distribution it sampled from."""
    torch = pytest.importorskip("torch")
    local = tiny_local_model(seed=0)
    brace = local.tokenize("{")[0]

    def prefer_brace(module: object, inputs: object, logits: object) -> object:
        out = logits.clone()  # type: ignore[attr-defined]
        out[..., brace] += 100.0
        return out

    local.model.lm_head.register_forward_hook(prefer_brace)
    greedy = GenerationSettings(max_tokens=3, temperature=0, logprobs=True)
    auto = local.generate([Message.user("hi")], SPECS, greedy)
    assert auto.tokens is not None and auto.tokens.completion_ids[0] == brace
    none = local.generate([Message.user("hi")], SPECS, GenerationSettings(
        max_tokens=3, temperature=0, logprobs=True, tool_choice="none"))
    assert none.tokens is not None
    first = none.tokens.completion_ids[0]
    assert first not in local._call_openers() and not none.message.content.lstrip().startswith("{")
    with torch.inference_mode():
        ids = torch.tensor([none.tokens.prompt_ids])
        logits = local.model(input_ids=ids).logits[0, -1].float()
    logits = logits.clone().index_fill_(0, torch.tensor(local._call_openers()), float("-inf"))
    expected = float(torch.log_softmax(logits, dim=-1)[first])
    assert abs(none.tokens.logprobs[0] - expected) < 1e-3
