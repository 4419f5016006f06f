"""The synthetic tool-use conversations (agentkit.training.synthetic): deterministic, schema-valid,
mixed as asked, chained for real, answered from the results, diverse, and clear of the held-out tools; the
`chains` mix's chains of three or four calls, parallel calls, computing through the arithmetic tool and
chats; and the leakage rule on a sample (tests/benchmarks/check_leakage.py)."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from agentkit.messages import Message, ToolCall
from agentkit.training.synthetic import (
    CHAIN_PATTERNS,
    FRAMEWORK_FINISHERS,
    HELD_OUT_TOOLS,
    HELD_OUT_WORDS,
    KINDS,
    LONG_CHAINS,
    MIXES,
    ToolConversation,
    held_out,
    synthetic_conversations,
    tool_names,
)
from agentkit.training.synthetic.arithmetic import ARITHMETIC_FAMILIES
from agentkit.training.synthetic.chains import VALUE_CHAINS
from agentkit.training.synthetic.families import BY_KEY
from agentkit.training.synthetic.families.estimates import ESTIMATE_FAMILIES
from agentkit.training.synthetic.kinds import chained
from agentkit.training.synthetic.multiturn import RECALL_ASKS
from agentkit.training.synthetic.turns import Builder, outputs

BENCH = Path(__file__).parent / "benchmarks"
DOCS = {f.doc: f.key for f in BY_KEY.values()}  # a family by its tools' description
RECALLS = [re.escape(a).replace(re.escape("{label}"), ".+") for a in RECALL_ASKS]

EVAL_TOOLS = {"calculator", "get_weather", "convert_currency", "get_population", "unit_convert", "count_letters",
              "local_time", "city_distance", "tip_amount", "sales_tax", "days_between", "add_days", "word_count",
              "reverse_text", "stock_price"}
TARGETS = {"single": 40, "use_result": 15, "sequence": 25, "no_tool": 20}


@cache
def convs(n: int, seed: int = 0) -> tuple[ToolConversation, ...]:
    return tuple(synthetic_conversations(n, seed))


def calls(conv: ToolConversation) -> list[ToolCall]:
    return [c for m in conv.messages for c in m.tool_calls]


def results(conv: ToolConversation) -> list[str]:
    return [m.content for m in conv.messages if m.role == "tool"]


def spec_of(conv: ToolConversation, name: str) -> dict[str, Any]:
    found = [t for t in conv.tools if t["function"]["name"] == name]
    assert len(found) == 1, (name, [t["function"]["name"] for t in conv.tools])
    params: dict[str, Any] = found[0]["function"]["parameters"]
    return params


def valid(schema: dict[str, Any], args: dict[str, Any]) -> bool:
    """A strict validator for the types the generator uses (integers are ints, never bools or floats)."""
    if schema["type"] != "object" or set(schema["required"]) - set(args) or set(args) - set(schema["properties"]):
        return False
    checks = {"integer": lambda v: type(v) is int, "number": lambda v: type(v) in (int, float),
              "boolean": lambda v: type(v) is bool, "string": lambda v: type(v) is str}
    return all(checks[schema["properties"][k]["type"]](v) and v in schema["properties"][k].get("enum", [v])
               for k, v in args.items())


def tokens(text: str) -> set[str]:
    """The numbers and words of a tool result (JSON values or plain text), lower-cased."""
    try:
        loaded = json.loads(text)
        values = [str(v) for v in loaded.values()] if isinstance(loaded, dict) else [str(loaded)]
    except json.JSONDecodeError:
        values = [text]
    return {t.lower() for v in values for t in re.findall(r"[A-Za-z0-9][\w.\-/@]*[A-Za-z0-9]|\d", v)}


def test_same_seed_same_conversations_and_another_seed_others() -> None:
    a, b = synthetic_conversations(60, seed=7), synthetic_conversations(60, seed=7)
    assert a == b
    assert [c.messages[0].content for c in a] != [c.messages[0].content for c in synthetic_conversations(60, seed=8)]
    assert synthetic_conversations(30, seed=7) == a[:30]


def test_conversations_are_well_formed() -> None:
    positions: Counter[int] = Counter()
    for conv in convs(500):
        msgs = conv.messages
        assert msgs[0].role == "user" and msgs[0].content
        assert msgs[-1].role == "assistant" and msgs[-1].content and not msgs[-1].tool_calls
        assert not re.search(r"[{}]|tool_call|<", msgs[-1].content), msgs[-1].content
        for turn, after in itertools.pairwise(msgs[1:]):
            if turn.role == "assistant":
                assert len(turn.tool_calls) == 1 and turn.content == ""
                assert after.role == "tool" and after.tool_call_id == turn.tool_calls[0].id and after.content
        names = [t["function"]["name"] for t in conv.tools]
        assert len(names) == len(set(names))
        assert all(t["type"] == "function" and t["function"]["description"] for t in conv.tools)
        lo, hi = (1, 5) if conv.kind == "no_tool" else (2, 6)
        assert lo <= len(conv.tools) <= hi, (conv.kind, len(conv.tools))
        if conv.kind in ("single", "use_result"):
            assert len(calls(conv)) == 1
            positions[names.index(calls(conv)[0].name)] += 1
        if conv.kind == "sequence":
            assert len(calls(conv)) == 2
    assert len(positions) >= 4, positions  # the needed tool is not always in the same place


def test_every_call_names_an_offered_tool_and_validates_against_its_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for seed in (0, 1):
        for conv in convs(500, seed):
            for call in calls(conv):
                schema = spec_of(conv, call.name)
                assert valid(schema, call.arguments), (call.name, call.arguments, schema)
                jsonschema.validate(call.arguments, schema)


def test_the_validator_catches_bad_arguments() -> None:
    schema = {"type": "object", "required": ["n"], "properties": {
        "n": {"type": "integer"}, "mode": {"type": "string", "enum": ["a", "b"]}, "f": {"type": "boolean"}}}
    assert valid(schema, {"n": 3, "mode": "a", "f": False})
    assert not valid(schema, {"mode": "a"})
    assert not valid(schema, {"n": "3"}) and not valid(schema, {"n": 3.0}) and not valid(schema, {"n": True})
    assert not valid(schema, {"n": 3, "mode": "c"}) and not valid(schema, {"n": 3, "other": 1})


def test_kinds_are_mixed_as_targeted() -> None:
    counts = Counter(c.kind for c in convs(500))
    assert set(counts) == set(TARGETS)
    for kind, target in TARGETS.items():
        assert abs(100 * counts[kind] / 500 - target) <= 10, (kind, counts)


def test_chained_calls_take_their_argument_from_the_first_result() -> None:
    assert len(CHAIN_PATTERNS) >= 15
    used: Counter[tuple[str, str]] = Counter()
    for conv in convs(1000):
        if conv.kind != "sequence":
            continue
        first, second = calls(conv)
        for p in CHAIN_PATTERNS:
            if first.name in p.first_names and second.name in p.second_names:
                linked = second.arguments[p.param]
                assert str(linked) in results(conv)[0], (p, second.arguments, results(conv)[0])
                assert str(linked) not in conv.messages[0].content  # the user never said it: it had to be looked up
                used[p.first, p.second] += 1
    assert len(used) >= 12, used
    assert sum(used.values()) >= 100


def test_independent_pairs_ask_for_two_things() -> None:
    pairs = [c for c in convs(1000) if c.kind == "sequence"
             and not any(calls(c)[0].name in p.first_names and calls(c)[1].name in p.second_names
                         for p in CHAIN_PATTERNS)]
    assert len(pairs) >= 40
    for conv in pairs:
        answer = conv.messages[-1].content.lower()
        for result in results(conv):  # the answer uses both results
            assert tokens(result) & tokens(answer), (result, answer)


def numbers(text: str, spelled: bool = False) -> set[str]:
    """The numbers in a text; with `spelled`, number words (one to twelve) as digits too."""
    names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
    words = {w: str(i) for i, w in enumerate(names)}
    if spelled:
        text = re.sub(r"[a-z]+", lambda m: words.get(m.group(), m.group()), text.lower())
    return set(re.findall(r"-?\d+(?:\.\d+)?", text))


def test_final_answers_use_the_last_result_and_invent_no_number() -> None:
    for conv in convs(500):
        if conv.kind == "no_tool":
            continue
        answer = conv.messages[-1].content
        assert tokens(results(conv)[-1]) & tokens(answer), (results(conv)[-1], answer)
        # every number in the answer is written as a result, the request or an argument wrote it
        said = [*results(conv), conv.messages[0].content, *(json.dumps(c.arguments) for c in calls(conv))]
        assert numbers(answer) <= set().union(*(numbers(t, spelled=True) for t in said)), (said, answer)


def test_use_result_answers_decide_from_the_result() -> None:
    judged = [c for c in convs(500) if c.kind == "use_result"]
    assert judged
    verdicts = Counter(c.messages[-1].content.split(":")[0].split()[0] for c in judged)
    assert verdicts["Yes"] >= 10 and (verdicts["No"] + verdicts["Not"]) >= 10, verdicts


def test_no_tool_conversations_have_no_calls_and_never_offer_a_held_out_tool() -> None:
    no_tool = [c for c in convs(1000) if c.kind == "no_tool"]
    assert no_tool and all(not calls(c) and len(c.messages) == 2 for c in no_tool)
    assert len({c.messages[-1].content for c in no_tool}) >= 40
    assert EVAL_TOOLS <= HELD_OUT_TOOLS
    offered = {t["function"]["name"] for seed in (0, 1) for c in convs(500, seed) for t in c.tools}
    assert not offered & HELD_OUT_TOOLS
    for name in [*offered, *tool_names()]:
        assert name not in HELD_OUT_TOOLS and not set(name.split("_")) & HELD_OUT_WORDS, name


def test_conversations_are_diverse() -> None:
    data = convs(1000)
    needed = {c.name for conv in data for c in calls(conv)}
    assert len(needed) >= 60, len(needed)
    assert len({conv.messages[0].content for conv in data}) >= 300
    assert len({conv.messages[-1].content for conv in data}) >= 300
    styles = Counter("json" if r.startswith("{") else "text" if " " in r else "bare"
                     for conv in data for r in results(conv))
    assert styles["json"] >= 300 and styles["text"] >= 200 and styles["bare"] >= 30, styles


def test_fresh_names_rename_tools_but_keep_them_callable_and_clear_of_the_held_out_ones() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    plain = {t["function"]["name"] for c in synthetic_conversations(300, seed=4) for t in c.tools}
    fresh = synthetic_conversations(300, seed=4, fresh_names=0.6)
    names = {t["function"]["name"] for c in fresh for t in c.tools}
    assert len(names - set(tool_names())) > 100 and plain <= set(tool_names())
    for conv in fresh:
        offered = {t["function"]["name"] for t in conv.tools}
        assert not offered & HELD_OUT_TOOLS
        assert not any({w.lower() for w in re.split(r"_|(?=[A-Z])", n)} & HELD_OUT_WORDS for n in offered)
        for call in calls(conv):
            jsonschema.validate(call.arguments, spec_of(conv, call.name))


def test_the_mix_and_the_refusals_can_be_chosen() -> None:
    convs_ = synthetic_conversations(400, seed=2, weights={"single": 1, "no_tool": 1}, refusals=False)
    assert {c.kind for c in convs_} == {"single", "no_tool"}
    refusal = re.compile(r"tools? (I have|available)|don't have a tool|needs a tool")
    assert not [c for c in convs_ if c.kind == "no_tool" and refusal.search(c.messages[-1].content)]
    assert [c for c in synthetic_conversations(400, seed=2) if c.kind == "no_tool"
            and refusal.search(c.messages[-1].content)]
    with pytest.raises(ValueError, match="weights"):
        synthetic_conversations(3, weights={"chat": 1})


def test_a_share_of_conversations_finish_by_calling_an_offered_finishing_tool() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    assert all(not c.final for c in convs(300))
    data = synthetic_conversations(600, seed=5, fresh_names=0.5, finish=0.3)
    finishing = [c for c in data if c.final]
    assert abs(len(finishing) / len(data) - 0.3) <= 0.06, len(finishing)
    assert {c.kind for c in finishing} == set(TARGETS)
    echoed = 0
    for conv in finishing:
        (name,) = conv.final
        assert name not in FRAMEWORK_FINISHERS | HELD_OUT_TOOLS
        *head, call_turn, result = conv.messages
        (call,) = call_turn.tool_calls
        assert call.name == name and result.role == "tool" and result.tool_call_id == call.id
        jsonschema.validate(call.arguments, spec_of(conv, name))
        (value,) = call.arguments.values()
        earlier = [c for m in head for c in m.tool_calls]
        assert all(c.name != name for c in earlier)  # called once, last
        if earlier and earlier[-1].arguments.get(next(iter(call.arguments))) == value:
            # the answering call's argument again: its result is the answer
            echoed += 1
            assert conv.kind == "single" and result.content == results(conv)[-2]
        else:  # the answer itself, a sentence quoting the results
            assert isinstance(value, str) and " " in value and not re.search(r"[{}]|tool_call", value)
            if conv.kind == "single":
                assert tokens(results(conv)[0]) & tokens(value)
    assert 10 <= echoed <= len(finishing) // 2, echoed


# ----------------------------------------------------------------------------------------------------------
# The `chains` mix: chains of three or four calls, calls side by side, computing with results, chats

CHAINS: dict[str, Any] = {"weights": MIXES["chains"], "refusals": False, "fresh_names": 0.5}
ARITHMETIC = {name for f in ARITHMETIC_FAMILIES for name in f.names}
SERIAL_RECIPE_SHA = "fdc714b2b9277c8f"  # sha256 of the serial recipe's 240 conversations (tools, messages), cut


@cache
def mixed(n: int, seed: int = 0) -> tuple[ToolConversation, ...]:
    return tuple(synthetic_conversations(n, seed, **CHAINS))


@cache
def chats(n: int, seed: int = 0) -> tuple[ToolConversation, ...]:
    return tuple(synthetic_conversations(n, seed, weights={"multi_turn": 1}, refusals=False, fresh_names=0.5))


def turns(conv: ToolConversation) -> list[list[Message]]:
    """The conversation cut at each user message: [request, replies...] per turn."""
    out: list[list[Message]] = []
    for m in conv.messages:
        if m.role == "user":
            out.append([m])
        else:
            out[-1].append(m)
    return out


def exact(formula: str) -> Fraction:
    """The value of a formula of numbers and + - * / ( ), computed exactly (independently of the generator)."""
    assert re.fullmatch(r"[\d.+\-*/() ]+", formula), formula
    value = eval(re.sub(r"\d+(?:\.\d+)?", lambda m: f"Fraction('{m.group()}')", formula), {"Fraction": Fraction})
    assert isinstance(value, Fraction)
    return value


def computed(call: ToolCall) -> tuple[Fraction, str]:
    """What an arithmetic call asks for: its exact value and the formula as written."""
    if "a" in call.arguments:
        sign = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}[call.arguments["operation"]]
        formula = f"{call.arguments['a']} {sign} {call.arguments['b']}"
    else:
        (formula,) = call.arguments.values()
    return exact(formula), formula


def result_number(text: str) -> Fraction:
    """The number an arithmetic tool's result gives: bare, {"result": x}, or "formula = x"."""
    text = text.split("=")[-1].strip()
    loaded = json.loads(text)
    return Fraction(str(loaded["result"] if isinstance(loaded, dict) else loaded))


def test_the_chains_mix_draws_every_kind_as_weighted() -> None:
    counts = Counter(c.kind for c in mixed(1000))
    assert set(counts) == set(MIXES["chains"]) == set(KINDS) - {"crowded", "slipped", "revisit"}
    total = sum(MIXES["chains"].values())
    for kind, weight in MIXES["chains"].items():
        assert abs(100 * counts[kind] / 1000 - 100 * weight / total) <= 4, (kind, counts)
    assert mixed(200) == tuple(synthetic_conversations(200, 0, **CHAINS))  # deterministic


def test_the_serial_mix_leaves_out_parallel_calls_and_crowds_some_no_call_requests() -> None:
    serial = synthetic_conversations(600, 3, weights=MIXES["serial"], refusals=False, fresh_names=0.5)
    counts = Counter(c.kind for c in serial)
    assert set(counts) == {k for k, w in MIXES["serial"].items() if w} and "parallel" not in counts
    def side_by_side(convs: Sequence[ToolConversation]) -> int:
        return sum(any(len(m.tool_calls) > 1 for m in c.messages) for c in convs)
    # only independent lookups before a sum (`compute`, and the chats' sums) stay side by side
    assert side_by_side(serial) == side_by_side([c for c in serial if c.kind in ("compute", "multi_turn")]) > 0
    assert side_by_side(serial) < side_by_side(mixed(600)) / 2
    for conv in serial:
        if conv.kind in ("no_tool", "crowded"):
            assert not calls(conv) and len(conv.messages) == 2
            lo, hi = (5, 10) if conv.kind == "crowded" else (1, 6)  # + an arithmetic tool, a third of the time
            assert lo <= len(conv.tools) <= hi, (conv.kind, len(conv.tools))
    crowded = [c for c in serial if c.kind == "crowded"]
    assert max(len(c.tools) for c in crowded) >= 9 and any(
        t["function"]["name"] in ARITHMETIC for c in crowded for t in c.tools)


def test_every_turn_is_well_formed_and_every_call_valid_and_offered() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for conv in (*mixed(600), *chats(100, 1)):
        names = [t["function"]["name"] for t in conv.tools]
        assert len(names) == len(set(names))
        for turn in turns(conv):
            assert turn[0].content and turn[-1].role == "assistant" and turn[-1].content and not turn[-1].tool_calls
            assert not re.search(r"[{}]|tool_call|<", turn[-1].content), turn[-1].content
            i = 1
            while i < len(turn) - 1:
                reply = turn[i]
                assert reply.role == "assistant" and reply.tool_calls and reply.content == ""
                results = turn[i + 1:i + 1 + len(reply.tool_calls)]
                assert [r.tool_call_id for r in results] == [c.id for c in reply.tool_calls]  # in call order
                assert all(r.role == "tool" and r.content for r in results)
                for call in reply.tool_calls:
                    jsonschema.validate(call.arguments, spec_of(conv, call.name))
                i += 1 + len(reply.tool_calls)


def test_chains_of_three_or_four_calls_pass_each_result_to_the_next_call() -> None:
    long = [c for c in mixed(1000) if c.kind == "chain3"]
    assert len(long) >= 60
    used: Counter[tuple[str, ...]] = Counter()
    for conv in long:
        made, found = calls(conv), results(conv)
        family = {t["function"]["name"]: DOCS.get(t["function"]["description"]) for t in conv.tools}  # renamed too
        (pattern,) = [p for p in LONG_CHAINS if p.keys == tuple(family[c.name] for c in made)]
        for i, link in enumerate(pattern.links):
            linked = str(made[i + 1].arguments[link.param])
            assert linked in found[i]  # the value came from the result before it...
            assert linked not in conv.messages[0].content  # ...the user never said it
        used[pattern.keys] += 1
        assert tokens(found[-1]) & tokens(conv.messages[-1].content)  # the answer quotes the last result
    assert len(used) >= 7 and max(len(k) for k in used) == 4, used


def test_value_chains_pass_a_looked_up_number_the_request_never_writes_in_a_later_reply() -> None:
    assert len(VALUE_CHAINS) >= 4
    for pattern in VALUE_CHAINS:
        for seed in range(40):
            conv = chained(Builder(random.Random(seed), fresh_names=0.5), pattern)
            request, first_reply, first_result, second_reply, second_result, answer = conv.messages
            (first,), (second,) = first_reply.tool_calls, second_reply.tool_calls  # one call a reply
            family = {t["function"]["name"]: DOCS.get(t["function"]["description"]) for t in conv.tools}
            assert (family[first.name], family[second.name]) == (pattern.first, pattern.second)
            linked = second.arguments[pattern.param]
            assert type(linked) in (int, float) and not isinstance(linked, bool)
            assert str(linked) in numbers(first_result.content), (linked, first_result.content)  # as written
            assert str(linked) not in numbers(request.content, spelled=True), (linked, request.content)
            assert str(linked) not in request.content
            assert tokens(second_result.content) & tokens(answer.content)  # the answer quotes the second result
    mixed_in: Counter[str] = Counter()
    for conv in mixed(1000):
        family = {t["function"]["name"]: DOCS.get(t["function"]["description"]) for t in conv.tools}
        made = [family[c.name] for c in calls(conv)]
        mixed_in.update(p.second for p in VALUE_CHAINS if (p.first, p.second) in itertools.pairwise(made))
    assert len(mixed_in) >= 3 and sum(mixed_in.values()) >= 15, mixed_in


def test_the_number_tools_give_the_same_result_for_the_same_arguments_and_none_is_held_out() -> None:
    for fam in ESTIMATE_FAMILIES:
        assert not any(held_out(name) for name in fam.names), fam.names
        args = {p.name: {"int": 300, "enum": p.gen.split(":")[1].split("|")[0]}[p.gen.split(":")[0]]
                if p.gen.startswith(("int", "enum")) else "FLD-101" for p in fam.params if not p.optional}
        assert outputs(fam, args, random.Random(1)) == outputs(fam, args, random.Random(2)), fam.key
    assert not any(held_out(name) for name in BY_KEY["package_info"].names)
    assert outputs(BY_KEY["energy_cost"], {"kwh": 100, "tariff": "economy"}, random.Random(0)) == {"cost": 21.0}
    plan = outputs(BY_KEY["irrigation_plan"], {"field_id": "FLD-101", "moisture_percent": 20}, random.Random(0))
    assert plan == {"target_percent": 35, "water_mm": 30, "run_minutes": 90}


def test_computing_calls_the_arithmetic_tool_on_the_looked_up_values_and_quotes_its_result() -> None:
    computing = [c for c in mixed(1000) if c.kind == "compute"]
    assert len(computing) >= 100
    from_results = 0
    for conv in computing:
        *lookups, last = calls(conv)
        assert last.name in ARITHMETIC and not any(c.name in ARITHMETIC for c in lookups)
        assert last.name in [t["function"]["name"] for t in conv.tools]
        value, formula = computed(last)
        assert abs(result_number(results(conv)[-1]) - value) <= Fraction(1, 20000)  # the formula's value (4 dp)
        written = results(conv)[-1].split("=")[-1].strip()
        shown = str(json.loads(written)["result"] if written.startswith("{") else written)
        answer = conv.messages[-1].content
        assert shown in answer, (shown, answer)  # the answer quotes the computed value
        request, looked_up = conv.messages[0].content, " ".join(results(conv)[:-1])
        operands = set(re.findall(r"\d+(?:\.\d+)?", formula))
        for number in operands:  # every number was looked up or given by the user (100: a percentage's base)
            assert number in numbers(looked_up) | numbers(request, spelled=True) | {"100"}, (number, conv.messages)
        if lookups:
            from_results += bool(operands & (numbers(looked_up) - numbers(request, spelled=True)))
    assert from_results >= 0.8 * sum(1 for c in computing if len(calls(c)) > 1)


def test_parallel_calls_go_in_one_reply_and_the_answer_uses_both_results() -> None:
    parallel = [c for c in mixed(1000) if c.kind == "parallel"]
    assert len(parallel) >= 60
    same_tool = 0
    for conv in parallel:
        (reply,) = [m for m in conv.messages if m.tool_calls]
        first, second = reply.tool_calls
        assert first.arguments != second.arguments or first.name != second.name
        same_tool += first.name == second.name
        answer = conv.messages[-1].content
        for result in results(conv):
            assert tokens(result) & tokens(answer), (result, answer)
    assert 0.3 * len(parallel) <= same_tool <= 0.8 * len(parallel)


def test_chats_mix_tool_and_no_tool_turns_and_keep_calling_tools_after_turns_without() -> None:
    sessions = chats(300)
    gap_then_tool = arithmetic_after_gap = with_arithmetic = carried = recalled = 0
    for conv in sessions:
        parts = turns(conv)
        assert 4 <= len(parts) <= 8
        needs = [any(m.tool_calls for m in t) for t in parts]
        assert sum(needs) >= 2 and not all(needs)
        assert any(not a and b for a, b in itertools.pairwise(needs))  # a tool turn after one without
        assert {t["function"]["name"] for t in conv.tools} & ARITHMETIC  # the arithmetic tool is always offered
        keys = [c.name + json.dumps(c.arguments, sort_keys=True) for c in calls(conv)]
        assert len(keys) == len(set(keys))  # no call repeats an earlier one (the loop would not run it)
        flags = "".join("T" if n else "N" for n in needs)
        gap_then_tool += "NNT" in flags
        arith = ["T" if any(c.name in ARITHMETIC for m in t for c in m.tool_calls) else "-" for t in parts]
        with_arithmetic += "T" in arith
        arithmetic_after_gap += any(arith[i] == "T" and flags[i - 2:i] == "NN" for i in range(2, len(parts)))
        seen_results: list[str] = []
        said: list[str] = []
        for part in parts:
            request = part[0].content
            if not any(m.tool_calls for m in part):
                assert len(part) == 2  # answered in text, no call
                if any(re.fullmatch(a, request) for a in RECALLS):  # asks for a value an earlier result holds
                    value = re.sub(r"^(The .+ was |It was )|(, as I found above)?\.$", "", part[1].content)
                    assert any(value in r for r in seen_results), (value, seen_results)
                    recalled += 1
            for m in part:
                for c in m.tool_calls:  # an argument found in an earlier turn's result, never typed by the user
                    carried += any(str(v) in r and str(v) not in " ".join([*said, request])
                                   for v in c.arguments.values() for r in seen_results)
            said.append(request)
            seen_results += [m.content for m in part if m.role == "tool"]
    assert gap_then_tool >= 0.35 * len(sessions), gap_then_tool
    assert with_arithmetic >= 0.6 * len(sessions), with_arithmetic
    assert arithmetic_after_gap >= 0.15 * len(sessions), arithmetic_after_gap
    assert carried >= 80, carried  # follow-ups ("And their orders?") take their argument from an earlier turn
    assert recalled >= 20, recalled  # questions an earlier result answers get that value, without a call


def test_slipped_chats_show_made_up_answers_as_given_history_and_later_tool_turns_still_call() -> None:
    sessions = synthetic_conversations(300, 4, weights={"slipped": 1}, refusals=False, fresh_names=0.5)
    two = 0
    for conv in sessions:
        assert conv.kind == "slipped" and 1 <= len(conv.given) <= 2
        two += len(conv.given) == 2
        offered = {t["function"]["name"] for t in conv.tools}
        for i in conv.given:  # a request answered at once, in text, with no call
            assert conv.messages[i - 1].role == "user" and conv.messages[i].role == "assistant"
            assert not conv.messages[i].tool_calls and conv.messages[i].content
            assert i + 1 == len(conv.messages) or conv.messages[i + 1].role == "user"
        last_given = max(conv.given)
        later_calls = [c for m in conv.messages[last_given:] for c in m.tool_calls]
        assert later_calls and {c.name for c in later_calls} <= offered  # a tool turn after the slip calls
        made_up = {w for i in conv.given for w in re.findall(r"\b\w*\d[\w.-]*\b", conv.messages[i].content)}
        shown = " ".join(m.content for m in conv.messages if m.role in ("user", "tool"))
        for c in later_calls:  # no call takes a value only a made-up answer gave
            assert not {str(v) for v in c.arguments.values()} & (made_up - set(re.findall(r"[\w.-]+", shown)))
    assert 0.15 * len(sessions) <= two <= 0.45 * len(sessions), two
    assert all(c.given == () for c in chats(50))  # the plain chats are unchanged: nothing given
    recover = synthetic_conversations(400, 5, weights=MIXES["recover"], refusals=False, fresh_names=0.5)
    counts = Counter(c.kind for c in recover)
    assert set(counts) == {k for k, w in MIXES["recover"].items() if w} and counts["slipped"] >= 15


def test_revisit_chats_look_up_another_value_then_combine_the_two_results_with_the_arithmetic_tool() -> None:
    sessions = synthetic_conversations(200, 6, weights={"revisit": 1}, refusals=False, fresh_names=0.5)
    only_arithmetic = lookup_then_arithmetic = 0
    for conv in sessions:
        assert conv.kind == "revisit" and conv.given == ()
        parts = turns(conv)
        assert 4 <= len(parts) <= 8
        tool_parts = [t for t in parts if any(m.tool_calls for m in t)]
        last = tool_parts[-1]
        last_calls = [c for m in last for c in m.tool_calls]
        assert last_calls[-1].name in ARITHMETIC and last[-1].content  # the sum or difference, then the answer
        looked_up = [c for c in last_calls if c.name not in ARITHMETIC]
        earlier = [c for t in tool_parts[:-1] for m in t for c in m.tool_calls if c.name not in ARITHMETIC]
        # the same tool as an earlier call, for another value of one argument ("And Bergen?")
        again = looked_up or [c for t in tool_parts[1:-1] for m in t for c in m.tool_calls if c.name not in ARITHMETIC]
        assert any(a.name == e.name and a is not e and len({k for k in a.arguments if a.arguments[k] !=
                   e.arguments.get(k)}) == 1 for a in again for e in earlier), conv.messages
        shown = " ".join(m.content for t in parts[:parts.index(last)] for m in t if m.role == "tool")
        shown += " " + " ".join(m.content for m in last if m.role == "tool" and m is not last[-2])
        numbers = re.findall(r"\d+(?:\.\d+)?", json.dumps(last_calls[-1].arguments))
        assert len(numbers) == 2 and all(n in shown for n in numbers), (numbers, shown)  # both from results
        result = last[-2].content  # the arithmetic tool's result, quoted by the answer
        assert re.findall(r"-?\d+(?:\.\d+)?", result)[-1] in last[-1].content
        if looked_up:
            lookup_then_arithmetic += 1
            assert len(looked_up) == 1 and [m.tool_calls != [] for m in last].count(True) == 2  # one after the other
        else:
            only_arithmetic += 1
            assert len(last_calls) == 1  # nothing looked up again: the two results are in the chat already
    assert only_arithmetic >= 0.5 * len(sessions) and lookup_then_arithmetic >= 0.1 * len(sessions)
    mix = synthetic_conversations(300, 5, weights=MIXES["revisit"], refusals=False, fresh_names=0.5)
    counts = Counter(c.kind for c in mix)
    assert set(counts) == {k for k, w in MIXES["revisit"].items() if w} and counts["revisit"] >= 20


def test_the_revisit_recover_mix_draws_both_revisit_and_slipped_chats_beside_every_serial_kind() -> None:
    mix = synthetic_conversations(300, 5, weights=MIXES["revisit-recover"], refusals=False, fresh_names=0.5)
    counts = Counter(c.kind for c in mix)
    assert set(counts) == set(MIXES["serial"]) | {"revisit", "slipped"}
    assert counts["revisit"] >= 20 and counts["slipped"] >= 12
    assert all(c.given for c in mix if c.kind == "slipped") and not any(c.given for c in mix if c.kind != "slipped")


def test_the_shipped_adapters_recipe_draws_the_same_conversations_as_when_it_was_trained() -> None:
    """`make tool-lora-1.5b-serial` (today's `local:default`): new kinds must not change what it draws."""
    conversations = synthetic_conversations(240, 0, weights=MIXES["serial"], refusals=False, fresh_names=0.5)
    text = json.dumps([[c.tools, [m.model_dump() for m in c.messages]] for c in conversations], default=str)
    assert hashlib.sha256(text.encode()).hexdigest()[:16] == SERIAL_RECIPE_SHA


def test_the_evaluation_tools_are_held_out_and_never_offered() -> None:
    sys.path.insert(0, str(BENCH))
    from bench_multiturn import load_sessions
    from tool_set_c import TOOLS_C

    set_c = {t.name for t in TOOLS_C}
    multiturn = {c["name"] for s in load_sessions() for t in s["turns"] for c in t["calls"]}
    assert set_c | multiturn | EVAL_TOOLS <= HELD_OUT_TOOLS
    assert len(set_c) == 13 and multiturn <= set_c
    for conv in (*convs(500), *mixed(1000), *chats(200), *synthetic_conversations(300, 4, fresh_names=0.6)):
        for t in conv.tools:
            name = t["function"]["name"]
            assert not held_out(name) and name not in set_c | multiturn, name
            assert not {w.lower() for w in re.split(r"_|(?<=[a-z0-9])(?=[A-Z])", name)} & HELD_OUT_WORDS, name
    assert held_out("getFerryRoute") and held_out("tide_table") and held_out("hive_status_v2")


def test_no_tool_requests_ask_nothing_the_benchmarks_no_tool_items_ask() -> None:
    asked = {c.messages[0].content for c in (*convs(1000), *mixed(1000)) if c.kind == "no_tool"}
    asked |= {t[0].content for c in chats(300) for t in turns(c) if len(t) == 2}
    assert len(asked) >= 80
    leaked = re.compile(r"capital|opposite|antonym|synonym|translat|in (spanish|french|german)|how do you say|"
                        r"colou?r of the sky|sky on a clear|fruit that is|\b(write|compose)\b.*\b(poem|haiku|verse)\b|"
                        r"python|keyword|how are you", re.IGNORECASE)
    assert not [a for a in asked if leaked.search(a)]
    domains = re.compile(r"museum|painting|painter|ferr(y|ies)|tide|harbour|hiking|mountain hut|\bbees?\b|hive|"
                         r"honey|lorry|bridge", re.IGNORECASE)
    assert not [a for a in asked if domains.search(a)]


@pytest.mark.slow  # MiniLM embeds the ~800 benchmark texts and the sample (about a minute on 2 cores)
def test_the_leakage_rule_holds_on_a_sample_of_the_recipes() -> None:
    pytest.importorskip("sentence_transformers")
    sys.path.insert(0, str(BENCH))
    from check_leakage import THRESHOLD, benchmark_texts, compare, leaks, user_texts

    from agentkit.memory.embeddings import Embedder

    fake = {"A": {"pairs_at_or_above_threshold": [{"benchmark": "b", "training": "t", "cosine": THRESHOLD}]},
            "B": {"pairs_at_or_above_threshold": []}}
    assert leaks(fake) == [{"set": "A", "benchmark": "b", "training": "t", "cosine": THRESHOLD}]
    revisit = synthetic_conversations(60, 0, weights=MIXES["revisit"], refusals=False, fresh_names=0.5)
    sample = user_texts([*mixed(200), *synthetic_conversations(100, 0, refusals=False, fresh_names=0.5), *revisit])
    report = compare(benchmark_texts(), sample, Embedder.default())
    assert set(report) == {"A", "B", "C", "D", "multiturn", "multiturn_d", "sql-dev", "sql-test"}
    assert not leaks(report), leaks(report)
