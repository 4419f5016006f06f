"""Selection: the query and rerank readers on a corpus of real-looking replies, EMA, NDCG, UCB."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentkit.skills.select import ema, ndcg, parse_query, parse_ranking, ucb_bonus

NAMES = ["sql-count-rows-per-group", "sql-join-related-tables", "sql-top-n-by-value"]

# (reply, n, expected order, whether the reader found a ranking)
RERANK_CORPUS = [
    ("<rank>3,1,2</rank>", 3, [2, 0, 1], True),
    ("<rank> 2 , 3 , 1 </rank>", 3, [1, 2, 0], True),
    ("<RANK>2 1 3</RANK>", 3, [1, 0, 2], True),
    ("<rank>[2, 3, 1]</rank>", 3, [1, 2, 0], True),
    ("<rank>2,1", 3, [1, 0, 2], True),  # unclosed tag
    ("<rank>2</rank>", 3, [1, 0, 2], True),  # partial ranking: the rest keep their order
    ("<rank>3,3,1,1</rank>", 3, [2, 0, 1], True),  # repeats dropped
    ("<rank>7,0,2,-1</rank>", 3, [1, 0, 2], True),  # out of range dropped
    ("<rank>C, A, B</rank>", 3, [2, 0, 1], True),  # letters inside a tag
    ("Ranking: 3 > 2 > 1", 3, [2, 1, 0], True),
    ("I think skill 2 is the most useful, then 1.", 3, [1, 0, 2], True),
    ("<rank>sql-top-n-by-value, sql-count-rows-per-group</rank>", 3, [2, 0, 1], True),
    ("<ranking>1,2</ranking>", 2, [0, 1], True),
    ("A good order would be the first one.", 3, [0, 1, 2], False),  # 'A' outside a tag is prose
    ("", 3, [0, 1, 2], False),
    ("no idea", 3, [0, 1, 2], False),
    ("<rank></rank>", 3, [0, 1, 2], False),
    ("<think>candidate 3 looks odd</think><rank>1,2,3</rank>", 3, [0, 1, 2], True),
]


@pytest.mark.parametrize("reply, n, expected, found", RERANK_CORPUS)
def test_rerank_reader_corpus(reply, n, expected, found):
    assert parse_ranking(reply, n, NAMES[:n]) == (expected, found)


@given(st.text(max_size=200), st.integers(min_value=0, max_value=6))
def test_rerank_reader_always_returns_a_permutation(reply, n):
    order, _ = parse_ranking(reply, n)
    assert sorted(order) == list(range(n))


QUERY_CORPUS = [
    ("<query>count rows per group in SQL</query>", "count rows per group in SQL", True),
    ("<Query> join two tables by key ", "join two tables by key", True),  # unclosed, spaced
    ("Sure! <query>\n  find the top customers by spending\n</query> Hope it helps.",
     "find the top customers by spending", True),
    ("Query: convert miles to kilometres", "convert miles to kilometres", True),
    ("search query - rename many files", "rename many files", True),
    ('"undo the last git commit"', "undo the last git commit", True),
    ("", "TASK", False),
    ("<query></query>", "TASK", False),
    ("<query>" + "word " * 200 + "</query>", None, True),
]


@pytest.mark.parametrize("reply, expected, found", QUERY_CORPUS)
def test_query_reader_corpus(reply, expected, found):
    query, ok = parse_query(reply, fallback="TASK")
    assert ok is found
    if expected is None:
        assert 0 < len(query) <= 300 and query.startswith("word word")
    else:
        assert query == expected


def test_ema_follows_the_formula():
    u = 0.5
    u = ema(u, 1.0, 0.05)
    assert u == pytest.approx(0.525)
    u = ema(u, 0.0, 0.05)
    assert u == pytest.approx(0.49875)
    # Many successes converge to 1, geometrically: 1 - U_n = 0.5 * 0.95**n.
    u = 0.5
    for _ in range(20):
        u = ema(u, 1.0, 0.05)
    assert 1 - u == pytest.approx(0.5 * 0.95**20)


def test_ndcg_against_utility_order():
    gains = [0.2, 0.9, 0.5]
    assert ndcg([1, 2, 0], gains) == pytest.approx(1.0)
    worst = ndcg([0, 2, 1], gains)
    dcg = 0.2 / math.log2(2) + 0.5 / math.log2(3) + 0.9 / math.log2(4)
    ideal = 0.9 / math.log2(2) + 0.5 / math.log2(3) + 0.2 / math.log2(4)
    assert worst == pytest.approx(dcg / ideal)
    assert ndcg([0], [0.0]) == 1.0


def test_ucb_bonus_prefers_rarely_used_skills():
    assert ucb_bonus(0.5, 1, 100, 0.0) == 0.5
    rare, common = ucb_bonus(0.5, 1, 100, 1.0), ucb_bonus(0.5, 50, 100, 1.0)
    assert rare == pytest.approx(0.5 + math.sqrt(math.log(100)))
    assert rare > common > 0.5
