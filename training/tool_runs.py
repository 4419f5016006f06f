"""Tool-use data from the agent's own runs: synthetic multi-step requests played through the real loop, each run
checked against the written conversation, a failed request played once more with its plan as a privileged hint,
and every right run kept as an SFT trajectory of the model's own tokens, the hint removed.

    from agentkit.models import load_local
    from agentkit.training.synthetic import synthetic_conversations
    from agentkit.training.tool_runs import collect_tool_runs

    model = load_local("default", parallel=2)
    conversations = synthetic_conversations(200, seed=7, weights={"sequence": 1, "chain3": 1, "compute": 1})
    played = collect_tool_runs(model, conversations, concurrency=2)
    kept = [p.kept for p in played if p.kept is not None]     # then: agentkit train --data ... --algo sft

A conversation of one request (`agentkit.training.synthetic`) holds the calls a right run makes and the results
they return. The run's tools (`gold_tools`) return a written result only to a call whose arguments match the
written call's (strings compared without case or spaces, numbers as numbers, an arithmetic tool's call by what it
works out), an arithmetic tool works out any other formula, and any other lookup gets an error, as a real tool
would; so a run is right (`right_run`) when its calls are the written ones (as a multiset: two lookups
side by side may come in either order) and its answer quotes a value of the last result (`answer_values`).

A request the model fails is asked again with its plan in the system prompt (`plan_hint`: the tools in order,
which argument comes from which earlier result, never a value). A right hinted run is kept as if the hint had not
been there (`without_plan`): the section leaves the system message and the prompt of every turn that starts a
context, and those prompts are tokenised again; the completions keep the token ids the model wrote. This is
rationalisation (STaR): the model learns to make, unprompted, the runs it can make when told the plan.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from agentkit.agent import DEFAULT_INSTRUCTIONS, Agent
from agentkit.loop.extensions import ContextSection, Instructions
from agentkit.messages import Message
from agentkit.models.protocol import GenerationSettings, Model
from agentkit.tools import Tool
from agentkit.training.synthetic.arithmetic import ARITHMETIC_FAMILIES, evaluate, number_text
from agentkit.trajectory import Trajectory, without_hint

KIND = "verified-tool-run"
"""`metadata["kind"]` of the trajectories `collect_tool_runs` keeps."""
PLAN_TITLE = "Plan"
"""The title of the hint's system-prompt section."""
PLAN_SOURCE = "plan"
COLLECT_KINDS: tuple[str, ...] = ("sequence", "chain3", "compute")
"""The synthetic conversation kinds of more than one call, the ones collected by default."""
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-_./:@][A-Za-z0-9]+)*")
_MAX_TEXT = 20_000  # a result or answer longer than this is cut before it is scanned


Call = tuple[str, dict[str, Any]]


def kind_weights(text: str) -> dict[str, float]:
    """The conversation kinds and their shares from `KIND[:WEIGHT],...` (a kind without a weight weighs 1), e.g.
    `"sequence:2,chain3:2,single"`; raises ValueError on an empty list, a repeated kind or a weight that is not a
    positive number (an unknown kind is refused by `synthetic_conversations`)."""
    weights: dict[str, float] = {}
    for item in text[:_MAX_TEXT].split(","):
        kind, sep, weight = (part.strip() for part in item.partition(":"))
        if not kind:
            continue
        try:
            share = float(weight) if sep else 1.0
        except ValueError:
            share = -1.0
        if kind in weights or not 0 < share < float("inf"):
            raise ValueError(f"kinds are KIND[:WEIGHT] with a positive weight, each kind once: {item.strip()!r}")
        weights[kind] = share
    if not weights:
        raise ValueError("no conversation kind given")
    return weights


def written_calls(messages: Sequence[Message]) -> list[Call]:
    """The calls of a conversation's assistant messages, in order, as (name, arguments)."""
    return [(c.name, dict(c.arguments)) for m in messages if m.role == "assistant" for c in m.tool_calls]


def normal(value: Any) -> Any:
    """`value` in the form calls are compared in: numbers (and numeric strings) as floats rounded to 6 places,
    other strings lowercased without whitespace, lists and objects element by element."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return round(float(value), 6)
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER.fullmatch(text):
            return round(float(text), 6)
        return "".join(text.lower().split())
    if isinstance(value, Mapping):
        return {str(k): normal(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normal(v) for v in value]
    return value


_ARITHMETIC_DOCS = frozenset(f.doc for f in ARITHMETIC_FAMILIES)
_OPERATIONS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}


def arithmetic_tools(specs: Sequence[dict[str, Any]]) -> frozenset[str]:
    """The names, among function `specs`, of the generator's arithmetic tools (known by their description, since
    a conversation may rename them)."""
    return frozenset(str(s["function"]["name"]) for s in specs if s["function"].get("description") in _ARITHMETIC_DOCS)


def arithmetic_value(arguments: Mapping[str, Any]) -> str | None:
    """What an arithmetic tool's call works out, as the tools write numbers: a formula argument evaluated, or
    `a` and `b` under `operation`; None when the arguments are not a formula of numbers and + - * / (or divide by
    zero). The formula is parsed by Python's parser, so it is cut at 500 characters first."""
    if {"a", "b", "operation"} <= set(arguments):
        a, b, op = arguments["a"], arguments["b"], _OPERATIONS.get(str(arguments["operation"]))
        formula = f"({a}) {op} ({b})" if op and all(isinstance(v, int | float | str) for v in (a, b)) else ""
    else:
        formula = next((v for v in arguments.values() if isinstance(v, str)), "")
    if not formula or len(formula) > 500:
        return None
    try:
        return number_text(evaluate(formula))
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError, TypeError):
        return None


def call_key(name: str, arguments: Mapping[str, Any], arithmetic: Collection[str] = ()) -> str:
    """A call's comparison key: its name and its arguments in `normal` form, or, for a tool named in
    `arithmetic`, what it works out (`50*20` and `20 * 50` are one call)."""
    if name in arithmetic:
        value = arithmetic_value(arguments)
        if value is not None:
            return f"{name}={value}"
    return name + json.dumps(normal(dict(arguments)), sort_keys=True, ensure_ascii=False, default=str)


def same_calls(made: Sequence[Call], written: Sequence[Call], arithmetic: Collection[str] = ()) -> bool:
    """Whether `made` are the `written` calls, as multisets of `call_key`s."""
    return (sorted(call_key(n, a, arithmetic) for n, a in made)
            == sorted(call_key(n, a, arithmetic) for n, a in written))


def gold_tools(specs: Sequence[dict[str, Any]], messages: Sequence[Message]) -> list[Tool]:
    """Tools for the function `specs` that return the results written in `messages`: a call gets the result of
    the first unanswered written call with the same `call_key`, an arithmetic tool works out any other formula
    (as a calculator would), and any other call raises an error naming the tool (shown to the model as a failed
    call), as a real tool would for a value it has no record of."""
    arithmetic = arithmetic_tools(specs)
    called = {c.id: (c.name, c.arguments) for m in messages for c in m.tool_calls}
    queues: dict[str, list[str]] = {}
    for message in messages:
        if message.role == "tool" and message.tool_call_id in called:
            name, args = called[message.tool_call_id or ""]
            queues.setdefault(call_key(name, args, arithmetic), []).append(message.content)
    lock = threading.Lock()

    def make(spec: dict[str, Any]) -> Tool:
        function = spec["function"]
        name = str(function["name"])

        def run(**arguments: Any) -> str:
            with lock:
                queue = queues.get(call_key(name, arguments, arithmetic))
                if queue:
                    return queue.pop(0)
            value = arithmetic_value(arguments) if name in arithmetic else None
            if value is None:
                raise ValueError(f"{name} has no record for {json.dumps(arguments, ensure_ascii=False)}")
            return value

        return Tool(run, name=name, description=function.get("description") or name,
                    parameters=function.get("parameters") or {"type": "object", "properties": {}})

    return [make(spec) for spec in specs]


def answer_values(messages: Sequence[Message]) -> list[str]:
    """What a right answer must quote one of: the values of the conversation's last result that its call did not
    pass (a JSON object's values; else its numbers and ids, the tokens with a digit; else the whole text)."""
    results = [m for m in messages if m.role == "tool"]
    if not results:
        return []
    last = results[-1]
    call = next((c for m in messages for c in m.tool_calls if c.id == last.tool_call_id), None)
    passed = {normal(v) for v in (call.arguments.values() if call else ()) if not isinstance(v, list | dict)}
    text = last.content[:_MAX_TEXT]
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    lines = [line.partition(": ") for line in text.splitlines() if line.strip()]
    if isinstance(parsed, dict):
        values = [str(v) for v in parsed.values() if not isinstance(v, list | dict)]
    elif len(lines) > 1 and all(sep for _, sep, _ in lines):
        values = [value.strip() for _, _, value in lines]
    else:
        tokens = _TOKEN.findall(text)
        values = ([t for t in tokens if any(ch.isdigit() for ch in t)] or [t for t in tokens if t[:1].isupper()]
                  or [text.strip()])
    return list(dict.fromkeys(v for v in values if v and normal(v) not in passed))


def quotes(answer: str, value: str) -> bool:
    """Whether `answer` states `value`: a number as a number (thousands separators ignored, to within 0.5 %, or
    from 10 up rounded to a whole), any other value as text without case."""
    text = answer[:_MAX_TEXT]
    if _NUMBER.fullmatch(value.strip()):
        target = float(value)
        for found in _NUMBER.findall(re.sub(r"(?<=\d),(?=\d{3})", "", text)):
            number = float(found)
            close = abs(number - target) <= max(0.005 * abs(target), 1e-9)
            if close or (abs(target) >= 10 and number == round(target)):
                return True
        return False
    return value.lower() in text.lower()


def right_run(run: Trajectory, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> bool:
    """Whether `run` made the calls written in `messages` (an arithmetic tool among the function specs `tools`
    judged by what it works out) and its answer quotes a value of the last result, and every number or id of it (a
    value with a digit) that the written answer quotes."""
    made = [(c.name, dict(c.arguments)) for m in run.messages if m.role == "assistant" for c in m.tool_calls]
    if run.stop_reason != "final" or not same_calls(made, written_calls(messages), arithmetic_tools(tools)):
        return False
    values = answer_values(messages)
    written = next((m.content for m in reversed(messages) if m.role == "assistant" and not m.tool_calls), "")
    answer = run.answer or ""
    needed = [v for v in values if any(ch.isdigit() for ch in v) and quotes(written, v)]
    return not values or (all(quotes(answer, v) for v in needed) and any(quotes(answer, v) for v in values))


def _holds(text: str, value: Any) -> bool:
    """Whether `text` (lowercased) holds `value`: a number as one of its numbers, other text as whole words."""
    if isinstance(value, bool) or value is None or isinstance(value, list | dict):
        return False
    if isinstance(value, int | float) or _NUMBER.fullmatch(str(value).strip()):
        target = float(value)
        return any(float(n) == target for n in _NUMBER.findall(text))
    shown = str(value).strip().lower()
    return len(shown) > 1 and re.search(r"(?<![a-z0-9])" + re.escape(shown) + r"(?![a-z0-9])", text) is not None


def plan_hint(messages: Sequence[Message]) -> str:
    """The plan of a written conversation, without any value: each call's tool in order, and for each argument
    whose value an earlier result holds and the request does not, which step's result gives it ("taken from"; a
    formula with a number of it: "built from"); e.g. "1. call find_employee. 2. call get_manager, with employee_id
    taken from the result of step 1. Then answer from the results.". Calls of one reply are one step."""
    request = next((m.content for m in messages if m.role == "user"), "")[:_MAX_TEXT].lower()
    replies = [m for m in messages if m.role == "assistant" and m.tool_calls]
    step_of = {c.id: i for i, m in enumerate(replies) for c in m.tool_calls}
    results: list[str] = ["" for _ in replies]
    for message in messages:
        if message.role == "tool" and message.tool_call_id in step_of:
            results[step_of[message.tool_call_id or ""]] += "\n" + message.content[:_MAX_TEXT].lower()
    lines = []
    for i, reply in enumerate(replies):
        parts = []
        for call in reply.tool_calls:
            linked = []
            for param, value in call.arguments.items():
                pieces = [value] if not isinstance(value, str) or _NUMBER.fullmatch(value.strip()) else (
                    [value, *_NUMBER.findall(value)])
                sources = sorted({j for piece in pieces if not _holds(request, piece)
                                  for j in range(i) if _holds(results[j], piece)})
                if sources:
                    how = "taken" if any(_holds(results[j], value) for j in sources) else "built"
                    steps = " and ".join(str(j + 1) for j in sources)
                    linked.append(f"{param} {how} from the result of step {steps}")
            parts.append(f"call {call.name}" + (f", with {'; '.join(linked)}" if linked else ""))
        lines.append(f"{i + 1}. " + "; ".join(parts) + ".")
    return " ".join([*lines, "Then answer from the results."])


def without_plan(run: Trajectory, plan: str, tokenize: Callable[[str], list[int]]) -> Trajectory:
    """`run` (made with `plan` as its `PLAN_TITLE` section) as if the plan had not been shown: the section removed
    from the system message and from the prompt of every turn that starts a context, those prompts tokenised again
    with `tokenize` (`agentkit.trajectory.without_hint`). Raises ValueError when such a turn does not show it."""
    section = "\n\n" + ContextSection(PLAN_SOURCE, PLAN_TITLE, plan).render()
    plain = without_hint(run, section, tokenize)
    return plain.model_copy(update={"metadata": {**run.metadata, "hint_removed": plan}})


@dataclass
class PlayedRequest:
    """One conversation played: its index and kind, whether the first run was right, whether the hinted run was
    (None: not played), and the trajectory kept for training (None: neither run was right)."""

    index: int
    kind: str
    first_right: bool
    hinted_right: bool | None
    kept: Trajectory | None
    first: Trajectory
    hinted: Trajectory | None = None


def collect_tool_runs(model: Model, conversations: Sequence[Any], *, hints: bool = True, max_steps: int = 6,
                      max_tokens: int = 256, concurrency: int = 1, instructions: str = DEFAULT_INSTRUCTIONS,
                      on_played: Callable[[PlayedRequest], None] | None = None) -> list[PlayedRequest]:
    """Play each one-request conversation (`.kind`, `.tools`, `.messages`; a chat raises ValueError) greedily with
    `model` through the agent loop (task id `tool-run-INDEX`), a wrong one again with its plan when `hints`, and
    keep each right run (a hinted one through `without_plan`, tokenised by `model.tokenize`) with reward 1 and
    `metadata["kind"] = KIND`. `concurrency` requests run at once (an in-process llama.cpp model needs as many
    slots); `on_played` sees each request as it finishes, from the worker threads."""
    if any(sum(m.role == "user" for m in c.messages) != 1 for c in conversations):
        raise ValueError("collect_tool_runs plays conversations of one request; a chat has several")
    tokenize = getattr(model, "tokenize", None)
    if hints and not callable(tokenize):
        raise ValueError(f"{type(model).__name__} has no tokenize(), so a hinted run's prompt cannot be rebuilt")
    settings = GenerationSettings(temperature=0.0, max_tokens=max_tokens)

    def play(index: int, conv: Any, hint: str | None) -> Trajectory:
        extensions = [Instructions(hint, title=PLAN_TITLE, name=PLAN_SOURCE)] if hint else []
        agent = Agent(model, gold_tools(conv.tools, conv.messages), max_steps=max_steps, settings=settings,
                      instructions=instructions, extensions=extensions)
        return agent.run(conv.messages[0].content, task_id=f"tool-run-{index}").trajectory

    def one(item: tuple[int, Any]) -> PlayedRequest:
        index, conv = item
        first = play(index, conv, None)
        played = PlayedRequest(index, conv.kind, right_run(first, conv.messages, conv.tools), None, None, first)
        if played.first_right:
            played.kept = first
        elif hints:
            hint = plan_hint(conv.messages)
            played.hinted = play(index, conv, hint)
            played.hinted_right = right_run(played.hinted, conv.messages, conv.tools)
            if played.hinted_right:
                played.kept = without_plan(played.hinted, hint, tokenize)  # type: ignore[arg-type]
        if played.kept is not None:
            played.kept = played.kept.model_copy(update={
                "reward": 1.0,
                "metadata": {**played.kept.metadata, "kind": KIND, "conversation_kind": conv.kind,
                             "hinted": played.hinted_right is True}})
        if on_played is not None:
            on_played(played)
        return played

    with ThreadPoolExecutor(max(1, concurrency)) as pool:
        return list(pool.map(one, enumerate(conversations)))


__all__ = ["COLLECT_KINDS", "KIND", "PLAN_TITLE", "PlayedRequest", "answer_values", "arithmetic_tools",
           "arithmetic_value", "call_key", "collect_tool_runs", "gold_tools", "kind_weights", "normal", "plan_hint",
           "quotes", "right_run", "same_calls", "without_plan", "written_calls"]
