"""The synthetic tool-use conversations (agentkit.training.synthetic_tools): deterministic, schema-valid,
mixed as asked, chained for real, answered from the results, diverse, and clear of the held-out tools."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from functools import cache
from typing import Any

import pytest

from agentkit.messages import ToolCall
from agentkit.training.synthetic_tools import (
    CHAIN_PATTERNS,
    FRAMEWORK_FINISHERS,
    HELD_OUT_TOOLS,
    HELD_OUT_WORDS,
    ToolConversation,
    synthetic_conversations,
    tool_names,
)

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
