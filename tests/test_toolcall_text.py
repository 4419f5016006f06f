"""The text tool-call parser: a corpus of what small models really write, and random text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit.tools.text_calls import lenient_json, parse_tool_calls, render_tools

NAMES = {"add", "search", "get_weather", "final_answer"}

# (model output, expected [(name, arguments)], expect an error)
CORPUS: list[tuple[str, list[tuple[str, dict]], bool]] = [
    ('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>', [("add", {"a": 1, "b": 2})], False),
    ('Sure! <tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call> Done.', [("add", {"a": 1, "b": 2})],
     False),
    ("<tool_call>{'name': 'add', 'arguments': {'a': 1, 'b': 2}}</tool_call>", [("add", {"a": 1, "b": 2})], False),
    ('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2,},}</tool_call>', [("add", {"a": 1, "b": 2})], False),
    ('<tool_call>\n```json\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n```\n</tool_call>', [("add", {"a": 1, "b": 2})],
     False),
    ('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}', [("add", {"a": 1, "b": 2})], False),
    ('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}', [("add", {"a": 1, "b": 2})], False),
    ('<tool_call>{"name": "add", "args": {"a": 1}}</tool_call>', [("add", {"a": 1})], False),
    ('<tool_call>{"name": "add", "parameters": {"a": 1}}</tool_call>', [("add", {"a": 1})], False),
    ('<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', [("add", {"a": 1})], False),
    ('<tool_call>{"function": {"name": "add", "arguments": {"a": 1}}}</tool_call>', [("add", {"a": 1})], False),
    ('<tool_call>{"tool": "search", "input": {"q": "x"}}</tool_call>', [("search", {"q": "x"})], False),
    ('<tool_call>{"name": "search", "q": "cats"}</tool_call>', [("search", {"q": "cats"})], False),
    ('<tool_call>{"name": "get_weather", "arguments": {"ok": true, "n": null}}</tool_call>',
     [("get_weather", {"ok": True, "n": None})], False),
    ("<tool_call>{'name': 'get_weather', 'arguments': {'ok': True}}</tool_call>", [("get_weather", {"ok": True})], False),
    ('<tool_call>add(a=1, b=2)</tool_call>', [("add", {"a": 1, "b": 2})], False),
    ('<TOOL_CALL>{"name": "add", "arguments": {}}</TOOL_CALL>', [("add", {})], False),
    ('<toolcall>{"name": "add", "arguments": {}}</toolcall>', [("add", {})], False),
    ('<function_call>{"name": "add", "arguments": {}}</function_call>', [("add", {})], False),
    ('<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>\n<tool_call>{"name": "search", "arguments": {"q": "y"}}'
     '</tool_call>', [("add", {"a": 1}), ("search", {"q": "y"})], False),
    ('<tool_call>[{"name": "add", "arguments": {"a": 1}}, {"name": "add", "arguments": {"a": 2}}]</tool_call>',
     [("add", {"a": 1}), ("add", {"a": 2})], False),
    ('<tool_call>{"name": "add", "arguments": {"a": 1}}<tool_call>{"name": "add", "arguments": {"a": 2}}</tool_call>',
     [("add", {"a": 1}), ("add", {"a": 2})], False),
    ('```json\n{"name": "add", "arguments": {"a": 1}}\n```', [("add", {"a": 1})], False),
    ('Let me compute.\n```\n{"name": "search", "arguments": {"q": "z"}}\n```', [("search", {"q": "z"})], False),
    ('{"name": "add", "arguments": {"a": 5}}', [("add", {"a": 5})], False),
    # Calls one per line, the last cut off by the token limit: the complete ones are kept, the cut one dropped.
    ('{"name": "add", "arguments": {"a": 1}}\n{"name": "search", "arguments": {"q": "y"}}\n{"name": "add", "argu',
     [("add", {"a": 1}), ("search", {"q": "y"})], False),
    ('{"name": "add", "arguments": {"a": 1}}\n{"name": "search", "arguments": {"q": "a } {',
     [("add", {"a": 1})], False),
    ('<tool_call>{"name": "add", "arguments": {"a": 1}}\n{"name": "add", "arguments": {"a": 2, "b": [3</tool_call>',
     [("add", {"a": 1})], False),
    # A call-shaped object naming a tool that does not exist is an error the model can fix (small models
    # invent tools); JSON that is not shaped like a call stays plain text.
    ('{"name": "unknown_tool", "arguments": {"a": 5}}', [], True),
    ('```json\n{"name": "count_tracks", "arguments": {"sql": "SELECT 1"}}\n```', [], True),
    ('{"name": "Bob", "age": 5}', [], False),
    ('{"name": "Bob", "arguments": {"x": 1}, "city": "Oslo", "age": 5}', [], False),
    ('<tool_call>{"name": "add", "arguments": {"s": "a } tricky { string"}}</tool_call>',
     [("add", {"s": "a } tricky { string"})], False),
    ('<tool_call>{"name": "add", "arguments": {"s": "unterminated', [("add", {"s": "unterminated"})], False),
    ('<tool_call>{"name": "add", "arguments": {"text": "line1\\nline2"}}</tool_call>', [("add", {"text": "line1\nline2"})],
     False),
    ('<tool_call>{"name": "add", "arguments": {"xs": [1, 2, 3,]}}</tool_call>', [("add", {"xs": [1, 2, 3]})], False),
    ('<tool_call>  {"name" : "add" , "arguments" : { "a" : -1.5e2 } }  </tool_call>', [("add", {"a": -150.0})], False),
    ('<tool_call>{"name": "final_answer", "arguments": {"answer": "Paris"}}</tool_call>',
     [("final_answer", {"answer": "Paris"})], False),
    ('<tool_call>{"name": "add", "arguments": {"a": 1}, "id": "c1"}</tool_call>', [("add", {"a": 1})], False),
    # Doubled outer braces, as a template escapes them (Qwen2.5-Coder-1.5B writes this for a first call).
    ('<tool_call>{{"name": "add", "arguments": {"a": 1, "b": 2}}}</tool_call>', [("add", {"a": 1, "b": 2})], False),
    # Unreadable calls become errors the model can act on.
    ("<tool_call>this is not json at all</tool_call>", [], True),
    ("<tool_call></tool_call>", [], True),
    ('<tool_call>{"arguments": {"a": 1}}</tool_call>', [], True),
    ('<tool_call>{"name": "bad name!", "arguments": {}}</tool_call>', [], True),
    ('<tool_call>{"name": "add", "arguments": [1, 2]}</tool_call>', [], True),
    ("<tool_call>", [], True),
    # Plain answers stay plain answers.
    ("The answer is 42.", [], False),
    ("", [], False),
    ("I would call {add} but I know it: 3", [], False),
    ("Use JSON like {\"a\": 1} in your config.", [], False),
]


@pytest.mark.parametrize(("text", "expected", "error"), CORPUS)
def test_corpus(text: str, expected: list[tuple[str, dict]], error: bool) -> None:
    out = parse_tool_calls(text, NAMES)
    assert [(c.name, c.arguments) for c in out.calls] == expected
    assert (out.error is not None) == error
    if error and "no tool named" not in out.error:
        assert "<tool_call>" in out.error  # the hint shows the model the right format


def test_an_invented_tool_is_named_with_the_real_ones() -> None:
    out = parse_tool_calls('{"name": "count_tracks", "arguments": {}}', {"run_query", "confirm_answer"})
    assert out.error is not None and "no tool named 'count_tracks'" in out.error
    assert "confirm_answer, run_query" in out.error
    assert "TOOL_NAME" not in out.error  # the call was readable; small models copy a placeholder literally
    assert parse_tool_calls('{"name": "count_tracks", "arguments": {}}', set()).error is None  # no tools: an answer


def test_corpus_is_big_enough() -> None:
    assert len(CORPUS) >= 30


def test_prose_is_kept_apart_from_calls() -> None:
    out = parse_tool_calls('Thinking... <tool_call>{"name": "add", "arguments": {}}</tool_call>', NAMES)
    assert out.content == "Thinking..."
    assert parse_tool_calls("just text").content == "just text"


def test_render_tools_describes_tools_and_format() -> None:
    spec = {"type": "function", "function": {"name": "add", "description": "Add.", "parameters": {"type": "object"}}}
    text = render_tools([spec])
    assert "- add: Add." in text and "<tool_call>" in text and '"type":"object"' in text


def test_lenient_json_repairs() -> None:
    assert lenient_json("{'a': 1,}") == {"a": 1}
    assert lenient_json('prefix {"a": [1, 2} suffix') is None or isinstance(lenient_json('{"a": [1, 2'), dict)
    assert lenient_json('{"a": [1, 2') == {"a": [1, 2]}
    assert lenient_json("no json") is None
    assert lenient_json('{{"a": 1}}') == {"a": 1} and lenient_json("{{") is None


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_random_text_never_crashes(text: str) -> None:
    out = parse_tool_calls(text, NAMES)
    assert isinstance(out.content, str)
    assert all(c.name for c in out.calls)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='<>{}[]"\':,tool_call/ \nabnme0123', max_size=80))
def test_random_tag_soup_never_crashes(text: str) -> None:
    out = parse_tool_calls(f"<tool_call>{text}", NAMES)
    assert out.calls or out.error is not None


def test_a_stray_closer_is_repaired_and_the_hint_names_the_meant_tool() -> None:
    out = parse_tool_calls('<tool_call>{"name": "confirm", "arguments": {"sql": "SELECT 1"})', {"confirm"})
    assert [(c.name, c.arguments) for c in out.calls] == [("confirm", {"sql": "SELECT 1"})]
    broken = parse_tool_calls('<tool_call>{"name": "confirm", "arguments": {"sql": SELECT}}</tool_call>', {"confirm"})
    assert broken.error is not None and '{"name": "confirm", "arguments"' in broken.error
    assert "TOOL_NAME" not in broken.error
