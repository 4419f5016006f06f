"""Turns that need more than one call: chains of three or four calls, calls made side by side in one reply,
and computing with results through an arithmetic tool, and the one-lookup turn they start from. Each builder
returns a `Turn`; `as_conversation` makes a one-request conversation of it, and the chat sessions
(`agentkit.training.synthetic.multiturn`) use the same turns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agentkit.messages import Message
from agentkit.training.synthetic.arithmetic import ARITHMETIC_FAMILIES, arithmetic_call
from agentkit.training.synthetic.chains import CHAIN_PAIRS, LINKS, ChainPattern, LongChain
from agentkit.training.synthetic.computing import ComputePattern, PairPattern, WordProblem
from agentkit.training.synthetic.families import BY_KEY, FAMILIES
from agentkit.training.synthetic.family import Family
from agentkit.training.synthetic.surface import dress, fields, join_requests, may_lower, text_of
from agentkit.training.synthetic.turns import Builder, Lookup, ToolConversation, Turn, draw_args
from agentkit.training.synthetic.values import value


class Redraw(Exception):
    """The drawn values do not fit the pattern (a number the user gives would exceed the value that caps it):
    the turn is drawn again."""


def draw_extras(extras: Sequence[tuple[str, str]], b: Builder, known: Mapping[str, Any],
                ) -> tuple[dict[str, Any], dict[str, str]]:
    """The numbers the user gives, and how they are written; `Redraw` when a capped one does not fit."""
    vals: dict[str, Any] = {}
    surfaces: dict[str, str] = {}
    for name, spec in extras:
        try:
            vals[name], surfaces[name] = value(spec, b.rng, known)
        except ValueError as exc:  # a cap below the range's low end
            raise Redraw(spec) from exc
        if "<" in spec:
            low, cap = float(spec.split(":")[1]), known[spec.split("<")[1]]
            if not low <= vals[name] <= cap:
                raise Redraw(spec)
    return vals, surfaces


def _run_chain(b: Builder, fams: Sequence[Family], links: Sequence[ChainPattern], wanted: set[str],
               ) -> tuple[list[Lookup], dict[str, str]]:
    """Calls along a chain: each call after the first takes its linked argument from the result before it
    (and keeps a value an earlier result already gave, such as a price)."""
    lookups: list[Lookup] = []
    surfaces: dict[str, str] = {}
    context: dict[str, Any] = {}
    for i, fam in enumerate(fams):
        fixed: dict[str, Any] = {}
        if i:
            fixed = links[i - 1].passed(lookups[-1].args, lookups[-1].outs)
        args, surf = draw_args(fam, wanted, b.rng, fixed)
        surfaces.update(surf)
        lookups.append(b.lookup(fam, args, context, keep=_values(lookups)))
        context.update(args)
    return lookups, surfaces


def _values(lookups: Sequence[Lookup]) -> dict[str, Any]:
    """The lookups' arguments and result values by name, a later lookup's over an earlier one's."""
    known: dict[str, Any] = {}
    for lk in lookups:
        known.update(lk.args)
        known.update(lk.outs)
    return known


def long_chain_turn(b: Builder, chain: LongChain) -> Turn:
    """Three or four calls, each taking an argument from the result before it, one reply each; `Redraw` when
    the request happens to write a linked value."""
    rng = b.rng
    fams = [BY_KEY[k] for k in chain.keys]
    template = b.ask(rng.choice(chain.asks))
    lookups, surfaces = _run_chain(b, fams, chain.links, set(fields(template)))
    said = template.format(**surfaces)
    if any(text_of(lk.args[link.param]) in said for link, lk in zip(chain.links, lookups[1:], strict=True)):
        raise Redraw(template)  # a linked value the request happens to write: it would not need looking up
    answer = " ".join(rng.choice(lk.fam.answers).format(**lk.values) for lk in lookups[1:])
    request = dress(said, rng, may_lower(*fams))
    return Turn(request, b.replies([[lk] for lk in lookups], answer), lookups)


def follow_chain_turn(b: Builder, chain: ChainPattern, earlier: Lookup) -> Turn:
    """In a chat, after a turn whose call was `chain`'s first: the second call, its linked argument taken
    from that earlier result."""
    rng = b.rng
    second = BY_KEY[chain.second]
    template = b.ask(rng.choice(chain.follows))
    args, surfaces = draw_args(second, set(fields(template)), rng, chain.passed(earlier.args, earlier.outs))
    lk = b.lookup(second, args, earlier.args, keep=_values([earlier]))
    answer = rng.choice(second.answers).format(**lk.values)
    return Turn(dress(template.format(**surfaces), rng, may_lower(second)), b.replies([[lk]], answer), [lk])


def lookup_turn(b: Builder, fam: Family, asks: Sequence[str] | None = None) -> Turn:
    """One lookup, asked as one of `asks` (default: the family's requests) asks it, answered as the family
    answers."""
    rng = b.rng
    template = b.ask(rng.choice(fam.asks if asks is None else asks))
    args, surfaces = draw_args(fam, set(fields(template)), rng)
    lk = b.lookup(fam, args)
    answer = rng.choice(fam.answers).format(**lk.values)
    return Turn(dress(template.format(**surfaces), rng, may_lower(fam)), b.replies([[lk]], answer), [lk])


def sum_or_gap(b: Builder, v_1: float, v_2: float, add: bool) -> Lookup:
    """The arithmetic tool's call on two values: their sum (`add`), or the smaller taken from the larger."""
    hi, lo = (v_1, v_2) if v_1 >= v_2 else (v_2, v_1)
    return arithmetic_call(b, f"{text_of(v_1)} + {text_of(v_2)}" if add else f"{text_of(hi)} - {text_of(lo)}")


Mode = Literal["both", "compare", "combine"]


def pair_turn(b: Builder, pattern: PairPattern, mode: Mode) -> Turn:
    """The same tool called twice in one reply, for two values of one parameter; answered with both results
    (`both`), the one a value picks (`compare`), or the two values added or subtracted by the arithmetic tool
    (`combine`)."""
    rng = b.rng
    fam = BY_KEY[pattern.key]
    compare, combine = pattern.compare, pattern.combine
    asks = compare.asks if mode == "compare" and compare else combine.asks if mode == "combine" and combine \
        else pattern.both
    template = b.ask(rng.choice(asks))
    vary = next(p for p in fam.params if p.name == pattern.vary)
    first, surf_1 = value(vary.gen, rng, {})
    for _ in range(20):
        second, surf_2 = value(vary.gen, rng, {})
        if second != first:
            break
    else:
        raise Redraw(vary.gen)
    args, surfaces = draw_args(fam, set(fields(template)), rng, {vary.name: first})
    lk_1, lk_2 = b.lookup(fam, args), b.lookup(fam, {**args, vary.name: second})
    surfaces.update({f"{vary.name}_1": surf_1, f"{vary.name}_2": surf_2})
    request = dress(template.format(**surfaces), rng, may_lower(fam))
    x_1, x_2 = text_of(first), text_of(second)
    if mode == "compare" and compare:
        v_1, v_2 = lk_1.outs[compare.field], lk_2.outs[compare.field]
        if v_1 == v_2:
            answer = compare.tie.format(a=x_1, b=x_2, va=text_of(v_1))
        else:
            one_wins = (v_1 > v_2) == compare.more
            (a, va), (other, vb) = ((x_1, v_1), (x_2, v_2)) if one_wins else ((x_2, v_2), (x_1, v_1))
            answer = compare.answer.format(a=a, va=text_of(va), b=other, vb=text_of(vb))
        return Turn(request, b.replies([[lk_1, lk_2]], answer), [lk_1, lk_2])
    if mode == "combine" and combine:
        v_1, v_2 = lk_1.outs[combine.field], lk_2.outs[combine.field]
        calc = sum_or_gap(b, v_1, v_2, combine.add)
        answer = combine.answer.format(x_1=x_1, v_1=text_of(v_1), x_2=x_2, v_2=text_of(v_2),
                                       result=calc.outs["result"])
        return Turn(request, b.replies([[lk_1, lk_2], [calc]], answer), [lk_1, lk_2, calc])
    answer = " ".join(rng.choice(fam.answers).format(**lk.values) for lk in (lk_1, lk_2))
    return Turn(request, b.replies([[lk_1, lk_2]], answer), [lk_1, lk_2])


def two_at_once_turn(b: Builder) -> Turn:
    """Two unrelated requests in one message, their calls side by side in one reply."""
    rng = b.rng
    while True:
        fa, fb = rng.sample(FAMILIES, 2)
        if (fa.key, fb.key) not in CHAIN_PAIRS and (fb.key, fa.key) not in CHAIN_PAIRS:
            break
    requests, lookups, answers = [], [], []
    for fam in (fa, fb):
        template = b.ask(rng.choice(fam.asks))
        args, surfaces = draw_args(fam, set(fields(template)), rng)
        lk = b.lookup(fam, args)
        requests.append(template.format(**surfaces))
        lookups.append(lk)
        answers.append(rng.choice(fam.answers).format(**lk.values))
    request = dress(join_requests(requests[0], requests[1], rng), rng, may_lower(fa, fb))
    return Turn(request, b.replies([lookups], " ".join(answers)), lookups)


def compute_turn(b: Builder, pattern: ComputePattern) -> Turn:
    """Lookups along the pattern's chain, then its formula over their values, worked out by the arithmetic
    tool; the answer quotes the tool's result."""
    rng = b.rng
    fams = [BY_KEY[k] for k in pattern.keys]
    template = b.ask(rng.choice(pattern.asks))
    lookups, surfaces = _run_chain(b, fams, [LINKS[k] for k in zip(pattern.keys, pattern.keys[1:], strict=False)],
                                   set(fields(template)))
    known = _values(lookups)
    extras, extra_surfaces = draw_extras(pattern.extras, b, known)
    return _computed(b, pattern.formula, pattern.answers, {**known, **extras}, lookups,
                     dress(template.format(**surfaces, **extra_surfaces), rng, may_lower(*fams)))


def follow_compute_turn(b: Builder, pattern: ComputePattern, earlier: Sequence[Lookup]) -> Turn:
    """In a chat, after a turn that made the pattern's lookups: its formula over those results and the
    numbers this request gives."""
    rng = b.rng
    template = b.ask(rng.choice(pattern.follows))
    known = _values(earlier)
    extras, extra_surfaces = draw_extras(pattern.extras, b, known)
    request = dress(template.format(**extra_surfaces), rng)
    return _computed(b, pattern.formula, pattern.answers, {**known, **extras}, [], request)


def word_problem_turn(b: Builder, problem: WordProblem) -> Turn:
    """A sum in everyday words, worked out by the arithmetic tool."""
    rng = b.rng
    template = b.ask(rng.choice(problem.asks))
    extras, surfaces = draw_extras(problem.extras, b, {})
    return _computed(b, problem.formula, problem.answers, extras, [], dress(template.format(**surfaces), rng))


def _computed(b: Builder, formula: str, answers: Sequence[str], known: Mapping[str, Any],
              lookups: list[Lookup], request: str) -> Turn:
    """The turn's lookups (one reply each), then the arithmetic tool's call on `formula` filled from `known`,
    and an answer quoting its result."""
    texts = {k: text_of(v) for k, v in known.items()}
    calc = arithmetic_call(b, formula.format(**texts))
    answer = b.rng.choice(answers).format(**texts, result=calc.outs["result"])
    return Turn(request, b.replies([*([lk] for lk in lookups), [calc]], answer), [*lookups, calc])


def as_conversation(b: Builder, kind: str, turn: Turn, arithmetic: float = 0.0) -> ToolConversation:
    """A one-request conversation of `turn`: the tools it called among distractors (2 to 6 tools, more when
    it called more), and with probability `arithmetic` an arithmetic tool among them that it does not need."""
    needed: dict[str, tuple[Family, str]] = {}
    for lk in turn.lookups:
        needed.setdefault(lk.fam.key, (lk.fam, lk.name))
    pairs = list(needed.values())
    tools = b.offer(pairs, 2, max(6, len(pairs) + 1))
    if arithmetic and not any(f.domain == "arithmetic" for f, _ in pairs) and b.rng.random() < arithmetic:
        tools.insert(b.rng.randrange(len(tools) + 1), with_arithmetic(b))
    return ToolConversation(kind, tools, [Message.user(turn.request), *turn.replies])


def with_arithmetic(b: Builder) -> dict[str, Any]:
    """The spec of the conversation's arithmetic tool (drawn when none is yet), offered unneeded."""
    if b.calc is None:
        b.calc = b.rng.choice(ARITHMETIC_FAMILIES)
    return b.calc.spec(b.name_once(b.calc))
