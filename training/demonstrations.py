"""Demonstrations as trajectories: a written conversation replayed through the real agent loop, each
assistant reply rendered and tokenised exactly as the model would have written it, for `algo="sft"`.

    trajectories = demonstration_trajectories(model, conversations)   # model: the one to fine-tune
    Trainer("local:default", TrainConfig(algo="sft", kl_coef=0.0)).fit(trajectories)

The agent sees the conversation's tools (each returns the conversation's written results, in order)
and a `Demonstrator` model that replies with the conversation's assistant messages. So the prompts are
the ones the agent builds in use (its instructions, the chat template's tool rendering, the loop's
messages) and the completions are the model's own format (Qwen's `<tool_call>` JSON, or the text
protocol), ending with the template's end-of-turn token; the token ids chain turn to turn like a
generated conversation's, and the trainer learns every reply as one sequence.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol

from agentkit.agent import DEFAULT_INSTRUCTIONS, Agent
from agentkit.messages import Message, Usage
from agentkit.models.chat_format import END_OF_TURN, to_message
from agentkit.models.protocol import GenerationSettings, ModelResponse, StreamItem, TokenRecord, ToolSpecs
from agentkit.tools import Tool
from agentkit.tools.text_calls import call_json
from agentkit.trajectory import GIVEN, Trajectory


class Renderer(Protocol):
    """What a demonstration needs from the model it is for: its prompt rendering and its tokeniser
    (`LlamaCppModel` has both)."""

    def render_prompt(self, messages: Sequence[Message], tools: ToolSpecs = ()) -> str:
        """The prompt text the model sees for these messages and tools (ending with the reply's opening)."""
        ...

    def tokenize(self, text: str) -> list[int]:
        """Token ids of `text`, special tokens included, no BOS added."""
        ...

    def remember_text(self, message: Message, text: str) -> None:
        """Render the reply `message` as `text` in later prompts (as the model wrote it)."""
        ...


def render_reply(model: Renderer, messages: Sequence[Message], tools: ToolSpecs, reply: Message) -> tuple[str, str]:
    """The prompt `model` sees after `messages`, and `reply` as it writes it there: the chat template's
    rendering of the reply, up to and including its end-of-turn token."""
    prompt = model.render_prompt(messages, tools)
    following = model.render_prompt([*messages, reply, Message.user(".")], tools)
    if not following.startswith(prompt):
        raise ValueError("the chat template renders an earlier turn differently once a reply follows it; "
                         "its replies cannot be written as completions of its prompts")
    rest = following[len(prompt):]
    ends = [(rest.find(token), token) for token in END_OF_TURN if token in rest]
    if not ends:
        raise ValueError(f"no end-of-turn token after the reply in {rest[:200]!r}")
    at, token = min(ends)
    return prompt, rest[: at + len(token)]


CallFormat = Literal["template", "json"]
"""How a demonstrated call is written: as the chat template renders it (Qwen: `<tool_call>` tags), or as a
bare JSON object per call, `{"name": ..., "arguments": ...}`, which the agent's parser reads too."""


class Demonstrator:
    """A model that replies with the given assistant messages in turn, each with the token ids `model`
    would have produced (log-probs 0: they were not sampled). `calls` chooses how calls are written: a
    model should be taught the form it already writes: a model whose `<tool_call>` token is all but never
    predicted writes bare JSON, and is taught `calls="json"` (Why: docs/decisions.md#tool-lora)."""

    def __init__(self, model: Renderer, replies: Sequence[Message], name: str = "demonstration",
                 calls: CallFormat = "template") -> None:
        self.model = model
        self.name = name
        self.calls = calls
        self._replies = list(replies)

    def generate(self, messages: Sequence[Message], tools: ToolSpecs = (),
                 settings: GenerationSettings | None = None) -> ModelResponse:
        """The next written reply (see `Model.generate`)."""
        if not self._replies:
            raise ValueError("the agent asked for more replies than the demonstration has")
        reply = self._replies.pop(0)
        if self.calls == "json" and reply.tool_calls:
            written = Message.assistant("\n".join(call_json(c) for c in reply.tool_calls))
            prompt, text = render_reply(self.model, messages, tools, written)
        else:
            prompt, text = render_reply(self.model, messages, tools, reply)
        prompt_ids, completion_ids = self.model.tokenize(prompt), self.model.tokenize(text)
        spoken = next((text[: -len(t)] for t in END_OF_TURN if text.endswith(t)), text)
        tokens = TokenRecord(prompt_ids=prompt_ids, completion_ids=completion_ids,
                             logprobs=[0.0] * len(completion_ids), temperature=1.0,
                             prompt_text=prompt, completion_text=text)
        usage = Usage(input_tokens=len(prompt_ids), output_tokens=len(completion_ids), calls=1)
        message = to_message(spoken, list(tools))
        self.model.remember_text(message, spoken)
        return ModelResponse(message=message, usage=usage, tokens=tokens, finish_reason="stop")

    def stream(self, messages: Sequence[Message], tools: ToolSpecs = (),
               settings: GenerationSettings | None = None) -> Iterator[StreamItem]:
        """As `generate`, in one piece."""
        yield self.generate(messages, tools, settings)


def written_tools(specs: Sequence[dict[str, Any]], messages: Sequence[Message], final: Collection[str] = (),
                  ) -> list[Tool]:
    """Tools for `specs` that return the conversation's written results: a call of a tool gets the result
    written for the first unanswered call of that name with the same arguments (else of that name), so
    calls run side by side get their own results. Those named in `final` finish the run."""
    called = {c.id: c.arguments for m in messages for c in m.tool_calls}
    results: dict[str, list[tuple[str, str]]] = {}
    for message in messages:
        if message.role == "tool" and message.name:
            args = called.get(message.tool_call_id or "", {})
            results.setdefault(message.name, []).append((_canonical(args), message.content))
    lock = threading.Lock()

    def make(spec: dict[str, Any]) -> Tool:
        function = spec["function"]
        queue = results.get(function["name"], [])

        def run(**arguments: Any) -> str:
            with lock:
                if not queue:
                    raise RuntimeError("the demonstration has no more results for this tool")
                key = _canonical(arguments)
                at = next((i for i, (args, _) in enumerate(queue) if args == key), 0)
                return queue.pop(at)[1]

        return Tool(run, name=function["name"], description=function.get("description") or function["name"],
                    parameters=function.get("parameters") or {"type": "object", "properties": {}},
                    final=function["name"] in final)

    return [make(spec) for spec in specs]


def _canonical(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def demonstration_trajectory(model: Renderer, tools: Sequence[dict[str, Any]], messages: Sequence[Message], *,
                             task_id: str, instructions: str | None = None,
                             calls: CallFormat = "template", final: Collection[str] = (),
                             given: Collection[int] = ()) -> Trajectory:
    """The conversation `messages` (a user message, then assistant and tool turns; a chat has several user
    messages, each followed by its turns) replayed by the agent loop with `model`'s rendering, the tools
    named in `final` finishing the run; reward 1. A chat's user turns run one after another, each with the
    conversation so far as history (as `agentkit chat` runs them), and their model turns make one trajectory.
    The assistant replies at the indices `given` are labelled with the phase `GIVEN`: history that `algo="sft"`
    does not learn. Raises ValueError when the agent's run departs from it."""
    if not messages or messages[0].role != "user":
        raise ValueError("a demonstration starts with the user's message")
    if any(not 0 <= i < len(messages) or messages[i].role != "assistant" for i in given):
        raise ValueError("`given` names the indices of assistant messages")
    starts = [i for i, m in enumerate(messages) if m.role == "user"]
    tools_ = written_tools(tools, messages, final)
    history: list[Message] = []
    runs: list[Trajectory] = []
    for start, end in zip(starts, [*starts[1:], len(messages)], strict=True):
        replies = [m for m in messages[start + 1:end] if m.role == "assistant"]
        agent = Agent(Demonstrator(model, replies, calls=calls), tools_, max_steps=len(replies),
                      instructions=DEFAULT_INSTRUCTIONS if instructions is None else instructions)
        run = agent.run(messages[start].content, history=history).trajectory
        # e.g. a call the tools refused (unknown, bad arguments), or a last call that did not finish the run
        if _steps(run.messages) != _steps(messages[:end]) or run.stop_reason != "final":
            raise ValueError(f"demonstration {task_id}: the agent's run departed from it ({run.stop_reason})")
        history = list(run.messages[1:])
        runs.append(run)
    trajectory = runs[0] if len(runs) == 1 else _joined(runs)
    said = [i for i, m in enumerate(messages) if m.role == "assistant"]  # the k-th is the k-th model turn
    for k, i in enumerate(said):
        if i in given:
            trajectory.turns[k].phase = GIVEN
    trajectory.task_id = task_id
    trajectory.reward = 1.0
    return trajectory


def _joined(runs: Sequence[Trajectory]) -> Trajectory:
    """One trajectory of a chat's runs: the last run's messages (the whole conversation) and every run's
    model turns, each turn's tokens stored as a delta over the turn its prompt continues."""
    joined = runs[-1].model_copy(update={"task": runs[0].task, "turns": [], "usage": Usage()})
    for run in runs:
        for turn in run.turns:
            tokens = TokenRecord(prompt_ids=run.prompt_ids(turn.index), completion_ids=turn.completion_ids,
                                 logprobs=turn.logprobs, temperature=turn.temperature,
                                 prompt_text=turn.prompt_text, completion_text=turn.completion_text)
            added = joined.add_turn(turn.output, phase=turn.phase, context=turn.context, input=turn.input,
                                    tokens=tokens, usage=turn.usage, duration_s=turn.duration_s)
            added.n_input = turn.n_input
    return joined


def _steps(messages: Sequence[Message]) -> list[tuple[Any, ...]]:
    """What a run did, for comparing a replay with its demonstration: calls, results, answers."""
    return [(m.role, m.content if m.role != "assistant" or not m.tool_calls else "", m.is_error,
             [(c.name, c.arguments) for c in m.tool_calls]) for m in messages if m.role in ("assistant", "tool")]


def demonstration_trajectories(model: Renderer, conversations: Sequence[Any], *, instructions: str | None = None,
                               calls: CallFormat = "template") -> list[Trajectory]:
    """Trajectories for conversations with `.tools` and `.messages`, and maybe `.final` (the names of the
    tools that finish the run), e.g. `synthetic_conversations`."""
    return [demonstration_trajectory(model, c.tools, c.messages, task_id=f"demo-{i}", instructions=instructions,
                                     calls=calls, final=getattr(c, "final", ()), given=getattr(c, "given", ()))
            for i, c in enumerate(conversations)]
