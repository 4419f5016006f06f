"""The entry point: `synthetic_conversations(n, seed)` draws a mix of conversation kinds from one seed.

Kinds: `single` (one call), `use_result` (one call, the answer decides on its result), `sequence` (two calls
one after the other: a chain, or two things asked at once), `no_tool` (no call), and, in the `chains` mix,
`chain3` (three or four dependent calls), `parallel` (two calls side by side in one reply), `compute` (lookups,
then an arithmetic tool on their values), `multi_turn` (a chat of 4 to 8 turns; see
`agentkit.training.synthetic.multiturn`), `crowded` (a no-call request offered 5 to 9 tools) and `slipped` (a
chat in which earlier lookups were answered without a call; those answers are history, not taught) and
`revisit` (a chat that looks a value up, asks the same for another, then adds or subtracts the two results).
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from agentkit.training.synthetic.arithmetic import ARITHMETIC_FAMILIES
from agentkit.training.synthetic.chains import CHAIN_PATTERNS, LONG_CHAINS
from agentkit.training.synthetic.computing import COMPUTE_PATTERNS, PAIR_PATTERNS, WORD_PROBLEMS
from agentkit.training.synthetic.families import FAMILIES
from agentkit.training.synthetic.finishing import finishing
from agentkit.training.synthetic.heldout import held_out
from agentkit.training.synthetic.kinds import chained, no_tool, single, two_things
from agentkit.training.synthetic.multistep import (
    Mode,
    Redraw,
    as_conversation,
    compute_turn,
    long_chain_turn,
    pair_turn,
    two_at_once_turn,
    with_arithmetic,
    word_problem_turn,
)
from agentkit.training.synthetic.multiturn import session
from agentkit.training.synthetic.tables import check_tables
from agentkit.training.synthetic.turns import Builder, ToolConversation, Turn

KIND_WEIGHTS: Mapping[str, float] = {"single": 40, "use_result": 15, "sequence": 25, "no_tool": 20}
"""The default mix of conversation kinds (percent): one request each, at most two calls."""
CHAINS_WEIGHTS: Mapping[str, float] = {"single": 20, "use_result": 8, "sequence": 14, "chain3": 10, "parallel": 10,
                                       "compute": 16, "multi_turn": 10, "no_tool": 12}
"""The mix for tool use beyond one call (percent): chains of two to four calls, calls side by side,
computing with results, chats of several turns, and the one-call kinds beside them."""
SERIAL_WEIGHTS: Mapping[str, float] = {"single": 20, "use_result": 8, "sequence": 14, "chain3": 10, "compute": 16,
                                       "multi_turn": 10, "no_tool": 10, "crowded": 12}
"""The `chains` mix without calls side by side, and with a share of no-call requests offered many tools."""
RECOVER_WEIGHTS: Mapping[str, float] = {"single": 18, "use_result": 8, "sequence": 12, "chain3": 10, "compute": 16,
                                        "multi_turn": 8, "slipped": 8, "no_tool": 8, "crowded": 12}
"""The `serial` mix with chats in which earlier lookups were answered without a call (`slipped`), taken from
the one-call kinds, the chats and the no-tool requests."""
REVISIT_WEIGHTS: Mapping[str, float] = {"single": 14, "use_result": 8, "sequence": 12, "chain3": 10, "compute": 14,
                                        "multi_turn": 8, "revisit": 12, "no_tool": 10, "crowded": 12}
"""The `serial` mix with chats that come back to earlier results (`revisit`: the same lookup for another value,
then the two results added or subtracted by the arithmetic tool), taken from the one-call kinds, computing
and the plain chats."""
REVISIT_RECOVER_WEIGHTS: Mapping[str, float] = {"single": 12, "use_result": 6, "sequence": 10, "chain3": 10,
                                                "compute": 14, "multi_turn": 6, "revisit": 12, "slipped": 8,
                                                "no_tool": 10, "crowded": 12}
"""The `revisit` mix with the `recover` mix's chats in which earlier lookups were answered without a call
(`slipped`), taken from the one-call kinds and the plain chats."""
MIXES: Mapping[str, Mapping[str, float]] = {"default": KIND_WEIGHTS, "chains": CHAINS_WEIGHTS, "serial": SERIAL_WEIGHTS,
                                            "recover": RECOVER_WEIGHTS, "revisit": REVISIT_WEIGHTS,
                                            "revisit-recover": REVISIT_RECOVER_WEIGHTS}
"""The named mixes (`scripts/train_tool_lora.py --mix NAME`)."""
KINDS: tuple[str, ...] = (*CHAINS_WEIGHTS, "crowded", "slipped", "revisit")
"""Every kind of conversation."""
ARITHMETIC_DISTRACTOR = 0.3
"""In a mix with `compute` or `multi_turn` conversations, the share of the other conversations offered an
arithmetic tool they do not need (so that being offered is no reason to call it)."""
_CHATS = ("multi_turn", "slipped", "revisit")
_JUDGED = tuple(f for f in FAMILIES if f.judge is not None)
_PAIR_MODES: tuple[Mode, ...] = ("both", "compare")


def _parallel(build: Builder) -> Turn:
    """Two calls side by side: the same tool for two values (both answered, or one picked), or two tools."""
    rng = build.rng
    if rng.random() < 0.4:
        return two_at_once_turn(build)
    pattern = rng.choice(PAIR_PATTERNS)
    return pair_turn(build, pattern, rng.choice(_PAIR_MODES) if pattern.compare else "both")


def _compute(build: Builder) -> Turn:
    """Lookups then the arithmetic tool: one lookup's values, a chain's, two lookups side by side, or
    (a tenth) a sum whose numbers the user gives."""
    rng = build.rng
    r = rng.random()
    if r < 0.1:
        return word_problem_turn(build, rng.choice(WORD_PROBLEMS))
    if r < 0.25:
        return pair_turn(build, rng.choice([p for p in PAIR_PATTERNS if p.combine]), "combine")
    return compute_turn(build, rng.choice(COMPUTE_PATTERNS))


def _drawn(build: Builder, kind: str, arithmetic: float) -> ToolConversation:
    """A conversation of one of the kinds beyond the default mix."""
    if kind in _CHATS:
        return session(build, slipped=kind == "slipped", revisit=kind == "revisit")
    for _ in range(20):
        build.start()
        try:
            turn = (long_chain_turn(build, build.rng.choice(LONG_CHAINS)) if kind == "chain3"
                    else _parallel(build) if kind == "parallel" else _compute(build))
        except Redraw:
            continue
        return as_conversation(build, kind, turn, 0.0 if kind == "compute" else arithmetic)
    raise RuntimeError(f"no {kind} conversation in 20 draws")  # pragma: no cover


def synthetic_conversations(n: int, seed: int = 0, *, weights: Mapping[str, float] | None = None,
                            refusals: bool = True, fresh_names: float = 0.0, finish: float = 0.0,
                            ) -> list[ToolConversation]:
    """`n` tool-use conversations drawn with `random.Random(seed)`: by default (`KIND_WEIGHTS`) about 40 %
    one call, 15 % one call whose result the answer must reason on, 25 % two calls in sequence, 20 % no
    call; `weights` may name any of `KINDS` (`MIXES["chains"]` adds chains of three calls, parallel calls,
    computing with results and multi-turn chats; `MIXES["serial"]` the same without parallel calls, with
    no-call requests among many tools). `refusals=False` leaves out the no-call answers that say
    no offered tool can do the request; `fresh_names` is the share of tools renamed from their family's words
    (`get_x_info`, `queryX`); `finish` the share of one-request conversations offered a tool that finishes
    the run, and ending with its call."""
    mix = dict(weights or KIND_WEIGHTS)
    if set(mix) - set(KINDS) or not any(mix.values()):
        raise ValueError(f"weights name kinds of {sorted(KINDS)}, at least one above 0")
    kinds, shares = list(mix), list(mix.values())
    arithmetic = ARITHMETIC_DISTRACTOR if mix.get("compute") or any(mix.get(k) for k in _CHATS) else 0.0
    rng = random.Random(seed)
    build = Builder(rng, fresh_names)
    out: list[ToolConversation] = []
    for _ in range(n):
        kind = rng.choices(kinds, shares)[0]
        if kind == "single":
            conv = single(build, rng.choice(FAMILIES))
        elif kind == "use_result":
            conv = single(build, rng.choice(_JUDGED), judged=True)
        elif kind == "sequence":
            conv = chained(build, rng.choice(CHAIN_PATTERNS)) if rng.random() < 0.65 else two_things(build)
        elif kind == "no_tool":
            conv = no_tool(build, refusals)
        elif kind == "crowded":
            conv = no_tool(build, refusals, (5, 9), "crowded")
        else:
            conv = _drawn(build, kind, arithmetic)
        if arithmetic and kind in (*KIND_WEIGHTS, "crowded") and rng.random() < arithmetic:
            build.start()
            tools = list(conv.tools)
            tools.insert(rng.randrange(len(tools) + 1), with_arithmetic(build))
            conv = ToolConversation(conv.kind, tools, conv.messages, conv.final, conv.given)
        if finish and rng.random() < finish and kind not in _CHATS:  # no draw without: as before
            conv = finishing(build, conv)
        assert not [t for t in conv.tools if held_out(t["function"]["name"])], conv.tools
        out.append(conv)
    return out


def tool_names() -> list[str]:
    """Every tool name the generator may offer (before renaming)."""
    return [name for f in (*FAMILIES, *ARITHMETIC_FAMILIES) for name in f.names]


check_tables()
