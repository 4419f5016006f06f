"""The agent and its loop: ask the model, run the tools, append observations, repeat.

The whole loop is `Agent._run`, readable top to bottom. Everything else (planners, skill libraries,
mistake notebooks) plugs in through `agentkit.extensions`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agentkit.events import (
    Event,
    ModelText,
    ModelTurn,
    PhaseStarted,
    RunFinished,
    ToolFinished,
    ToolStarted,
)
from agentkit.extensions import Extension, Planner, ReactPlanner, RunContext
from agentkit.messages import Message, Usage
from agentkit.models import resolve_model
from agentkit.models.protocol import GenerationSettings, Model, ModelResponse, TextDelta, TransientModelError
from agentkit.tools import Tool, Toolkit, ToolRunner, as_tools
from agentkit.trajectory import Trajectory, append_jsonl

DEFAULT_INSTRUCTIONS = (
    "You are a helpful assistant. Use the tools when they help; when you know the answer, "
    "reply with it directly and concisely."
)

RewardFn = Callable[[Trajectory], float | Mapping[str, float]]


@dataclass
class RunResult:
    """The outcome of one run: the answer (None if the run stopped without one) and its trajectory."""

    answer: str | None
    trajectory: Trajectory

    @property
    def stop_reason(self) -> str:
        return self.trajectory.stop_reason

    @property
    def usage(self) -> Usage:
        return self.trajectory.usage


class Agent:
    """A tool-using agent.

    Args:
        model: a `Model` or a model string such as "local:smollm2-135m" or "openai:gpt-4o-mini".
        tools: tools, toolkits or typed, documented functions.
        instructions: the system prompt's opening text.
        planner: "react", "map-then-act", or a `Planner`.
        extensions: skill libraries, mistake notebooks, anything implementing `Extension`.
        skills: a skill library (an extension), for convenience.
        notes: a mistake notebook (an extension), for convenience.
        max_steps: the most model calls of the act loop before the run stops.
        settings: sampling settings for every call.
        log: a JSONL file each finished trajectory is appended to.
        max_retries: retries with exponential backoff on transient model errors.
        samples: test-time scaling: `run` makes this many runs and returns the one chosen by the first
            extension with a `choose(results) -> index` method (the mistake notebook steers away from
            known anti-patterns), else the majority answer. Sample with a temperature above 0.
    """

    def __init__(
        self,
        model: Model | str,
        tools: Iterable[Tool | Toolkit | Callable[..., Any]] = (),
        *,
        instructions: str = DEFAULT_INSTRUCTIONS,
        planner: Planner | str = "react",
        extensions: Sequence[Extension] = (),
        skills: Extension | None = None,
        notes: Extension | None = None,
        max_steps: int = 20,
        settings: GenerationSettings | None = None,
        log: str | Path | None = None,
        max_retries: int = 3,
        samples: int = 1,
    ) -> None:
        if samples < 1:
            raise ValueError("samples must be at least 1")
        self.model = resolve_model(model)
        self.tools = as_tools(tools)
        self.instructions = instructions
        self.planner = _resolve_planner(planner)
        self.extensions = [*extensions, *(e for e in (skills, notes) if e is not None)]
        self.max_steps = max_steps
        self.settings = settings or GenerationSettings()
        self.log = Path(log) if log else None
        if self.log is not None and not self.settings.logprobs and getattr(self.model, "token_ids", False):
            # a logged run is training data: a server that returns token ids (vLLM) is asked for them
            self.settings = replace(self.settings, logprobs=True)
        self.max_retries = max_retries
        self.samples = samples
        self._runner = ToolRunner()
        self._specs = [t.spec() for t in self.tools.values()]

    # -- public API -------------------------------------------------------------------------------
    def run(self, task: str, **options: Any) -> RunResult:
        """Run one task to the end and return its result. Options as for `stream`."""
        if self.samples == 1:
            return self._run_once(task, **options)
        results = [self._run_once(task, **options) for _ in range(self.samples)]
        chooser = next((e for e in self.extensions if callable(getattr(e, "choose", None))), None)
        if chooser is not None:
            return results[chooser.choose(results)]
        return majority(results)

    def _run_once(self, task: str, **options: Any) -> RunResult:
        for event in self._run(task, streaming=False, **options):
            if isinstance(event, RunFinished):
                return event.result
        raise RuntimeError("agent run ended without a result")  # pragma: no cover

    def stream(
        self,
        task: str,
        *,
        history: Sequence[Message] = (),
        task_id: str | None = None,
        reward_fn: RewardFn | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Iterator[Event]:
        """Run one task, yielding events as they happen; the last event is `RunFinished`.

        Args:
            task: the user's request.
            history: earlier messages of the conversation (no system message), for multi-turn chat.
            task_id: groups runs of the same task (GRPO groups in training).
            reward_fn: scores the finished trajectory (a float, or named components summed into
                the reward) before extensions learn from it.
            metadata: free data stored in the trajectory.
        """
        return self._run(task, streaming=True, history=history, task_id=task_id, reward_fn=reward_fn,
                         metadata=metadata)

    async def arun(self, task: str, **options: Any) -> RunResult:
        """`run` for asyncio code; the loop runs in a worker thread."""
        return await asyncio.to_thread(self.run, task, **options)

    async def astream(self, task: str, **options: Any) -> AsyncIterator[Event]:
        """`stream` for asyncio code; events are produced in a worker thread."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        done = object()

        def produce() -> None:
            try:
                for event in self.stream(task, **options):
                    loop.call_soon_threadsafe(queue.put_nowait, event)
            except BaseException as exc:  # handed to the consumer
                loop.call_soon_threadsafe(queue.put_nowait, exc)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, done)

        threading.Thread(target=produce, daemon=True).start()
        while (item := await queue.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """Release the tool threads."""
        self._runner.close()

    # -- the loop ---------------------------------------------------------------------------------
    def _run(
        self,
        task: str,
        *,
        streaming: bool,
        history: Sequence[Message] = (),
        task_id: str | None = None,
        reward_fn: RewardFn | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Iterator[Event]:
        started = time.perf_counter()
        trajectory = Trajectory(
            task=task, task_id=task_id, model=getattr(self.model, "name", type(self.model).__name__),
            planner=self.planner.name, metadata=dict(metadata or {}),
        )
        run = RunContext(task=task, model=self.model, tools=self.tools, trajectory=trajectory,
                         settings=self.settings, call_hook=self._call_model)

        # Before the loop: extensions add context, the planner explores and maps.
        for ext in self.extensions:
            ext.before_run(run)
            yield from run.drain_events()
        self.planner.prepare(run)
        yield from run.drain_events()

        messages = trajectory.messages
        messages.append(Message.system(self._system_prompt(run)))
        messages.extend(history)
        messages.append(Message.user(task))

        answer: str | None = None
        stop_reason = "max_steps"
        yield PhaseStarted("act")
        for _ in range(self.max_steps):
            # 1. Ask the model.
            t0 = time.perf_counter()
            if streaming:
                response = None
                for item in self._stream_model(messages):
                    if isinstance(item, TextDelta):
                        yield ModelText(item.text, "act")
                    else:
                        response = item
                assert response is not None
            else:
                response = self._call_model(self.model, messages, self._specs, self.settings)
            reply = response.message
            phase = self._phase_of(reply)
            turn = trajectory.add_turn(reply, phase=phase, tokens=response.tokens, usage=response.usage,
                                       duration_s=time.perf_counter() - t0)
            messages.append(reply)
            yield ModelTurn(turn)

            # 2. No tool call: the reply is the answer (unless it was an unreadable call).
            if reply.parse_error:
                messages.append(Message.user(f"Your tool call could not be parsed: {reply.parse_error}"))
                continue
            if not reply.tool_calls:
                answer, stop_reason = reply.content, "final"
                break

            # 3. Run the calls (in parallel) and append what they returned.
            for call in reply.tool_calls:
                yield ToolStarted(call)
            outcomes = self._runner.run_many([(self.tools.get(c.name), c.name, c.arguments) for c in reply.tool_calls])
            final_output: str | None = None
            for call, outcome in zip(reply.tool_calls, outcomes, strict=True):
                observation = Message.tool(call, outcome.content, is_error=outcome.is_error)
                messages.append(observation)
                yield ToolFinished(call, observation, outcome.duration_s)
                tool = self.tools.get(call.name)
                if tool is not None and tool.final and not outcome.is_error:
                    final_output = outcome.content
            if final_output is not None:
                answer, stop_reason = final_output, "final"
                break

        # After the loop: score, let extensions learn, log.
        trajectory.answer, trajectory.stop_reason = answer, stop_reason
        trajectory.duration_s = time.perf_counter() - started
        if reward_fn is not None:
            _apply_reward(trajectory, reward_fn(trajectory))
        for ext in self.extensions:
            ext.after_run(run)
            yield from run.drain_events()
        if self.log is not None:
            append_jsonl(self.log, trajectory)
        yield RunFinished(RunResult(answer, trajectory))

    # -- helpers ----------------------------------------------------------------------------------
    def _system_prompt(self, run: RunContext) -> str:
        parts = [self.instructions, *(s.render() for s in run.sections)]
        return "\n\n".join(p for p in parts if p)

    def _phase_of(self, reply: Message) -> str:
        for call in reply.tool_calls:
            tool = self.tools.get(call.name)
            if tool is not None and tool.phase:
                return tool.phase
        return "act"

    def _call_model(
        self, model: Model, messages: Sequence[Message], specs: Sequence[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse:
        delay = 1.0
        for attempt in range(self.max_retries + 1):
            try:
                return model.generate(messages, specs, settings)
            except TransientModelError:
                if attempt == self.max_retries:
                    raise
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _stream_model(self, messages: Sequence[Message]) -> Iterator[TextDelta | ModelResponse]:
        delay = 1.0
        for attempt in range(self.max_retries + 1):
            emitted = False
            try:
                for item in self.model.stream(messages, self._specs, self.settings):
                    emitted = emitted or isinstance(item, TextDelta)
                    yield item
                return
            except TransientModelError:
                if emitted or attempt == self.max_retries:
                    raise
                time.sleep(delay)
                delay *= 2


def majority(results: Sequence[RunResult]) -> RunResult:
    """The first run whose answer (whitespace- and case-normalised) is the most common one."""
    norm = [" ".join(r.answer.split()).lower() if r.answer is not None else None for r in results]
    votes = Counter(a for a in norm if a is not None)
    if not votes:
        return results[0]
    return results[norm.index(votes.most_common(1)[0][0])]


def _apply_reward(trajectory: Trajectory, value: float | Mapping[str, float]) -> None:
    if isinstance(value, Mapping):
        trajectory.rewards = {k: float(v) for k, v in value.items()}
        trajectory.reward = float(trajectory.rewards.get("reward", sum(trajectory.rewards.values())))
    else:
        trajectory.reward = float(value)


_PLANNERS: dict[str, Callable[[], Planner]] = {"react": ReactPlanner}


def register_planner(name: str, factory: Callable[[], Planner]) -> None:
    """Make a planner available by name (`Agent(planner=name)`)."""
    _PLANNERS[name] = factory


def _resolve_planner(planner: Planner | str) -> Planner:
    if not isinstance(planner, str):
        return planner
    if planner not in _PLANNERS:
        # Built-in planners register themselves on import.
        import agentkit.planning  # noqa: F401
    try:
        return _PLANNERS[planner]()
    except KeyError:
        raise ValueError(f"unknown planner {planner!r}; known: {', '.join(sorted(_PLANNERS))}") from None
