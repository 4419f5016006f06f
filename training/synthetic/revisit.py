"""Chat turns that come back to earlier results: the same lookup for another value ("And Bergen?"), and a sum or
difference of two earlier turns' results worked out by the arithmetic tool, with no lookup made again.

A `revisit` chat (`agentkit.training.synthetic.multiturn.session(b, revisit=True)`) holds one such thread: a
lookup (`anchor_turn`), later the same tool for a second value of one parameter (`again_turn`), and as its last
tool turn the two results added or subtracted (`combine_turn`); with only two tool turns the second value's
lookup and the difference come in one turn (`again_and_gap_turn`: the lookup, then the arithmetic tool). The
tools and values are the generator's own (`PAIR_PATTERNS` with a `combine`); the requests are written here.
"""

from __future__ import annotations

from agentkit.training.synthetic.computing import PAIR_PATTERNS, PairPattern
from agentkit.training.synthetic.families import BY_KEY
from agentkit.training.synthetic.multistep import Redraw, lookup_turn, sum_or_gap
from agentkit.training.synthetic.surface import dress, fields, text_of
from agentkit.training.synthetic.turns import Builder, Lookup, Turn
from agentkit.training.synthetic.values import value

LABELS = {"points": "points", "bikes": "bikes", "free_spaces": "free spaces", "players_online": "players",
          "units_available": "units", "credits": "credits", "goals": "goals", "free_gb": "GB of free space",
          "kwh": "kWh", "calories": "kcal", "balance": "balance"}
"""How a request and an answer name each combinable result field."""
AGAIN_ASKS = ("And {x}?", "What about {x}?", "How about {x}, then?", "Same for {x}, please.", "Now do {x}.",
              "ok and {x}?", "Can you check {x} as well?")
SUM_ASKS = ("Put the two together: what's the total {label} for {x_1} and {x_2}?",
            "Add {x_1} and {x_2} up for me, in {label}.", "Combined, what do those two come to in {label}?",
            "Sum those two for me ({label}).")
GAP_ASKS = ("What's the gap in {label} between {x_1} and {x_2}?", "By how much do {x_1} and {x_2} differ in {label}?",
            "Work out the difference in {label} between those two.", "How far apart are the two, in {label}?")
AGAIN_GAP_ASKS = ("Check {x_2} too, and tell me how far it is from {x_1} in {label}.",
                  "What about {x_2}, and what's its gap in {label} to {x_1}?")
SUM_ANSWERS = ("Together: {result} {label} ({v_1} for {x_1}, {v_2} for {x_2}).",
               "{x_1} has {v_1} and {x_2} {v_2}, so {result} {label} in total.")
GAP_ANSWERS = ("The difference is {result} {label}: {v_1} for {x_1} against {v_2} for {x_2}.",
               "{x_1}: {v_1}, {x_2}: {v_2}, so they are {result} {label} apart.")


def _asks_naming(pattern: PairPattern) -> tuple[str, ...]:
    """The family's requests that name the varied parameter (a lookup for one value of it)."""
    return tuple(a for a in BY_KEY[pattern.key].asks if pattern.vary in fields(a))


COMBINABLE: tuple[PairPattern, ...] = tuple(p for p in PAIR_PATTERNS
                                            if p.combine and p.combine.field in LABELS and _asks_naming(p))
"""The patterns a revisit chat is drawn from: a numeric result to combine, and a request naming the value."""


def anchor_turn(b: Builder, pattern: PairPattern) -> Turn:
    """A lookup for one value of the pattern's varied parameter, asked as the family's requests ask it."""
    return lookup_turn(b, BY_KEY[pattern.key], _asks_naming(pattern))


def _second(b: Builder, pattern: PairPattern, first: Lookup) -> tuple[Lookup, str]:
    """The same call as `first` for another value of the varied parameter, and how the user writes that value."""
    vary = next(p for p in BY_KEY[pattern.key].params if p.name == pattern.vary)
    for _ in range(20):
        other, surface = value(vary.gen, b.rng, {})
        if other != first.args[pattern.vary]:
            return b.lookup(first.fam, {**first.args, pattern.vary: other}), surface
    raise Redraw(vary.gen)


def again_turn(b: Builder, pattern: PairPattern, first: Lookup) -> Turn:
    """"And X?": the earlier lookup again for another value, answered as the family answers."""
    rng = b.rng
    lk, surface = _second(b, pattern, first)
    answer = rng.choice(first.fam.answers).format(**lk.values)
    return Turn(dress(rng.choice(AGAIN_ASKS).format(x=surface), rng, False), b.replies([[lk]], answer), [lk])


def _combined(b: Builder, pattern: PairPattern, one: Lookup, two: Lookup, add: bool, request: str,
              lookups: list[Lookup]) -> Turn:
    """`lookups` (made in this turn), then the arithmetic tool on the two results' field, and the answer."""
    assert pattern.combine is not None
    field = pattern.combine.field
    v_1, v_2 = one.outs[field], two.outs[field]
    calc = sum_or_gap(b, v_1, v_2, add)
    answer = b.rng.choice(SUM_ANSWERS if add else GAP_ANSWERS).format(
        x_1=text_of(one.args[pattern.vary]), v_1=text_of(v_1), x_2=text_of(two.args[pattern.vary]),
        v_2=text_of(v_2), label=LABELS[field], result=calc.outs["result"])
    return Turn(request, b.replies([*([lk] for lk in lookups), [calc]], answer), [*lookups, calc])


def combine_turn(b: Builder, pattern: PairPattern, one: Lookup, two: Lookup) -> Turn:
    """The sum or the difference of two earlier turns' results: the arithmetic tool only, nothing looked up."""
    rng = b.rng
    add = rng.random() < 0.5
    template = rng.choice(SUM_ASKS if add else GAP_ASKS)
    assert pattern.combine is not None
    request = template.format(x_1=text_of(one.args[pattern.vary]), x_2=text_of(two.args[pattern.vary]),
                              label=LABELS[pattern.combine.field])
    return _combined(b, pattern, one, two, add, dress(request, rng, False), [])


def again_and_gap_turn(b: Builder, pattern: PairPattern, first: Lookup) -> Turn:
    """Another value's lookup and its difference from an earlier result, in one turn: the lookup, then the
    arithmetic tool."""
    rng = b.rng
    lk, surface = _second(b, pattern, first)
    assert pattern.combine is not None
    request = rng.choice(AGAIN_GAP_ASKS).format(x_1=text_of(first.args[pattern.vary]), x_2=surface,
                                                label=LABELS[pattern.combine.field])
    return _combined(b, pattern, first, lk, False, dress(request, rng, False), [lk])
