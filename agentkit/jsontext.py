"""Reading JSON out of model text: the one place that knows how.

Three policies, each for its callers:

- `lenient_json` repairs what small models get wrong (trailing commas, Python literals and single quotes,
  a truncated tail) — for tool-call arguments and cognitive maps, where a usable value beats a refusal;
- `strict_json` repairs nothing (a code fence around the value, or prose around one object, is all it
  tolerates) — for distilled skills, where truncated output must be refused, not completed;
- `first_json_object` finds the first complete JSON object in prose — for analyst replies.

Every reader here takes time linear in the length of its text and reads at most `MAX_JSON_CHARS`
characters nested at most `MAX_JSON_DEPTH` deep: the nesting is measured by a linear scan before
`json.loads` sees the text, so no input can make the decoder, or code that walks the value, recurse
past Python's limit. `check_json_limits` and `json_shape` expose that scan to other readers.

`template_placeholders` and `copies_placeholder` catch what small models copy back from the JSON template
they were asked to fill (distilled skills, notebook notes).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

MAX_JSON_CHARS = 1_000_000
"""The longest text (in characters) the readers here read; a longer one is refused unread."""
MAX_JSON_DEPTH = 100
"""The deepest nesting of brackets (`[` and `{`, outside strings) the readers here read."""


class JSONLimitError(ValueError):
    """Text too long or too deeply nested to read; the message says which, and the limit, e.g.
    "too deeply nested to read (depth > 100)"."""


@dataclass(frozen=True)
class JSONShape:
    """The bracket structure of a JSON text, read without parsing it (see `json_shape`).

    `too_deep` says the brackets nest deeper than the `max_depth` asked for; `closers` is what a truncated
    text lacks to close its open brackets, innermost first ("" when none is open; not computed when too
    deep); `in_string` says the text ends inside a string.
    """

    too_deep: bool
    closers: str
    in_string: bool


_ESCAPE = re.compile(r"\\.", re.S)
_CLOSED_STRING = re.compile(r'"[^"]*"')  # once escapes are gone, a string is the text between two quotes
_NOT_STRUCTURE_BYTES = bytes(b for b in range(256) if b not in b'[]{}"')
_PAIRS = ("[]", "{}", "[}", "{]")
_CLOSER_OF = {"[": "]", "{": "}"}


def json_shape(text: str, max_depth: int = MAX_JSON_DEPTH) -> JSONShape:
    """The bracket structure of `text` read as JSON (strings in double quotes, `\\` escapes), in linear time.

    Escapes, then strings, are removed by two regular-expression passes (once escapes are gone a string is
    the text between two quotes, so a quote left open can only fail once, at the last quote), and every
    other character by a byte translation, leaving the brackets and at most one quote, the opening quote of
    a string the text ends in. Adjacent opening-closing pairs are then removed a few times over (each
    removal leaves the rest's nesting as it was and lowers the deepest point by at most one), and one pass
    over what is left finds the open brackets and bounds the depth; only a depth within that many levels of
    `max_depth` is measured again exactly. A closer with nothing open is ignored, and one that does not match
    its opener closes it all the same (so a truncated text is closed the way it was opened)."""
    if "\\" in text:
        text = _ESCAPE.sub("", text)
    if '"' in text:
        text = _CLOSED_STRING.sub("", text)
    # Brackets and quotes are ASCII, and UTF-8 never uses an ASCII byte inside another character: deleting
    # every other byte of the encoded text keeps exactly them.
    bare = text.encode("utf-8", "surrogatepass").translate(None, _NOT_STRUCTURE_BYTES).decode("ascii")
    quote = bare.find('"')
    if quote >= 0:
        bare = bare[:quote]
    rest, removals = bare, 0
    for _ in range(8):
        before = len(rest)
        for pair in _PAIRS:
            shorter = rest.replace(pair, "")
            removals += len(shorter) < len(rest)
            rest = shorter
        if len(rest) > before * 3 // 4:
            break
    deepest, stack = _walk(rest, max_depth)
    too_deep = deepest > max_depth
    if not too_deep and deepest + removals > max_depth:  # the bound is not enough: measure exactly
        too_deep = _walk(bare, max_depth)[0] > max_depth
    return JSONShape(too_deep=too_deep, closers="" if too_deep else "".join(reversed(stack)),
                     in_string=quote >= 0)


def _walk(brackets: str, max_depth: int) -> tuple[int, list[str]]:
    """The deepest nesting of a string of brackets (stopping once past `max_depth`) and the closers of the
    brackets left open, outermost first."""
    stack: list[str] = []
    deepest = 0
    for ch in brackets:
        if ch == "[" or ch == "{":
            stack.append(_CLOSER_OF[ch])
            if len(stack) > deepest:
                deepest = len(stack)
                if deepest > max_depth:
                    break
        elif stack:
            stack.pop()
    return deepest, stack


def limit_problem(text: str, *, max_chars: int = MAX_JSON_CHARS, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why `text` is past a limit ("too long to read (N characters, at most M)" or "too deeply nested to read
    (depth > N)"), or None when it is within both. Linear; texts with few brackets are not scanned at all."""
    if len(text) > max_chars:
        return f"too long to read ({len(text):,} characters, at most {max_chars:,})"
    if text.count("[") + text.count("{") > max_depth and json_shape(text, max_depth).too_deep:
        return f"too deeply nested to read (depth > {max_depth})"
    return None


def check_json_limits(text: str, *, max_chars: int = MAX_JSON_CHARS, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise `JSONLimitError` when `text` is longer than `max_chars` or nests deeper than `max_depth`."""
    problem = limit_problem(text, max_chars=max_chars, max_depth=max_depth)
    if problem is not None:
        raise JSONLimitError(problem)


def loads_bounded(text: str | bytes, *, max_chars: int = MAX_JSON_CHARS, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads` for text from outside: `JSONLimitError` (a ValueError) past either limit, checked before
    decoding; `ValueError` when the text is not JSON."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    check_json_limits(text, max_chars=max_chars, max_depth=max_depth)
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise JSONLimitError(f"too deeply nested to read (depth > {max_depth})") from None


# -- strict ---------------------------------------------------------------------------------------
_STRICT_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n(.*?)\n?```\s*$", re.DOTALL)


def strict_json(text: str) -> Any:
    """The JSON value of `text`, or of its outermost `{...}` span; a code fence around it is removed.

    Raises:
        ValueError: neither is valid JSON, or the text is past a limit (`JSONLimitError`).
    """
    body = text.strip()
    check_json_limits(body)
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
        except ValueError:
            continue
    raise ValueError("not valid JSON")


# -- the first object in prose --------------------------------------------------------------------
_BRACE_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[{}]', re.S)


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first complete JSON object in `text` (code fences and surrounding prose are tolerated); None when
    there is none, or the text is past a limit.

    One scan pairs the braces outside strings; the spans are tried in the order they open. A span that fails
    to decode at some position is not followed by the spans inside it that contain that position (they fail
    there too), so the work stays linear."""
    text = re.sub(r"```(?:json)?", "", text or "")
    if limit_problem(text) is not None:
        return None
    spans: list[tuple[int, int]] = []  # (start, end) of each balanced {...}, by start once sorted
    opened: list[int] = []
    for m in _BRACE_TOKEN.finditer(text):
        token = m.group()
        if token == "{":
            opened.append(m.start())
        elif token == "}" and opened:
            spans.append((opened.pop(), m.end()))
    spans.sort()
    failed_at = -1
    for start, end in spans:
        if start < failed_at < end:
            continue
        try:
            value = json.loads(text[start:end])
        except json.JSONDecodeError as exc:
            failed_at = start + exc.pos
            continue
        if isinstance(value, dict):
            return value
    return None


# -- lenient --------------------------------------------------------------------------------------
_TRAILING_COMMA = re.compile(r",\s*(?=[}\]])")
_STRAY_RUN = re.compile(r"[^\]}\"\w.]+")  # a stray tail, matched on the reversed text
_PY_WORD = re.compile(r"\b(?:True|False|None)\b")
_STRING_SPLIT = re.compile(  # a string in either quotes; one left open runs to the end of the text
    r"""("[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|'[^'\\]*(?:\\.[^'\\]*)*(?:'|\\?\Z))""", re.S)
_JSON_WORD = {"True": "true", "False": "false", "None": "null"}
_WORD_PATTERNS = [(word, re.compile(rf"\b{word}\b")) for word in _JSON_WORD]
_FAILED = object()


def lenient_json(text: str, *, raise_limits: bool = False) -> Any:
    """Parse JSON the way a forgiving reader would; `None` when nothing sensible comes out.

    Tried in order until one decodes: the text as JSON; when it has single quotes or True/False/None, the text
    read as a Python literal, which must give an object or a list; then the text's outermost `{...}`/`[...]`
    span, that span with the brackets and quote a truncated value lacks added (after dropping a stray tail
    such as `)`), and with doubled outer braces undoubled, and the same without trailing commas (for the
    Python reading too).

    Text past `MAX_JSON_CHARS` or nested deeper than `MAX_JSON_DEPTH` gives None, or raises
    `JSONLimitError` with `raise_limits=True` (so a caller can tell the model why)."""
    text = text.strip()
    if not text:
        return None
    shapes = _Shapes()
    try:
        shapes.check(text, MAX_JSON_CHARS)
        try:
            return json.loads(text)
        except ValueError:
            pass
        if "'" in text or (("True" in text or "False" in text or "None" in text) and _PY_WORD.search(text)):
            value = _first_decoded(_python_to_json(text), shapes, max_chars=2 * MAX_JSON_CHARS)
            if isinstance(value, dict | list):
                return value
        value = _first_decoded(text, shapes)
        if value is not _FAILED:
            return value
    except JSONLimitError:
        if raise_limits:
            raise
    return None


def _first_decoded(text: str, shapes: _Shapes, max_chars: int = MAX_JSON_CHARS) -> Any:
    """The value of the first of `text`'s candidates that decodes as JSON, then of the candidates of `text`
    without trailing commas (`_FAILED` when none does)."""
    seen: set[str] = set()
    fixed = _TRAILING_COMMA.sub("", text)
    sources = [text] if fixed == text else [text, fixed]
    for source in sources:
        if source is fixed:
            shapes.same(fixed, text)  # only commas and blanks went: no bracket, quote or escape
        for candidate in _candidates(source, shapes, max_chars):
            if candidate in seen:
                continue
            seen.add(candidate)
            try:
                return json.loads(candidate)
            except ValueError:
                pass
    return _FAILED


class _Shapes:
    """`json_shape` of the texts one read asks about, each measured once."""

    def __init__(self) -> None:
        self._known: dict[str, JSONShape] = {}

    def __call__(self, text: str) -> JSONShape:
        shape = self._known.get(text)
        if shape is None:
            shape = self._known[text] = json_shape(text)
        return shape

    def same(self, text: str, as_text: str) -> None:
        """Record that `text` has the shape of `as_text` (measured already)."""
        self._known[text] = self(as_text)

    def check(self, text: str, max_chars: int) -> None:
        """Raise `JSONLimitError` when `text` is past a limit."""
        if len(text) > max_chars:
            raise JSONLimitError(f"too long to read ({len(text):,} characters, at most {max_chars:,})")
        if text.count("[") + text.count("{") > MAX_JSON_DEPTH and self(text).too_deep:
            raise JSONLimitError(f"too deeply nested to read (depth > {MAX_JSON_DEPTH})")


def _candidates(text: str, shapes: _Shapes, max_chars: int = MAX_JSON_CHARS) -> Iterator[str]:
    """The text itself, its outermost {...}/[...] span, that span with missing closers added (after a stray
    tail is dropped), and with doubled outer braces undoubled. Made one at a time, as they are tried, after
    the limits are checked on the text; none nests deeper than the text (checked again when the span may
    begin inside what the whole text reads as a string), so decoding any of them is bounded."""
    shapes.check(text, max_chars)
    yield text
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return
    start = min(starts)
    end = max(text.rfind("}"), text.rfind("]"))
    if end > start:
        yield text[start : end + 1]
    tail = text[start:]
    if '"' in text[:start] or "\\" in text[:start]:  # the span may begin inside a string or an escape
        shapes.check(tail, max_chars)
    else:
        shapes.same(tail, text)
    yield _closed(tail, shapes(tail))
    # A stray closer after the last value ({"sql": "..."}) instead of }}): drop it, then close.
    run = _STRAY_RUN.match(tail[::-1])  # read from the end: linear however long the tail
    trimmed = tail[: len(tail) - run.end()] if run else tail
    if trimmed != tail:
        stray = tail[len(trimmed) :]
        if "[" not in stray and "{" not in stray and "\\" not in stray:
            shapes.same(trimmed, tail)  # dropping it changed no bracket, quote or escape
        yield _closed(trimmed, shapes(trimmed))
    # Doubled outer braces, as in a template's escaping ({{"name": ...}}): drop the outer pair, then close.
    if tail.startswith("{{") and end > start + 1:
        inner = text[start + 1 : end]
        yield _closed(inner, shapes(inner))


def _closed(text: str, shape: JSONShape) -> str:
    """`text` with the closing quote and brackets a truncated JSON value lacks (and no trailing comma)."""
    body = text.rstrip()
    if not shape.in_string:
        body = body.rstrip(",")
    return body + ('"' if shape.in_string else "") + shape.closers


def _python_to_json(text: str) -> str:
    """A Python literal's text as JSON text: single-quoted strings in double quotes, True/False/None as
    true/false/null outside strings; double-quoted strings are kept as they are. Linear, and done by whole-text
    string operations (a split at the strings, the words replaced in what lies between), with a Python step
    only per single-quoted string that holds a double quote or an escape."""
    if '"' not in text and "\\" not in text:  # every string is '...': swapping the quotes is the rewrite
        pieces = text.replace("'", '"').split('"')
    else:
        pieces = _STRING_SPLIT.split(text)
        pieces[1::2] = [token if token[0] == '"' else _json_string(token) for token in pieces[1::2]]
        return _replace_words(pieces, "")
    return _replace_words(pieces, '"')


def _replace_words(pieces: list[str], glue: str) -> str:
    """`glue.join(pieces)` with True/False/None replaced in the pieces at even positions (outside strings)."""
    joined = "\x00".join(pieces[0::2])
    if joined.count("\x00") == len(pieces[0::2]) - 1 and any(w in joined for w in _JSON_WORD):
        for word, pattern in _WORD_PATTERNS:
            if word in joined:
                joined = pattern.sub(_JSON_WORD[word], joined)
        pieces[0::2] = joined.split("\x00")
    return glue.join(pieces)


def _json_string(token: str) -> str:
    """A single-quoted string of a Python literal as a JSON string (one left open at the end of the text stays
    open)."""
    if "\\" not in token:
        if len(token) > 1 and token[-1] == "'":
            return '"' + token[1:-1].replace('"', '\\"') + '"'
        return '"' + token[1:].replace('"', '\\"')
    closed = len(token) > 1 and token.endswith("'") and not _ends_escaped(token[:-1])
    body = token[1:-1] if closed else token[1:]
    with contextlib.suppress(UnicodeDecodeError):  # an escape Python cannot read: kept as written
        body = body.encode("latin-1", "backslashreplace").decode("unicode_escape")
    quoted = json.dumps(body, ensure_ascii=False)
    return quoted if closed else quoted[:-1]


def _ends_escaped(text: str) -> bool:
    """Whether `text` ends in an odd number of backslashes (its next character is escaped)."""
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


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
