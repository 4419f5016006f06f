"""Reading a whole OpenAI chat.completions response (an SDK object or a dict) as a `ModelResponse`.

`parse_completion(response, tools)` reads the response field by field, whatever the server or a proxy sent,
and never raises on its shape: a tool call without a name or with arguments that are not a JSON object, no
choices, `content: null` without calls, a reply past `MAX_REPLY_CHARS` become a reply whose `parse_error`
the model is shown; a missing or repeated call id, arguments sent as an object and negative or unreadable
usage counts are repaired (see `agentkit.models.boundary`). Each is logged as a warning. The field readers
here are shared with `agentkit.models.openai_stream` and the vLLM backend.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from agentkit.jsontext import JSONLimitError, lenient_json
from agentkit.messages import Message, ToolCall, Usage, new_id
from agentkit.models.boundary import (
    MAX_ID_CHARS,
    MAX_NAME_CHARS,
    arguments_problem,
    count,
    reply_text,
    token_ids,
    too_long,
    unreadable_reply,
)
from agentkit.models.protocol import ModelResponse, TokenRecord, ToolSpecs
from agentkit.tools.text_calls import MAX_CALLS_READ, MAX_REPLY_CHARS, parse_tool_calls

log = logging.getLogger(__name__)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """Field of an SDK object or a dict, including extra fields servers add (vLLM token ids)."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        value = obj.get(key)
        return default if value is None else value
    value = getattr(obj, key, None)
    if value is None:
        extra = getattr(obj, "model_extra", None)
        value = extra.get(key) if isinstance(extra, dict) else None
    return default if value is None else value


def assistant_message(content: str, raw_calls: Sequence[tuple[Any, Any, Any]], tools: ToolSpecs,
                      *, native_tools: bool = True) -> Message:
    """Build the assistant message from text and raw (id, name, arguments) tool calls as the server sent them.

    Arguments (a JSON string, read leniently, or an object) must give a JSON object; a call without a name or
    with unreadable arguments makes the whole message a `parse_error` (its calls shown as text) so the model
    can correct itself. A missing or repeated id gets a fresh one; at most `MAX_CALLS_READ` calls are read.
    A reply without native calls (the text protocol, or a server whose parser missed a call written as a
    ```json fence, bare JSON or `<tool_call>` tags, as small open models served by vLLM write them) is read by
    the text protocol's parser: its calls, or a `parse_error` when a call names no offered tool or cannot be
    read. A reply past `MAX_REPLY_CHARS` keeps its beginning and becomes a `parse_error`."""
    if len(content) > MAX_REPLY_CHARS:
        kept, too_long_problem = too_long(content)
        log.warning("a reply of %d characters was not read (at most %d)", len(content), MAX_REPLY_CHARS)
        return Message(role="assistant", content=kept, parse_error=too_long_problem)
    if not native_tools or not raw_calls:
        if not tools:
            return Message.assistant(content)
        parsed = parse_tool_calls(content, {_get(s.get("function", s), "name") for s in tools})
        if parsed.error:
            return Message(role="assistant", content=content, parse_error=parsed.error)
        return Message.assistant(parsed.content if parsed.calls else content, parsed.calls)
    if len(raw_calls) > MAX_CALLS_READ:
        log.warning("a reply made %d tool calls; the first %d were read", len(raw_calls), MAX_CALLS_READ)
    calls: list[ToolCall] = []
    errors: list[str] = []
    ids: set[str] = set()
    for call_id, raw_name, arguments in raw_calls[:MAX_CALLS_READ]:
        name = raw_name.strip() if isinstance(raw_name, str) else ""
        args, problem = _arguments(name, arguments)
        if not name:
            errors.append("a tool call without a tool name")
        elif len(name) > MAX_NAME_CHARS:
            errors.append(f"a tool name longer than {MAX_NAME_CHARS} characters")
        elif problem is not None:
            errors.append(problem)
        else:
            if not (isinstance(call_id, str) and call_id.strip() and len(call_id) <= MAX_ID_CHARS) or call_id in ids:
                call_id = new_id()
            ids.add(call_id)
            calls.append(ToolCall(id=call_id, name=name, arguments=args))
    if errors:
        for error in errors:
            log.warning("a tool call was not used: %s", error)
        shown = "\n".join(f"{reply_text(name)[:MAX_NAME_CHARS]}({reply_text(arguments)[:2000]})"
                          for _, name, arguments in raw_calls[:MAX_CALLS_READ])
        text = f"{content}\n{shown}".strip()
        return Message(role="assistant", content=text,
                       parse_error="; ".join(errors) + ". Call the tool again with JSON object arguments.")
    return Message.assistant(content, calls)


def _arguments(name: str, arguments: Any) -> tuple[dict[str, Any], str | None]:
    """A call's arguments as sent (a JSON string, an object, or nothing) as a dict, or why they are unusable."""
    shown = name[:80] or "the call"
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}, None
    if isinstance(arguments, str):
        try:
            value = lenient_json(arguments, raise_limits=True)
        except JSONLimitError as exc:
            return {}, f"the arguments of {shown} are {exc}"
        if isinstance(value, dict):
            return value, None
        return {}, f"the arguments of {shown} are not a JSON object: {arguments[:120]!r}"
    if isinstance(arguments, dict):
        problem = arguments_problem(shown, arguments)
        return (arguments, None) if problem is None else ({}, problem)
    return {}, f"the arguments of {shown} are not a JSON object: {reply_text(arguments)[:120]!r}"


def _raw_calls(value: Any) -> list[tuple[Any, Any, Any]]:
    """(id, name, arguments) of each tool call of a message's `tool_calls` field, as sent."""
    if not isinstance(value, list | tuple):
        return []
    calls = []
    for item in value[: MAX_CALLS_READ + 1]:
        fn = _get(item, "function")
        calls.append((_get(item, "id"), _get(fn, "name"), _get(fn, "arguments")))
    return calls


def _usage(value: Any) -> Usage:
    """A response's `usage` field as `Usage` (counts below 0, or not numbers, read as 0)."""
    return Usage(input_tokens=count(_get(value, "prompt_tokens", 0)),
                 output_tokens=count(_get(value, "completion_tokens", 0)), calls=1)


def _finish(value: Any) -> str:
    return value if isinstance(value, str) and value else "stop"


def nonempty_message(message: Message) -> Message:
    """`message`, or a reply whose `parse_error` asks for an answer when it has neither text nor calls (a server's
    `content: null` with no tool calls)."""
    if message.content.strip() or message.tool_calls or message.parse_error:
        return message
    log.warning("the model server's reply had no text and no tool calls")
    return Message(role="assistant", content="", parse_error=EMPTY_REPLY)


EMPTY_REPLY = "the reply was empty: answer in text, or call a tool"


def _token_id(token: str) -> int | None:
    if token.startswith("token_id:"):
        try:
            value = int(token[len("token_id:"):])
        except ValueError:
            return None
        return value if value >= 0 else None
    return None


def token_record(response: Any, choice: Any, logprobs: list[float], completion_text: str,
                 completion_ids: list[int] | None, token_strings: list[str]) -> TokenRecord | None:
    """A `TokenRecord` when the server gave both prompt and completion token ids (vLLM), else None (also when
    they are not lists of ids, or the log-probs do not match the completion)."""
    prompt_ids = token_ids(_get(choice, "prompt_token_ids") or _get(response, "prompt_token_ids"))
    if completion_ids is None:
        ids = [_token_id(t) for t in token_strings]
        completion_ids = [i for i in ids if i is not None] if ids and all(i is not None for i in ids) else None
    if not prompt_ids or completion_ids is None:
        return None
    if logprobs and len(logprobs) != len(completion_ids):
        return None
    if not all(math.isfinite(x) for x in logprobs):
        return None
    return TokenRecord(prompt_ids=list(prompt_ids), completion_ids=list(completion_ids), logprobs=list(logprobs),
                       temperature=1.0, completion_text=completion_text)


def _logprob_items(choice: Any) -> list[Any]:
    lp = _get(choice, "logprobs")
    items = _get(lp, "content") if lp is not None else None
    return list(items) if isinstance(items, list | tuple) else []


def _logprob(item: Any) -> float:
    value = _get(item, "logprob", 0.0)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def _token_text(item: Any) -> str:
    value = _get(item, "token", "")
    return value if isinstance(value, str) else ""


def parse_completion(response: Any, tools: ToolSpecs, *, native_tools: bool = True) -> ModelResponse:
    """A chat.completions response (SDK object or dict) as a `ModelResponse`. Never raises: a response with no
    choices, or one that cannot be read at all, is a reply whose `parse_error` says so (the loop asks again)."""
    try:
        return _completion(response, tools, native_tools)
    except Exception as exc:  # a shape nothing above expected
        log.warning("a model server's response could not be read: %r", exc)
        return unreadable_reply(f"the model server's reply could not be read ({type(exc).__name__})", raw=response)


def _completion(response: Any, tools: ToolSpecs, native_tools: bool) -> ModelResponse:
    usage = _usage(_get(response, "usage"))
    choices = _get(response, "choices")
    if not isinstance(choices, list | tuple) or not choices:
        log.warning("a model server's response had no choices")
        return unreadable_reply(NO_CHOICES, raw=response, usage=usage)
    choice = choices[0]
    msg = _get(choice, "message")
    content = reply_text(_get(msg, "content"))
    items = _logprob_items(choice)
    tokens = token_record(response, choice, [_logprob(i) for i in items], content,
                          token_ids(_get(choice, "token_ids")), [_token_text(i) for i in items])
    message = assistant_message(content, _raw_calls(_get(msg, "tool_calls")), tools, native_tools=native_tools)
    return ModelResponse(message=nonempty_message(message), usage=usage, tokens=tokens,
                         finish_reason=_finish(_get(choice, "finish_reason")), raw=response)


NO_CHOICES = "the model server returned no reply (no choices): reply again"
