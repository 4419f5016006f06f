"""SQL resource bounds (issue 16): single function calls the time limit cannot reach, result memory,
a query still being stopped holding the next one up, guard/SQLite tokenizer disagreements, and the
backtracking join pattern of propose_schema. Each statement here hung, ate gigabytes or slipped
through before."""

from __future__ import annotations

import resource
import shutil
import threading
import time

import pytest

from agentkit.environments.sql import CHINOOK_DB
from agentkit.sql.connect import open_database
from agentkit.sql.database import QueryError, file_digest
from agentkit.sql.guard import StatementRefused, check_statement
from agentkit.sql.sqlite_safety import MAX_VALUE_BYTES, check_printf
from agentkit.sql.toolkit import SchemaToolkit, parse_join


@pytest.fixture(scope="module")
def db_copy(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile-sql") / "chinook.sqlite"
    shutil.copy(CHINOOK_DB, path)
    return path


@pytest.fixture(scope="module")
def db(db_copy):
    database = open_database(db_copy)
    yield database
    database.close()


def _timed(db, sql: str, timeout_s: float = 1.0) -> tuple[float, str]:
    start = time.perf_counter()
    try:
        text = db.query(sql, timeout_s=timeout_s).render()
    except QueryError as exc:
        text = str(exc)
    return time.perf_counter() - start, text


@pytest.mark.parametrize("sql", [
    "SELECT length(printf('%.*c', 2147483647, 'x'))",  # 15.6 s before (one printf call)
    "SELECT length(format('%.*c', '2147483647 and text', 'x'))",
    "SELECT length(printf('%2147483647d%2147483647d', 1, 2))",
    "SELECT length(printf(replace(printf('%.*c', 100, 'x'), 'x', '%.900000c'), 'a'))",  # many big directives
])
def test_printf_widths_are_refused_quickly(db, sql) -> None:
    elapsed, text = _timed(db, sql)
    assert elapsed < 1.0 and "too big" in text, (elapsed, text)


@pytest.mark.parametrize("sql", [
    # quadratic built-ins over values near the size limit: ran into the 60 s tool limit before
    "SELECT length(ltrim(printf('%.*c', 900000, 'a'), printf('%.*c', 90000, 'b') || 'a'))",
    "SELECT length(rtrim(printf('%.*c', 900000, 'a'), printf('%.*c', 90000, 'b') || 'a'))",
    "SELECT instr(printf('%.*c', 900000, 'a'), printf('%.*c', 400000, 'a') || 'b')",
    "SELECT length(replace(printf('%.*c', 900000, 'a'), printf('%.*c', 400000, 'a') || 'b', 'c'))",
    "SELECT instr(hex(zeroblob(499999)), printf('%.*c', 300000, '0') || '1')",
])
def test_quadratic_functions_stay_within_the_time_limit(db, sql) -> None:
    elapsed, text = _timed(db, sql, timeout_s=2.0)
    assert elapsed < 3.0, (elapsed, text)


def test_bounded_functions_give_sqlites_results(db) -> None:
    row = db.query("SELECT ltrim('xxabc', 'x'), rtrim(12300, 0), trim('..a..', '.'), instr('abc', 'c'), "
                   "instr(x'00ff', x'ff'), replace('abc', 'b', 'XX'), printf('%5.2f|%d|%s', 3.14159, 42, 'hi'), "
                   "format('%%'), printf(NULL), replace('abc', '', 'z')").rows[0]
    assert row == ("abc", "123", "a", 3, 2, "aXXc", " 3.14|42|hi", "%", None, "abc")


def test_wide_results_are_bounded_in_columns_and_memory(db) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for sql in ["SELECT " + ", ".join(["zeroblob(999999)"] * 1000),  # 3 GiB RSS before
                "SELECT " + ",".join(["printf('%.*c',999999,'x')"] * 700),
                "WITH v(b) AS (SELECT zeroblob(999999)) SELECT " + ",".join(["b"] * 1500) + " FROM v",
                "SELECT " + ", ".join(["upper(hex(zeroblob(499999)))"] * 99)]:
        elapsed, text = _timed(db, sql, timeout_s=2.0)
        assert "Query" in text and elapsed < 15, (elapsed, text[:200])
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 1200, grown_mb


def test_a_query_being_stopped_does_not_hold_up_the_next(db) -> None:
    """The worker thread of a timed-out tool keeps running its query; the next query must not wait."""
    slow = threading.Thread(target=_timed, args=(db, "SELECT count(*) FROM Track a, Track b, Track c", 3.0))
    slow.start()
    time.sleep(0.3)
    start = time.perf_counter()
    assert db.query("SELECT count(*) FROM Album").rows == [(347,)]
    assert time.perf_counter() - start < 1.0  # was: waited for the lock until the other query ended
    slow.join()
    elapsed, text = _timed(db, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r",
                           timeout_s=0.5)
    assert "Query stopped" in text and elapsed < 2.0


@pytest.mark.parametrize("sql", [
    "SELECT $a$; ATTACH 'x.db' AS x; $a$",  # the guard read a string, SQLite does not
    "SELECT $$ ; DROP TABLE Album; $$",
    'SELECT "load_extension"(\'/tmp/x.so\')',  # quoted function names
    "SELECT [fts3_tokenizer]('simple')",
    "SELECT `readfile`('/etc/passwd')",
])
def test_the_guard_refuses_what_sqlite_would_read_differently(sql) -> None:
    with pytest.raises(StatementRefused):
        check_statement(sql)


def test_the_authorizer_denies_functions_outside_the_allowlist(db_copy) -> None:
    from agentkit.sql.database import connect_sqlite_read_only

    conn = connect_sqlite_read_only(db_copy)
    for sql in ['SELECT "load_extension"(\'x\')', "SELECT fts3_tokenizer('simple')", "SELECT sqlite_log(1, 'x')"]:
        with pytest.raises(Exception, match=r"not authorized|prohibited|no such function"):
            conn.execute(sql).fetchall()
    assert conn.execute('WITH "c"(x) AS (SELECT 1) SELECT x FROM "c"').fetchall() == [(1,)]
    conn.close()


def test_guard_whitespace_and_words_follow_sqlite() -> None:
    assert check_statement('WITH "c"(x) AS (SELECT 1) SELECT x FROM "c"')
    assert check_statement("SELECT 1 AS \u00a0ATTACH")  # one SQLite identifier, not the keyword ATTACH
    with pytest.raises(StatementRefused):
        check_statement("SELECT 1;\u00a0DELETE FROM Album")


def test_printf_check_counts_star_arguments() -> None:
    check_printf("%.*c", (10, "x"))
    with pytest.raises(ValueError):
        check_printf("%*.*c", (MAX_VALUE_BYTES, 10, "x"))


def test_propose_schema_parses_hostile_joins_in_linear_time(db) -> None:
    kit = SchemaToolkit(db)
    spaces = " " * 75
    hostile = [f"{spaces}.{spaces}={spaces}.{spaces}!",  # hours for the old pattern (spaces fit both \s* and a name)
               "A" * 150 + "." + " " * 150 + "=x", "a." * 150 + "=" + "b." * 150, " " * 300 + "." + " " * 5 + "=",
               "Album.ArtistId = Artist.ArtistId" * 20]
    start = time.perf_counter()
    proposal = kit.check_proposal(["Album"], None, hostile)  # 9.6-29.6 s for one 305-character join before
    assert time.perf_counter() - start < 0.5
    assert len(proposal.unverified) == len(hostile)
    assert parse_join(" Album . ArtistId = Artist.ArtistId ") == ("Album", "ArtistId", "Artist", "ArtistId")


def test_the_database_file_is_unchanged(db, db_copy) -> None:
    before = file_digest(db_copy)
    for sql in ["SELECT $a$ $a$", "SELECT printf('%.*c', 2147483647, 'x')", "SELECT count(*) FROM Album"]:
        _timed(db, sql)
    assert file_digest(db_copy) == before
