"""Token-in, token-out without a server: the chain rule of `VLLMModel`, and logged runs asking for log-probs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_models_openai import ChatServer, completion

from agentkit import Agent
from agentkit.models import resolve_model
from agentkit.models.openai_compat import OpenAIModel
from agentkit.models.vllm_model import VLLMModel, _Chain, _extend

IM_END, NL = 2, 198


@pytest.fixture
def server() -> Iterator[ChatServer]:
    s = ChatServer()
    yield s
    s.close()


def test_next_prompt_is_previous_ids_plus_trailer_plus_observation() -> None:
    # The model sampled [.. 50 51 IM_END]; the template re-renders that reply as [.. 60 IM_END NL] and the
    # whole new history as the same prefix + [1 70 71 IM_END NL 1 80] (observation + generation prompt).
    chain = _Chain(ids=[1, 10, 11, IM_END, NL, 1, 50, 51, IM_END], finished=True)
    before = [1, 10, 11, IM_END, NL, 1, 60, IM_END, NL]
    full = [*before, 1, 70, 71, IM_END, NL, 1, 80]
    assert _extend(chain, before, full) == [*chain.ids, NL, 1, 70, 71, IM_END, NL, 1, 80]
    # No delta to take: the renderings disagree, the reply was cut off, or its last token is not the
    # template's end of turn.
    assert _extend(chain, before, [9, *full[1:]]) is None
    assert _extend(_Chain(chain.ids, finished=False), before, full) is None
    assert _extend(_Chain([*chain.ids[:-1], 77], finished=True), before, full) is None


def test_vllm_prefix_resolves_to_the_token_exact_backend() -> None:
    model = resolve_model("vllm:http://127.0.0.1:9/v1/served")
    assert isinstance(model, VLLMModel) and model.name == "served" and model.token_prompts


def test_a_logged_run_asks_for_logprobs_unasked(server: ChatServer, tmp_path: Path) -> None:
    server.reply(completion("fine"))
    server.reply(completion("fine"))
    model = OpenAIModel("m", base_url=server.url, api_key="k")
    Agent(model, log=tmp_path / "runs.jsonl").run("hi")
    assert server.requests[0]["logprobs"] is True and server.requests[0]["return_token_ids"] is True
    Agent(model).run("hi")  # not logged: nothing extra asked
    assert "logprobs" not in server.requests[1]
