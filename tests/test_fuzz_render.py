"""Fuzz: tool return values against the renderer (issue 16). Any value a tool may return (nested
containers, huge or odd numbers, bytes, lone surrogates, objects whose __str__ raises, deep nesting)
becomes UTF-8-encodable text of bounded length, quickly, without raising."""

from __future__ import annotations

import math
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit.tools import render_output

LIMIT = 500


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")

    __repr__ = __str__


class Loud(Exception):
    def __str__(self) -> str:
        raise ValueError("louder")


def _deep(depth: int) -> list:
    root: list = []
    node = root
    for _ in range(depth):
        node.append([])
        node = node[0]
    return root


def _power_of_ten(digits: int) -> int:
    return -(10**digits) if digits % 2 else 10**digits


SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=4290, max_value=6000).map(_power_of_ten), st.sampled_from([math.nan, math.inf, 2**64]),
    st.text(), st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)),
    st.binary(max_size=64), st.builds(Unprintable), st.builds(Loud), st.builds(object),
    st.integers(min_value=900, max_value=5_000).map(_deep),
)
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.tuples(inner, inner), st.frozensets(st.integers(), max_size=3),
    st.dictionaries(st.one_of(st.text(max_size=5), st.integers()), inner, max_size=4)), max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(value=VALUE)
def test_any_return_value_renders_to_bounded_clean_text(value: object) -> None:
    start = time.perf_counter()
    text = render_output(value, LIMIT)
    assert time.perf_counter() - start < 1.0
    assert isinstance(text, str)
    text.encode("utf-8")  # no lone surrogate survives
    assert len(text) <= LIMIT + 120  # the cut text plus the note saying so
