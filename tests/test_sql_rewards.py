"""TRUST-SQL rewards (docs/methods.md#trust-sql-rewards) against hand-computed values, on the real Chinook database."""

from __future__ import annotations

import pytest

from agentkit.environments.sql import CHINOOK_DB
from agentkit.messages import Message, ToolCall
from agentkit.sql.connect import open_database
from agentkit.sql.rewards import (
    SchemaItems,
    execution_reward,
    final_sql,
    format_reward,
    gold_schema_items,
    has_order_by,
    last_proposal,
    proposal_items,
    propose_end_turn,
    results_match,
    schema_reward,
    score_sql_trajectory,
    set_score,
)
from agentkit.sql.toolkit import TOOL_PHASES
from agentkit.trajectory import Trajectory


@pytest.fixture(scope="module")
def db():
    database = open_database(CHINOOK_DB)
    yield database
    database.close()


# -- result sets --------------------------------------------------------------------------------------

def test_results_match_is_order_insensitive_multiset_with_float_tolerance() -> None:
    assert results_match([(1, "a"), (2, "b")], [(2, "b"), (1, "a")])
    assert not results_match([(1, "a"), (2, "b")], [(2, "b"), (1, "a")], ordered=True)
    assert results_match([(3.9600000000000004,)], [(3.96,)])
    assert results_match([(1,)], [(1.0,)]) and results_match([(True,)], [(1,)])
    assert not results_match([(3.97,)], [(3.96,)])
    assert not results_match([(1,), (1,)], [(1,)])            # duplicates count
    assert not results_match([(1,), (1,), (2,)], [(1,), (2,), (2,)])
    assert not results_match([(1, 2)], [(1,)])                # column count differs
    assert results_match([(None, "x")], [(None, "x")])
    assert results_match([], [])


def test_order_by_only_counts_at_the_top_level() -> None:
    assert has_order_by("SELECT Name FROM Track ORDER BY Milliseconds DESC LIMIT 1")
    assert not has_order_by("SELECT Name FROM (SELECT Name FROM Track ORDER BY Name) AS t")
    assert not has_order_by("SELECT COUNT(*) FROM Album")


def test_execution_reward_levels(db) -> None:
    gold = "SELECT Album.Title FROM Album JOIN Artist ON Album.ArtistId = Artist.ArtistId WHERE Artist.Name = 'AC/DC'"
    same = "SELECT a.Title FROM Artist ar, Album a WHERE a.ArtistId = ar.ArtistId AND ar.Name LIKE 'ac/dc'"
    assert execution_reward(same, gold, db) == 1.0
    assert execution_reward("SELECT Title FROM Album LIMIT 2", gold, db) == 0.2
    assert execution_reward("SELECT Title FROM Albums", gold, db) == 0.0
    assert execution_reward("DROP TABLE Album", gold, db) == 0.0
    assert execution_reward(None, gold, db) == 0.0
    ordered = "SELECT Name FROM Genre ORDER BY Name"
    assert execution_reward("SELECT Name FROM Genre ORDER BY Name DESC", ordered, db) == 0.2
    assert execution_reward("SELECT Name FROM Genre ORDER BY Name DESC", "SELECT Name FROM Genre", db) == 1.0
    # Float rounding: SUM in a different order gives a slightly different double.
    assert execution_reward("SELECT SUM(Total) FROM (SELECT Total FROM Invoice ORDER BY Total DESC)",
                            "SELECT SUM(Total) FROM Invoice", db) == 1.0


# -- schema items and the schema reward ----------------------------------------------------------------

def test_gold_schema_items_resolve_aliases_ctes_subqueries_and_stars(db) -> None:
    schema = db.schema()
    items = gold_schema_items("SELECT a.Title FROM Album a JOIN Artist ar ON a.ArtistId = ar.ArtistId "
                              "WHERE ar.Name = 'AC/DC'", schema)
    assert items == SchemaItems(frozenset({"album", "artist"}),
                                frozenset({"album.title", "album.artistid", "artist.artistid", "artist.name"}))
    cte = gold_schema_items("WITH c AS (SELECT ArtistId, COUNT(*) AS n FROM Album GROUP BY ArtistId) "
                            "SELECT Name, n FROM c JOIN Artist USING (ArtistId)", schema)
    assert cte.tables == {"album", "artist"}
    assert cte.columns == {"album.artistid", "artist.artistid", "artist.name"}
    sub = gold_schema_items("SELECT Name FROM Genre WHERE GenreId IN (SELECT GenreId FROM Track "
                            "WHERE Milliseconds > 1000)", schema)
    assert sub.columns == {"genre.name", "genre.genreid", "track.genreid", "track.milliseconds"}
    star = gold_schema_items("SELECT * FROM MediaType", schema)
    assert star.columns == {"mediatype.mediatypeid", "mediatype.name"}
    count = gold_schema_items("SELECT COUNT(*) FROM Track", schema)
    assert count == SchemaItems(frozenset({"track"}), frozenset())
    selfjoin = gold_schema_items("SELECT e.LastName, m.LastName FROM Employee e JOIN Employee m "
                                 "ON e.ReportsTo = m.EmployeeId", schema)
    assert selfjoin.columns == {"employee.lastname", "employee.reportsto", "employee.employeeid"}
    with pytest.raises(ValueError, match="cannot parse the SQL"):
        gold_schema_items("SELECT FROM WHERE ((", schema)


def test_set_score_variants_by_hand() -> None:
    pred, gold = {"a", "b", "c"}, {"a", "b", "d", "e"}
    assert set_score(pred, gold, "precision") == pytest.approx(2 / 3)
    assert set_score(pred, gold, "recall") == pytest.approx(1 / 2)
    assert set_score(pred, gold, "f1") == pytest.approx(2 * (2 / 3) * (1 / 2) / (2 / 3 + 1 / 2))  # 4/7
    assert set_score(pred, gold, "exact") == 0.0
    assert set_score(gold, gold, "exact") == 1.0
    assert set_score(set(), set(), "f1") == 1.0
    assert set_score({"x"}, set(), "f1") == 0.0
    with pytest.raises(ValueError, match="unknown schema reward variant"):
        set_score(pred, gold, "jaccard")


def test_schema_reward_weights_tables_and_columns() -> None:
    gold = SchemaItems(frozenset({"album", "artist"}), frozenset({"album.title", "album.artistid",
                                                                  "artist.artistid", "artist.name"}))
    proposed = proposal_items({"tables": ["Album"], "columns": {"Album": ["Title", "ArtistId"]}})
    # tables: p=1, r=1/2 -> F1 2/3; columns: p=1, r=2/4 -> F1 2/3
    assert schema_reward(proposed, gold, "f1") == pytest.approx(0.4 * 2 / 3 + 0.6 * 2 / 3)
    assert schema_reward(proposed, gold, "precision") == pytest.approx(1.0)
    assert schema_reward(proposed, gold, "recall") == pytest.approx(0.4 * 0.5 + 0.6 * 0.5)
    assert schema_reward(proposed, gold, "exact") == 0.0
    full = proposal_items({"tables": ["Album", "Artist"], "columns": ["Album.Title", "Artist.Name"],
                           "joins": ["Album.ArtistId = [Artist].ArtistId"]})
    assert full == gold
    assert schema_reward(full, gold, "exact") == 1.0
    assert schema_reward(None, gold) == 0.0


# -- trajectories ---------------------------------------------------------------------------------------

def _trajectory(steps: list[list[tuple[str, dict]]], *, errors: dict[int, str] | None = None,
                parse_error_at: int | None = None) -> Trajectory:
    """A trajectory whose turn i calls the tools in steps[i]; errors maps a turn to an error observation."""
    traj = Trajectory(task="q")
    traj.messages.append(Message.user("q"))
    for i, step in enumerate(steps):
        reply = Message.assistant(tool_calls=[ToolCall(name=n, arguments=a) for n, a in step])
        if i == parse_error_at:
            reply = Message.assistant("<tool_call>{oops")
            reply.parse_error = "invalid JSON"
        phase = next((TOOL_PHASES[n] for n, _ in step if n in TOOL_PHASES), "act")
        traj.add_turn(reply, phase=phase)
        traj.messages.append(reply)
        for c in reply.tool_calls:
            err = (errors or {}).get(i)
            traj.messages.append(Message.tool(c, err or "ok", is_error=err is not None))
    return traj


GOLD = "SELECT COUNT(*) FROM Album JOIN Artist ON Album.ArtistId = Artist.ArtistId WHERE Artist.Name = 'AC/DC'"
PROPOSAL = {"tables": ["Album", "Artist"], "columns": {"Album": ["ArtistId"], "Artist": ["ArtistId", "Name"]}}
FULL = [
    [("list_tables", {})],
    [("describe_table", {"table": "Album"}), ("describe_table", {"table": "Artist"})],
    [("propose_schema", PROPOSAL)],
    [("run_query", {"sql": GOLD})],
    [("confirm_answer", {"sql": GOLD})],
]


def test_full_four_phase_trajectory_scores_everything(db) -> None:
    traj = _trajectory(FULL)
    assert final_sql(traj) == GOLD and last_proposal(traj) == PROPOSAL and propose_end_turn(traj) == 2
    assert format_reward(traj) == 0.1
    scores = score_sql_trajectory(traj, GOLD, db)
    assert scores == {"execution": 1.0, "format": 0.1, "schema": 1.0, "answer": 1.1, "reward": 1.1}
    assert score_sql_trajectory(traj, GOLD, db, total="all")["reward"] == pytest.approx(2.1)


def test_format_reward_requires_every_turn_well_formed_and_all_phases(db) -> None:
    assert format_reward(_trajectory([FULL[0], FULL[2], FULL[3], FULL[4]])) == 0.1
    assert format_reward(_trajectory([FULL[0], FULL[3], FULL[4]])) == 0.0                     # no propose
    assert format_reward(_trajectory(FULL, parse_error_at=1)) == 0.0                           # unparsable turn
    mixed = [FULL[0], [("propose_schema", PROPOSAL), ("run_query", {"sql": GOLD})], FULL[4]]
    assert format_reward(_trajectory(mixed)) == 0.0                                            # two phases, one turn
    assert format_reward(_trajectory([*FULL[:4], [("drop_everything", {})], FULL[4]])) == 0.0  # unknown tool
    bad_args = _trajectory(FULL, errors={1: "Invalid arguments for describe_table: table: Field required"})
    assert format_reward(bad_args) == 0.0
    unconfirmed = _trajectory(FULL, errors={4: "Tool confirm_answer raised QueryError: SQL error"})
    assert format_reward(unconfirmed) == 0.0 and final_sql(unconfirmed) is None


def test_wrong_or_missing_answers_and_proposals(db) -> None:
    wrong = _trajectory([*FULL[:4], [("confirm_answer", {"sql": "SELECT COUNT(*) FROM Album"})]])
    s = score_sql_trajectory(wrong, GOLD, db)
    assert s["execution"] == 0.2 and s["format"] == 0.1 and s["answer"] == pytest.approx(0.3)
    no_confirm = _trajectory(FULL[:4])
    s = score_sql_trajectory(no_confirm, GOLD, db)
    assert s["execution"] == 0.0 and s["format"] == 0.0 and s["schema"] == 1.0
    rejected = _trajectory(FULL, errors={2: "Invalid arguments for propose_schema: tables: Field required"})
    assert last_proposal(rejected) is None and score_sql_trajectory(rejected, GOLD, db)["schema"] == 0.0
    hallucinated = _trajectory([*FULL[:2], [("propose_schema", {"tables": ["Albums", "Artist"],
                                                                 "columns": {"Artist": ["Name", "Genre"]}})],
                                *FULL[3:]])
    # tables: {albums, artist} vs {album, artist}: F1 1/2; columns: {artist.name, artist.genre} vs 3 gold: p 1/2,
    # r 1/3 -> F1 2/5
    assert score_sql_trajectory(hallucinated, GOLD, db)["schema"] == pytest.approx(0.4 * 0.5 + 0.6 * 0.4)
