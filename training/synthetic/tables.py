"""Import-time checks of the generator's literal tables: names unique and clear of the held-out ones, and every
template naming only what it can fill and everything it must."""

from __future__ import annotations

from agentkit.training.synthetic.arithmetic import ARITHMETIC_FAMILIES
from agentkit.training.synthetic.chains import CHAIN_PATTERNS, LONG_CHAINS
from agentkit.training.synthetic.computing import COMPUTE_PATTERNS, PAIR_PATTERNS, WORD_PROBLEMS
from agentkit.training.synthetic.families import BY_KEY, FAMILIES
from agentkit.training.synthetic.finishing import ANSWER_FINISHERS, ECHO_FINISHERS
from agentkit.training.synthetic.heldout import FRAMEWORK_FINISHERS, HELD_OUT_TOOLS, held_out
from agentkit.training.synthetic.surface import fields


def _params(key: str, required: bool = False) -> set[str]:
    return {p.name for p in BY_KEY[key].params if not (required and p.optional)}


def _outs(key: str) -> set[str]:
    return {o for o, _ in BY_KEY[key].outs}


def check_tables() -> None:
    """Assert the tables' invariants (see the module)."""
    names = [n for f in (*FAMILIES, *ARITHMETIC_FAMILIES) for n in f.names]
    assert len(names) == len(set(names)), "a tool name is used twice"
    for name in names:
        assert not held_out(name), name
    finishers = [f[0] for f in ANSWER_FINISHERS] + [n for n, _ in ECHO_FINISHERS]
    assert not set(finishers) & (set(names) | HELD_OUT_TOOLS | FRAMEWORK_FINISHERS), finishers
    for f in FAMILIES:
        params = _params(f.key)
        required = _params(f.key, required=True)
        filled = required | _outs(f.key)
        assert len(f.asks) >= 3 and len(f.answers) >= 2, f.key
        assert set(fields(f.sentence)) >= _outs(f.key), f.key  # a sentence result holds every value
        for t in f.asks:
            assert required <= set(fields(t)) <= params, (f.key, t)
        for t in (f.sentence, *f.answers):
            assert set(fields(t)) <= filled, (f.key, t)
        if f.judge:
            assert dict(f.outs)[f.judge.field].startswith(("int", "num")), f.key
            for t in f.judge.asks:
                assert required | {"threshold"} <= set(fields(t)) <= params | {"threshold"}, (f.key, t)
            for t in (f.judge.yes, f.judge.no):
                assert set(fields(t)) <= filled | {"threshold"}, (f.key, t)
    for c in CHAIN_PATTERNS:
        linked = {c.param, *c.same}
        a_params, b_params = _params(c.first), _params(c.second) - linked
        assert c.field in _outs(c.first) and c.param in _params(c.second), c
        assert set(c.same) <= a_params | _outs(c.first), c
        assert not a_params & b_params, c
        b_req = _params(c.second, required=True) - linked
        for t in c.asks:
            assert _params(c.first, required=True) | b_req <= set(fields(t)) <= a_params | b_params, (c, t)
        for t in c.follows:
            assert b_req <= set(fields(t)) <= b_params, (c, t)
    for lc in LONG_CHAINS:
        links = lc.links  # every consecutive pair is a chain
        free = [_params(lc.keys[0])] + [_params(k.second) - {k.param, *k.same} for k in links]
        needed = [_params(lc.keys[0], True)] + [_params(k.second, True) - {k.param, *k.same} for k in links]
        assert sum(map(len, free)) == len(set().union(*free)), lc  # no two calls share a field the user names
        for t in lc.asks:
            assert set().union(*needed) <= set(fields(t)) <= set().union(*free), (lc.keys, t)
    for p in COMPUTE_PATTERNS:
        extras = {n for n, _ in p.extras}
        if len(p.keys) > 1:
            for pair in zip(p.keys, p.keys[1:], strict=False):
                assert pair in {(c.first, c.second) for c in CHAIN_PATTERNS}, p.keys
        known = set().union(*(_params(k) | _outs(k) for k in p.keys)) | extras
        assert set(fields(p.formula)) <= known, p
        for t in p.asks:
            assert _params(p.keys[0], True) | extras <= set(fields(t)), (p.keys, t)
            assert set(fields(t)) <= set().union(*(_params(k) for k in p.keys)) | extras, (p.keys, t)
        for t in p.follows:
            assert len(p.keys) == 1 and set(fields(t)) == extras, (p.keys, t)
        for t in p.answers:
            assert set(fields(t)) <= known | {"result"}, (p.keys, t)
    for q in PAIR_PATTERNS:
        shared_req = _params(q.key, True) - {q.vary}
        allowed = _params(q.key) - {q.vary} | {f"{q.vary}_1", f"{q.vary}_2"}
        asks = [*q.both, *(q.compare.asks if q.compare else ()), *(q.combine.asks if q.combine else ())]
        assert q.both and q.vary in _params(q.key), q
        for t in asks:
            assert shared_req | {f"{q.vary}_1", f"{q.vary}_2"} <= set(fields(t)) <= allowed, (q.key, t)
        for field in [q.compare.field] if q.compare else []:
            assert dict(BY_KEY[q.key].outs)[field].startswith(("int", "num")), q.key
        for field in [q.combine.field] if q.combine else []:
            assert dict(BY_KEY[q.key].outs)[field].startswith(("int", "num")), q.key
    for w in WORD_PROBLEMS:
        extras = {n for n, _ in w.extras}
        assert set(fields(w.formula)) == extras, w
        for t in w.asks:
            assert set(fields(t)) == extras, t
        for t in w.answers:
            assert set(fields(t)) <= extras | {"result"}, t
