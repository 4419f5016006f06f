"""Selecting a skill: read the model's query and ranking leniently, order candidates, EMA utility.

Models write `<query>` and `<rank>` imperfectly (unclosed tags, names instead of numbers,
extra prose); these readers take what is there and fall back to a stated default, never raise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from agentkit.ranking import ndcg as ndcg  # the one NDCG, where skill selection is judged

QUERY_MAX_CHARS = 300

_QUERY_TAG = re.compile(r"<\s*query\s*>(.*?)(?:<\s*/\s*query\s*>|$)", re.IGNORECASE | re.DOTALL)
_QUERY_LABEL = re.compile(r"^\s*(?:search\s+)?query\s*[:=-]\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_RANK_TAG = re.compile(r"<\s*rank(?:ing)?\s*>(.*?)(?:<\s*/\s*rank(?:ing)?\s*>|$)", re.IGNORECASE | re.DOTALL)
_RANK_LABEL = re.compile(r"\brank(?:ing)?\s*[:=]\s*(.+)", re.IGNORECASE)
_TAGS = re.compile(r"<[^>]{0,40}>")


def parse_query(text: str, fallback: str) -> tuple[str, bool]:
    """The search query in a model's reply, and whether it was found (else `fallback` is returned)."""
    text = text or ""
    match = _QUERY_TAG.search(text)
    candidate = match.group(1) if match else None
    if candidate is None:
        label = _QUERY_LABEL.search(text)
        candidate = label.group(1) if label else None
    if candidate is None:
        lines = [ln for ln in _TAGS.sub(" ", text).splitlines() if ln.strip()]
        candidate = lines[0] if lines else None
    if candidate is not None:
        candidate = " ".join(_TAGS.sub(" ", candidate).split()).strip(" \"'`")
        if len(candidate) > QUERY_MAX_CHARS:
            candidate = candidate[:QUERY_MAX_CHARS].rsplit(" ", 1)[0]
    if not candidate:
        return fallback, False
    return candidate, True


def parse_ranking(text: str, n: int, names: Sequence[str] = ()) -> tuple[list[int], bool]:
    """A permutation of 0..n-1 (best first) read from a reply such as '<rank>3,1,2</rank>'.

    Numbers are 1-based candidate numbers; skill names are accepted too. Out-of-range numbers and
    repeats are dropped; candidates not mentioned follow in their original order. The flag says
    whether anything usable was found (if not, the original order is returned).
    """
    text = text or ""
    match = _RANK_TAG.search(text)
    body = match.group(1) if match else None
    if body is None:
        label = _RANK_LABEL.search(text)
        body = label.group(1) if label else None
    letters_ok = body is not None  # single letters count only inside a tag or after "rank:"
    body = text if body is None else body
    order: list[int] = []
    tokens = re.findall(r"[A-Za-z0-9][A-Za-z0-9_-]*", body)
    lowered = [name.lower() for name in names]
    for token in tokens:
        index: int | None = None
        if token.isdigit():
            value = int(token)
            index = value - 1 if 1 <= value <= n else None
        elif token.lower() in lowered:
            index = lowered.index(token.lower())
        elif len(token) == 1 and token.isalpha():  # "A, C, B" style
            value = ord(token.lower()) - ord("a")
            index = value if letters_ok and 0 <= value < n and token.isupper() else None
        if index is not None and index not in order:
            order.append(index)
    found = bool(order)
    order += [i for i in range(n) if i not in order]
    return order, found


def ema(utility: float, reward: float, alpha: float) -> float:
    """Skill1's trend update U(s) ← (1−α)·U(s) + α·r."""
    return (1.0 - alpha) * utility + alpha * reward


def ucb_bonus(utility: float, uses: int, total_uses: int, c: float) -> float:
    """U + c·sqrt(ln N / n): the optional exploration bonus (n = max(uses, 1), N = max(total, 2))."""
    return utility + c * math.sqrt(math.log(max(total_uses, 2)) / max(uses, 1))
