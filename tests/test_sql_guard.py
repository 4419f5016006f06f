"""The read-only guarantee: a corpus of hostile or broken statements all fail cleanly and the
database file's bytes stay the same (checksum before/after), through both the SQLite path and a
SQLAlchemy URL. The file is a writable copy, so the protection comes from agentkit, not permissions."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit.environments.sql import CHINOOK_DB
from agentkit.sql.connect import open_database
from agentkit.sql.database import QueryError, connect_sqlite_read_only, file_digest
from agentkit.sql.guard import StatementRefused, check_statement

TIMEOUT_S = 0.3

# (statement, a fragment the error message must contain). {tmp} is replaced by a temp folder.
HOSTILE: list[tuple[str, str]] = [
    ("DROP TABLE Album", "starts with DROP"),
    ("drop table if exists Track", "starts with DROP"),
    ("DELETE FROM Album", "starts with DELETE"),
    ("DELETE FROM Album WHERE 1 RETURNING *", "starts with DELETE"),
    ("UPDATE Album SET Title = 'x'", "starts with UPDATE"),
    ("INSERT INTO Artist (Name) VALUES ('x')", "starts with INSERT"),
    ("INSERT INTO Artist DEFAULT VALUES", "starts with INSERT"),
    ("REPLACE INTO Artist (ArtistId, Name) VALUES (1, 'x')", "starts with REPLACE"),
    ("CREATE TABLE t (x)", "starts with CREATE"),
    ("CREATE INDEX i ON Album (Title)", "starts with CREATE"),
    ("CREATE VIEW v AS SELECT 1", "starts with CREATE"),
    ("CREATE TRIGGER t AFTER INSERT ON Album BEGIN DELETE FROM Track; END", "Refused"),
    ("ALTER TABLE Album ADD COLUMN y INTEGER", "starts with ALTER"),
    ("ALTER TABLE Album RENAME TO Albums", "starts with ALTER"),
    ("ATTACH DATABASE '{tmp}/other.sqlite' AS other", "starts with ATTACH"),
    ("DETACH DATABASE main", "starts with DETACH"),
    ("PRAGMA journal_mode = WAL", "starts with PRAGMA"),
    ("PRAGMA writable_schema = ON", "starts with PRAGMA"),
    ("PRAGMA user_version = 7", "starts with PRAGMA"),
    ("VACUUM", "starts with VACUUM"),
    ("VACUUM INTO '{tmp}/copy.sqlite'", "starts with VACUUM"),
    ("REINDEX", "starts with REINDEX"),
    ("ANALYZE", "starts with ANALYZE"),
    ("BEGIN; DELETE FROM Album; COMMIT", "one statement"),
    ("SAVEPOINT s1", "starts with SAVEPOINT"),
    ("COMMIT", "starts with COMMIT"),
    ("ROLLBACK", "starts with ROLLBACK"),
    ("EXPLAIN DELETE FROM Album", "starts with EXPLAIN"),
    # several statements, and writes hidden behind comments
    ("SELECT 1; DROP TABLE Album", "one statement"),
    ("SELECT * FROM Album; DELETE FROM Album;", "one statement"),
    ("/* harmless */ DROP TABLE Album", "starts with DROP"),
    ("-- just reading\nDELETE FROM Album", "starts with DELETE"),
    ("SELECT 1 /* ; */ ; UPDATE Album SET Title = 'x'", "one statement"),
    ("SELECT 1 -- harmless\n; DELETE FROM Track", "one statement"),
    ("SELECT * FROM Album WHERE Title = 'x' OR 1=1; DROP TABLE Album --", "one statement"),
    ("PRAGMA table_info(Album); DELETE FROM Album", "one statement"),
    ("SELECT 1\x00; DROP TABLE Album", "NUL"),
    # writes inside a read-looking statement
    ("WITH x AS (SELECT 1) DELETE FROM Album", "DELETE is not allowed"),
    ("WITH x AS (SELECT 1) INSERT INTO Artist (Name) SELECT 'x'", "INSERT is not allowed"),
    ("WITH x AS (SELECT 1) UPDATE Album SET Title = 'x'", "UPDATE is not allowed"),
    ("SELECT * INTO NewAlbum FROM Album", "INTO is not allowed"),
    ("SELECT load_extension('/tmp/evil.so')", "LOAD_EXTENSION is not allowed"),
    ("SELECT writefile('{tmp}/x.txt', 'y')", "WRITEFILE is not allowed"),
    # resource bombs: stopped by the time cap or the value-size limit
    ("SELECT COUNT(*) FROM Track a, Track b, Track c", "Query stopped"),
    ("SELECT * FROM Track a CROSS JOIN Track b ORDER BY random()", "Query stopped"),
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r", "Query stopped"),
    ("WITH RECURSIVE r(s) AS (SELECT 'ab' UNION ALL SELECT s || s FROM r) SELECT MAX(length(s)) FROM r",
     "too big"),
    ("SELECT zeroblob(2000000000)", "too big"),
    ("SELECT length(randomblob(1000000000))", "too big"),
    ("SELECT length(replace(hex(zeroblob(6000000)), '0', '00'))", "too big"),
    # broken SQL
    ("SELEC * FROM Album", "starts with SELEC"),
    ("SELECT * FROM NoSuchTable", "no such table"),
    ("SELECT * FROM Album WHERE (AlbumId = 1", "SQL error"),
    ("SELECT 'unclosed", "unclosed string"),
    ("SELECT * FROM Album /* unclosed comment", "unclosed /*"),
    ("", "empty statement"),
    ("   \n  ", "empty statement"),
    (";;;", "no SQL"),
    ("-- only a comment", "no SQL"),
    ("SELECT " + "1 + " * 6000 + "1", "too long"),
]


@pytest.fixture()
def db_copy(tmp_path: Path) -> Path:
    path = tmp_path / "chinook.sqlite"
    shutil.copyfile(CHINOOK_DB, path)
    path.chmod(0o644)
    return path


def test_corpus_is_large_enough() -> None:
    assert len(HOSTILE) >= 40
    assert len({s for s, _ in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize("engine", ["sqlite", "sqlalchemy"])
def test_every_hostile_statement_fails_cleanly_and_bytes_are_unchanged(db_copy: Path, tmp_path: Path,
                                                                        engine: str) -> None:
    before = file_digest(db_copy)
    files_before = sorted(p.name for p in tmp_path.iterdir())
    db = open_database(db_copy if engine == "sqlite" else f"sqlite:///{db_copy}")
    failures = []
    for statement, fragment in HOSTILE:
        sql = statement.replace("{tmp}", str(tmp_path))
        try:
            db.query(sql, timeout_s=TIMEOUT_S)
        except QueryError as exc:
            message = str(exc)
            if fragment not in message or "Traceback" in message:
                failures.append((statement[:60], message))
        else:
            failures.append((statement[:60], "ran without error"))
    # The connection still works after all of that.
    assert db.query("SELECT COUNT(*) FROM Album").rows == [(347,)]
    db.close()
    assert failures == []
    assert file_digest(db_copy) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == files_before  # no copy, attach target, journal or WAL


def test_connection_layer_refuses_writes_even_without_the_statement_guard(db_copy: Path, tmp_path: Path) -> None:
    before = file_digest(db_copy)
    conn = connect_sqlite_read_only(db_copy)
    attacks = [
        "DELETE FROM Album",
        "UPDATE Album SET Title = 'x'",
        "INSERT INTO Artist (Name) VALUES ('x')",
        "CREATE TABLE t (x)",
        "DROP TABLE Album",
        f"ATTACH DATABASE '{tmp_path}/other.sqlite' AS other",
        f"VACUUM INTO '{tmp_path}/copy.sqlite'",
        "PRAGMA journal_mode = WAL",
        "PRAGMA query_only = OFF",
        "PRAGMA writable_schema = ON",
        "SELECT load_extension('/tmp/evil.so')",
        "ANALYZE",
        "BEGIN IMMEDIATE",
    ]
    for sql in attacks:
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute(sql)
    assert conn.execute("SELECT COUNT(*) FROM Artist").fetchone() == (275,)
    conn.close()
    assert file_digest(db_copy) == before
    assert not (tmp_path / "copy.sqlite").exists() and not (tmp_path / "other.sqlite").exists()


def test_metadata_pragmas_still_work_on_the_guarded_connection(db_copy: Path) -> None:
    conn = connect_sqlite_read_only(db_copy)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(Album)")]
    assert cols == ["AlbumId", "Title", "ArtistId"]
    assert conn.execute("PRAGMA foreign_key_list(Album)").fetchone()[2] == "Artist"
    conn.close()


def test_reads_that_merely_look_dangerous_are_allowed(db_copy: Path) -> None:
    db = open_database(db_copy)
    assert db.query("SELECT 'DROP TABLE Album; DELETE FROM x' AS s").rows == [("DROP TABLE Album; DELETE FROM x",)]
    assert db.query("SELECT 1 AS \"Update\" -- DELETE FROM Album;").rows == [(1,)]
    assert db.query("SELECT COUNT(*) FROM Album /* ; DROP TABLE Album */;").rows == [(347,)]
    assert db.query("  SELECT 2  ;  ").rows == [(2,)]
    assert db.query("VALUES (1, 'a'), (2, 'b')").rows == [(1, "a"), (2, "b")]
    assert db.query("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) "
                    "SELECT SUM(n) FROM r").rows == [(15,)]
    db.close()


def test_rows_are_capped_and_truncation_is_reported(db_copy: Path) -> None:
    db = open_database(db_copy)
    result = db.query("SELECT TrackId FROM Track", max_rows=30)
    assert len(result.rows) == 30 and result.truncated
    assert "more" in result.render().splitlines()[-1]
    exact = db.query("SELECT GenreId FROM Genre", max_rows=30)
    assert len(exact.rows) == 25 and not exact.truncated
    db.close()


def test_guard_strips_one_trailing_semicolon_and_reports_why() -> None:
    assert check_statement("SELECT 1;") == "SELECT 1"
    assert check_statement("SELECT 1; -- done") == "SELECT 1"
    with pytest.raises(StatementRefused, match="found 2"):
        check_statement("SELECT 1; SELECT 2")


_FRAGMENTS = ["SELECT 1", "DROP TABLE Album", "DELETE FROM Track", ";", "--", "/*", "*/", "'", "\n",
              "UPDATE Album SET Title='z'", "WITH x AS (SELECT 1)", "ATTACH 'a.db' AS a", "VACUUM", " ", "PRAGMA"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=8))
def test_random_fragment_soup_never_changes_the_file(db_copy: Path, parts: list[str]) -> None:
    before = file_digest(db_copy)
    db = open_database(db_copy)
    try:
        db.query("".join(parts), timeout_s=TIMEOUT_S)
    except QueryError as exc:
        assert str(exc)
    finally:
        db.close()
    assert file_digest(db_copy) == before
