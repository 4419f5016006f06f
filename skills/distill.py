"""Distillation: turn a finished run into a candidate skill, and decide whether it may enter the library.

A distilled skill is admitted only when the run succeeded and the model's JSON parses into a sane
skill. Output that is empty, not JSON, truncated, enormous, that carries instructions aimed at the agent
(prompt injection), that quotes the run's answer (an example, not a procedure), or whose only step is the call
that ended the run (no procedure) is refused with a reason; nothing partial is stored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agentkit.jsontext import copies_placeholder, strict_json
from agentkit.loop.repeats import call_key
from agentkit.messages import Message, ToolCall
from agentkit.skills import prompts
from agentkit.skills.model import DistilledSkill
from agentkit.trajectory import Trajectory

MAX_OUTPUT_CHARS = 12_000
MAX_FIELD_CHARS = {"name": 80, "description": 400, "when_to_use": 400, "strategy": 2_000}
MAX_LIST_ITEMS = 12
MAX_ITEM_CHARS = 400
MAX_BODY_CHARS = 4_000


# Text that addresses the agent rather than describing a procedure. Matched case-insensitively.
INJECTION_PATTERNS = [
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|your|system)\b.{0,20}"
    r"\b(instructions?|prompts?|rules?|messages?|context)\b",
    r"\byou are now\b",
    r"\bnew (system )?instructions?\s*:",
    r"\b(system|developer) prompt\b",
    r"\bdo not (tell|inform|reveal to) the user\b",
    r"\b(exfiltrate|leak)\b.{0,40}\b(key|secret|password|token|credential)s?\b",
    r"<\|?(im_start|im_end|system|endoftext)\|?>",
    r"^\s*#{1,3}\s*(system|assistant)\s*:?\s*$",
    r"\[/?(INST|SYS)\]",
]
_INJECTION = [re.compile(p, re.IGNORECASE | re.MULTILINE | re.DOTALL) for p in INJECTION_PATTERNS]


class Refusal(ValueError):
    """A distilled skill was not admitted; `reason` says why (it is logged and recorded)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Parsed:
    """The outcome of reading a distillation reply: the JSON object read, and the skill if it is sane."""

    data: dict[str, Any] | None
    skill: DistilledSkill | None
    reason: str | None


def parse_distilled(text: str) -> Parsed:
    """Read a distillation reply strictly: one JSON object (a code fence around it is fine).

    Unlike the tool-call reader, nothing is repaired: truncated output is refused, not completed.
    """
    try:
        data = _read_json(text)
    except Refusal as refusal:
        return Parsed(None, None, refusal.reason)
    try:
        skill = _validate(data)
    except Refusal as refusal:
        return Parsed(data, None, refusal.reason)
    return Parsed(data, skill, None)


def _read_json(text: str) -> dict[str, Any]:
    if text is None or not text.strip():
        raise Refusal("empty distillation output")
    if len(text) > MAX_OUTPUT_CHARS:
        raise Refusal(f"distillation output too large ({len(text)} characters > {MAX_OUTPUT_CHARS})")
    try:
        data = strict_json(text)
    except ValueError:
        raise Refusal("distillation output is not valid JSON") from None
    if not isinstance(data, dict):
        raise Refusal(f"distillation output is JSON but not an object ({type(data).__name__})")
    return data


def _validate(data: dict[str, Any]) -> DistilledSkill:
    for key, limit in MAX_FIELD_CHARS.items():
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise Refusal(f"field {key!r} must be a string")
        if isinstance(value, str) and len(value) > limit:
            raise Refusal(f"field {key!r} too long ({len(value)} characters > {limit})")
    for key in ("subgoals", "lessons"):
        value = data.get(key)
        if value is not None and not isinstance(value, list):
            raise Refusal(f"field {key!r} must be a list")
        if isinstance(value, list) and len(value) > MAX_LIST_ITEMS:
            raise Refusal(f"field {key!r} has too many items ({len(value)} > {MAX_LIST_ITEMS})")
    subgoals = [{"goal": g} if isinstance(g, str) else g for g in data.get("subgoals") or []]
    data, subgoals = _without_placeholders(data, subgoals)
    try:
        skill = DistilledSkill.model_validate({**data, "subgoals": subgoals})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise Refusal(f"distilled skill does not fit the schema ({where}: {first['msg']})") from None
    if not skill.description.strip():
        raise Refusal("distilled skill has an empty description")
    items = [g.goal for g in skill.subgoals] + skill.lessons
    if any(len(item) > MAX_ITEM_CHARS for item in items):
        raise Refusal(f"a sub-goal or lesson is longer than {MAX_ITEM_CHARS} characters")
    if not (skill.subgoals or skill.strategy.strip() or skill.lessons):
        raise Refusal("distilled skill has no procedure (no subgoals, strategy or lessons)")
    if len(skill.body()) > MAX_BODY_CHARS:
        raise Refusal(f"distilled skill body too long (> {MAX_BODY_CHARS} characters)")
    text = "\n".join([skill.name, skill.description, skill.when_to_use, skill.strategy, *items])
    for pattern in _INJECTION:
        match = pattern.search(text)
        if match:
            raise Refusal(f"distilled skill looks like an instruction injection ({match.group(0)[:60]!r})")
    return skill


_TOOL_NAMED = re.compile(r"(?:called\s+)?[A-Za-z_][\w.]*(?:\s*\(.*\))?", re.S)
"""A "when to use" that is one identifier or a call (`list_tables({})`): a tool, not a situation."""


def _without_placeholders(data: dict[str, Any], subgoals: list[Any]) -> tuple[dict[str, Any], list[Any]]:
    """Drop what the model copied back from the prompt's template (a sub-goal "a step of the procedure",
    the strategy's placeholder) and keep what it wrote itself; a copied name or description still refuses
    (the skill could not be found by it), as does a skill left with no procedure."""
    def copied(text: Any) -> bool:
        return copies_placeholder(text, prompts.DISTILL_PLACEHOLDERS)

    for key in ("name", "description"):
        if copied(data.get(key)):
            raise Refusal(f"distilled skill copies the prompt's template ({str(data[key])[:60]!r})")
    cleaned = {k: ("" if k in ("when_to_use", "strategy") and copied(v) else v) for k, v in data.items()}
    if _TOOL_NAMED.fullmatch(str(cleaned.get("when_to_use") or "").strip()):
        cleaned["when_to_use"] = ""  # a tool call or name (`list_tables({})`) is not a situation
    if isinstance(cleaned.get("lessons"), list):
        cleaned["lessons"] = [item for item in cleaned["lessons"] if not copied(item)]
    kept = [g for g in subgoals if not (isinstance(g, dict) and copied(g.get("goal")))]
    return cleaned, kept


def outcome_refusal(reward: float | None, success_at: float) -> str | None:
    """Why a run's outcome rules out admitting its skill (None: it succeeded)."""
    if reward is None:
        return "outcome unknown (the run has no reward), so the skill is not admitted"
    if reward < success_at:
        return f"the run did not succeed (reward {reward:g} < {success_at:g})"
    return None


def admission_refusal(parsed: Parsed, reward: float | None, success_at: float,
                      trajectory: Trajectory | None = None) -> str | None:
    """Why a parsed distillation may not be admitted (None: it may); with the run it was distilled from, a skill
    that quotes the run's answer (`quoted_answer`) or whose only step ends the run (`only_ends`) is refused too."""
    outcome = outcome_refusal(reward, success_at)
    if outcome is not None:
        return outcome
    if parsed.reason is not None:
        return parsed.reason
    if parsed.skill is not None and not parsed.skill.success:
        return "the distilled skill reports the run as failed"
    if parsed.skill is not None and trajectory is not None:
        if quote := quoted_answer(parsed.skill, trajectory):
            return f"the distilled skill quotes its run's answer ({quote[:60]!r}), so it is an example, not a procedure"
        if tool := only_ends(parsed.skill, trajectory):
            return f"the distilled skill's only step is the call that ends the task ({tool}), so it is no procedure"
    return None


MIN_QUOTE_CHARS = 24
"""The shortest answer text (normalised) whose appearance in a skill counts as quoting the answer."""


def quoted_answer(skill: DistilledSkill, trajectory: Trajectory) -> str | None:
    """The run's answer as `skill` quotes it, or None. The answer is the string arguments of the run's last tool
    call (the call that ended it, e.g. the confirmed SQL) and the lines of its final answer, each compared at
    `MIN_QUOTE_CHARS` or more, case and spacing aside. The distillation prompt asks for a general procedure
    without the task's answer; a skill that carries the answer is one worked example, and worked examples
    are the experience's to show."""
    text = _normal(" ".join([skill.name, skill.description, skill.when_to_use, skill.strategy,
                             *(g.goal for g in skill.subgoals), *skill.lessons]))
    ending = _ending_call(trajectory)
    pieces = [v for v in (ending.arguments.values() if ending else ()) if isinstance(v, str)]
    pieces += (trajectory.answer or "").splitlines()
    for piece in pieces:
        quote = _normal(piece)
        if len(quote) >= MIN_QUOTE_CHARS and quote in text:
            return quote
    return None


def only_ends(skill: DistilledSkill, trajectory: Trajectory) -> str | None:
    """The name of the run's last tool call (the call that ended it) when every sub-goal of `skill` and its
    strategy name that call and nothing else makes a step, else None: "call confirm_answer with the SQL" is what
    the agent's instructions already say, and a skill that says only that carries no procedure."""
    ending = _ending_call(trajectory)
    if ending is None or not skill.subgoals:
        return None
    tool = ending.name
    names = (tool.lower(), tool.lower().replace("_", " "))

    def ends(text: str) -> bool:
        return any(name in text.lower() for name in names)

    if all(ends(g.goal) for g in skill.subgoals) and (not skill.strategy.strip() or ends(skill.strategy)):
        return tool
    return None


def _ending_call(trajectory: Trajectory) -> ToolCall | None:
    """The run's last tool call (the call that ended it), or None when it made none."""
    for message in reversed(trajectory.messages):
        if message.role == "assistant" and message.tool_calls:
            return message.tool_calls[-1]
    return None


def _normal(text: str) -> str:
    """Lower case, single spaces, without a trailing full stop or semicolon."""
    return " ".join(text.lower().split()).rstrip(" .;")


# -- the distillation prompt ----------------------------------------------------------------------


def run_digest(trajectory: Trajectory, max_chars: int = 3_000, step_chars: int = 240) -> str:
    """The main conversation of a run, one short line per step, for the distillation prompt."""
    lines: list[str] = []
    for message in trajectory.messages:
        if message.role == "assistant":
            for call in message.tool_calls:
                args = json.dumps(call.arguments, ensure_ascii=False)
                lines.append(f"- called {call.name}({_clip(args, step_chars)})")
            if message.content.strip() and not message.tool_calls:
                lines.append(f"- replied: {_clip(message.content, step_chars)}")
        elif message.role == "tool":
            mark = "error" if message.is_error else "result"
            lines.append(f"  {mark}: {_clip(message.content, step_chars)}")
    text = "\n".join(lines) or "(no steps)"
    if len(text) > max_chars:
        head = text[: max_chars // 2]
        tail = text[-max_chars // 2 :]
        text = f"{head}\n  [...]\n{tail}"
    return text


def worked_example(trajectory: Trajectory, max_calls: int = 4, arg_chars: int = 600,
                   result_chars: int = 160) -> str:
    """The calls that worked in a successful run (failed and repeated calls dropped, the last `max_calls` kept), as a
    worked example of a skill: copied from the run, not written by the model, so it is right by construction.
    A call whose arguments or result read like an instruction injection is left out (tool results are data
    from outside, and a skill is shown to every later run that retrieves it)."""
    results = {m.tool_call_id: m for m in trajectory.messages if m.role == "tool"}
    lines: list[str] = []
    seen: set[str] = set()
    for message in trajectory.messages:
        for call in message.tool_calls if message.role == "assistant" else ():
            result, key = results.get(call.id), call_key(call)
            if result is None or result.is_error or key in seen:  # failed, or a repeat
                continue
            seen.add(key)
            args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
            line = f"- {call.name}({_clip(args, arg_chars)})\n  → {_clip(result.content, result_chars)}"
            if not any(pattern.search(line) for pattern in _INJECTION):
                lines.append(line)
    if not lines and trajectory.answer:
        lines.append(f"- answered: {_clip(trajectory.answer, arg_chars)}")
    return "\n".join(lines[-max_calls:])


def distill_messages(trajectory: Trajectory, outcome: str) -> list[Message]:
    """The messages of a distillation turn."""
    user = prompts.DISTILL_USER.format(
        task=_clip(trajectory.task, 2_000), steps=run_digest(trajectory),
        answer=_clip(trajectory.answer or "(none)", 600), outcome=outcome,
    )
    return [Message.system(prompts.DISTILL_SYSTEM), Message.user(user)]


def outcome_text(reward: float | None, success_at: float) -> str:
    """How the run ended, in words for the distillation prompt (success, failure, or unknown)."""
    if reward is None:
        return "unknown (no feedback yet)"
    return f"{'success' if reward >= success_at else 'failure'} (reward {reward:g})"


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
