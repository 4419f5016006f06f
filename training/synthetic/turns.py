"""The pieces every kind of conversation is built from: the conversation record, a call's arguments, results and
result text, and the `Builder` that names, calls and offers tools with one random generator."""

from __future__ import annotations

import json
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.messages import Message, ToolCall
from agentkit.training.synthetic.families import FAMILIES
from agentkit.training.synthetic.family import Family
from agentkit.training.synthetic.heldout import HELD_OUT_TOOLS, HELD_OUT_WORDS
from agentkit.training.synthetic.surface import text_of, typo
from agentkit.training.synthetic.values import value


@dataclass(frozen=True)
class ToolConversation:
    """One training conversation: the tools offered and the messages: a user request, then the assistant's
    calls with their results, then its answer (in text, or as the call of a finishing tool, named in
    `final`, with its result). A `multi_turn` conversation has several user requests, each followed by the
    assistant's calls and answer. `given` holds the indices in `messages` of assistant replies that are
    history to learn from, not replies to learn (a made-up answer in a `slipped` chat)."""

    kind: str  # a key of KINDS
    tools: list[dict[str, Any]]
    messages: list[Message]
    final: tuple[str, ...] = ()  # the offered tools that finish the run (`@tool(final=True)`)
    given: tuple[int, ...] = ()


@dataclass(frozen=True)
class Lookup:
    """One call made in a conversation: its family, the name it was offered under, its arguments, the values
    its result holds, and the result as the tool wrote it."""

    fam: Family
    name: str
    args: dict[str, Any]
    outs: dict[str, Any]
    result: str

    @property
    def values(self) -> dict[str, str]:
        """Arguments and result values as text, for answer templates."""
        return {k: text_of(v) for k, v in {**self.args, **self.outs}.items()}


@dataclass
class Turn:
    """One user turn: the request, the assistant's replies after it (calls, results, the answer), and the
    calls made, for later turns to refer to."""

    request: str
    replies: list[Message]
    lookups: list[Lookup] = field(default_factory=list)

    @property
    def answer(self) -> str:
        """The turn's final answer in text."""
        return self.replies[-1].content


def draw_args(fam: Family, wanted: set[str], rng: random.Random, fixed: Mapping[str, Any] | None = None,
              ) -> tuple[dict[str, Any], dict[str, str]]:
    """Arguments (required ones, and the optional ones the request names) with their surface forms."""
    args: dict[str, Any] = dict(fixed or {})
    surfaces: dict[str, str] = {}
    for p in fam.params:
        if p.name in args or (p.optional and p.name not in wanted):
            continue
        for _ in range(5):  # two arguments from one pool (origin, destination) differ
            args[p.name], surfaces[p.name] = value(p.gen, rng, args)
            if not any(q.gen == p.gen and args.get(q.name) == args[p.name] for q in fam.params if q is not p):
                break
    return args, surfaces


def outputs(fam: Family, args: Mapping[str, Any], rng: random.Random, context: Mapping[str, Any] | None = None,
            ) -> dict[str, Any]:
    """The result's values; `context` (the first call's arguments in a chain) bounds them like `args` do."""
    known: dict[str, Any] = {**(context or {}), **args}
    outs: dict[str, Any] = {}
    for name, gen in fam.outs:
        outs[name] = known[name] = value(gen, rng, known)[0]
    return outs


def result_text(fam: Family, args: Mapping[str, Any], outs: Mapping[str, Any], rng: random.Random) -> str:
    """The tool's result: a JSON object, a plain sentence, "key: value" lines or (one output) the bare value."""
    r, single = rng.random(), len(outs) == 1
    if single and r < 0.45:
        return text_of(next(iter(outs.values())))
    if r < (0.7 if single else 0.55):
        required = {p.name for p in fam.params if not p.optional}
        echo = {k: v for k, v in args.items() if k in required} if rng.random() < 0.4 else {}
        return json.dumps({**echo, **outs}, ensure_ascii=False)
    if not single and r < 0.7:
        return "\n".join(f"{k}: {text_of(v)}" for k, v in outs.items())
    return fam.sentence.format(**{k: text_of(v) for k, v in {**args, **outs}.items()})


def check_args(spec: Mapping[str, Any], args: Mapping[str, Any]) -> None:
    """Assert `args` validate against the function spec's parameters (the types used here)."""
    params = spec["function"]["parameters"]
    assert not set(params["required"]) - set(args), (spec["function"]["name"], args)
    for k, v in args.items():
        prop = params["properties"][k]
        kind = prop["type"]
        ok = {"integer": type(v) is int, "number": type(v) in (int, float), "boolean": type(v) is bool,
              "string": type(v) is str}[kind]
        assert ok and ("enum" not in prop or v in prop["enum"]), (spec["function"]["name"], k, v)


def _fits(gen: str, v: Any) -> bool:
    """Whether `v` is a value the spec `gen` could have drawn (numbers for numbers, a listed pick)."""
    kind, _, rest = gen.partition(":")
    if kind in ("int", "num"):
        return type(v) is int if kind == "int" else type(v) in (int, float)
    if kind == "pick":
        return v in rest.split("|")
    return False


_VERBS = ("get", "lookup", "find", "fetch", "check", "query", "search", "show", "retrieve", "read")
_SUFFIXES_NAME = ("", "", "", "_info", "_data", "_api", "_v2", "_tool", "_now", "_details")
_ACTIONS = frozenset({"add", "book", "send", "create", "cancel", "place", "dim", "set", "reserve", "schedule",
                      "open", "close", "update", "delete", "renew", "pay", "start", "stop", "turn", "register",
                      "submit", "assign", "order", "transfer", "log", "apply", "request", "rename", "move",
                      "remove", "lock", "unlock", "post", "play", "refund", "return", "enroll", "issue"})


class Builder:
    """Draws everything a conversation needs from one `random.Random`: tool names (renamed with probability
    `fresh_names`), calls checked against their specs, and the offered tools around the needed ones."""

    def __init__(self, rng: random.Random, fresh_names: float = 0.0) -> None:
        self.rng = rng
        self.fresh_names = fresh_names
        self.named: dict[str, str] = {}  # family key -> name, within one conversation (`name_once`)
        self.calc: Family | None = None  # the conversation's arithmetic tool, once one is called

    def start(self) -> None:
        """Begin a new conversation: names and the arithmetic tool are drawn afresh."""
        self.named, self.calc = {}, None

    def name(self, fam: Family) -> str:
        """One of the family's names, or (with probability `fresh_names`) a new one made from its words, so
        that a model learns to read the offered tools rather than remember their names (an arithmetic tool
        keeps its own names: `get_compute_info` would not read as one)."""
        rng = self.rng
        name = rng.choice(fam.names)
        if not self.fresh_names or fam.domain == "arithmetic" or rng.random() >= self.fresh_names:
            return name
        words = [w for w in name.split("_") if w not in _VERBS]
        lead = [] if words and words[0] in _ACTIONS else [rng.choice(_VERBS)]  # add_x stays an action
        fresh = "_".join([*lead, *words]) + rng.choice(_SUFFIXES_NAME)
        if fresh in HELD_OUT_TOOLS or set(fresh.split("_")) & HELD_OUT_WORDS:
            return name
        if rng.random() < 0.2:  # camelCase, as some APIs name their tools
            head, *rest = fresh.split("_")
            fresh = head + "".join(w.capitalize() for w in rest)
        return fresh

    def name_once(self, fam: Family) -> str:
        """The family's name in this conversation: drawn on first use, the same on every later call."""
        if fam.key not in self.named:
            self.named[fam.key] = self.name(fam)
        return self.named[fam.key]

    def call(self, fam: Family, name: str, args: dict[str, Any]) -> ToolCall:
        """A call of the tool `name` (of family `fam`), its arguments checked against the spec."""
        check_args(fam.spec(name), args)
        return ToolCall(id=f"call_{self.rng.getrandbits(40):010x}", name=name, arguments=args)

    def offer(self, needed: Sequence[tuple[Family, str]], lo: int, hi: int, avoid: Collection[str] = ()
              ) -> list[dict[str, Any]]:
        """Specs of the needed tools among distractors, shuffled; distractors from domains in `avoid` never."""
        rng, taken = self.rng, {f.key for f, _ in needed}
        pool = [f for f in FAMILIES if f.key not in taken and f.domain not in avoid]
        k = rng.randint(max(lo, len(needed)), hi) - len(needed)
        chosen: list[Family] = []
        siblings = [f for f in pool if needed and f.domain == needed[0][0].domain]
        if siblings and k and rng.random() < 0.4:  # a look-alike from the same domain
            chosen.append(rng.choice(siblings))
        chosen += rng.sample([f for f in pool if f not in chosen], k - len(chosen))
        offered = [*needed, *((f, self.name(f)) for f in chosen)]
        rng.shuffle(offered)
        return [f.spec(n) for f, n in offered]

    def ask(self, template: str) -> str:
        """The request template, with a typo one time in ten."""
        return typo(template, self.rng) if self.rng.random() < 0.1 else template

    def lookup(self, fam: Family, args: dict[str, Any], context: Mapping[str, Any] | None = None,
               keep: Mapping[str, Any] | None = None) -> Lookup:
        """A call of `fam` (under its name in this conversation) with `args`: its result values and text.
        A result value named in `keep` (what earlier calls found, in a chain) is kept, where its spec allows."""
        name = self.name_once(fam)
        check_args(fam.spec(name), args)
        outs = outputs(fam, args, self.rng, context)
        kept = keep or {}
        for out, gen in fam.outs:
            if out in kept and _fits(gen, kept[out]):
                outs[out] = kept[out]
        return Lookup(fam, name, args, outs, result_text(fam, args, outs, self.rng))

    def made(self, fam: Family, args: dict[str, Any], outs: dict[str, Any], result: str) -> Lookup:
        """A call of `fam` (under its name in this conversation) whose result values and text are given."""
        name = self.name_once(fam)
        check_args(fam.spec(name), args)
        return Lookup(fam, name, args, outs, result)

    def replies(self, steps: Sequence[Sequence[Lookup]], answer: str) -> list[Message]:
        """The assistant's replies: each step's calls in one reply (several: run in parallel), their results,
        then the answer."""
        out: list[Message] = []
        for step in steps:
            calls = [ToolCall(id=f"call_{self.rng.getrandbits(40):010x}", name=lk.name, arguments=lk.args)
                     for lk in step]
            out.append(Message.assistant(tool_calls=calls))
            out += [Message.tool(c, lk.result) for c, lk in zip(calls, step, strict=True)]
        out.append(Message.assistant(answer))
        return out
