"""The LiteLLM backend: importing without network, and real calls through LiteLLM's `openai/` provider
to the loopback OpenAI-compatible server of test_models_openai."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from test_models_openai import ChatServer, add, chunk, completion, tool_call

from agentkit.messages import Message
from agentkit.models import ModelConfigError, TransientModelError, resolve_model
from agentkit.models.litellm_model import LiteLLMModel
from agentkit.models.protocol import GenerationSettings, ModelResponse, TextDelta

NO_NETWORK_IMPORT = textwrap.dedent("""
    import json, os, socket
    attempts = []
    def refuse(*args, **kwargs):
        attempts.append(repr(args[1:] if args else kwargs)[:100])
        raise OSError("network blocked by the test")
    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    from agentkit.models.litellm_model import import_litellm
    litellm = import_litellm()
    print(json.dumps({"attempts": attempts, "cost_map_env": os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"),
                      "known_models": len(litellm.model_cost)}))
""")


def test_import_does_not_touch_the_network() -> None:
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    out = subprocess.run([sys.executable, "-c", NO_NETWORK_IMPORT], env=env, capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["attempts"] == []
    assert report["cost_map_env"] == "True"
    assert report["known_models"] > 100  # the cost map bundled with litellm was loaded


@pytest.fixture
def server() -> Iterator[ChatServer]:
    s = ChatServer()
    yield s
    s.close()


def litellm_model(server: ChatServer, **kw: object) -> LiteLLMModel:
    return LiteLLMModel("openai/served", api_base=server.url, api_key="sk-test", max_retries=0, **kw)


def test_missing_provider_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        resolve_model("litellm:anthropic/claude-sonnet-4")


def test_call_with_tool_through_litellm(server: ChatServer) -> None:
    server.reply(completion(None, [tool_call("add", '{"a": 2, "b": 40,}', "call_L")], finish="tool_calls"))
    r = litellm_model(server).generate([Message.user("2+40?")], [add.spec()],
                                       GenerationSettings(temperature=0, max_tokens=30))
    assert [(c.id, c.name, c.arguments) for c in r.message.tool_calls] == [("call_L", "add", {"a": 2, "b": 40})]
    assert (r.usage.input_tokens, r.usage.output_tokens) == (11, 5)
    req = server.requests[0]
    assert req["model"] == "served" and req["tools"][0]["function"]["name"] == "add"
    assert req["temperature"] == 0 and req["messages"] == [{"role": "user", "content": "2+40?"}]


def test_stream_through_litellm(server: ChatServer) -> None:
    server.reply_stream([
        chunk({"role": "assistant", "content": "Hel"}),
        chunk({"content": "lo"}),
        chunk({"tool_calls": [{"index": 0, "id": "call_Z", "type": "function",
                               "function": {"name": "add", "arguments": '{"a": 1,'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "b": 2}'}}]}),
        chunk({}, finish="tool_calls"),
    ])
    items = list(litellm_model(server).stream([Message.user("hi")], [add.spec()]))
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == "Hello"
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.message.content == "Hello"
    assert [(c.name, c.arguments) for c in final.message.tool_calls] == [("add", {"a": 1, "b": 2})]


@pytest.mark.parametrize(("status", "error"), [(429, TransientModelError), (503, TransientModelError),
                                               (401, ModelConfigError), (404, ModelConfigError),
                                               (400, ModelConfigError)])
def test_errors_are_mapped(server: ChatServer, status: int, error: type[Exception]) -> None:
    for _ in range(3):  # in case litellm retries on its own
        server.reply_error(status)
    with pytest.raises(error):
        litellm_model(server).generate([Message.user("x")])
