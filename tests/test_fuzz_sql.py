"""Fuzz: SQL statements and function calls against the guard and the toolkit (issue 16).

Statements are built from pieces an attacker or a careless model would use (write keywords, file and
extension functions, quoting of every kind, comments, dollar tags, Unicode spaces, huge numbers, bomb
functions). Every one must be refused or run within its time limit plus a margin, fail only with
StatementRefused/QueryError, and leave the database file's bytes and its folder unchanged."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit.environments.sql import CHINOOK_DB
from agentkit.sql.connect import open_database
from agentkit.sql.database import QueryError, file_digest
from agentkit.sql.guard import StatementRefused, check_statement
from agentkit.sql.sqlite_safety import ALLOWED_FUNCTIONS
from agentkit.sql.toolkit import SchemaToolkit

TIMEOUT_S = 0.5
MARGIN_S = 4.0  # one straight-line step of the SQLite VM (up to 1 MB of work a value) on a busy machine

WORDS = ["SELECT", "WITH", "RECURSIVE", "VALUES", "FROM", "WHERE", "UNION", "ALL", "AS", "JOIN", "ON", "LIMIT",
         "INSERT", "INTO", "UPDATE", "DELETE", "DROP", "ATTACH", "DETACH", "PRAGMA", "VACUUM", "SAVEPOINT",
         "RELEASE", "BEGIN", "COMMIT", "ROLLBACK", "REPLACE", "CREATE", "ALTER", "RETURNING", "EXPLAIN",
         "Album", "Track", "Artist", "AlbumId", "Name", "main", "temp", "sqlite_master", "sqlite_dbpage"]
DENIED = ["load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "sqlite_log", "sqlite_compileoption_get"]
FUNCTIONS = [*sorted(ALLOWED_FUNCTIONS - {"->", "->>"}), *DENIED]
PIECES = ["(", ")", ",", ";", "*", "=", "||", "'", '"', "`", "[", "]", "--", "/*", "*/", "$a$", "$$", "$1", "?",
          ":x", "@y", "\u00a0", "\u2028", "\t", "\n", "é", "\x0b", "'; DROP TABLE Album; --", "'x''y'", '"Album"',
          "[Track]", "`Name`", "0x7fffffffffffffff", "2147483647", "-9223372036854775808", "1e308", "999999"]


def _call(draw_args: list[str], name: str, quote: str) -> str:
    shown = {"": name, '"': f'"{name}"', "[": f"[{name}]", "`": f"`{name}`"}[quote]
    return f"{shown}({', '.join(draw_args)})"


ARG = st.one_of(
    st.sampled_from(["1", "'x'", "NULL", "AlbumId", "Name", "2147483647", "-1", "999999", "1e9", "x'00ff'",
                     "zeroblob(999999)", "printf('%.*c', 999999, 'a')", "'%.*c'", "'%2147483647d'", "randomblob(10)",
                     "hex(zeroblob(400000))", "'[1,[2,[3]]]'", "'now'", "'%'", "'_%_%_%_%'"]),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(str),
    st.text(max_size=20).map(lambda t: "'" + t.replace("'", "''") + "'"),
)
QUOTES = st.sampled_from(["", "", "", '"', "[", "`"])
CALL = st.builds(_call, st.lists(ARG, max_size=4), st.sampled_from(FUNCTIONS), QUOTES)
TOKEN = st.one_of(st.sampled_from(WORDS), st.sampled_from(PIECES), CALL, st.text(max_size=6))
STATEMENT = st.one_of(
    st.lists(TOKEN, min_size=1, max_size=14).map(" ".join),
    st.builds(lambda c, rest: f"SELECT {c} {rest}", CALL, st.lists(TOKEN, max_size=6).map(" ".join)),
    st.builds(lambda c, w: f"SELECT {c} FROM Track {w}", CALL, st.sampled_from(["", "LIMIT 3", "WHERE 0", ","])),
)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz-sql")
    path = folder / "chinook.sqlite"
    shutil.copy(CHINOOK_DB, path)
    digest, listing = file_digest(path), sorted(os.listdir(folder))
    db = open_database(path)
    yield SchemaToolkit(db, timeout_s=TIMEOUT_S), db
    db.close()
    assert file_digest(path) == digest, "a statement changed the database file"
    assert sorted(os.listdir(folder)) == listing, "a statement created or removed a file"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(sql=STATEMENT)
def test_statements_are_refused_or_run_within_bounds(sandbox, sql: str) -> None:
    _, db = sandbox
    try:
        check_statement(sql)
        refused = False
    except StatementRefused:
        refused = True
    start = time.perf_counter()
    try:
        db.query(sql, max_rows=5, timeout_s=TIMEOUT_S)
        assert not refused, sql
    except QueryError as exc:
        assert not refused or str(exc).startswith("Refused"), (sql, str(exc))
    assert time.perf_counter() - start < TIMEOUT_S + MARGIN_S, sql


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(call=CALL)
def test_function_calls_through_the_run_query_tool_stay_bounded(sandbox, call: str) -> None:
    kit, _ = sandbox
    run_query = next(t for t in kit.tools() if t.name == "run_query")
    start = time.perf_counter()
    try:
        text = run_query(sql=f"SELECT {call}")
    except QueryError as exc:
        text = str(exc)
    assert time.perf_counter() - start < TIMEOUT_S + MARGIN_S, call
    assert isinstance(text, str) and len(text) < 20_000
    if call.split("(", 1)[0].strip('"[]`').lower() not in ALLOWED_FUNCTIONS:
        assert text.startswith(("Refused", "SQL error", "Query")), (call, text)  # never ran


def test_a_value_that_is_not_utf8_is_read_with_replacement_characters(sandbox) -> None:
    kit, _ = sandbox
    run_query = next(t for t in kit.tools() if t.name == "run_query")
    text = run_query(sql="SELECT CAST(x'41ff42' AS TEXT) AS v, 'ok' AS w")
    assert "A\ufffdB" in text and "ok" in text, text
    # an error message that quotes such bytes is a clear error too (found by the fuzz test above)
    with pytest.raises(QueryError, match=r"SQL error: .*not text"):
        run_query(sql="SELECT json_remove(1, randomblob(10))")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(joins=st.lists(st.text(alphabet=st.sampled_from('Aa. ="`[]$_\t'), max_size=400), max_size=4),
       tables=st.lists(st.text(max_size=30), max_size=4))
def test_propose_schema_takes_anything_quickly(sandbox, joins: list[str], tables: list[str]) -> None:
    kit, _ = sandbox
    start = time.perf_counter()
    proposal = kit.check_proposal(tables, None, joins)
    assert time.perf_counter() - start < 0.5
    assert len(proposal.joins) <= len(joins)
    assert all(len(u) < 200 for u in proposal.unverified if u.startswith("join"))  # long joins shown cut
