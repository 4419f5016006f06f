"""Reading JSON out of model text: the one place that knows how.

Three policies, each for its callers:

- `lenient_json` repairs what small models get wrong (trailing commas, Python literals, a truncated
  tail) — for tool-call arguments and cognitive maps, where a usable value beats a refusal;
- `strict_json` repairs nothing (a code fence around the value, or prose around one object, is all it
  tolerates) — for distilled skills, where truncated output must be refused, not completed;
- `first_json_object` finds the first complete JSON object in prose — for analyst replies.

`template_placeholders` and `copies_placeholder` catch what small models copy back from the JSON template
they were asked to fill (distilled skills, notebook notes).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from typing import Any

_STRICT_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n(.*?)\n?```\s*$", re.DOTALL)


def strict_json(text: str) -> Any:
    """The JSON value of `text`, or of its outermost `{...}` span; a code fence around it is removed.

    Raises:
        ValueError: neither is valid JSON.
    """
    body = text.strip()
    fence = _STRICT_FENCE.match(body)
    if fence:
        body = fence.group(1).strip()
    candidates = [body]
    start, end = body.find("{"), body.rfind("}")
    if start >= 0 and end > start and (start, end) != (0, len(body) - 1):
        candidates.append(body[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    raise ValueError("not valid JSON")


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first complete JSON object in `text` (code fences and surrounding prose are tolerated)."""
    text = re.sub(r"```(?:json)?", "", text or "")
    start = text.find("{")
    while start != -1:
        depth, in_string, escape = 0, False, False
        for end in range(start, len(text)):
            ch = text[end]
            if in_string:
                escape = not escape and ch == "\\"
                if ch == '"' and not escape:
                    in_string = False
                elif ch != "\\":
                    escape = False
                continue
            if ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    try:
                        value = json.loads(text[start:end + 1])
                    except ValueError:
                        break
                    if isinstance(value, dict):
                        return value
                    break
        start = text.find("{", start + 1)
    return None


_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_PY_LITERALS = {"true": "True", "false": "False", "null": "None"}


def lenient_json(text: str) -> Any:
    """Parse JSON the way a forgiving reader would; `None` when nothing sensible comes out."""
    text = text.strip()
    for candidate in _candidates(text):
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            pass
        fixed = _TRAILING_COMMA.sub(r"\1", candidate)
        try:
            return json.loads(fixed)
        except (ValueError, RecursionError):
            pass
        try:
            py = re.sub(r"\b(true|false|null)\b", lambda m: _PY_LITERALS[m.group(1)], fixed)
            value = ast.literal_eval(py)
            if isinstance(value, dict | list):
                return value
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            pass
    return None


def _candidates(text: str) -> list[str]:
    """The text itself, its outermost {...}/[...] span, that span with missing closers added, and with doubled
    outer braces undoubled."""
    out = [text]
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return out
    start = min(starts)
    end = max(text.rfind("}"), text.rfind("]"))
    if end > start:
        out.append(text[start : end + 1])
    out.append(_close_brackets(text[start:]))
    # A stray closer after the last value ({"sql": "..."}) instead of }}): drop it, then close.
    trimmed = _STRAY_TAIL.sub("", text[start:])
    if trimmed != text[start:]:
        out.append(_close_brackets(trimmed))
    # Doubled outer braces, as in a template's escaping ({{"name": ...}}): drop the outer pair, then close.
    if text[start:].startswith("{{") and end > start + 1:
        out.append(_close_brackets(text[start + 1 : end]))
    return out


_STRAY_TAIL = re.compile(r"[^\]}\"\w.]+$")


def _close_brackets(text: str) -> str:
    """Append the closing brackets and quote a truncated JSON value is missing."""
    stack: list[str] = []
    in_str: str | None = None
    escaped = False
    for ch in text:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == in_str:
                in_str = None
        elif ch in "\"'":
            in_str = ch
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    tail = (in_str or "") + "".join(reversed(stack))
    return _TRAILING_COMMA.sub(r"\1", text.rstrip().rstrip(",") + tail)


def template_placeholders(template: str, keys: Iterable[str] | None = None) -> frozenset[str]:
    """The placeholder texts of a JSON template shown to a model (`"key": "what to write"` or `["..."]`), for
    `keys` (default: every key); read from the template, so they cannot drift from it."""
    key = "|".join(map(re.escape, keys)) if keys is not None else r"\w+"
    return frozenset(re.findall(rf'"(?:{key})": \[?"([^"]+)"', template))


def copies_placeholder(text: Any, placeholders: Iterable[str]) -> bool:
    """Whether `text` is one of the placeholders, or a piece of one of at least 8 characters ("a check to
    make"), whitespace and case aside."""
    low = " ".join(text.split()).lower() if isinstance(text, str) else ""
    return bool(low) and any(low == p.lower() or (len(low) >= 8 and low in p.lower()) for p in placeholders)
