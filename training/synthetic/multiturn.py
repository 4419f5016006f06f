"""Chat sessions: 4 to 8 user turns that mix turns needing a tool with turns that need none.

A session keeps one set of tools (what it calls, an arithmetic tool, distractors) for all its turns, as a
chat does. Tool turns look something up, follow up on an earlier result ("And their orders?": the next
call takes its argument from that result), compute with earlier results or with numbers the user gives (the
arithmetic tool, never a sum worked out in the reply), or make several calls at once. Turns without a tool
are small talk, knowledge, work on text, or a question an earlier result already answers (`recall`); they
get an answer and no call. Every session has at least two tool turns and one without, and a tool turn after
a turn without one; often two or three turns without a tool come right before a tool turn, and the last
tool turn computes.

A `slipped` session (`session(b, slipped=True)`) is the same chat in which one or two earlier requests that
needed a lookup were answered without a call, with values no result gave: the state a model's own made-up
answer leaves a chat in. Those answers are shown as history and not taught (`ToolConversation.given`); the
later tool turns call as in any session, and no later turn follows up on a made-up value.

A `revisit` session (`session(b, revisit=True)`) comes back to an earlier result: one tool turn looks a value
up, a later one asks the same for another value ("And Bergen?"), and the last tool turn adds or subtracts the
two results with the arithmetic tool, looking nothing up again (`agentkit.training.synthetic.revisit`).
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Sequence

from agentkit.messages import Message
from agentkit.training.synthetic.arithmetic import FORMULA_FAMILIES
from agentkit.training.synthetic.chains import CHAIN_PATTERNS, LONG_CHAINS, ChainPattern
from agentkit.training.synthetic.computing import (
    COMPUTE_PATTERNS,
    PAIR_PATTERNS,
    WORD_PROBLEMS,
    ComputePattern,
    PairPattern,
)
from agentkit.training.synthetic.families import BY_KEY, FAMILIES
from agentkit.training.synthetic.family import Family
from agentkit.training.synthetic.multistep import (
    Mode,
    Redraw,
    compute_turn,
    follow_chain_turn,
    follow_compute_turn,
    long_chain_turn,
    lookup_turn,
    pair_turn,
    word_problem_turn,
)
from agentkit.training.synthetic.no_tool import CLOSINGS, CREATIVE, GREETINGS, KNOWLEDGE, SMALL_TALK
from agentkit.training.synthetic.revisit import COMBINABLE, again_and_gap_turn, again_turn, anchor_turn, combine_turn
from agentkit.training.synthetic.surface import dress, text_of
from agentkit.training.synthetic.turns import Builder, Lookup, ToolConversation, Turn, outputs

RECALL_ASKS = ("Sorry, what was the {label} again?", "Remind me, what was the {label}?",
               "And the {label} was...?", "What did you say the {label} was?", "wait, which {label} was it?")
RECALL_ANSWERS = ("The {label} was {value}.", "It was {value}.", "{value}, as I found above.")
_LABELS = {"latest_pr": "newest pull request", "pr_total": "number of pull requests", "result": "result",
           "size_bytes": "size in bytes", "kwh": "usage in kWh", "gc_percent": "GC content",
           "eta": "arrival date", "asn": "AS number", "sha": "commit hash", "bp": "length"}
_FOLLOW_CHAINS: dict[str, list[ChainPattern]] = defaultdict(list)
for _c in CHAIN_PATTERNS:
    if _c.follows:
        _FOLLOW_CHAINS[_c.first].append(_c)
_FOLLOW_COMPUTE: dict[str, list[ComputePattern]] = defaultdict(list)
for _p in COMPUTE_PATTERNS:
    if _p.follows and len(_p.keys) == 1:
        _FOLLOW_COMPUTE[_p.keys[0]].append(_p)
_ANCHORS = ("single", "chain_first", "compute_first", "pair", "long_chain", "compute")
_ANCHOR_WEIGHTS = (20, 28, 24, 12, 8, 8)


def plan(rng: random.Random, n: int) -> list[bool]:
    """Which of `n` turns need a tool: at least two do and one does not, a tool turn comes after a turn
    without one, and half the time two or three turns without a tool come right before a tool turn."""
    n_tool = rng.randint(2, n - 1)
    slots = [True] * n_tool + [False] * (n - n_tool)
    rng.shuffle(slots)
    last_tool = max(i for i, s in enumerate(slots) if s)
    if slots.index(False) > last_tool:  # every turn without a tool comes last: swap one ahead
        first_free = slots.index(False)
        slots[first_free], slots[last_tool] = True, False
        last_tool = first_free
    n_free = n - n_tool
    if n_free >= 2 and rng.random() < 0.5:
        run = min(n_free, rng.randint(2, 3))
        kept = slots[:]
        for _ in range(run):  # take `run` turns without a tool out and put them right before the last tool turn
            kept.remove(False)
        at = max(i for i, s in enumerate(kept) if s)
        slots = kept[:at] + [False] * run + kept[at:]
    return slots


def recall_turn(b: Builder, earlier: Sequence[Lookup], asked: set[str]) -> Turn | None:
    """A question an earlier lookup's result answers (a value only one earlier result holds under that
    name, not asked about before: `asked`), answered without a call; None when there is none."""
    rng = b.rng
    found = [(lk, k, v) for lk in earlier if lk.fam.domain != "arithmetic" for k, v in lk.outs.items()
             if isinstance(v, str | int | float) and not isinstance(v, bool) and text_of(v) in lk.result]
    counts = Counter(k for _, k, _ in found)
    options = [(k, v) for _, k, v in found if counts[k] == 1 and k not in asked]
    if not options:
        return None
    key, val = rng.choice(options)
    asked.add(key)
    label = _LABELS.get(key, key.replace("_", " "))
    answer = rng.choice(RECALL_ANSWERS).format(label=label, value=text_of(val))
    return Turn(rng.choice(RECALL_ASKS).format(label=label), [Message.assistant(answer)])


def _chat_turn(b: Builder, position: int, last: bool, earlier: Sequence[Lookup], avoid: set[str],
               asked: set[str]) -> Turn:
    """A turn without a tool: an opening, a sign-off, small talk, knowledge, work on text, or a recall."""
    rng = b.rng
    if position == 0:
        request, answer = rng.choice(GREETINGS if rng.random() < 0.7 else SMALL_TALK)
        return Turn(request, [Message.assistant(answer)])
    if last and rng.random() < 0.6:
        request, answer = rng.choice(CLOSINGS)
        return Turn(request, [Message.assistant(answer)])
    r = rng.random()
    if earlier and r < 0.3 and (turn := recall_turn(b, earlier, asked)) is not None:
        return turn
    if r < 0.6:
        request, answer, near = rng.choice(KNOWLEDGE)
        avoid.update(near)
        return Turn(dress(request, rng), [Message.assistant(answer)])
    if r < 0.8:
        request, answer = rng.choice(SMALL_TALK)
    elif r < 0.95:
        request, answer = rng.choice(CREATIVE)
    else:
        request, answer = rng.choice(CLOSINGS)
    return Turn(request, [Message.assistant(answer)])


def _tool_turn(b: Builder, earlier: Sequence[Lookup], computes: bool) -> Turn:
    """A turn that needs a tool: a follow-up on an earlier result, a sum (`computes`: this turn must compute
    when it can), or something new."""
    rng = b.rng
    chains = [(c, lk) for lk in earlier for c in _FOLLOW_CHAINS.get(lk.fam.key, ())]
    sums = [(p, lk) for lk in earlier for p in _FOLLOW_COMPUTE.get(lk.fam.key, ())]
    r = rng.random()
    if computes and r < 0.85:
        if sums and rng.random() < 0.75:
            pattern, lk = rng.choice(sums)
            return follow_compute_turn(b, pattern, [lk])
        if rng.random() < 0.5:
            return compute_turn(b, rng.choice(COMPUTE_PATTERNS))
        return word_problem_turn(b, rng.choice(WORD_PROBLEMS))
    if (chains or sums) and r < 0.55:
        if chains and (not sums or rng.random() < 0.6):
            chain, lk = rng.choice(chains)
            return follow_chain_turn(b, chain, lk)
        pattern, lk = rng.choice(sums)
        return follow_compute_turn(b, pattern, [lk])
    if earlier and r < 0.63:
        return word_problem_turn(b, rng.choice(WORD_PROBLEMS))
    anchor = rng.choices(_ANCHORS, _ANCHOR_WEIGHTS)[0]
    if anchor == "chain_first":
        return lookup_turn(b, BY_KEY[rng.choice(list(_FOLLOW_CHAINS))])
    if anchor == "compute_first":
        return lookup_turn(b, BY_KEY[rng.choice(list(_FOLLOW_COMPUTE))])
    if anchor == "pair":
        pair = rng.choice(PAIR_PATTERNS)
        modes: list[Mode] = ["both"]
        modes += ["compare"] if pair.compare else []
        modes += ["combine"] if pair.combine else []
        return pair_turn(b, pair, rng.choice(modes))
    if anchor == "long_chain":
        return long_chain_turn(b, rng.choice(LONG_CHAINS))
    if anchor == "compute":
        return compute_turn(b, rng.choice(COMPUTE_PATTERNS))
    return lookup_turn(b, rng.choice(FAMILIES))


def _call_key(lk: Lookup) -> str:
    return lk.name + json.dumps(lk.args, sort_keys=True, default=str)


def slip_slots(rng: random.Random, slots: Sequence[bool]) -> set[int]:
    """Which tool turns of a planned session are answered without a call: one, or (three times in ten, when
    there are two to choose) two of the tool turns before the last."""
    last_tool = max(i for i, s in enumerate(slots) if s)
    candidates = [i for i, s in enumerate(slots) if s and i < last_tool]
    k = 2 if len(candidates) >= 2 and rng.random() < 0.3 else 1
    return set(rng.sample(candidates, k))


def slipped_turn(b: Builder) -> tuple[Turn, Lookup]:
    """A lookup request answered without its call: the family's answer with values drawn afresh (no result
    gave them), and the lookup it should have made."""
    rng = b.rng
    fam = rng.choice([f for f in FAMILIES if f.domain != "arithmetic"])
    turn = lookup_turn(b, fam)
    lk = turn.lookups[0]
    made_up = {k: text_of(v) for k, v in {**lk.args, **outputs(fam, lk.args, rng)}.items()}
    return Turn(turn.request, [Message.assistant(rng.choice(fam.answers).format(**made_up))]), lk


def revisit_roles(rng: random.Random, slots: Sequence[bool]) -> dict[int, str]:
    """Which tool turns of a planned session carry a revisit thread: "anchor" (a lookup), "again" (the same for
    another value) and, last, "combine" (the two results added or subtracted); with two tool turns, the anchor
    and "again_gap" (the second lookup and the difference in one turn)."""
    tools = [i for i, s in enumerate(slots) if s]
    if len(tools) == 2:
        return {tools[0]: "anchor", tools[1]: "again_gap"}
    anchor = rng.choice(tools[:-2])
    again = rng.choice([i for i in tools[:-1] if i > anchor])
    return {anchor: "anchor", again: "again", tools[-1]: "combine"}


def _revisit_turn(b: Builder, role: str, pattern: PairPattern, thread: Sequence[Lookup]) -> Turn:
    """The revisit thread's turn for `role`, given the thread's lookups so far."""
    if role == "anchor":
        return anchor_turn(b, pattern)
    if role == "again":
        return again_turn(b, pattern, thread[0])
    if role == "again_gap":
        return again_and_gap_turn(b, pattern, thread[0])
    return combine_turn(b, pattern, thread[0], thread[1])


def session(b: Builder, slipped: bool = False, revisit: bool = False) -> ToolConversation:
    """A chat of 4 to 8 user turns (see the module): kind "multi_turn"; with `slipped` one or two tool turns
    answered without a call and marked `given` (kind "slipped"); with `revisit` a thread that comes back to an
    earlier result (kind "revisit")."""
    b.start()
    rng = b.rng
    b.calc = rng.choice(FORMULA_FAMILIES)  # offered in every session, as a chat's calculator is
    slots = plan(rng, rng.randint(4, 8))
    last_tool = max(i for i, s in enumerate(slots) if s)
    slips = slip_slots(rng, slots) if slipped else set()
    roles = revisit_roles(rng, slots) if revisit else {}
    pattern = rng.choice(COMBINABLE) if revisit else COMBINABLE[0]  # no draw without: the other kinds as before
    thread: list[Lookup] = []
    turns: list[Turn] = []
    earlier: list[Lookup] = []
    skipped: list[Lookup] = []  # lookups a slipped turn should have made: offered, never followed up
    called: set[str] = set()
    avoid: set[str] = set()
    asked: set[str] = set()
    computed = False
    for i, needs_tool in enumerate(slots):
        for _ in range(10):
            missed: Lookup | None = None
            try:
                if i in slips:
                    turn, missed = slipped_turn(b)
                elif i in roles:
                    turn = _revisit_turn(b, roles[i], pattern, thread)
                elif needs_tool:
                    turn = _tool_turn(b, earlier, computes=i == last_tool and not computed and not roles)
                else:
                    turn = _chat_turn(b, i, i == len(slots) - 1, earlier, avoid, asked)
            except Redraw:
                continue
            keys = [_call_key(lk) for lk in ([missed] if missed else turn.lookups)]
            fresh = turn.request not in {t.request for t in turns}
            if fresh and not set(keys) & called and len(set(keys)) == len(keys):  # no request or call repeats
                break
        else:
            raise RuntimeError("no turn without a repeat in 10 draws")  # pragma: no cover
        called.update(keys)
        thread += [lk for lk in turn.lookups if lk.fam.key == pattern.key] if i in roles else []
        earlier += turn.lookups
        skipped += [missed] if missed else []
        computed = computed or any(lk.fam.domain == "arithmetic" for lk in turn.lookups)
        turns.append(turn)
    needed: dict[str, tuple[Family, str]] = {b.calc.key: (b.calc, b.name_once(b.calc))}
    for lk in [*earlier, *skipped]:
        needed.setdefault(lk.fam.key, (lk.fam, lk.name))
    used_domains = {f.domain for f, _ in needed.values()}
    for turn in turns:  # a knowledge question whose answer an offered tool might look up: small talk instead
        question = next((k for k in KNOWLEDGE if k[0].lower().rstrip("?.!") in turn.request.lower()), None)
        if question is not None and set(question[2]) & used_domains:
            turn.request, answer = rng.choice(SMALL_TALK)
            turn.replies = [Message.assistant(answer)]
    pairs = list(needed.values())
    tools = b.offer(pairs, max(5, len(pairs)), max(9, len(pairs) + 1), avoid - used_domains)
    messages: list[Message] = []
    given: list[int] = []
    for i, turn in enumerate(turns):
        messages.append(Message.user(turn.request))
        given += [len(messages)] if i in slips else []
        messages += turn.replies
    kind = "slipped" if slipped else "revisit" if revisit else "multi_turn"
    return ToolConversation(kind, tools, messages, given=tuple(given))
