"""The agent and its loop: ask the model, run the tools, append observations, repeat.

The whole loop is `Agent._loop`, readable top to bottom (`_run` sets a run up, `_resume` continues
one paused for approval or whose process died). What it carries between steps is one `LoopState`
(`agentkit.loop.state`); what it does when a model loops is one policy, `Recovery` (`agentkit.loop.recovery`);
a reply's calls are run by `ReplyCalls` (`agentkit.loop.calls`). Everything else (planners, skill libraries,
mistake notebooks, learned limits) plugs in through `agentkit.loop.extensions` and its optional hooks
(`agentkit.loop.hooks`); approval, durable runs and agents called as tools live in `agentkit.runs`, typed output
in `agentkit.loop.output`, tracing in `agentkit.tracing`. `RunResult` is defined in `agentkit.results`.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agentkit.events import (
    ContextAdded,
    Event,
    ModelText,
    ModelTurn,
    PhaseStarted,
    RunFinished,
    RunPaused,
    ToolFinished,
    ToolStarted,
)
from agentkit.loop.calls import ReplyCalls
from agentkit.loop.extensions import Extension, Planner, RunContext
from agentkit.loop.hooks import Hooks
from agentkit.loop.output import FINAL_RESULT_TOOL, OutputSpec, OutputValidator
from agentkit.loop.planners import resolve_planner
from agentkit.loop.recovery import Recovery
from agentkit.loop.state import LoopState
from agentkit.loop.tracer import make_tracer
from agentkit.messages import Message, ToolCall
from agentkit.models import resolve_model
from agentkit.models.boundary import checked_response
from agentkit.models.protocol import GenerationSettings, Model, ModelResponse, TextDelta
from agentkit.models.retry import call_with_retries, stream_with_retries
from agentkit.records import TOOLS_OFFERED
from agentkit.results import RewardFn, apply_reward, majority
from agentkit.results import RunResult as RunResult  # defined low in the package; named here for users
from agentkit.runs import durable
from agentkit.runs.approval import (
    ApprovalPolicy,
    Decision,
    Decisions,
    RunState,
    needs_approval,
    record_decisions,
    resolve_decisions,
)
from agentkit.runs.delegation import AgentTool
from agentkit.runs.durable import Checkpoint, Checkpoints, RunStore, StoreLike, open_store
from agentkit.runs.handoffs import Handoff, as_handoffs
from agentkit.tools import Tool, ToolDefinitionError, Toolkit, ToolRunner, as_tools
from agentkit.trajectory import Trajectory, append_jsonl

if TYPE_CHECKING:
    from agentkit.tracing import RunSpans

DEFAULT_INSTRUCTIONS = (
    "You are a helpful assistant. Use the tools when they help; when you know the answer, "
    "reply with it directly and concisely."
)


_NO_DECISIONS: dict[str, Decision] = {}  # never written to


class Agent:
    """A tool-using agent.

    Args:
        model: a `Model` or a model string such as "local:smollm2-135m" or "openai:gpt-4o-mini".
        tools: tools, toolkits or typed, documented functions.
        instructions: the system prompt's opening text.
        planner: "react", "map-then-act", or a `Planner`.
        extensions: skill libraries, mistake notebooks, anything implementing `Extension`, in the order
            they run (the one way to attach them; `with_extensions` gives a copy with more). Their optional
            hooks act inside the loop: `review` may decline a reply's calls before they run (learned `Pacing`),
            `check` fix a finishing call, `advise` add to a failed call's error (see `Extension`).
        max_steps: the most model calls of the act loop. The last of them must finish the run (call the
            finishing tool, or answer in text when there is none), as smolagents asks for a final answer
            at its step limit: a run that used its steps exploring still ends with its best answer.
        settings: sampling settings for every call.
        log: a JSONL file each finished trajectory is appended to.
        max_retries: retries with exponential backoff on transient model errors.
        samples: test-time scaling: `run` makes this many runs and returns the one chosen by the first
            extension with a `choose` hook (`choose(results) -> index`; the mistake notebook steers away from
            known anti-patterns), else the majority answer. Sample with a temperature above 0.
        approval: a policy `(tool, arguments) -> bool` naming calls that need a person's approval, on
            top of the tools' own `requires_approval` (see agentkit.runs.approval).
        output_type: the type of the answer (pydantic model, dataclass, TypedDict, int, list[str], ...);
            the model gives it through a `final_result` call (see agentkit.loop.output).
        output_retries: how many rejected final results the model may correct before the run stops
            with stop_reason "invalid_output".
        output_validators: functions checking the typed output; they may raise `ModelRetry`.
        tracing: OpenTelemetry spans: True (the global tracer provider), a tracer provider, or False;
            unset, `AGENTKIT_OTEL=1` turns it on (see agentkit.tracing).
        store: checkpoint every run there, a directory (or a `RunStore`), so that `resume(run_id)` continues
            it after its process died, without running a finished call again (see agentkit.runs.durable).
        name: the agent's name, recorded on its trajectories (`Trajectory.agent`) and naming it to other agents
            (its handoff tool, its events in theirs).
        handoffs: agents this one may hand the conversation to (or `handoff(agent, ...)` specs), each offered as
            a tool `transfer_to_<name>`; the agent called takes the conversation over and answers
            (see agentkit.runs.handoffs). To call an agent as a tool instead, give `other.as_tool(...)` in `tools`.
        wait_for_results: check each call's ids (and, in a reply of several calls, the later calls' numbers)
            against the conversation; a call with a value it never wrote is not run once, and the model is
            asked to look it up first (see agentkit.loop.grounding). Off by default.
        check_answers: an answer in text that states numbers or ids no tool result, call or user message wrote
            (a lookup never made, a sum done in the head) is sent back once, naming them, and the next reply
            must call a tool; the answer after that call stands (see agentkit.loop.grounding). Only for an agent
            with tools whose runs end with a reply in text. Off by default.
    """

    def __init__(
        self,
        model: Model | str,
        tools: Iterable[Tool | Toolkit | Callable[..., Any]] = (),
        *,
        instructions: str = DEFAULT_INSTRUCTIONS,
        planner: Planner | str = "react",
        extensions: Sequence[Extension] = (),
        max_steps: int = 20,
        settings: GenerationSettings | None = None,
        log: str | Path | None = None,
        max_retries: int = 3,
        samples: int = 1,
        approval: ApprovalPolicy | None = None,
        output_type: Any = None,
        output_retries: int = 2,
        output_validators: Sequence[OutputValidator] = (),
        tracing: bool | Any = None,
        store: StoreLike | None = None,
        name: str = "agent",
        handoffs: Sequence[Agent | Handoff] = (),
        wait_for_results: bool = False,
        check_answers: bool = False,
    ) -> None:
        if samples < 1:
            raise ValueError("samples must be at least 1")
        if output_retries < 0:
            raise ValueError("output_retries must be 0 or more")
        self.model = resolve_model(model)
        self.name = name
        self.tools = as_tools([*tools, *as_handoffs(handoffs)])
        self.instructions = instructions
        self.planner = resolve_planner(planner)
        self.extensions: tuple[Extension, ...] = tuple(extensions)
        self.max_steps = max_steps
        self.settings = settings or GenerationSettings()
        self.log = Path(log) if log else None
        if self.log is not None and not self.settings.logprobs and getattr(self.model, "token_ids", False):
            # a logged run is training data: a server that returns token ids (vLLM) is asked for them
            self.settings = replace(self.settings, logprobs=True)
        self.max_retries = max_retries
        self.samples = samples
        self.approval = approval
        self.output_type = output_type
        self.output_retries = output_retries
        self._output = OutputSpec(output_type, output_validators) if output_type is not None else None
        if output_validators and self._output is None:
            raise ValueError("output_validators need an output_type (output_type=str to check text answers)")
        if self._output is not None and FINAL_RESULT_TOOL in self.tools:
            raise ToolDefinitionError(f"a tool is named {FINAL_RESULT_TOOL!r}, the name typed output uses; rename it")
        self._runner = ToolRunner()
        self._specs = self._specs_of(self.tools)
        self._finishers = [t.name for t in self.tools.values() if t.final] + ([FINAL_RESULT_TOOL] if self._output
                                                                               else [])
        self._approvals = approval is not None or any(t.requires_approval is not False for t in self.tools.values())
        self._tracer = make_tracer(tracing)
        self.store: RunStore | None = open_store(store)
        """Where runs are checkpointed (None: nowhere); a copy with another store resumes runs kept there."""
        self._checkpoints = Checkpoints(model)
        self._calls = ReplyCalls(self.tools, self._runner, self._checkpoints, self._output, wait_for_results)
        self.check_answers = check_answers

    def output_validator(self, fn: OutputValidator) -> OutputValidator:
        """Decorator: add a check of the typed output (it may raise `ModelRetry`)."""
        if self._output is None:
            raise ValueError("output validators need an output_type (output_type=str to check text answers)")
        self._output.validators.append(fn)
        return fn

    def as_tool(self, name: str, description: str, *, timeout_s: float | None = None,
                input_type: type[BaseModel] | None = None) -> AgentTool:
        """This agent as a tool for other agents: a call runs it on the call's request (one argument, `request`,
        or the fields of the pydantic model `input_type`) and the observation is its answer (its typed output as
        JSON with an `output_type`). In another agent's run its events stream as `InnerEvent`s, its run is a child
        trajectory of that run (logged with it, its usage counted in it), its calls needing approval pause that
        run, and past `timeout_s` seconds the caller's model gets an error observation (see agentkit.runs.delegation).
        """
        return AgentTool(self, name, description, timeout_s=timeout_s, input_type=input_type)

    def with_extensions(self, *extensions: Extension) -> Agent:
        """A copy of this agent (same model, tools and settings) with `extensions` attached after its own;
        one it already has is not attached twice. The agent itself is unchanged."""
        other = copy.copy(self)
        other.extensions = (*self.extensions, *(e for e in extensions if e not in self.extensions))
        return other

    # -- public API -------------------------------------------------------------------------------
    def run(self, task: str, **options: Any) -> RunResult:
        """Run one task to the end and return its result. Options as for `stream`."""
        if self.samples == 1:
            return self._run_once(task, **options)
        results = [self._run_once(task, **options) for _ in range(self.samples)]
        chosen = Hooks.of(self.extensions).choose(results)
        return results[chosen] if chosen is not None else majority(results)

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
        context: Mapping[str, str] | None = None,
    ) -> Generator[Event, None, None]:
        """Run one task, yielding events as they happen; the last event is `RunFinished` (preceded by
        `RunPaused` when the run stops for approval: resume it with `resume_stream`).

        The generator may be closed early (`.close()`), which stops the run where it is.
        Streaming is one run: with `Agent(samples=n > 1)` it raises ValueError (use `run`).

        Args:
            task: the user's request.
            history: earlier messages of the conversation (no system message), for multi-turn chat.
            task_id: groups runs of the same task (GRPO groups in training).
            reward_fn: scores the finished trajectory (a float, or named components summed into
                the reward) before extensions learn from it.
            metadata: the user's own data, stored as given in `trajectory.metadata` (the framework's
                records go to `trajectory.extras`, see `agentkit.records`).
            context: titled sections for this run's system prompt ({title: text}), e.g. what an
                environment shows about itself; the task alone stays what memory and skills retrieve by.
        """
        self._check_one_sample("stream")
        return self._run(task, streaming=True, history=history, task_id=task_id, reward_fn=reward_fn,
                         metadata=metadata, context=context)

    def resume(self, state: RunState | RunResult | str, decisions: Decisions | None = None, *,
               reward_fn: RewardFn | None = None) -> RunResult:
        """Continue a paused run with a decision for each pending call (by call id: `approve()`,
        `deny(reason)`, or a bool). `state` may be a `RunState`, its JSON, or the paused `RunResult`.
        The result may pause again at a later call. A run is scored (`reward_fn`), learnt from by the
        extensions and logged when it finishes, so pass `reward_fn` here, not to the paused `run`.

        With a `store`, `state` may also be a run id: a run whose process died continues from its last
        checkpoint (no decisions needed unless it is paused; calls that finished are not run again, see
        agentkit.runs.durable), and a finished run returns its result without running anything."""
        for event in self._resume(state, decisions, streaming=False, reward_fn=reward_fn):
            if isinstance(event, RunFinished):
                return event.result
        raise RuntimeError("agent run ended without a result")  # pragma: no cover

    def resume_stream(self, state: RunState | RunResult | str, decisions: Decisions | None = None, *,
                      reward_fn: RewardFn | None = None) -> Generator[Event, None, None]:
        """`resume`, yielding events as they happen; the last event is `RunFinished`."""
        return self._resume(state, decisions, streaming=True, reward_fn=reward_fn)

    async def arun(self, task: str, **options: Any) -> RunResult:
        """`run` for asyncio code; the loop runs in a worker thread."""
        return await asyncio.to_thread(self.run, task, **options)

    async def aresume(self, state: RunState | RunResult | str, decisions: Decisions | None = None,
                      **options: Any) -> RunResult:
        """`resume` for asyncio code."""
        return await asyncio.to_thread(self.resume, state, decisions, **options)

    async def astream(self, task: str, **options: Any) -> AsyncIterator[Event]:
        """`stream` for asyncio code; events are produced in a worker thread."""
        self._check_one_sample("astream")
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

    def _check_one_sample(self, method: str) -> None:
        if self.samples > 1:
            raise ValueError(f"{method}() streams one run, but this agent has samples={self.samples}: "
                             "use run()/arun() to sample and choose, or an Agent with samples=1 to stream")

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
        context: Mapping[str, str] | None = None,
    ) -> Generator[Event, None, None]:
        trajectory = Trajectory(
            task=task, task_id=task_id, model=getattr(self.model, "name", type(self.model).__name__),
            planner=self.planner.name, metadata=dict(metadata or {}),
        )
        return self._execute(trajectory, streaming=streaming, reward_fn=reward_fn, history=history,
                             context=context)

    def _resume(self, state: RunState | RunResult | str, decisions: Decisions | None, *, streaming: bool,
                reward_fn: RewardFn | None) -> Generator[Event, None, None]:
        # Checked here, before the generator starts, so bad input fails at the call.
        state = durable.state_of(state, self.store)
        if (parent := state.trajectory.parent_id) is not None and state.status != "finished":
            raise ValueError(f"run {state.run_id} is an agent call of run {parent}: resume that run, which "
                             "continues this one")
        if state.status == "finished":
            return durable.replay(durable.result_of(state.trajectory, self._output))
        if state.status == "running":  # its process died: on from the last checkpoint
            durable.check_running(state)
            return self._execute(state.trajectory.model_copy(deep=True), streaming=streaming, reward_fn=reward_fn,
                                 saved=state)
        state.check()
        chosen = resolve_decisions(state, decisions or {})
        trajectory = state.trajectory.model_copy(deep=True)  # the caller's state stays resumable as it was
        return self._execute(trajectory, streaming=streaming, reward_fn=reward_fn, resume=(state.pending, chosen))

    def _execute(self, trajectory: Trajectory, *, streaming: bool, reward_fn: RewardFn | None,
                 history: Sequence[Message] = (), context: Mapping[str, str] | None = None,
                 resume: tuple[list[ToolCall], dict[str, Decision]] | None = None,
                 saved: RunState | None = None, store: RunStore | None = None) -> Generator[Event, None, None]:
        """Start a run (its task is the trajectory's), continue a paused one with its decisions, or one whose
        process died from its last checkpoint (`saved`). `store`: where to checkpoint it instead of the agent's
        own (a durable caller's, for an agent call)."""
        started = time.perf_counter()
        trace = (self._tracer.start_run(trajectory, self.model, resumed=resume is not None or saved is not None)
                 if self._tracer is not None else None)
        checkpoint = self._checkpoints.open(store or self.store, trajectory, self.tools, self.max_steps, saved)
        try:
            run = RunContext(task=trajectory.task, model=self.model, tools=self.tools, trajectory=trajectory,
                             settings=self.settings,
                             call_hook=trace.traced_call(self._call_model) if trace else self._call_model)
            if resume is None and saved is None:
                # Before the loop: the caller's and the extensions' context, the planner explores and maps.
                for title, text in (context or {}).items():
                    run.add_context("run", title, text)
                for ext in self.extensions:
                    ext.before_run(run)
                    yield from run.drain_events()
                self.planner.prepare(run)
                yield from run.drain_events()
                messages = trajectory.messages
                messages.append(Message.system(self._system_prompt(run)))
                messages.extend(history)
                messages.append(Message.user(trajectory.task))
                if run.opening is not None:  # a planner's draft: its calls run before the model is asked
                    messages.append(run.opening)
                    resume = ([], {})
            else:
                if resume is not None:
                    record_decisions(trajectory, *resume)
                if (offered := trajectory.records.get(TOOLS_OFFERED)) is not None:
                    run.offered = offered.offered  # a resumed run shows the tools it showed before the pause
            if saved is not None and (decided := durable.unanswered_reply(saved)) is not None:
                resume = ([], decided)  # the last reply's calls had not all returned: they run (or not) first
            yield PhaseStarted("act")
            yield from self._loop(run, trace, streaming=streaming, reward_fn=reward_fn, started=started,
                                  resume=None if resume is None else (trajectory.messages[-1], resume[1]),
                                  checkpoint=checkpoint)
        except BaseException as exc:
            if trace is not None and not trace.ended:
                trace.end(trajectory, exc)
            raise
        finally:
            self._checkpoints.close(trajectory)

    def _loop(
        self,
        run: RunContext,
        trace: RunSpans | None,
        *,
        streaming: bool,
        reward_fn: RewardFn | None,
        started: float,
        resume: tuple[Message, dict[str, Decision]] | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> Iterator[Event]:
        """Step until a step decides how the run stops (`state.stop_reason`) or the steps run out, then
        `_finish`. A step asks the model, hands what goes wrong to `Recovery`, and runs the reply's calls;
        the extensions act through their hooks. A durable run's `checkpoint` is saved before every step."""
        trajectory = run.trajectory
        messages = trajectory.messages
        state = LoopState.of(trajectory, self.settings)
        if checkpoint is not None:
            checkpoint.restore(state)
        recovery = self._recovery()
        hooks = Hooks.of(self.extensions)  # looked up once per run, not per step
        specs = self._offered_specs(run)
        while state.stop_reason is None:
            if checkpoint is not None:
                checkpoint.step(state, calls_pending=resume is not None)
            decisions = _NO_DECISIONS
            if resume is not None:  # a paused reply, now decided: run its calls
                (reply, decisions), resume = resume, None
            else:
                if state.steps >= self.max_steps:
                    break
                state.steps += 1
                # 1. Ask the model (the last step, and the reply after a loop, must finish: see Recovery).
                prompt = recovery.prompt(state, messages)
                t0 = time.perf_counter()
                if streaming or trace is not None:
                    response = yield from self._ask(prompt, specs, state.settings, trace, streaming)
                else:  # the plain call, without a generator around it
                    response = self._call_model(self.model, prompt, specs, state.settings)
                response = checked_response(response)  # whatever the model built, the loop gets a valid reply
                reply, asked, state.settings = response.message, state.settings.tool_choice, self.settings
                turn = trajectory.add_turn(reply, phase=self._phase_of(reply), tokens=response.tokens,
                                           usage=response.usage, duration_s=time.perf_counter() - t0)
                messages.append(reply)
                yield ModelTurn(turn)

                # 2. No tool call: the reply is the answer (unless it was an unreadable call, the run ends
                #    through a finishing tool it is reminded of once, or a typed output was asked for and the
                #    text is not one).
                if recovery.unreadable(state, reply, messages):
                    continue
                if not reply.tool_calls:
                    if recovery.questioned(state, asked, messages):  # shown as one quiet line (`agentkit chat`)
                        yield ContextAdded("check", "values no result gave: the answer was sent back once",
                                           messages[-1].content)
                    elif not recovery.reminded(state, asked, messages):
                        self._text_reply(state, recovery, reply, trajectory)
                    continue

                # 3. A reply that only repeats earlier calls is answered from their results (a repeat the run
                #    cannot go on from ends it), and one a `review` hook declines gets the reason: neither runs.
                answered = recovery.repeated(state, reply, asked, messages)
                if answered is None and (reason := hooks.review(run, reply, self._finishers)) is not None:
                    answered = recovery.declined(state, reply, reason, messages)
                if answered:
                    yield from _not_run(reply, answered, messages)
                if answered is not None:
                    continue

                # 4. Calls that need approval pause the run before any call of this reply runs.
                if self._approvals and (pending := self._needing_approval(reply)):
                    state.pending, state.stop_reason = pending, "paused"
                    break

            # 5. Run the calls (in parallel; a `check` hook may fix a finishing call first) and append what
            #    they returned, in the reply's order.
            if hooks.checks:
                reply = hooks.check(run, reply, self._finishers)
            ended = yield from self._calls.run(reply, decisions, run, hooks, trace, streaming)
            if ended is None:
                recovery.calls_ran(state, reply)
            else:
                ended.apply(state, self._output, self.output_retries)
        yield from self._finish(run, trace, state, reward_fn, started, checkpoint)

    def _recovery(self) -> Recovery:
        """This run's recovery policy, from the agent's settings, finishing tools and step limit."""
        reminder = self.tools[self._finishers[0]] if self._finishers and self._output is None else None
        return Recovery(self.settings, self._finishers, self.max_steps, reminder, typed=self._output is not None,
                        check_answers=self.check_answers and bool(self.tools))

    def _ask(self, prompt: Sequence[Message], specs: Sequence[dict[str, Any]], settings: GenerationSettings,
             trace: RunSpans | None, streaming: bool) -> Generator[Event, None, ModelResponse]:
        """One model call of the act loop, retried on transient errors; its text streamed as `ModelText`
        events when `streaming`, and a span around it when tracing is on."""
        span = trace.start_model_call(self.model, settings) if trace is not None else None
        try:
            if streaming:
                response = None
                for item in self._stream_model(prompt, specs, settings):
                    if isinstance(item, TextDelta):
                        yield ModelText(item.text, "act")
                    else:
                        response = item
                assert response is not None
            else:
                response = self._call_model(self.model, prompt, specs, settings)
        except BaseException as exc:
            if span is not None:
                trace.end_model_call(span, None, exc)  # type: ignore[union-attr]
            raise
        if span is not None:
            trace.end_model_call(span, response)  # type: ignore[union-attr]
        return response

    def _text_reply(self, state: LoopState, recovery: Recovery, reply: Message, trajectory: Trajectory) -> None:
        """A reply in text is the answer; with a typed output, the output when the text is one, else it is sent
        back (a rejection counted against `output_retries`)."""
        if self._output is None:
            recovery.answer(state, reply.content)
            return
        ok, output = self._output.check_text(reply.content, trajectory)
        if ok:
            state.output = output
            state.answer, state.stop_reason = self._output.dump(output), "final"
        else:
            state.reject_output(self.output_retries)

    def _needing_approval(self, reply: Message) -> list[ToolCall]:
        """The calls of `reply` that need a person's approval before the reply runs."""
        return [c for c in reply.tool_calls if c.name != self._calls.final_name
                and needs_approval(self.tools.get(c.name), c.arguments, self.approval)]

    def _finish(self, run: RunContext, trace: RunSpans | None, state: LoopState, reward_fn: RewardFn | None,
                started: float, checkpoint: Checkpoint | None = None) -> Iterator[Event]:
        """After the loop: a paused run hands back its state; a finished one is scored, learnt from, logged
        (and a durable run's checkpoint says so)."""
        trajectory = run.trajectory
        trajectory.agent = trajectory.agent or self.name
        stop_reason = state.stop_reason or "max_steps"
        trajectory.answer, trajectory.stop_reason = state.answer, stop_reason
        trajectory.duration_s += time.perf_counter() - started
        if stop_reason == "paused":
            result = RunResult(None, trajectory, pending=state.pending)
            if checkpoint is not None:
                checkpoint.paused(state.pending)
            if trace is not None:
                trace.end(trajectory)
            yield RunPaused(result)
            yield RunFinished(result)
            return
        if reward_fn is not None:
            apply_reward(trajectory, reward_fn(trajectory))
        for ext in self.extensions:
            ext.after_run(run)
            yield from run.drain_events()
        if self.log is not None and trajectory.parent_id is None:  # a child run is logged with its parent
            append_jsonl(self.log, trajectory)
        if checkpoint is not None:
            checkpoint.done()
        if trace is not None:
            trace.end(trajectory)
        yield RunFinished(RunResult(state.answer, trajectory, output=state.output))

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
        return call_with_retries(lambda: model.generate(messages, specs, settings), self.max_retries)

    def _offered_specs(self, run: RunContext) -> list[dict[str, Any]]:
        """The tool specs the model is shown in this run: all, or those offered (`RunContext.offer`, in that
        order) plus the finishing tools and a typed output's tool."""
        offered = run.offered
        if offered is None:
            return self._specs
        return self._specs_of([*offered, *(t.name for t in self.tools.values() if t.final and t.name not in offered)])

    def _specs_of(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """The specs of these tools, in this order, and a typed output's tool last."""
        return [self.tools[n].spec() for n in names] + ([self._output.spec] if self._output else [])

    def _stream_model(self, messages: Sequence[Message], specs: Sequence[dict[str, Any]],
                      settings: GenerationSettings) -> Iterator[TextDelta | ModelResponse]:
        return stream_with_retries(lambda: self.model.stream(messages, specs, settings), self.max_retries,
                                   committed=lambda item: isinstance(item, TextDelta))


def _not_run(reply: Message, observations: list[Message], messages: list[Message]) -> Iterator[Event]:
    """Append what a reply's calls got back without running (`observations`, in the calls' order), with their
    events."""
    for call, observation in zip(reply.tool_calls, observations, strict=True):
        messages.append(observation)
        yield ToolStarted(call)
        yield ToolFinished(call, observation, 0.0)
