"""Each reader of outside text has a size and a depth limit and keeps its time linear: the SQL guard, SKILL.md
front matter, chat session files, trajectory logs, lenient JSON and the text tool-call parser. Past a limit
the input is refused (or skipped) with a message that says which limit, never with a crash or a stall."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from agentkit.jsontext import (
    MAX_JSON_DEPTH,
    JSONLimitError,
    first_json_object,
    json_shape,
    lenient_json,
    loads_bounded,
    strict_json,
)
from agentkit.memory.sessions import MAX_MESSAGE_CHARS, SessionStore
from agentkit.messages import Message
from agentkit.skills.model import Skill, SkillFormatError
from agentkit.skills.skillmd import (
    MAX_FRONT_MATTER_DEPTH,
    MAX_SKILL_JSON_BYTES,
    parse_skill_md,
    read_skill_dir,
    render_skill_md,
    skill_from_markdown,
    write_skill_dir,
)
from agentkit.sql.guard import MAX_NESTING, MAX_STATEMENT_CHARS, StatementRefused, check_statement
from agentkit.tools.text_calls import MAX_CALL_SYNTAX_CHARS, MAX_CALLS_READ, MAX_REPLY_CHARS, parse_tool_calls
from agentkit.trajectory import Trajectory, iter_jsonl


def seconds(fn, *args, tries: int = 3):  # type: ignore[no-untyped-def]
    """The fastest of `tries` calls: a linear reader stays far under its bound even when the machine is busy for a
    moment, and a quadratic one (minutes) fails every try."""
    best = float("inf")
    for _ in range(tries):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


# -- SQL guard ---------------------------------------------------------------------------------------------------------
def test_many_trailing_semicolons_are_read_in_one_pass() -> None:
    """The statement was lexed again for every trailing semicolon: 20,000 of them took minutes."""
    sql = "SELECT 1" + ";" * (MAX_STATEMENT_CHARS - 10)
    assert seconds(check_statement, sql) < 1.0
    assert check_statement(sql) == "SELECT 1"
    assert check_statement("SELECT 1" + "; /**/" * 3000) == "SELECT 1"


def test_the_statement_ends_at_its_last_lexeme() -> None:
    assert check_statement("SELECT 1 ; /* x; */") == "SELECT 1"  # a ; inside a trailing comment is not the end
    assert check_statement("SELECT 'a;b';") == "SELECT 'a;b'"


def test_parentheses_deeper_than_the_limit_are_refused() -> None:
    assert check_statement("SELECT " + "(" * MAX_NESTING + "1" + ")" * MAX_NESTING).startswith("SELECT")
    with pytest.raises(StatementRefused, match=f"more than {MAX_NESTING} deep"):
        check_statement("SELECT " + "(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1))


def test_quoted_calls_nested_inside_ctes_are_checked_in_linear_time() -> None:
    inner = 'WITH "a"(x) AS (SELECT 1) SELECT x FROM "a"'
    assert check_statement(inner) == inner
    nested = 'SELECT ' + '"f"(' * 90 + "1" + ")" * 90
    with pytest.raises(StatementRefused, match="quoted name cannot be called"):
        check_statement(nested)


# -- SKILL.md ----------------------------------------------------------------------------------------------------------
def test_deep_front_matter_is_refused_before_yaml_reads_it() -> None:
    """libyaml's loader recursed on 100,000 open brackets until the interpreter crashed."""
    with pytest.raises(SkillFormatError, match="longer than 32,000 characters"):
        parse_skill_md("---\na: " + "[" * 100_000 + "\n---\nbody")
    for head in ("a: " + "[" * 30_000, "a: " + "{" * 40, "- " * 5_000 + "x"):
        with pytest.raises(SkillFormatError, match=f"more than {MAX_FRONT_MATTER_DEPTH} deep"):
            parse_skill_md(f"---\n{head}\n---\nbody")
    ok = "a: " + "[" * (MAX_FRONT_MATTER_DEPTH - 1) + "]" * (MAX_FRONT_MATTER_DEPTH - 1)  # in a mapping: one more
    assert parse_skill_md(f"---\n{ok}\n---\nbody")[1] == "body"


def test_yaml_aliases_are_refused_and_never_written() -> None:
    bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]"
    with pytest.raises(SkillFormatError, match="aliases"):
        parse_skill_md(f"---\n{bomb}\n---\nbody")
    shared = ["one", "two"]
    skill = Skill(name="s", description="d", body="b", extra={"front_matter": {"x": shared, "y": shared}})
    assert "*" not in render_skill_md(skill)
    assert skill_from_markdown(render_skill_md(skill)).extra["front_matter"] == {"x": shared, "y": shared}


def test_oversized_skill_text_and_skill_json_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SkillFormatError, match="longer than"):
        parse_skill_md("---\nname: a\n---\n" + "x" * 300_000)
    folder = write_skill_dir(Skill(name="s", description="d", body="b"), tmp_path / "s")
    (folder / "skill.json").write_text("[" * 10_000)
    with pytest.raises(SkillFormatError, match="too deeply nested"):
        read_skill_dir(folder)
    (folder / "skill.json").write_text(" " * (MAX_SKILL_JSON_BYTES + 1))
    with pytest.raises(SkillFormatError, match="larger than"):
        read_skill_dir(folder)


# -- chat sessions -----------------------------------------------------------------------------------------------------
def test_a_damaged_session_file_loads_what_it_can(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SessionStore(tmp_path / "s.db")
    store.save("chat", [Message.user("first"), Message.assistant("second")], metadata={"k": 1})
    with sqlite3.connect(store.path) as db:
        db.execute("INSERT INTO messages VALUES ('chat', 2, ?)", ("[" * 100_000,))
        db.execute("INSERT INTO messages VALUES ('chat', 3, ?)", ("not json",))
        too_long = '{"role": "user", "content": "' + "x" * MAX_MESSAGE_CHARS + '"}'
        db.execute("INSERT INTO messages VALUES ('chat', 4, ?)", (too_long,))
        db.execute("INSERT INTO messages VALUES ('chat', 5, ?)", (Message.user("last").model_dump_json(),))
        db.execute("UPDATE sessions SET metadata = ?", ("[" * 100_000,))
    session = store.load("chat")
    assert [m.content for m in session.messages] == ["first", "second", "last"]
    assert session.metadata == {} and store.list()[0].metadata == {}
    assert sum("skipped" in r.message for r in caplog.records) == 3


# -- trajectory logs ---------------------------------------------------------------------------------------------------
def test_a_hostile_log_keeps_its_good_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agentkit.trajectory as trajectory_module

    monkeypatch.setattr(trajectory_module, "MAX_RECORD_BYTES", 100_000)
    good = Trajectory(task="good").model_dump_json()
    cyclic = json.loads(Trajectory(task="cyclic").model_dump_json())
    turn = {"index": 0, "output": {"role": "assistant", "content": "x"}, "extends": 0, "prompt_ids": [1]}
    cyclic["turns"] = [turn]
    lines = [good, "[" * 50_000, '{"task": "' + "x" * 200_000 + '"}', json.dumps(cyclic), '{"task": "torn', good]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    assert [t.task for t in iter_jsonl(log)] == ["good", "good"]


def test_a_turn_may_only_extend_an_earlier_turn() -> None:
    data = json.loads(Trajectory().model_dump_json())
    data["turns"] = [{"index": 0, "output": {"role": "assistant"}, "extends": 1},
                     {"index": 1, "output": {"role": "assistant"}, "extends": 0}]
    with pytest.raises(ValueError, match="does not come before it"):
        Trajectory.model_validate(data)


# -- JSON ----------------------------------------------------------------------------------------------------------
def test_the_json_readers_refuse_deep_text_by_a_linear_scan() -> None:
    deep = "[" * 200_000 + "]" * 200_000
    assert json_shape(deep).too_deep and not json_shape("[" * MAX_JSON_DEPTH).too_deep
    assert json_shape('["a", {"b": "[{"').closers == "}]" and json_shape('["a", "b').in_string
    with pytest.raises(JSONLimitError, match=f"depth > {MAX_JSON_DEPTH}"):
        loads_bounded(deep)
    with pytest.raises(ValueError, match="too deeply nested"):
        strict_json(deep)
    assert lenient_json(deep) is None
    with pytest.raises(JSONLimitError):
        lenient_json(deep, raise_limits=True)
    assert first_json_object("{" * 300_000) is None
    assert first_json_object('x {"a": {"b": 1}, y} {"c": 2}') == {"b": 1}
    assert lenient_json('{"a": ' * 99 + "1") is not None  # 99 deep, truncated: within the limit, repaired


def test_a_python_literal_is_read_without_python_s_parser() -> None:
    assert lenient_json("{'a': 'it\\'s', 'b': None, 'c': [True, False], 'd': 'say \"hi\"'}") == \
        {"a": "it's", "b": None, "c": [True, False], "d": 'say "hi"'}
    assert lenient_json("{'a': 'None of these'}") == {"a": "None of these"}
    assert lenient_json("{'s': 'cut off") == {"s": "cut off"}


# -- the text tool-call parser -----------------------------------------------------------------------------------------
def test_a_reply_past_the_limit_is_an_error_not_read() -> None:
    out = parse_tool_calls("x" * (MAX_REPLY_CHARS + 1), {"f"})
    assert out.error is not None and out.error.startswith("reply too long to read (1,000,001 characters")


def test_at_most_the_limit_of_calls_is_read() -> None:
    call = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert len(parse_tool_calls(call * (MAX_CALLS_READ + 50), {"f"}).calls) == MAX_CALLS_READ
    lines = '{"name": "f", "arguments": {}}\n' * (MAX_CALLS_READ + 50)
    assert len(parse_tool_calls(lines, {"f"}).calls) == MAX_CALLS_READ


def test_call_syntax_is_read_within_its_allowance() -> None:
    assert [c.arguments for c in parse_tool_calls("<tool_call>f(a=1, b='x')</tool_call>", {"f"}).calls] == \
        [{"a": 1, "b": "x"}]
    long_call = "<tool_call>f(" + ", ".join(f"a{i}=1" for i in range(MAX_CALL_SYNTAX_CHARS // 4)) + ")</tool_call>"
    out = parse_tool_calls(long_call, {"f"})
    assert not out.calls and out.error is not None
