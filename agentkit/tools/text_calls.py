"""Tool calls for models without native tool calling: render tools into the prompt, parse calls back.

The format is a JSON object in tags, one per call:

    <tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>

The parser forgives what small models get wrong: prose around the call, code fences, bare JSON objects
(one or several, as Qwen2.5 writes them instead of its `<tool_call>` tags), single quotes,
Python literals, trailing commas, a missing closing tag or brace, `args`/`parameters` instead of
`arguments`, arguments as a JSON string, and `name(a=1, b=2)` call syntax. It never raises: output it
cannot read becomes `ParsedOutput.error`, which the agent shows to the model so it can correct itself.

Its time is linear in the length of the reply, whatever the reply holds, within these limits (past one, the
reply gets an error saying which, and a warning is logged):

- `MAX_REPLY_CHARS`: the longest reply read for calls;
- `MAX_CALLS_READ`: the most calls (tagged blocks, fences, values one after another) read from one reply;
- `agentkit.jsontext.MAX_JSON_DEPTH`: the deepest nesting of a call's JSON (checked by a linear scan before
  any decoder sees it, so no reply can make Python recurse too deep);
- `MAX_CALL_SYNTAX_CHARS`: the most text of one reply read as `name(a=1)` call syntax (Python's own parser
  reads it, which is slow per character).
"""

from __future__ import annotations

import ast
import json
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.jsontext import JSONLimitError, json_shape, lenient_json
from agentkit.messages import ToolCall

log = logging.getLogger(__name__)

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"

MAX_REPLY_CHARS = 1_000_000
"""The longest reply (in characters) read for tool calls; a longer one is an error the model is shown."""
MAX_CALLS_READ = 64
"""The most tool calls read from one reply (the tool runner runs at most `agentkit.tools.MAX_CALLS_PER_REPLY`
of them and tells the model about the rest)."""
MAX_CALL_SYNTAX_CHARS = 4_000
"""The most characters of one reply read as `name(a=1, b=2)` call syntax, all such calls together."""

_TAG = r"(?:tool[_\- ]?call|function[_\- ]?call)"
_ANY_TAG = re.compile(rf"<\s*/?\s*{_TAG}\s*>", re.I)
_FENCE_HEAD = re.compile(r"```[ \t]*([\w\-]*)[ \t]*\n?")  # a fence's opening and its language
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
    """Extract tool calls from model text. Never raises; linear in the length of `text` (see the module)."""
    text = text if isinstance(text, str) else ""
    if len(text) > MAX_REPLY_CHARS:
        log.warning("a reply of %d characters was not read for tool calls (at most %d)", len(text), MAX_REPLY_CHARS)
        return ParsedOutput(content=text, error=f"reply too long to read ({len(text):,} characters, at most "
                                                f"{MAX_REPLY_CHARS:,}): write a shorter reply")
    try:
        return _Reader(tool_names).parse(text)
    except Exception as exc:  # the parser must never take the agent down
        log.warning("the tool-call parser failed on a reply of %d characters: %r", len(text), exc)
        return ParsedOutput(content=text, error=f"could not read the tool call ({type(exc).__name__})")


class _Reader:
    """One reply's parse: the offered tool names and what is left of the call-syntax allowance."""

    def __init__(self, tool_names: set[str] | None) -> None:
        self.tool_names = tool_names
        self.syntax_chars = MAX_CALL_SYNTAX_CHARS

    def parse(self, text: str) -> ParsedOutput:
        """The calls of a reply (within `MAX_REPLY_CHARS`): tagged blocks, else fences, else the bare reply."""
        tool_names = self.tool_names
        blocks, prose = _tagged_blocks(text)
        if blocks:
            calls: list[ToolCall] = []
            errors: list[str] = []
            for block in blocks:
                found, err = self.calls_from_text(block, room=MAX_CALLS_READ - len(calls))
                calls.extend(found)
                if err:
                    errors.append(err)
            if errors and not calls:
                return ParsedOutput(prose, [], "; ".join(errors) + ". " + _hint(text, tool_names))
            return ParsedOutput(prose, calls, None)
        # No tags: a fenced block or a whole-message JSON object that is clearly a call. One shaped exactly like
        # a call ({"name": ..., "arguments": {...}}) to a tool that does not exist is an error the model can
        # fix, not an answer (small models invent tools such as "count_tracks").
        unknown: str | None = None
        for i, (lang, body) in enumerate(_fences(text)):
            if i == MAX_CALLS_READ:
                break
            if lang.lower() in ("", "json", "tool_call", "tool", "function_call", "python", "py"):
                found, err = self.calls_from_text(body, strict=True)
                if found:
                    return ParsedOutput(_outside_fences(text).strip(), found)
                unknown = unknown or err
        stripped = text.strip()
        if stripped.startswith("{") or stripped.startswith("["):
            found, err = self.calls_from_text(stripped, strict=True)
            if found:
                return ParsedOutput("", found)
            unknown = unknown or err
        if unknown:
            return ParsedOutput(text.strip(), [], unknown)
        return ParsedOutput(text.strip())

    def calls_from_text(self, body: str, strict: bool = False, room: int = MAX_CALLS_READ
                        ) -> tuple[list[ToolCall], str | None]:
        """The calls in one block, fence or bare reply, and why it could not be read (None: it could, or in
        `strict` mode it is not a call at all)."""
        tool_names = self.tool_names
        body = _strip_fence(body.strip())
        if not body:
            return [], "empty tool call"
        try:
            value = lenient_json(body, raise_limits=True)
        except JSONLimitError as exc:
            log.warning("a tool call was not read: %s", exc)
            return [], f"tool call {exc}"
        if value is None:
            value = _json_sequence(body)  # several objects one after another (one call per line)
        if value is None:
            call = self.call_syntax(body)
            if call is not None:
                return [call], None
            return [], f"tool call is not valid JSON: {body[:80]!r}"
        items = value if isinstance(value, list) else [value]
        if not items:
            return [], "empty tool call"
        calls: list[ToolCall] = []
        for item in items[: max(room, 0)]:
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

    def call_syntax(self, body: str) -> ToolCall | None:
        """`add(a=1, b=2)` → ToolCall, within the reply's call-syntax allowance (Python's parser is slow)."""
        body = body.strip()
        if not _CALL_START.match(body) or not body.endswith(")") or len(body) > self.syntax_chars:
            return None
        self.syntax_chars -= len(body)
        return _call_syntax(body)


def _tagged_blocks(text: str) -> tuple[list[str], str]:
    """The texts of the reply's tagged calls (each runs from an opening tag to the next tag, or to the end) and
    the prose around them, tags removed. One pass over the tags; at most `MAX_CALLS_READ` blocks are read (the
    text after the last one read is left out of the prose too)."""
    blocks: list[str] = []
    prose: list[str] = []
    pos = 0  # the start of the text not yet given to a block or the prose
    opened: re.Match[str] | None = None
    for tag in _ANY_TAG.finditer(text):
        closing = "/" in tag.group()
        if opened is not None:
            blocks.append(text[opened.end() : tag.start()])
            opened = None
            pos = tag.end() if closing else tag.start()
            if len(blocks) == MAX_CALLS_READ:
                log.warning("a reply has more than %d tool-call blocks; the rest were not read", MAX_CALLS_READ)
                break
        if not closing:
            prose.append(text[pos : tag.start()])
            opened = tag
    else:
        if opened is not None:
            blocks.append(text[opened.end() :])
        elif blocks:
            prose.append(text[pos:])
    return blocks, _ANY_TAG.sub("", "".join(prose)).strip()


_HINT = f'Write each call as {OPEN_TAG}{{"name": "TOOL_NAME", "arguments": {{...}}}}{CLOSE_TAG}'
_NAMED = re.compile(r'"name"\s*:\s*"([\w.\-]+)"')
_CALL_START = re.compile(r"[A-Za-z_][\w.]*\s*\(")
_BETWEEN_VALUES = re.compile(r"[\s,]*")


def _hint(text: str, tool_names: set[str] | None) -> str:
    """The format hint, with the tool the broken call meant when it names a real one (small models copy a
    placeholder such as TOOL_NAME literally)."""
    meant = next((m.group(1) for m in _NAMED.finditer(text) if tool_names and m.group(1) in tool_names), None)
    if meant is None:
        return _HINT
    return f'Write the call as {OPEN_TAG}{{"name": "{meant}", "arguments": {{...}}}}{CLOSE_TAG}'


def _json_sequence(text: str) -> list[Any] | None:
    """Two or more JSON values written one after another (separated by blanks or commas), else None; at most
    `MAX_CALLS_READ` of them are read. `text` is within the JSON limits (the caller checked).

    A reply cut off by the token limit in the middle of a later value keeps the complete values before it
    (small models list call after call until the limit); the cut-off one is dropped, never guessed at."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    pos = _BETWEEN_VALUES.match(text).end()  # type: ignore[union-attr]  # it matches the empty string
    while pos < len(text) and len(values) < MAX_CALLS_READ:
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError as exc:
            if values and text[pos] in "{[" and _cut_off(text[pos:], exc):
                return values
            return None
        values.append(value)
        pos = _BETWEEN_VALUES.match(text, pos).end()  # type: ignore[union-attr]
    return values if len(values) > 1 else None


def _cut_off(text: str, error: ValueError) -> bool:
    """Whether the JSON value `text` begins with was cut off (it ends before its brackets or a string close)."""
    if isinstance(error, json.JSONDecodeError) and (error.msg.startswith("Unterminated string")
                                                   or error.pos >= len(error.doc.rstrip())):
        return True
    shape = json_shape(text)
    return not shape.too_deep and shape.closers != ""


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
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(node, ast.Call) or node.args or not isinstance(node.func, ast.Name | ast.Attribute):
        return None
    name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
    try:
        args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return ToolCall(name=name, arguments=args)


def _fence_spans(text: str) -> Iterator[tuple[int, int, str, str]]:
    """The code fences of `text`, in order: (start, end, language, body). A fence runs from its opening ``` to
    the next ``` or, left open, to the end of the text. Found with `str.find`: linear."""
    pos = 0
    while (start := text.find("```", pos)) >= 0:
        head = _FENCE_HEAD.match(text, start)
        assert head is not None  # it matches any ```
        close = text.find("```", head.end())
        end = len(text) if close < 0 else close + 3
        yield start, end, head.group(1), text[head.end() : len(text) if close < 0 else close]
        pos = end


def _fences(text: str) -> Iterator[tuple[str, str]]:
    """(language, body) of each code fence of `text`."""
    for _, _, lang, body in _fence_spans(text):
        yield lang, body


def _outside_fences(text: str) -> str:
    """`text` without its code fences."""
    parts, pos = [], 0
    for start, end, _, _ in _fence_spans(text):
        parts.append(text[pos:start])
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _strip_fence(body: str) -> str:
    """The body of the fence `body` begins with (`body` itself when it does not begin with one)."""
    if not body.lstrip().startswith("```"):
        return body
    return next(_fences(body.lstrip()))[1].strip()


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
    required argument (so the call is not closed empty), with the opening quote when that value is a string (so
    it cannot be a number the model just gave in text). Why: docs/decisions.md#finishing-tools"""
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
