"""Map-then-act planning: stages as labelled turns, read-only exploration, cached priors, the typed map."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentkit import Agent, tool
from agentkit.loop.planning import (
    EXPLORE_SYSTEM,
    MAP_SYSTEM,
    CognitiveMap,
    ExplorationCache,
    MapThenActPlanner,
    environment_identity,
    map_of,
)
from agentkit.messages import Message
from agentkit.testing import FunctionModel, ScriptedModel, call


class Shop:
    """A tiny world: items with prices (observable) and an order book (changed by `buy`)."""

    def __init__(self) -> None:
        self.prices = {"apple": 3, "pear": 5}
        self.orders: list[str] = []

        @tool(read_only=True)
        def list_items() -> str:
            """List the items for sale."""
            return ", ".join(self.prices)

        @tool(read_only=True)
        def price(item: str) -> int:
            """The price of one item.

            Args:
                item: the item's name.
            """
            return self.prices[item]

        @tool
        def buy(item: str) -> str:
            """Buy one item (changes the order book).

            Args:
                item: the item's name.
            """
            self.orders.append(item)
            return f"bought {item}"

        self.tools = [list_items, price, buy]


MAP_JSON = json.dumps({
    "entities": [{"name": "apple", "kind": "item"}],
    "affordances": [{"tool": "buy", "applies_to": "apple", "effect": "adds an order"}],
    "constraints": ["buy exactly one apple"],
    "unknowns": [],
    "subgoals": [{"goal": "buy the apple", "tool": "buy"}],
})


def test_three_stages_are_labelled_turns_and_side_effects_are_refused(tmp_path: Path) -> None:
    shop = Shop()
    model = ScriptedModel([
        Message.assistant(tool_calls=[call("list_items").tool_calls[0], call("buy", item="pear").tool_calls[0]]),
        "- items: apple, pear\n- prices via price(item)",
        MAP_JSON,
        call("buy", item="apple"),
        "Bought one apple.",
    ])
    planner = MapThenActPlanner(environment="shop-v1", cache=tmp_path)
    result = Agent(model, shop.tools, planner=planner).run("Buy an apple.")

    t = result.trajectory
    assert [turn.phase for turn in t.turns] == ["explore", "explore", "map", "act", "act"]
    assert result.answer == "Bought one apple."
    assert shop.orders == ["apple"]  # the pear purchase during exploration was refused, not run
    probes = t.extras["explore"]["calls"]
    assert [(c["tool"], c["refused"]) for c in probes] == [("list_items", False), ("buy", True)]
    assert probes[0]["observation"] == "apple, pear"
    assert "Refused: buy has side effects" in probes[1]["observation"]
    # The refusal went back to the model as an error observation.
    explore_input = t.turns[1].input or []
    assert any(m.role == "tool" and m.is_error and "Refused" in m.content for m in explore_input)
    # Priors and map are in the act stage's system prompt.
    system = t.messages[0].content
    assert "Environment priors" in system and "prices via price(item)" in system
    assert "Cognitive map" in system and "buy the apple" in system
    assert CognitiveMap.model_validate(t.extras["map"]).subgoals[0].tool == "buy"
    assert map_of(t) is not None and "1. [ ] buy the apple" in map_of(t).render()
    assert t.planner == "map-then-act"


def test_priors_are_cached_per_environment_and_persisted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTKIT_HOME", str(tmp_path))
    shop = Shop()
    first = ScriptedModel(["- two items for sale", MAP_JSON, "ok"])
    Agent(first, shop.tools, planner="map-then-act").run("Which items are there?")
    cache_files = list((tmp_path / "explore").glob("*.json"))
    assert len(cache_files) == 1
    stored = json.loads(cache_files[0].read_text())
    assert stored["priors"] == "- two items for sale"
    assert stored["identity"] == environment_identity(shop.tools)

    # A new agent (new planner, as in a new process) reuses the priors: no explore turn.
    second = ScriptedModel([MAP_JSON, "ok"])
    t = Agent(second, Shop().tools, planner="map-then-act").run("What does a pear cost?").trajectory
    assert [turn.phase for turn in t.turns] == ["map", "act"]
    assert t.extras["explore"]["cached"] is True
    assert "two items for sale" in t.messages[0].content


def test_mapping_probes_unknowns_then_stops_when_none_remain(tmp_path: Path) -> None:
    shop = Shop()
    with_unknown = json.dumps({"entities": ["pear"], "unknowns": ["price of a pear"], "subgoals": ["answer"]})
    model = ScriptedModel([
        "- prices via price(item)",
        with_unknown,
        call("price", item="pear"),
        MAP_JSON,
        "A pear costs 5.",
    ])
    planner = MapThenActPlanner(cache=tmp_path, map_steps=5)
    t = Agent(model, shop.tools, planner=planner).run("Price of a pear?").trajectory
    assert [turn.phase for turn in t.turns] == ["explore", "map", "map", "map", "act"]
    assert t.extras["map_probes"][0]["observation"] == "5"
    assert "These unknowns remain: price of a pear" in (t.turns[2].input or [])[-1].content
    assert t.extras["map"]["unknowns"] == []
    assert "map_error" not in t.extras

    # A first map without unknowns ends mapping at once, whatever the budget.
    early = ScriptedModel([MAP_JSON, "done"])
    t2 = Agent(early, Shop().tools, planner=MapThenActPlanner(cache=tmp_path, map_steps=5)).run("Buy?").trajectory
    assert [turn.phase for turn in t2.turns] == ["map", "act"]


def test_unreadable_map_falls_back_to_empty_and_is_recorded(tmp_path: Path) -> None:
    model = ScriptedModel(["priors", "I will just buy it!", "still no json", "done"])
    planner = MapThenActPlanner(cache=tmp_path, map_steps=2)
    t = Agent(model, Shop().tools, planner=planner).run("Buy an apple.").trajectory
    assert [turn.phase for turn in t.turns] == ["explore", "map", "map", "act"]
    assert "no JSON object" in t.extras["map_error"]
    assert CognitiveMap.model_validate(t.extras["map"]).is_empty
    assert "Cognitive map" not in t.messages[0].content
    assert "That was not a readable map" in (t.turns[2].input or [])[-1].content
    assert t.answer == "done"


def test_budgets_bound_exploration_and_the_last_turns_offer_no_tools(tmp_path: Path) -> None:
    seen: list[tuple[str, int]] = []

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> Message | str:
        system = messages[0].content
        stage = "explore" if system.startswith(EXPLORE_SYSTEM) else "map" if system.startswith(MAP_SYSTEM) else "act"
        seen.append((stage, len(tools)))
        if tools and stage != "act":
            return call("list_items")  # always wants one more probe
        return MAP_JSON if stage == "map" else "summary" if stage == "explore" else "done"

    planner = MapThenActPlanner(cache=tmp_path, explore_steps=2, map_steps=2)
    t = Agent(FunctionModel(reply), Shop().tools, planner=planner).run("Buy an apple.").trajectory
    assert [turn.phase for turn in t.turns] == ["explore"] * 3 + ["map"] * 2 + ["act"]
    # Read-only tools only (list_items, price) are offered while exploring; none on closing turns.
    assert seen == [("explore", 2), ("explore", 2), ("explore", 0), ("map", 2), ("map", 0), ("act", 3)]
    assert len(t.extras["explore"]["calls"]) == 2 and len(t.extras["map_probes"]) == 1


def test_looping_priors_are_tidied(tmp_path: Path) -> None:
    looping = "\n\n".join(["- prices via price(item)"] * 50)
    t = Agent(ScriptedModel([looping, MAP_JSON, "ok"]), Shop().tools,
              planner=MapThenActPlanner(cache=tmp_path)).run("Buy?").trajectory
    assert t.messages[0].content.count("prices via price(item)") == 1


def test_no_read_only_tools_skips_exploration(tmp_path: Path) -> None:
    @tool
    def send(text: str) -> str:
        """Send a message.

        Args:
            text: what to send.
        """
        return "sent"

    t = Agent(ScriptedModel([MAP_JSON, "ok"]), [send], planner=MapThenActPlanner(cache=tmp_path)).run("Hi").trajectory
    assert [turn.phase for turn in t.turns] == ["map", "act"]
    assert t.extras["explore"]["skipped"] == "no read-only tools"


def test_environment_identity() -> None:
    class Env:
        def identity(self) -> str:
            return "sql:abc"

    a, b = Shop(), Shop()
    assert environment_identity(a.tools, "named") == "named"
    assert environment_identity(a.tools, Env()) == "sql:abc"
    assert environment_identity(a.tools) == environment_identity(b.tools)
    # Side-effecting tools do not change what exploration can observe.
    assert environment_identity(a.tools[:2]) == environment_identity(a.tools)
    assert environment_identity(a.tools[:1]) != environment_identity(a.tools)
    with pytest.raises(TypeError):
        environment_identity(a.tools, 42)


def test_concurrent_runs_explore_a_new_environment_once(tmp_path: Path) -> None:
    explored: list[int] = []
    lock = threading.Lock()

    def reply(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> str:
        if messages[0].content.startswith(EXPLORE_SYSTEM):
            with lock:
                explored.append(1)
            time.sleep(0.2)
            return "- shared priors"
        return MAP_JSON if messages[0].content.startswith(MAP_SYSTEM) else "ok"

    cache = ExplorationCache(tmp_path)
    results: list[str] = []

    def worker() -> None:
        agent = Agent(FunctionModel(reply), Shop().tools, planner=MapThenActPlanner("shop", cache=cache))
        results.append(agent.run("Buy an apple.").trajectory.messages[0].content)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(explored) == 1
    assert len(results) == 3 and all("shared priors" in r for r in results)


def test_cognitive_map_is_lenient_typed_and_serialisable() -> None:
    text = """Here is the map:
```json
{'objects': ['albums', {'name': 'artists', 'kind': 'table'}],
 'sub_goals': ['join', {'step': 'count', 'tool': 'run_query'}],
 'unknowns': 'none', 'constraints': ['read-only',], 'affordances': [{'action': 'run_query', 'target': 'albums'}]
```"""
    cmap, error = CognitiveMap.parse(text, task="count albums")
    assert error is None
    assert [e.name for e in cmap.entities] == ["albums", "artists"]
    assert cmap.entities[1].kind == "table"
    assert [g.goal for g in cmap.subgoals] == ["join", "count"] and cmap.subgoals[1].tool == "run_query"
    assert cmap.unknowns == []
    assert cmap.affordances[0].tool == "run_query" and cmap.affordances[0].applies_to == "albums"
    again = CognitiveMap.model_validate_json(cmap.model_dump_json())
    assert again == cmap
    rendered = cmap.render()
    assert "1. [ ] join" in rendered and "- run_query -> albums" in rendered
    assert CognitiveMap.parse("[1, 2]")[1] is not None
    assert CognitiveMap().render() == "(empty map)"


def test_planner_is_resolved_by_name() -> None:
    agent = Agent(ScriptedModel(["x"]), Shop().tools, planner="map-then-act")
    assert isinstance(agent.planner, MapThenActPlanner)
    with pytest.raises(ValueError):
        MapThenActPlanner(map_steps=0)
