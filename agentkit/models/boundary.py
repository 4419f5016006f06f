"""What a model's reply must be before anything acts on it, and how a reply that is not is repaired.

Every backend (and any `Model` a user writes) hands the agent a `ModelResponse`; `checked_response` makes
sure it keeps the contract the loop relies on, whatever the server, proxy or model code produced:

- the message is an assistant `Message` whose text is a string of at most `MAX_REPLY_CHARS` characters
  (a longer one keeps its first `KEPT_CHARS` and becomes a `parse_error` saying why);
- every tool call has a non-empty string name of at most `MAX_NAME_CHARS` characters and arguments that are
  a JSON object nested at most `agentkit.jsontext.MAX_JSON_DEPTH` deep; a reply with a call that breaks
  this keeps the calls as text and gets a `parse_error` the model is shown, so it can call again;
- call ids are non-empty and distinct within the reply (a missing or repeated id gets a fresh one);
- every string (the text, a call's name, id, argument keys and values) can be written as UTF-8: a code point
  that cannot (a lone surrogate, which JSON's "\\ud800" decodes to) becomes U+FFFD (`clean_text`);
- usage counts are whole numbers of at least 0, and token records hold token ids (whole numbers of at least
  0) with one log-prob per completion token, or are dropped (the run goes on without them).

Each repair is logged as a warning. `reply_text`, `count` and `token_ids` read the loose shapes of wire
formats (JSON from an HTTP server) for the backends.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import Any

from agentkit.jsontext import MAX_JSON_CHARS, MAX_JSON_DEPTH
from agentkit.messages import JSON_SCALARS, Message, ToolCall, Usage, clean_text, new_id
from agentkit.models.protocol import ModelResponse, TokenRecord
from agentkit.tools.text_calls import MAX_REPLY_CHARS

log = logging.getLogger(__name__)

MAX_NAME_CHARS = 256
"""The longest tool name a call may give."""
MAX_ID_CHARS = 256
"""The longest call id kept; a longer one is replaced by a fresh id."""
KEPT_CHARS = 2_000
"""How much of a reply past `MAX_REPLY_CHARS` is kept (with a note saying how long it was)."""

CALL_AGAIN = "Call the tool again with a tool name and JSON object arguments."


def reply_text(value: Any) -> str:
    """The text of a wire-format `content` field: a string as it is, None as "", a list of content parts
    ({"type": "text", "text": ...}) as their texts joined, anything else as JSON (or its `str`)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        parts = []
        for part in value:
            text = part.get("text") if isinstance(part, dict) else getattr(part, "text", part)
            parts.append(text if isinstance(text, str) else reply_text(text) if text is not None else "")
        return "".join(parts)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        try:
            return str(value)
        except Exception:  # a value whose text cannot be had
            return ""


def count(value: Any) -> int:
    """A token count from a wire-format field: a whole number of at least 0 (0 for anything else)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and math.isfinite(value):
        return max(int(value), 0)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip()[:18])
    return 0


def token_ids(value: Any) -> list[int] | None:
    """A list of token ids from a wire-format field, or None when it is not one (ids are whole numbers of at
    least 0; a bool or a float is not an id)."""
    if not isinstance(value, list | tuple):
        return None
    ids = list(value)
    if ids and (not {type(i) for i in ids} <= {int} or min(ids) < 0):
        return None
    return ids


def log_probs(value: Any) -> list[float] | None:
    """A list of log-probabilities (finite numbers, not bools), or None when it is not one."""
    if not isinstance(value, list | tuple):
        return None
    out = list(value)
    if out and not {type(x) for x in out} <= {int, float}:
        return None
    floats = [float(x) for x in out]
    return floats if all(math.isfinite(x) for x in floats) else None


def unreadable_reply(problem: str, *, raw: Any = None, usage: Usage | None = None) -> ModelResponse:
    """A reply that says to the model (through `parse_error`) that what came back could not be read."""
    return ModelResponse(message=Message(role="assistant", content="", parse_error=problem),
                         usage=usage or Usage(calls=1), finish_reason="error", raw=raw)


def too_long(text: str, *, length: int | None = None) -> tuple[str, str]:
    """A reply past `MAX_REPLY_CHARS` (`length` characters in all; default: `text`'s length): the part kept,
    with a note, and the problem to show the model."""
    length = len(text) if length is None else length
    kept = text[:KEPT_CHARS] + f"\n[... {length:,} characters in all; the rest was not kept]"
    return kept, f"reply too long to read ({length:,} characters, at most {MAX_REPLY_CHARS:,}): write a shorter reply"


def checked_response(response: Any) -> ModelResponse:
    """`response` as a `ModelResponse` that keeps the contract in the module docstring: the same object when
    it already does, else a repaired copy (the model's own objects are not changed). Never raises."""
    try:
        return _checked(response)
    except Exception as exc:  # a reply so odd that reading it failed: the model is asked again
        log.warning("a model reply could not be checked: %r", exc)
        return unreadable_reply(f"the model's reply could not be read ({type(exc).__name__})")


def _checked(response: Any) -> ModelResponse:
    if not isinstance(response, ModelResponse):
        log.warning("a model returned %s instead of a ModelResponse", type(response).__name__)
        return unreadable_reply(f"the model returned no reply (a {type(response).__name__})")
    message = response.message
    if not isinstance(message, Message) or message.role != "assistant":
        log.warning("a model reply's message is %r, not an assistant message", type(message).__name__)
        return unreadable_reply("the model's reply was not an assistant message", raw=response.raw,
                                usage=_checked_usage(response.usage))
    checked = checked_message(message)
    usage = _checked_usage(response.usage)
    tokens = _checked_tokens(response.tokens)
    finish = response.finish_reason if isinstance(response.finish_reason, str) else "stop"
    if checked is message and usage is response.usage and tokens is response.tokens \
            and finish is response.finish_reason:
        return response
    return ModelResponse(message=checked, usage=usage, tokens=tokens, finish_reason=finish, raw=response.raw)


def checked_message(message: Message) -> Message:
    """An assistant message that keeps the contract (see the module docstring): `message` itself when it does."""
    return message if _plain(message) else _repaired(message)


def _repaired(message: Message) -> Message:
    """`checked_message` field by field: `message` itself when it keeps the contract, else a repaired copy."""
    content = clean_text(message.content if isinstance(message.content, str) else reply_text(message.content))
    problems: list[str] = []
    if len(content) > MAX_REPLY_CHARS:
        content, too_long_problem = too_long(content)
        problems.append(too_long_problem)
    calls = message.tool_calls if isinstance(message.tool_calls, list) else []
    kept: list[ToolCall] = []
    shown: list[str] = []
    seen: set[str] = set()
    for call in calls:
        problem = call_problem(call)
        if problem is not None:
            problems.append(problem)
            shown.append(_shown(call))
            continue
        name, arguments = clean_text(call.name), clean_text(call.arguments)
        if name is not call.name or arguments is not call.arguments:
            call = call.model_copy(update={"name": name, "arguments": arguments})
        if isinstance(call.id, str) and clean_text(call.id) is not call.id:
            call = call.model_copy(update={"id": ""})
        if not (isinstance(call.id, str) and call.id.strip() and len(call.id) <= MAX_ID_CHARS) or call.id in seen:
            call = call.model_copy(update={"id": new_id()})
        seen.add(call.id)
        kept.append(call)
    parse_error = message.parse_error if isinstance(message.parse_error, str) or message.parse_error is None \
        else reply_text(message.parse_error)
    if parse_error is not None:
        parse_error = clean_text(parse_error)
    if problems:
        for problem in problems:
            log.warning("a model reply was not used as it came: %s", problem)
        parse_error = "; ".join(problems)
        if shown:  # the calls become text the model can read back, as a reply with a broken call does
            content = "\n".join([content, *shown]).strip()
            kept = []
            parse_error += ". " + CALL_AGAIN
    unchanged = (content is message.content and parse_error is message.parse_error and calls is message.tool_calls
                 and len(kept) == len(calls) and all(a is b for a, b in zip(kept, calls, strict=True))
                 and message.tool_call_id is None and message.name is None and message.is_error is False)
    if unchanged:
        return message
    return Message(role="assistant", content=content, tool_calls=kept, parse_error=parse_error)


def _plain(message: Message) -> bool:
    """Whether `message` keeps the contract in the common way, checked in one pass: ASCII text within bounds, no
    parse error, and calls of known type with ASCII names and ids, distinct ids, and flat ASCII arguments. A
    shortcut of `_repaired` (which returns such a message itself), tested to agree with it."""
    content, calls = message.content, message.tool_calls
    if not (type(content) is str and content.isascii() and len(content) <= MAX_REPLY_CHARS
            and message.parse_error is None and message.tool_call_id is None and message.name is None
            and message.is_error is False and type(calls) is list):
        return False
    ids: set[str] = set()
    for call in calls:
        if type(call) is not ToolCall:
            return False
        name, call_id, arguments = call.name, call.id, call.arguments
        if not (type(name) is str and name.isascii() and 0 < len(name) <= MAX_NAME_CHARS
                and not name.isspace() and type(call_id) is str and call_id.isascii()
                and 0 < len(call_id) <= MAX_ID_CHARS and not call_id.isspace() and call_id not in ids
                and type(arguments) is dict and _flat(arguments) and clean_text(arguments) is arguments):
            return False
        ids.add(call_id)
    return True


def call_problem(call: Any) -> str | None:
    """Why `call` cannot be run as it is (no name, arguments that are not a JSON object, too deep, too long),
    or None."""
    if not isinstance(call, ToolCall):
        return f"a tool call that is a {type(call).__name__}, not a call"
    name = call.name
    if not isinstance(name, str) or not name.strip():
        return "a tool call without a tool name"
    if len(name) > MAX_NAME_CHARS:
        return f"a tool name longer than {MAX_NAME_CHARS} characters"
    return arguments_problem(name, call.arguments)


def arguments_problem(name: str, arguments: Any) -> str | None:
    """Why `arguments` are not usable as the arguments of the tool `name` (not a JSON object with string keys,
    nested deeper than `MAX_JSON_DEPTH`, parts shared or circular, longer than `MAX_JSON_CHARS` as JSON,
    not writable as JSON), or None. Linear in their size."""
    shown = name[:80]
    if not isinstance(arguments, dict):
        return f"the arguments of {shown} are not a JSON object"
    if _flat(arguments):
        return None
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(arguments, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"the arguments of {shown} are too deeply nested to read (depth > {MAX_JSON_DEPTH})"
        if id(value) in seen:
            return f"the arguments of {shown} repeat a part of themselves"
        seen.add(id(value))
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                return f"the arguments of {shown} have keys that are not strings"
            children: Sequence[Any] = list(value.values())
        else:
            children = value
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list | tuple))
    try:
        size = len(json.dumps(arguments, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return f"the arguments of {shown} cannot be written as JSON"
    if size > MAX_JSON_CHARS:
        return (f"the arguments of {shown} are too long to read ({size:,} characters as JSON, "
                f"at most {MAX_JSON_CHARS:,})")
    return None


_BIG_INT = 10**4000  # Python will not write an int of more than 4300 digits as text


def _flat(arguments: dict[Any, Any]) -> bool:
    """Whether `arguments` are one level of JSON scalars under string keys, well within `MAX_JSON_CHARS`:
    such arguments (nearly every call's) need no other check."""
    size = 0
    for key, value in arguments.items():
        kind = type(value)
        if type(key) is not str or kind not in JSON_SCALARS:
            return False
        if kind is str:
            size += len(value)
        elif kind is int and not -_BIG_INT < value < _BIG_INT:
            return False
        size += len(key)
    return size < MAX_JSON_CHARS // 4


def _shown(call: Any) -> str:
    """A broken call as text for the model to read back: name(arguments), cut to 200 characters."""
    name = getattr(call, "name", None)
    arguments = getattr(call, "arguments", None)
    try:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        args = "..."
    shown: str = clean_text(f"{name if isinstance(name, str) else ''}({args})"[:200])
    return shown


def _checked_usage(usage: Any) -> Usage:
    """`usage` when its counts are whole numbers of at least 0, else a repaired copy."""
    if isinstance(usage, Usage):
        n_in, n_out, calls, cost = usage.input_tokens, usage.output_tokens, usage.calls, usage.cost_usd
        if (type(n_in) is int and type(n_out) is int and type(calls) is int and n_in >= 0 and n_out >= 0
                and calls >= 0 and (cost is None or (type(cost) is float and math.isfinite(cost) and cost >= 0))):
            return usage
        log.warning("a model reply's usage was repaired: %r", usage)
        cost = usage.cost_usd if isinstance(usage.cost_usd, int | float) and math.isfinite(usage.cost_usd) \
            and usage.cost_usd >= 0 else None
        return Usage(input_tokens=count(usage.input_tokens), output_tokens=count(usage.output_tokens),
                     calls=count(usage.calls), cost_usd=cost)
    return Usage(calls=1)


def _checked_tokens(tokens: Any) -> TokenRecord | None:
    """`tokens` when it is a consistent record (ids, one log-prob per completion token or none), else None."""
    if tokens is None:
        return None
    if isinstance(tokens, TokenRecord):
        prompt, completion = token_ids(tokens.prompt_ids), token_ids(tokens.completion_ids)
        logprobs = log_probs(tokens.logprobs)
        if prompt is not None and completion is not None and logprobs is not None \
                and (not logprobs or len(logprobs) == len(completion)) \
                and isinstance(tokens.temperature, int | float) and isinstance(tokens.prompt_text, str) \
                and isinstance(tokens.completion_text, str):
            return tokens
    log.warning("a model reply's token record was dropped: it is not a consistent record")
    return None
