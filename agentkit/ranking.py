"""Ranking: the one NDCG that skill selection and Skill1's rerank reward share, and the one word overlap that
learned checks and repairs find their nearest train task by."""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence

_WORDS = re.compile(r"[^\W\d_]{3,}")
_COMMON = frozenset(("the", "and", "are", "was", "were", "what", "which", "who", "whose", "how", "for", "with",
                     "from", "give", "its", "their", "this", "that", "there", "have", "has", "had", "does", "did",
                     "question"))


def content_words(text: str) -> frozenset[str]:
    """The words of 3+ letters in `text`, lower-cased, without the commonest question words."""
    return frozenset(w for w in _WORDS.findall(text.lower()) if w not in _COMMON)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two word sets (0 when either is empty)."""
    return len(a & b) / len(a | b) if a and b else 0.0


def ndcg(ranking: Sequence[Hashable], utilities: Mapping[Hashable, float] | Sequence[float]) -> float:
    """NDCG of a predicted order against the order by utility.

    gains g_i = U(ranking[i]); DCG = Σ_i g_i / log2(i + 2); NDCG = DCG / DCG(the best len(ranking) items
    by U, descending). `utilities` maps ids to U, or is a sequence of gains indexed by position (then
    `ranking` holds indices). Unknown ids have gain 0. With all gains 0 every order is ideal: 1.0.
    """
    table: Mapping[Hashable, float] = utilities if isinstance(utilities, Mapping) else dict(enumerate(utilities))
    gains = [float(table.get(x, 0.0)) for x in ranking]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal_gains = sorted((float(u) for u in table.values()), reverse=True)[: len(ranking)]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal_gains))
    if idcg <= 0:
        return 1.0
    return dcg / idcg
