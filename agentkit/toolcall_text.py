"""Tool calls for models without native tool calling: render tools into the prompt, parse calls back.

The format is a JSON object in tags, one per call:

    <tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>

The parser forgives what small models get wrong: prose around the call, code fences, bare JSON objects
(one or several, as Qwen2.5 writes them instead of its `<tool_call>` tags), single quotes,
Python literals, trailing commas, a missing closing tag or brace, `args`/`parameters` instead of
`arguments`, arguments as a JSON string, and `name(a=1, b=2)` call syntax. It never raises: output it
cannot read becomes `ParsedOutput.error`, which the agent shows to the model so it can correct itself.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.jsontext import lenient_json
from agentkit.messages import ToolCall

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"

_TAG = r"(?:tool[_\- ]?call|function[_\- ]?call)"
_BLOCK = re.compile(rf"<\s*{_TAG}\s*>(.*?)(?:<\s*/\s*{_TAG}\s*>|(?=<\s*{_TAG}\s*>)|\Z)", re.S | re.I)
_ANY_TAG = re.compile(rf"<\s*/?\s*{_TAG}\s*>", re.I)
_FENCE = re.compile(r"```[ \t]*([\w\-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_NAME_KEYS = ("name", "tool", "tool_name", "function_name", "function", "action")
_ARG_KEYS = ("arguments", "args", "parameters", "params", "input", "action_input", "kwargs")

FORMAT_INSTRUCTIONS = f"""To call a tool, reply with one line per call in exactly this form:
{OPEN_TAG}{{"name": "TOOL_NAME", "arguments": {{"ARG": "VALUE"}}}}{CLOSE_TAG}
You may call several tools at once. After the results come back, continue.
When you have the final answer, reply with the answer only, without any {OPEN_TAG}."""


def call_json(call: ToolCall) -> str:
    """A call as the JSON object models write: `{"name": ..., "arguments": {...}}`."""
    return json.dumps({"name": call.name, "arguments": call.arguments})


def render_tools(tools: list[dict[str, Any]]) -> str:
    """The system-prompt section that describes the tools and the call format."""
    lines = ["You can use these tools:"]
    for spec in tools:
        fn = spec.get("function", spec)
        params = json.dumps(fn.get("parameters", {}), separators=(",", ":"))
        lines.append(f"- {fn['name']}: {fn.get('description', '')}\n  parameters: {params}")
    lines.append("")
    lines.append(FORMAT_INSTRUCTIONS)
    return "\n".join(lines)


@dataclass
class ParsedOutput:
    """Model text split into prose and tool calls; `error` says why a call-like text was unreadable."""

    content: str
    calls: list[ToolCall] = field(default_factory=list)
    error: str | None = None


def parse_tool_calls(text: str, tool_names: set[str] | None = None) -> ParsedOutput:
    """Extract tool calls from model text. Never raises."""
    try:
        return _parse(text or "", tool_names)
    except Exception as exc:  # the parser must never take the agent down
        return ParsedOutput(content=text or "", error=f"could not read the tool call ({type(exc).__name__})")


def _parse(text: str, tool_names: set[str] | None) -> ParsedOutput:
    blocks = [m.group(1) for m in _BLOCK.finditer(text)]
    if blocks:
        prose = _ANY_TAG.sub("", _BLOCK.sub("", text)).strip()
        calls: list[ToolCall] = []
        errors: list[str] = []
        for block in blocks:
            found, err = _calls_from_text(block, tool_names)
            calls.extend(found)
            if err:
                errors.append(err)
        if errors and not calls:
            return ParsedOutput(prose, [], "; ".join(errors) + ". " + _hint(text, tool_names))
        return ParsedOutput(prose, calls, None)
    # No tags: a fenced block or a whole-message JSON object that is clearly a call. One shaped exactly like
    # a call ({"name": ..., "arguments": {...}}) to a tool that does not exist is an error the model can fix,
    # not an answer (small models invent tools such as "count_tracks").
    unknown: str | None = None
    for m in _FENCE.finditer(text):
        lang, body = m.group(1).lower(), m.group(2)
        if lang in ("", "json", "tool_call", "tool", "function_call", "python", "py"):
            found, err = _calls_from_text(body, tool_names, strict=True)
            if found:
                return ParsedOutput(_FENCE.sub("", text).strip(), found)
            unknown = unknown or err
    stripped = text.strip()
    if stripped.startswith("{") or stripped.startswith("["):
        found, err = _calls_from_text(stripped, tool_names, strict=True)
        if found:
            return ParsedOutput("", found)
        unknown = unknown or err
    if unknown:
        return ParsedOutput(text.strip(), [], unknown)
    return ParsedOutput(text.strip())


_HINT = f'Write each call as {OPEN_TAG}{{"name": "TOOL_NAME", "arguments": {{...}}}}{CLOSE_TAG}'
_NAMED = re.compile(r'"name"\s*:\s*"([\w.\-]+)"')


def _hint(text: str, tool_names: set[str] | None) -> str:
    """The format hint, with the tool the broken call meant when it names a real one (small models copy a
    placeholder such as TOOL_NAME literally)."""
    meant = next((m.group(1) for m in _NAMED.finditer(text) if tool_names and m.group(1) in tool_names), None)
    if meant is None:
        return _HINT
    return f'Write the call as {OPEN_TAG}{{"name": "{meant}", "arguments": {{...}}}}{CLOSE_TAG}'


def _calls_from_text(
    body: str, tool_names: set[str] | None, strict: bool = False
) -> tuple[list[ToolCall], str | None]:
    body = _strip_fence(body.strip())
    if not body:
        return [], "empty tool call"
    value = lenient_json(body)
    if value is None:
        value = _json_sequence(body)  # several objects one after another (one call per line)
    if value is None:
        call = _call_syntax(body)
        if call is not None:
            return [call], None
        return [], f"tool call is not valid JSON: {body[:80]!r}"
    items = value if isinstance(value, list) else [value]
    if not items:
        return [], "empty tool call"
    calls: list[ToolCall] = []
    for item in items:
        call = _call_from_object(item)
        if call is None:
            if strict:
                return [], None
            return calls, f"tool call needs a 'name' and 'arguments': {body[:80]!r}"
        if strict and tool_names is not None and call.name not in tool_names:
            if tool_names and isinstance(item, dict) and any(k in item for k in _ARG_KEYS) and len(item) <= 3:
                known = ", ".join(sorted(tool_names)) or "none"
                return [], f"there is no tool named {call.name!r}; call one of: {known}"
            return [], None
        calls.append(call)
    return calls, None


def _json_sequence(text: str) -> list[Any] | None:
    """Two or more JSON values written one after another (separated by blanks or commas), else None.

    A reply cut off by the token limit in the middle of a later value keeps the complete values before it
    (small models list call after call until the limit); the cut-off one is dropped, never guessed at."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and (text[pos].isspace() or text[pos] == ","):
            pos += 1
        if pos >= len(text):
            break
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError:
            if values and text[pos] in "{[" and _unterminated(text[pos:]):
                return values
            return None
        values.append(value)
    return values if len(values) > 1 else None


def _unterminated(text: str) -> bool:
    """Whether `text` is a JSON object or array that was cut off (its brackets never close)."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return False
    return depth > 0


def _call_from_object(obj: Any) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI shape {"function": {"name", "arguments"}}
        inner = dict(obj["function"])
        if "id" in obj:
            inner.setdefault("id", obj["id"])
        obj = inner
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)
    if name is None:
        return None
    args: Any = next((obj[k] for k in _ARG_KEYS if k in obj), None)
    if args is None:
        args = {k: v for k, v in obj.items() if k not in (*_NAME_KEYS, "id", "type")}
    if isinstance(args, str):
        parsed = lenient_json(args) if args.strip() else {}
        args = parsed if isinstance(parsed, dict) else {"input": args}
    if not isinstance(args, dict):
        return None
    name = name.strip()
    if not re.fullmatch(r"[\w.\-]+", name):
        return None
    kwargs: dict[str, Any] = {"name": name, "arguments": args}
    if isinstance(obj.get("id"), str):
        kwargs["id"] = obj["id"]
    return ToolCall(**kwargs)


def _call_syntax(body: str) -> ToolCall | None:
    """`add(a=1, b=2)` → ToolCall; only literal keyword arguments are accepted."""
    try:
        node = ast.parse(body.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not isinstance(node, ast.Call) or node.args or not isinstance(node.func, ast.Name | ast.Attribute):
        return None
    name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
    try:
        args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
    except (ValueError, SyntaxError):
        return None
    return ToolCall(name=name, arguments=args)


def _strip_fence(body: str) -> str:
    m = _FENCE.search(body)
    return m.group(2).strip() if m and body.lstrip().startswith("```") else body


# -- tool_choice ----------------------------------------------------------------------------------
TOOL_CHOICE_KEYWORDS = ("auto", "required", "none")


def tool_choice_kind(choice: str | None) -> str:
    """"auto", "required", "none" or "named" for a `GenerationSettings.tool_choice` value."""
    if choice is None or choice == "auto":
        return "auto"
    if choice in ("required", "none"):
        return choice
    if not choice.strip():
        raise ValueError("tool_choice is empty: use auto, required, none or a tool's name")
    return "named"


def tools_for_choice(tools: list[dict[str, Any]], choice: str | None) -> list[dict[str, Any]]:
    """The tools to offer under `choice`: none for "none", only the named one for a name."""
    kind = tool_choice_kind(choice)
    if kind == "none":
        return []
    if kind != "named":
        return list(tools)
    chosen = [s for s in tools if s.get("function", s).get("name") == choice]
    if not chosen:
        names = ", ".join(s.get("function", s).get("name", "?") for s in tools) or "none"
        raise ValueError(f"tool_choice {choice!r} names no offered tool (offered: {names})")
    return chosen


def forced_prefix(choice: str | None, tools: Sequence[dict[str, Any]] = ()) -> str:
    """Text that begins the reply so it must be a call: `<tool_call>` for "required"; for a name, the call up to
    its arguments' opening brace, and, when `tools` gives the named tool's schema, up to the value of its first
    required argument (a small model handed only the brace tends to close it at once), with the opening quote
    when that value is a string (a small model that had just answered 2328.6 in text wrote `"sql": 2328.6`)."""
    kind = tool_choice_kind(choice)
    if kind == "required":
        return OPEN_TAG
    if kind == "named":
        prefix = OPEN_TAG + json.dumps({"name": choice})[:-1] + ', "arguments": {'
        spec = next((s.get("function", s) for s in tools if s.get("function", s).get("name") == choice), None)
        params = (spec or {}).get("parameters", {})
        required = params.get("required") or []
        if required and isinstance(required[0], str):
            prefix += json.dumps(required[0]) + ": "
            schema = params.get("properties", {}).get(required[0])
            if isinstance(schema, dict) and schema.get("type") == "string":
                prefix += '"'
        return prefix
    return ""


def choice_satisfied(calls: list[ToolCall], choice: str | None) -> bool:
    """Whether a reply's tool calls obey `choice` (auto and none accept anything; none offers no tool)."""
    kind = tool_choice_kind(choice)
    if kind == "required":
        return bool(calls)
    if kind == "named":
        return any(c.name == choice for c in calls)
    return True


def choice_reminder(choice: str | None) -> str:
    """The message that re-asks a model which did not call the tool it had to."""
    target = "one of the tools" if tool_choice_kind(choice) == "required" else f"the tool {choice}"
    return (f"You must call {target} now. Reply with the call only, in exactly this form:\n"
            f"{OPEN_TAG}{{\"name\": \"TOOL_NAME\", \"arguments\": {{\"ARG\": \"VALUE\"}}}}{CLOSE_TAG}")
