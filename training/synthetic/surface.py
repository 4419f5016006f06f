"""How people type a request: template fields, a typo, a greeting or thanks around it, lower case."""

from __future__ import annotations

import random
import re
import string
from typing import Any

from agentkit.training.synthetic.family import Family
from agentkit.training.synthetic.values import VERBATIM

PREFIXES = ("Hi!", "Hey,", "Hello.", "Quick question:", "Hi there, quick one:", "Morning!", "I need some help.",
            "For a report I'm writing:", "Sorry to bother you.", "ok so")
SUFFIXES = ("Thanks!", "thx", "Thank you.", "Cheers.", "Please.", "ty", "Appreciate it!", "asap please")
JOINERS = ("{a} Also, {b}", "{a} And {b}", "Two things: {a} {b}", "{a} Then {b}", "{a} Plus, {b}", "{a}\n{b}")
"""How two requests are written as one message."""


def fields(template: str) -> list[str]:
    """The names of a template's `{fields}`, in order."""
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


def typo(template: str, rng: random.Random) -> str:
    """Swap two letters of one word of a template's own text (never of a value)."""
    parts = re.split(r"(\{\w+\})", template)
    spots = [(i, m.start()) for i, part in enumerate(parts) if not part.startswith("{")
             for m in re.finditer(r"[A-Za-z]{5,}", part)]
    if not spots:
        return template
    i, start = rng.choice(spots)
    word = re.match(r"[A-Za-z]+", parts[i][start:])
    assert word is not None
    j = start + rng.randrange(1, len(word.group()) - 2)
    p = parts[i]
    parts[i] = p[:j] + p[j + 1] + p[j] + p[j + 2:]
    return "".join(parts)


def dress(text: str, rng: random.Random, lower: bool = True) -> str:
    """How people type: a greeting or thanks around the request, no final mark, or (`lower`) all lower case."""
    if rng.random() < 0.1:
        text = text.rstrip("?.!")
    if rng.random() < 0.18:
        prefix = rng.choice(PREFIXES)
        if prefix[-1] in ",:" and text[:1].isupper() and text[1:2].islower():
            text = text[0].lower() + text[1:]
        text = f"{prefix} {text}"
    if rng.random() < 0.15:
        text = f"{text} {rng.choice(SUFFIXES)}"
    if rng.random() < 0.1 and lower:
        text = text.lower()
    return text


def may_lower(*fams: Family) -> bool:
    """Whether a request for these tools may be lower-cased (no free-text argument to copy exactly)."""
    return not any(p.gen in VERBATIM for f in fams for p in f.params)


def text_of(v: Any) -> str:
    """A value as a result or an answer writes it (booleans as yes/no)."""
    return ("yes" if v else "no") if isinstance(v, bool) else str(v)


def join_requests(first: str, second: str, rng: random.Random) -> str:
    """Two requests written as one message ("... Also, ...")."""
    joiner = rng.choice(JOINERS)
    if first[-1] not in ".?!":
        first += "."
    if joiner.endswith((", {b}", "Then {b}")) and second[:1].isupper() and second[1:2].islower():
        second = second[0].lower() + second[1:]
    return joiner.format(a=first, b=second)
