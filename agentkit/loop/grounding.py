"""Grounded calls: a call whose id or number appears nowhere in the conversation yet is not run, once.

A small model asked for two dependent steps ("the weather in Oslo, then in Fahrenheit") may put both calls in one
reply and make up the number the first call would have given (`unit_convert(value=15, ...)` beside
`get_weather(city="Oslo")`), or skip the lookup and guess the id it needs (`piste_report(piste="PS-01")`). The loop
checks each call before it runs. An id in its arguments (a word of letters and digits such as "PS-41" or "AC1187",
compared without case, spaces or dashes) must appear in the conversation so far: the system prompt, the user's
messages, the results and earlier replies. In a reply of two calls or more, so must every number of the calls after
the first (an argument that is a number, or a number inside a short string argument such as a date or an expression
"8.07 * 3"; `1,234` and `1234` alike; 0 and 1 always pass): those are the calls that may need the first one's
result. A call that fails the check is not run: it gets "Not run: ..." back, naming the value and asking to look it
up first or, if the user gave it, to make the same call again, which then runs (the arguments of earlier replies
count as written). Free text (a string of two words or more of three letters, such as an SQL query or a sentence) is
not checked: its values are the model's own to choose. A reply the user has decided on (`agentkit.runs.approval`)
runs as decided.

    grounding = Grounding()
    waiting = grounding.waiting(reply.tool_calls, messages)   # call id -> the observation to give it
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Mapping, Sequence

from agentkit.loop.repeats import NOT_RUN
from agentkit.messages import Message

WAITING_CALL = NOT_RUN + (
    "{value} (argument {argument}) appears nowhere in the request or in any result so far. If it comes from "
    "another tool's result, call that tool first (or read its result above), then call {name} with the value "
    "it gives; if the user gave it, make the same call again."
)
"""The observation of a call that waits (it begins with `NOT_RUN`: not counted as the call's failure)."""

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_WORD = re.compile(r"[^\W\d_]{3,}")
_ID = re.compile(r"\b(?=[\w-]*[^\W\d_])(?=[\w-]*\d)[^\W_][\w-]*[^\W_]")  # letters and digits, dashes allowed
_SQUEEZE = re.compile(r"[\s_-]+")
_FREE = 2  # a string with this many words of 3+ letters is free text, not checked
_MAX_CHARS = 200  # longer strings are free text too
_ALWAYS = frozenset({0.0, 1.0})


def _numbers(text: str) -> set[float]:
    """The numbers written in `text`, as floats: each digit run as written, and again with thousands
    separators taken out ("1,234" gives 1, 234 and 1234)."""
    found = {float(m) for m in _NUMBER.findall(text)}
    if "," in text:
        found |= {float(m) for m in _NUMBER.findall(_THOUSANDS.sub("", text))}
    return found


def _squeezed(text: str) -> str:
    """`text` lower-cased without spaces, dashes or underscores: how ids are compared."""
    return _SQUEEZE.sub("", text.lower())


def _values(value: object) -> tuple[list[tuple[str, float]], list[tuple[str, str]]]:
    """The numbers and ids of an argument's value that must be grounded: (as written, number) and
    (as written, squeezed id); nothing for free text."""
    if isinstance(value, bool) or value is None:
        return [], []
    if isinstance(value, int | float):
        return ([(repr(value), abs(float(value)))] if math.isfinite(value) else []), []
    if isinstance(value, str):
        if len(value) > _MAX_CHARS or len(_WORD.findall(value)) >= _FREE:
            return [], []
        return [(repr(value), n) for n in _numbers(value)], [(repr(m), _squeezed(m)) for m in _ID.findall(value)]
    items = list(value.values()) if isinstance(value, dict) else list(value) if isinstance(value, list | tuple) else []
    numbers: list[tuple[str, float]] = []
    ids: list[tuple[str, str]] = []
    for item in items[:50]:
        n, i = _values(item)
        numbers += n
        ids += i
    return numbers, ids


class Grounding:
    """What a run's conversation has written (its numbers, and its text squeezed for ids), read from the
    messages as they grow. The arguments of earlier replies count as written: a call made again runs."""

    def __init__(self) -> None:
        self._numbers: set[float] = set()
        self._joined = ""  # the texts read so far, squeezed, one per line
        self._seen = 0

    def _read(self, messages: Sequence[Message]) -> None:
        """Read the messages appended since the last call, all but the last (the reply being checked)."""
        end = len(messages) - 1
        for message in messages[self._seen:end]:
            for text in (message.content, *(str(c.arguments)[:10_000] for c in message.tool_calls)):
                if text:
                    self._numbers |= _numbers(text)
                    self._joined += "\n" + _squeezed(text)
        self._seen = max(self._seen, end)

    def waiting(self, reply: Message, messages: Sequence[Message]) -> Mapping[str, str]:
        """The calls of `reply` that are not run, by call id, each with its observation: a call with an id
        the conversation never wrote, or a later call of several with such a number (a call made again, after
        its first try was not run, runs: its values are written then). `messages` is the conversation ending
        with the model's reply being run (`reply` itself may be a copy a `check` hook fixed)."""
        calls = reply.tool_calls
        read = False
        waiting: dict[str, str] = {}
        for position, call in enumerate(calls):
            for argument, value in call.arguments.items():
                numbers, ids = _values(value)
                numbers = numbers if position else []  # the first call waits for nothing of this reply
                if not numbers and not ids:
                    continue
                if not read:
                    self._read(messages)
                    read = True
                missing = next((shown for shown, n in numbers if n not in _ALWAYS and n not in self._numbers), None)
                missing = missing or next((shown for shown, i in ids if i not in self._joined), None)
                if missing is None:
                    continue
                waiting[call.id] = WAITING_CALL.format(value=missing, argument=argument, name=call.name)
                break
        return waiting


UNGROUNDED_ANSWER = (
    "Your answer states {values}, which no tool result and nothing the user wrote gives. Call the offered tool "
    "that looks {them} up or computes {them}, then answer from its result."
)
"""What a reply in text gets back, once a run, when it states numbers or ids the conversation never wrote."""

_UNIT = re.compile(r"\d+(?:\.\d+)?[^\W\d_]{1,3}")  # "75cl", "12km", "2nd": a number and a unit or an ordinal
_WRITTEN_NUMBER = re.compile(r"\d+(?:,\d{3}(?!\d))*(?:\.\d+)?")
_SCALES = (1.0, 10.0, 100.0, 1000.0, 0.1, 0.01, 0.001)
_MAX_ANSWER = 4000  # characters of an answer read for values (numbers are compared by bisection: linear overall)


def _near(value: float, decimals: int, known: Sequence[float]) -> bool:
    """Whether `value`, written with `decimals` places, is a number of `known` (sorted) rounded to those places,
    or one scaled by a power of ten up to a thousand (a percent written as a fraction, metres as kilometres)."""
    tolerance = 0.5 * 10.0 ** -decimals + 1e-9
    for scale in _SCALES:
        low = bisect.bisect_left(known, (value - tolerance) / scale)
        if low < len(known) and known[low] * scale <= value + tolerance:
            return True
    return False


def ungrounded_values(answer: str, messages: Sequence[Message], limit: int = 3) -> list[str]:
    """The numbers and ids (letters with digits, such as "PS-41") that `answer` states and that no system or user
    message, tool result or call argument of `messages` wrote, as written in `answer`, at most `limit`. Made-up
    values in a final answer are how a small model answers a lookup it never made or a sum it did in its head.
    0 and 1 always pass; a number passes rounded, or scaled by a power of ten up to 1000; a number with a unit
    or an ordinal ("75cl", "2nd") is checked as its number."""
    numbers: set[float] = set()
    ids: set[str] = set()
    for m in messages:
        texts = [*(str(c.arguments)[:10_000] for c in m.tool_calls), *([m.content] if m.role != "assistant" else [])]
        for text in texts:
            numbers |= _numbers(text)
            ids.update(_squeezed(i) for i in _ID.findall(text))
    known = sorted(numbers)
    answer = answer[:_MAX_ANSWER]
    found: list[str] = []
    covered = bytearray(len(answer))  # the characters of ids, whose digits are not read again as numbers
    for match in _ID.finditer(answer):
        word = match.group()
        if _UNIT.fullmatch(word):
            continue  # a number with a unit: read below as a number
        covered[match.start():match.end()] = b"\x01" * (match.end() - match.start())
        if _squeezed(word) not in ids and word not in found:
            found.append(word)
    for match in _WRITTEN_NUMBER.finditer(answer):
        if covered[match.start()]:
            continue
        shown = match.group()
        value = float(shown.replace(",", ""))
        decimals = len(shown.split(".")[1]) if "." in shown else 0
        if value not in _ALWAYS and not _near(value, decimals, known) and shown not in found:
            found.append(shown)
    return found[:limit]
