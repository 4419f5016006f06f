"""Value linking (agentkit.sql.values): the values a question names, found in the database's text columns
and shown next to the CREATE TABLEs, within a time budget and safe with any text the question holds."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from agentkit.environments.sql import CHINOOK_DB, SQLEnvironment
from agentkit.sql.digest import DIGEST_TITLE, schema_context, schema_digest
from agentkit.sql.toolkit import SchemaToolkit
from agentkit.sql.values import VALUES_TITLE, ValueLink, find_values, question_phrases


def value_links(kit: SchemaToolkit, question: str) -> list[str]:
    return [link.render() for link in find_values(kit, question)]


@pytest.fixture(scope="module")
def kit() -> SchemaToolkit:
    return SchemaToolkit(CHINOOK_DB)


def test_phrases_are_quoted_text_capitalised_runs_and_longer_lower_case_words() -> None:
    quoted, capital, words = question_phrases(
        "How many invoices has the customer Frank Harris received for 'Let There Be Rock'? List them.")
    assert quoted == ["Let There Be Rock"]
    assert capital == ["Frank Harris", "Frank", "Harris"]  # a first and a last name live in two columns
    assert words == ["many", "invoices", "customer", "received", "them"]
    assert question_phrases("Which city, Paris or AC/DC?")[1] == ["Paris", "AC/DC"]  # a comma ends a run


def test_values_are_found_in_the_columns_that_hold_them(kit: SchemaToolkit) -> None:
    assert value_links(kit, "How many minutes of music are there in the Jazz genre?") == [
        "'Jazz' is a value of Genre.Name (GenreId = 2)"]  # "music" is matched in its own case: a playlist is "Music"
    assert value_links(kit, "How many invoices has the customer Frank Harris received?") == [
        "'Frank' is a value of Album.Title (AlbumId = 322), Customer.FirstName",  # two Franks: no one key
        "'Harris' is a value of Customer.LastName (CustomerId = 16), Track.Composer"]
    assert value_links(kit, "How many customers live in Canada?") == [
        "'Canada' is a value of Customer.Country, Employee.Country, Invoice.BillingCountry"]
    (greatest,) = find_values(kit, "List the albums whose title contains the word 'Greatest'.")
    assert greatest.columns == (("Album", "Title"),) and greatest.example and "Greatest" in greatest.example
    assert greatest.render().startswith("'Greatest' occurs inside values of Album.Title (e.g. '")
    assert value_links(kit, "How many tracks are there?") == []


def test_lower_case_words_match_only_in_their_own_case(tmp_path: Path) -> None:
    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT, note TEXT)")
        conn.executemany("INSERT INTO orders (status, note) VALUES (?, ?)",
                         [("cancelled", "Shipped"), ("shipped", "Cancelled"), ("cancelled", "")])
    found = value_links(SchemaToolkit(db), "How many orders were cancelled?")
    assert found == ["'cancelled' is a value of orders.status"]  # two rows hold it: no key


def test_a_value_held_by_one_row_comes_with_that_row_s_key(tmp_path: Path) -> None:
    db = tmp_path / "keys.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE genre (code TEXT PRIMARY KEY, name TEXT)")
        conn.execute("CREATE TABLE pair (a INTEGER, b INTEGER, label TEXT, PRIMARY KEY (a, b))")
        conn.execute("INSERT INTO genre VALUES ('g-7', 'Ska')")
        conn.execute("INSERT INTO pair VALUES (1, 2, 'Ska')")
    (link,) = find_values(SchemaToolkit(db), "How many Ska songs?")
    assert link.keys == ("code = 'g-7'", "")  # a text key is quoted; a two-column key is not shown
    assert link.render() == "'Ska' is a value of genre.name (code = 'g-7'), pair.label"


def test_the_digest_shows_the_links_and_puts_their_tables_first(kit: SchemaToolkit) -> None:
    question = "Which tracks are on Grunge?"
    context = schema_context(kit, question)
    assert context[VALUES_TITLE] == "'Grunge' is a value of Playlist.Name (PlaylistId = 16)"
    assert list(context) == [DIGEST_TITLE, VALUES_TITLE]
    small = schema_context(kit, question, max_chars=400)[DIGEST_TITLE]
    assert small.startswith("CREATE TABLE Playlist (")  # found by its value, though the words name Track
    assert "CREATE TABLE Track (" in small
    assert "CREATE TABLE Playlist (" not in schema_digest(kit, question, max_chars=400)
    assert VALUES_TITLE not in schema_context(kit, question, "tables")
    assert VALUES_TITLE not in schema_context(kit, "How many tracks are there?")


def test_any_text_in_a_question_is_only_ever_a_literal(tmp_path: Path) -> None:
    db = tmp_path / "odd.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute('CREATE TABLE "people list" (id INTEGER PRIMARY KEY, "last name" TEXT, tag TEXT)')
        conn.executemany('INSERT INTO "people list" ("last name", tag) VALUES (?, ?)',
                         [("O'Brien", "100% done"), ("Smith", "100x_done")])
    kit = SchemaToolkit(db)
    assert value_links(kit, "Is O'Brien here?") == ["'O''Brien' is a value of people list.last name (id = 1)"]
    assert value_links(kit, "Which rows say '100%'? Or '); DROP TABLE x; --'?") == [
        "'100%' occurs inside values of people list.tag (e.g. '100% done')"]  # % is not a wildcard
    with sqlite3.connect(db) as conn:
        assert conn.execute('SELECT COUNT(*) FROM "people list"').fetchone() == (2,)


def test_a_large_database_is_searched_within_the_budget(tmp_path: Path) -> None:
    db = tmp_path / "big.sqlite"
    with sqlite3.connect(db) as conn:
        for t in range(6):
            conn.execute(f"CREATE TABLE t{t} (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT)")
            conn.executemany(f"INSERT INTO t{t} (a, b, c) VALUES (?, ?, ?)",
                             ((f"a{i}", f"b{i}", f"c{i}") for i in range(60_000)))
        conn.execute("UPDATE t5 SET c = 'needle' WHERE id = 59999")
    kit = SchemaToolkit(db)
    started = time.perf_counter()
    assert find_values(kit, "Where is the needle?", budget_s=0.0001) == []  # out of time: nothing, no guess
    assert time.perf_counter() - started < 1.0
    assert find_values(kit, "Where is the needle?", budget_s=30) == [
        ValueLink("needle", (("t5", "c"),), keys=("id = 59999",))]
    started = time.perf_counter()  # a finished search is kept: the question's next episode does not scan again
    assert find_values(kit, "Where is the needle?", budget_s=0.0001) == [
        ValueLink("needle", (("t5", "c"),), keys=("id = 59999",))]
    assert time.perf_counter() - started < 0.01


def test_the_sql_episode_shows_the_values_next_to_the_schema() -> None:
    env = SQLEnvironment.chinook()
    task = next(t for t in env.tasks() if "Jazz" in t.data["question"])
    episode = env.reset(task)
    try:
        assert "'Jazz' is a value of Genre.Name" in episode.context[VALUES_TITLE]
    finally:
        episode.close()


def test_schema_tables_shows_the_create_tables_without_the_values(kit: SchemaToolkit) -> None:
    question = "How many tracks are in the Jazz genre?"
    assert list(schema_context(kit, question, "digest")) == [DIGEST_TITLE, VALUES_TITLE]
    assert list(schema_context(kit, question, "tables")) == [DIGEST_TITLE]
    assert schema_context(kit, question, "hidden") == {}
    full = schema_context(kit, question, "full")
    assert list(full) == [DIGEST_TITLE] and full[DIGEST_TITLE].count("CREATE TABLE") == len(kit.db.table_names())
    with pytest.raises(ValueError, match="schema must be one of digest, tables, full, hidden"):
        schema_context(kit, question, "values")
    env = SQLEnvironment.chinook(schema="tables")
    episode = env.reset(next(t for t in env.tasks() if "Jazz" in t.data["question"]))
    try:
        assert list(episode.context) == [DIGEST_TITLE]
    finally:
        episode.close()


def test_a_value_stored_in_several_cases_shows_every_spelling(tmp_path) -> None:
    """A lower-case word links only where it is stored as written, and the link then lists the column's other
    spellings of it and says to compare with LOWER(); a capitalised name stored in another case says how."""
    import sqlite3

    db = tmp_path / "pay.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE payment (id INTEGER PRIMARY KEY, method TEXT, city TEXT)")
        conn.executemany("INSERT INTO payment (method, city) VALUES (?, ?)",
                         [("cash", "OSLO"), ("Cash", "OSLO"), ("CASH", "Bergen"), ("card", "Bergen")])
        conn.execute("CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO note (body) VALUES ('Card')")
    kit = SchemaToolkit(str(db))
    lines = [link.render() for link in find_values(kit, "How many payments in Oslo were made in cash or by card?")]
    assert "'Oslo' is a value of payment.city, stored as 'OSLO'" in lines
    assert ("'cash' is a value of payment.method, stored as 'CASH', 'Cash', 'cash' (compare with LOWER(method))"
            in lines)
    assert "'card' is a value of payment.method (id = 4)" in lines  # as written; note.body's 'Card' is no link
