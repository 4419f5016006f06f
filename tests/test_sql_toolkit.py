"""SchemaToolkit over the real Chinook file (and a generated 120-table SQLite file for paging)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from agentkit import Agent
from agentkit.environments.sql import CHINOOK_DB
from agentkit.sql.database import QueryError
from agentkit.sql.toolkit import PHASES, TOOL_PHASES, SchemaToolkit, name_tokens
from agentkit.testing import ScriptedModel, call


@pytest.fixture(scope="module")
def kit() -> SchemaToolkit:
    return SchemaToolkit(CHINOOK_DB)


def tools(kit: SchemaToolkit) -> dict:
    return {t.name: t for t in kit.tools()}


def test_every_tool_is_read_only_and_labelled_with_its_phase(kit: SchemaToolkit) -> None:
    by_name = tools(kit)
    assert set(by_name) == set(TOOL_PHASES)
    for name, t in by_name.items():
        assert t.read_only, name
        assert t.phase == TOOL_PHASES[name]
        assert t.final == (name == "confirm_answer")
    assert {t.phase for t in by_name.values()} == set(PHASES)
    # Schemas come from the signatures: the model sees typed arguments.
    props = by_name["propose_schema"].spec()["function"]["parameters"]["properties"]
    assert set(props) == {"tables", "columns", "joins"}


def test_list_tables_filters_and_pages(kit: SchemaToolkit, tmp_path: Path) -> None:
    out = tools(kit)["list_tables"]()
    assert out.splitlines()[0] == "11 tables:"
    assert out.splitlines()[1:] == ["Album", "Artist", "Customer", "Employee", "Genre", "Invoice", "InvoiceLine",
                                    "MediaType", "Playlist", "PlaylistTrack", "Track"]
    assert tools(kit)["list_tables"](name_filter="play").splitlines()[1:] == ["Playlist", "PlaylistTrack"]
    assert tools(kit)["list_tables"](name_filter="*line").splitlines()[1:] == ["InvoiceLine"]
    assert "No table matches" in tools(kit)["list_tables"](name_filter="zebra")

    big = tmp_path / "big.sqlite"
    conn = sqlite3.connect(big)
    conn.executescript("BEGIN;" + "".join(f"CREATE TABLE t_{i:03d} (id INTEGER PRIMARY KEY, v TEXT);"
                                          for i in range(120)) + "COMMIT;")
    conn.close()
    paged = tools(SchemaToolkit(big, page_size=50))["list_tables"]
    first, last = paged().splitlines(), paged(page=3).splitlines()
    assert "page 1 of 3" in first[0] and "page=2" in first[0]
    assert first[1:] == [f"t_{i:03d}" for i in range(50)]
    assert "page 3 of 3" in last[0] and last[1:] == [f"t_{i:03d}" for i in range(100, 120)]
    assert paged(name_filter="t_11").splitlines()[1:] == [f"t_11{i}" for i in range(10)]


def test_describe_table_shows_types_keys_and_references(kit: SchemaToolkit) -> None:
    out = tools(kit)["describe_table"](table="track")  # case-insensitive
    lines = out.splitlines()
    assert lines[0] == "Table Track (9 columns)"
    assert "  TrackId INTEGER PRIMARY KEY" in lines
    assert "  AlbumId INTEGER -> Album.AlbumId" in lines
    assert "  MediaTypeId INTEGER NOT NULL -> MediaType.MediaTypeId" in lines
    assert lines[-1] == "Referenced by: InvoiceLine.TrackId, PlaylistTrack.TrackId"
    with pytest.raises(ValueError, match="Did you mean Album"):
        tools(kit)["describe_table"](table="Albums")


def test_sample_rows_and_distinct_values(kit: SchemaToolkit) -> None:
    sample = tools(kit)["sample_rows"](table="Genre", n=3).splitlines()
    assert sample == ["GenreId | Name", "1 | Rock", "2 | Jazz", "3 | Metal", "(3 rows)"]
    assert len(tools(kit)["sample_rows"](table="Track", n=500).splitlines()) == 1 + 30 + 1  # capped at 30
    values = tools(kit)["distinct_values"](table="MediaType", column="name").splitlines()
    assert values[0] == "MediaType.Name: 5 distinct non-null values"
    top = tools(kit)["distinct_values"](table="Customer", column="Country", limit=2).splitlines()
    assert top[1:3] == ["Country | n", "USA | 13"] and top[3] == "Canada | 8"
    with pytest.raises(ValueError, match="its columns: GenreId, Name"):
        tools(kit)["distinct_values"](table="Genre", column="Title")


def test_propose_schema_verifies_and_flags_unknown_names(kit: SchemaToolkit) -> None:
    propose = tools(kit)["propose_schema"]
    ok = propose(tables=["album", "Artist"], columns={"Album": ["title", "ArtistId"], "Artist": ["Name"]},
                 joins=["Album.ArtistId = Artist.ArtistId"])
    assert "All names verified." in ok and "UNVERIFIED" not in ok
    assert "tables: Album, Artist" in ok and "Album: Title, ArtistId" in ok
    p = kit.proposals[-1]
    assert p.verified and p.joins == ["Album.ArtistId = Artist.ArtistId"] and p.notes == []

    bad = propose(tables=["Album", "Albums"], columns={"Album": ["Year", "Title"], "Singer": ["Name"]},
                  joins=["Album.Title = Artist.Name", "Album.ArtistId"])
    p = kit.proposals[-1]
    assert not p.verified
    assert p.unverified == ["table Albums", "column Album.Year", "table Singer", "column Singer.Name",
                            "join 'Album.ArtistId' (write joins as 'TableA.col = TableB.col')"]
    assert p.tables == ["Album", "Artist"] and p.columns == {"Album": ["Title"], "Artist": ["Name"]}
    assert p.notes == ["join Album.Title = Artist.Name is not a declared foreign key (check the values match)"]
    assert "UNVERIFIED" in bad and "column Album.Year" in bad
    # "Table.column" lists are accepted too.
    propose(tables=["Track"], columns=["Track.Name", "Track.Milliseconds", "Bytes"])
    assert kit.proposals[-1].columns == {"Track": ["Name", "Milliseconds"]}
    assert kit.proposals[-1].unverified == ["column Bytes (name its table: 'Table.column')"]


def test_run_query_caps_rows_and_confirm_answer_is_final(kit: SchemaToolkit) -> None:
    out = tools(kit)["run_query"](sql="SELECT Name FROM Track ORDER BY TrackId")
    assert len(out.splitlines()) == 32 and out.splitlines()[1] == "For Those About To Rock (We Salute You)"
    with pytest.raises(QueryError, match="read-only"):
        tools(kit)["run_query"](sql="DELETE FROM Track")
    final = tools(kit)["confirm_answer"](sql="SELECT COUNT(*) FROM Album;")
    assert final.startswith("Final SQL:\nSELECT COUNT(*) FROM Album\n") and final.endswith("347\n(1 row)")
    assert kit.final is not None and kit.final.rows == [(347,)]


def test_lexical_search_says_so_and_finds_columns_by_name_words(kit: SchemaToolkit) -> None:
    assert name_tokens("InvoiceLine.UnitPrice") == ["invoice", "line", "unit", "price"]
    out = tools(kit)["search_columns"](query="song length in milliseconds", k=3)
    assert "lexical" in out.splitlines()[0]
    assert out.splitlines()[1].strip().startswith("Track.Milliseconds INTEGER")
    hits, method = kit.search("invoice dates", 2)
    assert method == "lexical" and (hits[0][1], hits[0][2]) == ("Invoice", "InvoiceDate")


def test_tool_errors_reach_the_model_as_observations(kit: SchemaToolkit) -> None:
    model = ScriptedModel([call("run_query", sql="DROP TABLE Album"), call("describe_table", table="Nope"), "stop",
                           "stop"])  # the text is sent back once: the run ends through confirm_answer
    agent = Agent(model, tools=[kit])
    result = agent.run("break things")
    agent.close()
    observations = [m for m in result.trajectory.messages if m.role == "tool"]
    assert all(m.is_error for m in observations)
    assert "Refused: only read-only queries may run" in observations[0].content
    assert "there is no table 'Nope'" in observations[1].content
    assert [t.phase for t in result.trajectory.turns] == ["generate_sql", "explore_schema", "act", "act"]


def test_sqlalchemy_url_gives_the_same_schema_view(kit: SchemaToolkit) -> None:
    other = SchemaToolkit(f"sqlite:///{CHINOOK_DB}")
    assert other.db.table_names() == kit.db.table_names()
    # Same text, up to how SQLAlchemy spells types ("NUMERIC(10, 2)").
    via_url = tools(other)["describe_table"](table="Track").replace(", 2)", ",2)")
    assert via_url == tools(kit)["describe_table"](table="Track")
    assert tools(other)["run_query"](sql="SELECT COUNT(*) FROM Invoice") == "COUNT(*)\n412\n(1 row)"
    # The text reaches the driver as is: % in LIKE patterns is not taken for a parameter marker.
    assert other.db.query("SELECT COUNT(*) FROM Album WHERE Title LIKE '%Rock%'").rows == [(7,)]
    other.db.close()


@pytest.mark.slow
def test_embedding_search_with_real_minilm() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embeddings = pytest.importorskip("agentkit.memory.embeddings")
    try:
        embed = embeddings.Embedder.default().embed
        embed(["probe"])
    except Exception as exc:  # the packaged model is missing on this machine
        pytest.skip(f"MiniLM not available: {exc}")
    kit = SchemaToolkit(CHINOOK_DB, embed=embed)
    out = tools(kit)["search_columns"](query="where a customer lives", k=3)
    assert "embedding search" in out.splitlines()[0]
    top3 = [line.split()[0] for line in out.splitlines()[1:]]
    assert "Customer.City" in top3 and all(c.startswith("Customer.") for c in top3)
    hits, method = kit.search("price of a song", 2)
    assert method == "embedding" and (hits[0][1], hits[0][2]) == ("Track", "UnitPrice")
    hits, _ = kit.search("date of the sale", 1)
    assert (hits[0][1], hits[0][2]) == ("Invoice", "InvoiceDate")


def test_the_errors_a_small_model_repeats_say_what_to_change(kit: SchemaToolkit) -> None:
    run_query = tools(kit)["run_query"]
    with pytest.raises(QueryError, match="write the value itself"):  # a placeholder where a value belongs
        run_query(sql="SELECT COUNT(*) FROM Customer WHERE Country = ?")
    # a rank of ungrouped rows
    with pytest.raises(QueryError, match=r"misuse of aggregate: COUNT\(\)\nAn aggregate.*GROUP BY"):
        run_query(sql="SELECT Title FROM Album ORDER BY COUNT(*) DESC LIMIT 1")
    with pytest.raises(QueryError, match=r"^SQL error: no such column: Nope$"):  # the rest as SQLite says it
        run_query(sql="SELECT Nope FROM Album")


def test_a_missing_column_error_says_where_the_column_is(kit: SchemaToolkit) -> None:
    run_query = tools(kit)["run_query"]
    wrong_alias = "SELECT T2.Email FROM Customer AS T1 JOIN InvoiceLine AS T2 ON T1.CustomerId = T2.CustomerId"
    with pytest.raises(QueryError, match=r"^SQL error: no such column: T2\.Email\n"
                                         r"T2 is InvoiceLine, which has no column Email; Email is a column of "
                                         r"Customer, Employee\.$"):
        run_query(sql=wrong_alias)
    with pytest.raises(QueryError, match=r"\nTotal is a column of Invoice: name that table in FROM or JOIN"):
        run_query(sql="SELECT COUNT(*) FROM Customer WHERE total > 3")  # as the schema spells it
    with pytest.raises(QueryError, match=r"\nNo table has a column MediaType; similar columns: "
                                         r"MediaType\.MediaTypeId, Track\.MediaTypeId\.$"):
        run_query(sql="SELECT COUNT(*) FROM Track WHERE MediaType = 1")
    with pytest.raises(QueryError, match=r"\nX is not a table or alias of this query; Name is a column of Artist"):
        run_query(sql="SELECT X.Name FROM Track")
    with pytest.raises(QueryError, match=r"\nTrack has no column Composr; its columns: TrackId, Name, AlbumId, "
                                         r"MediaTypeId, GenreId, Composer, Milliseconds, Bytes, UnitPrice\.$"):
        run_query(sql="SELECT Track.Composr FROM Track")  # all of them: the one it needs may look nothing alike
    with pytest.raises(QueryError, match=r"\nInvoice is not in this query's FROM or JOIN; join it to use "
                                         r"Invoice\.Total\.$"):
        run_query(sql="SELECT Invoice.Total FROM Customer")


def test_column_hints_read_postgres_errors_double_quoted_values_and_unparseable_queries() -> None:
    from agentkit.sql.hints import column_hint, missing_column

    schema = {"Customer": ["CustomerId", "Country"], "Invoice": ["InvoiceId", "CustomerId", "Total"]}
    assert missing_column('ERROR: column t2.total does not exist') == ("t2", "total")
    assert missing_column("SQL error: no such table: Foo") is None
    assert column_hint("SELECT t2.total FROM Customer t2", 'column t2.total does not exist', schema, "postgres") \
        == "t2 is Customer, which has no column Total; Total is a column of Invoice."
    assert column_hint('SELECT * FROM Customer WHERE Country = "Brazil"', "no such column: Brazil", schema) \
        == "\"Brazil\" in double quotes is a column name; a text value is written in single quotes: 'Brazil'."
    assert column_hint("SELECT T3.Total FROM Customer T2", "no such column: T3.Total", schema) \
        == "T3 is not a table or alias of this query; Total is a column of Invoice."
    assert column_hint("SELEC T2.Total FROM ((", "no such column: T2.Total", schema) is None  # unreadable here
    # a CTE's or a subquery's columns are the query's own: nothing to say
    assert column_hint("WITH t AS (SELECT 1 AS x) SELECT t.y FROM t", "no such column: t.y", schema) is None
    assert column_hint("SELECT s.y FROM (SELECT 1) AS s", "no such column: s.y", schema) is None
    assert column_hint("SELECT 1", "no such column: Nothing", schema) is None
    # the table read has the column: the error is about scope, which the schema does not tell
    assert column_hint("SELECT (SELECT i.Total) FROM Invoice i", "no such column: i.Total", schema) is None
    assert column_hint("SELECT Invoice.Country FROM Customer", "no such column: Invoice.Country", schema) \
        == "Invoice is not in this query's FROM or JOIN; Country is a column of Customer."
    assert column_hint("SELECT 1", "SQL error: near \"FROM\": syntax error", schema) is None
