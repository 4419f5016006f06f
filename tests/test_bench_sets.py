"""The benchmark sets beyond one call, checked without a model: the requests of set C (the multi-step test set)
and set D (its dev counterpart) are answerable by their expected calls on the real tools, their tools are new to
training and to each other, the scorer checks arguments and the order of dependent calls, the multi-turn
sessions (the test sessions over set C's tools, the dev sessions over set D's) are well formed, answerable by
their expected calls and apart from each other, and the multi-turn runner scores a scripted conversation through
the chat's session machinery."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_multiturn  # noqa: E402
from bench_capability import TOOLS as TOOLS_A  # noqa: E402
from bench_capability import run_tool_set  # noqa: E402
from bench_multiturn import NO_TOOL_KINDS, SETS, load_sessions, run_session, score_turn, session_set  # noqa: E402
from tool_set_b import TOOLS_B  # noqa: E402
from tool_set_c import DATA_C, KINDS_C, TOOLS_C, right_call_c  # noqa: E402
from tool_set_d import DATA_D, KINDS_D, TOOLS_D  # noqa: E402

from agentkit.testing import ScriptedModel, call  # noqa: E402
from agentkit.training.synthetic import held_out, synthetic_conversations, tool_names  # noqa: E402
from agentkit.training.synthetic.arithmetic import ARITHMETIC_FAMILIES  # noqa: E402
from agentkit.training.synthetic.families import FAMILIES  # noqa: E402

TOOLS = {t.name: t for t in TOOLS_C}
ITEMS = [json.loads(line) for line in DATA_C.read_text().splitlines() if line.strip()]
D_TOOLS = {t.name: t for t in TOOLS_D}
ITEMS_D = [json.loads(line) for line in DATA_D.read_text().splitlines() if line.strip()]
SESSIONS = load_sessions()
SESSIONS_D = load_sessions(SETS["d"].sessions)
MULTITURN = {"c": (SESSIONS, TOOLS), "d": (SESSIONS_D, D_TOOLS)}
"""Each set of multi-turn sessions, with the tools (the calculator too) its expected calls run on."""
SESSION_CASES = [pytest.param(name, session, id=f"{name}-{session['id']}")
                 for name, (sessions, _) in MULTITURN.items() for session in sessions]


def run_calls(calls: list[dict[str, Any]], tools: dict[str, Any] = TOOLS) -> list[str]:
    """The results of the expected calls on the real tools, arguments validated as the agent does."""
    return [str(tools[c["name"]](**tools[c["name"]].validate(c["arguments"]))) for c in calls]


def plain(text: str) -> str:
    return re.sub(r"(?<=\d),(?=\d{3})", "", text).lower()


def numbers(text: str) -> set[float]:
    return {float(n) for n in re.findall(r"\d+(?:\.\d+)?", text)}


def check_dependencies(calls: list[dict[str, Any]], results: list[str], request: str) -> None:
    """A call with `needs` comes after the calls it needs and takes an argument from their results: an id or
    a name they state or, for the calculator, numbers they give (the rest from the request, or a small
    factor or unit such as 2, 0.5, 60 or 1000)."""
    for k, c in enumerate(calls):
        if not c.get("needs"):
            continue
        assert all(i < k for i in c["needs"]), c
        given = " ".join(results[i] for i in c["needs"]).lower()
        if c["name"] == "calculator":
            used = numbers(c["arguments"]["expression"])
            assert used & numbers(given), (c, given)
            assert all(n in numbers(given) | numbers(request) or n <= 10 or n in (60, 100, 1000) for n in used), c
        else:
            assert any(str(v).lower() in given for v in c["arguments"].values()), (c, given)


def depth(calls: list[dict[str, Any]]) -> int:
    """The longest chain of calls that each take a result of the one before."""
    level: list[int] = []
    for c in calls:
        level.append(1 + max((level[i] for i in c.get("needs", ())), default=0))
    return max(level)


def check_kinds(items: list[dict[str, Any]], kinds_of_set: tuple[str, ...], least: int) -> None:
    """At least `least` requests, of every kind, each shaped as its kind says (set C's docstring)."""
    kinds = Counter(i["kind"] for i in items)
    assert len(items) >= least and set(kinds) == set(kinds_of_set), kinds
    assert min(kinds.values()) >= 5, kinds
    assert len({i["id"] for i in items}) == len(items)
    assert len({i["request"] for i in items}) == len(items)
    for item in items:
        assert len(item["calls"]) >= 2 and item["answer"], item["id"]
        independent = sum(not c.get("needs") for c in item["calls"])
        if item["kind"] == "chain":
            assert depth(item["calls"]) == 2 and all(c["name"] != "calculator" for c in item["calls"]), item["id"]
        elif item["kind"] == "compute":
            assert depth(item["calls"]) == 2 and item["calls"][-1]["name"] == "calculator", item["id"]
        elif item["kind"] == "chain3":
            assert depth(item["calls"]) >= 3, item["id"]
        else:
            assert independent >= 2 and depth(item["calls"]) <= 2, item["id"]


# -- set C -----------------------------------------------------------------------------------------
def test_set_c_has_thirty_multi_step_requests_of_every_kind() -> None:
    check_kinds(ITEMS, KINDS_C, 30)


@pytest.mark.parametrize("item", ITEMS, ids=[i["id"] for i in ITEMS])
def test_set_c_expected_calls_give_the_expected_answer(item: dict[str, Any]) -> None:
    results = run_calls(item["calls"])
    check_dependencies(item["calls"], results, item["request"])
    # the answer is in what the dependent calls return (for parallel requests, in any result): one call
    # cannot answer a dependent request
    dependent = [r for c, r in zip(item["calls"], results, strict=True) if c.get("needs")]
    shown = plain(" | ".join(results if item["kind"] == "parallel" else dependent))
    for group in item["answer"]:
        assert any(plain(alt) in shown for alt in group), (group, results)
    assert right_call_c(item, [(c["name"], c["arguments"]) for c in item["calls"]])


def test_set_c_tools_are_new_to_training_and_to_sets_a_and_b() -> None:
    lookups = set(TOOLS) - {"calculator"}
    assert 8 <= len(lookups) <= 12
    assert not lookups & {t.name for t in [*TOOLS_A, *TOOLS_B]}
    assert not lookups & set(tool_names())
    offered = {t["function"]["name"] for c in synthetic_conversations(400, seed=0, fresh_names=0.5) for t in c.tools}
    assert not lookups & offered
    used = {c["name"] for i in ITEMS for c in i["calls"]}
    assert used == set(TOOLS), set(TOOLS) - used


def test_set_c_tools_read_names_loosely_and_refuse_unknown_ones() -> None:
    assert "accession number AC-1187" in TOOLS["find_artwork"]("the salt marsh at dusk")
    assert "headroom 4.5 m" in TOOLS["bridge_clearance"]("Kelso Road bridge")
    assert "HV-31, HV-32" in TOOLS["apiary_hives"]("Meadowbank apiary")
    with pytest.raises(ValueError, match="no hive"):
        TOOLS["hive_report"]("HV-99")
    with pytest.raises(ValueError, match="Skerra"):
        TOOLS["ferry_route"]("Atlantis")


def test_right_call_c_checks_arguments_order_and_other_tools() -> None:
    item = next(i for i in ITEMS if i["id"] == "chain3_kite_age")
    made = [(c["name"], dict(c["arguments"])) for c in item["calls"]]
    assert right_call_c(item, made)
    # the same value written otherwise, a retry and loose spellings of the names are fine
    loose = [("find_artwork", {"title": "girl with a blue kite"}), ("artwork_record", {"accession": "ac-2045"}),
             ("artwork_record", {"accession": "AC-2045"}), ("artist_profile", {"artist": "tomas vrba"}),
             ("calculator", {"expression": "-1902 + 1934"})]
    assert right_call_c(item, loose)
    assert not right_call_c(item, made[:3])                                     # no computation
    assert not right_call_c(item, [made[0], ("artwork_record", {"accession": "AC-2046"}), *made[2:]])
    assert not right_call_c(item, [made[1], made[0], *made[2:]])               # the id before it was found
    assert not right_call_c(item, [*made, ("hut_beds", {"hut": "H-03"})])      # a tool it does not need
    assert not right_call_c({"calls": []}, made[:1])
    assert right_call_c({"calls": []}, [])
    parallel = next(i for i in ITEMS if i["id"] == "parallel_honey_diff")
    swapped = [(c["name"], c["arguments"]) for c in parallel["calls"]]
    assert right_call_c(parallel, [swapped[1], swapped[0], swapped[2]])        # independent: any order
    assert not right_call_c(parallel, [swapped[2], swapped[0], swapped[1]])    # computed before looking up


def test_bench_capability_scores_set_c_with_its_order_aware_scorer() -> None:
    """`--set c`'s path: run_tool_set with set C's tools and `right_call_c`, on a scripted model that makes
    the expected calls of one request and then the same calls with the dependent one first."""
    item = next(i for i in ITEMS if i["id"] == "chain3_skerra_tide")
    script = [call(c["name"], **c["arguments"]) for c in item["calls"]]
    model = ScriptedModel([*script, "High water at Kilbrae is at 06:12.",
                           script[1], script[0], script[2], "06:12"])
    report = run_tool_set(model, [item, item], max_tokens=64, tools=TOOLS_C, max_steps=6, score_call=right_call_c)
    first, second = report["rows"]
    assert first["right_call"] and first["right_answer"]
    assert not second["right_call"] and second["right_answer"]  # the route's sailings asked before it was found
    assert report["summary"]["chain3"]["right_call"] == 0.5


# -- set D (the dev multi-step set) -----------------------------------------------------------------
def test_set_d_has_thirty_two_multi_step_requests_of_every_kind() -> None:
    check_kinds(ITEMS_D, KINDS_D, 32)
    # several carry a looked-up number into a second tool that is not the calculator
    carried = [i["id"] for i in ITEMS_D for c in i["calls"] if c.get("needs") and c["name"] != "calculator"
               and any(isinstance(v, int | float) for v in c["arguments"].values())]
    assert len(carried) >= 6, carried


@pytest.mark.parametrize("item", ITEMS_D, ids=[i["id"] for i in ITEMS_D])
def test_set_d_expected_calls_give_the_expected_answer(item: dict[str, Any]) -> None:
    results = run_calls(item["calls"], D_TOOLS)
    check_dependencies(item["calls"], results, item["request"])
    dependent = [r for c, r in zip(item["calls"], results, strict=True) if c.get("needs")]
    shown = plain(" | ".join(results if item["kind"] == "parallel" else dependent))
    for group in item["answer"]:
        assert any(plain(alt) in shown for alt in group), (group, results)
    # what a dependent call takes from earlier results (an id, a name, a number) is not in the request
    request = item["request"].lower()
    for c in item["calls"]:
        if c.get("needs") and c["name"] != "calculator":
            given = " ".join(results[i] for i in c["needs"]).lower()
            taken = [str(v).lower() for v in c["arguments"].values() if str(v).lower() in given]
            assert taken and not [v for v in taken if v in request], (c, item["request"])
    made = [(c["name"], c["arguments"]) for c in item["calls"]]
    assert right_call_c(item, made)
    first = next((k for k, c in enumerate(item["calls"]) if c.get("needs")), None)
    if first is not None:  # the first dependent call moved before everything: too early
        assert not right_call_c(item, [made[first], *made[:first], *made[first + 1:]])


def test_set_d_tools_are_new_to_training_and_to_the_other_sets() -> None:
    lookups = set(D_TOOLS) - {"calculator"}
    assert 10 <= len(lookups) <= 12
    assert not lookups & {t.name for t in [*TOOLS_A, *TOOLS_B, *TOOLS_C]}
    assert not lookups & set(tool_names())
    assert all(held_out(name) for name in D_TOOLS)
    # the held-out words that keep set D's domains out hold out no training family's tool
    assert not [n for f in (*FAMILIES, *ARITHMETIC_FAMILIES) for n in f.names if held_out(n)]
    offered = {t["function"]["name"] for c in synthetic_conversations(400, seed=0, fresh_names=0.5) for t in c.tools}
    assert not lookups & offered and not [n for n in offered if held_out(n)]
    used = {c["name"] for i in ITEMS_D for c in i["calls"]}
    assert used == set(D_TOOLS), set(D_TOOLS) - used
    # no request of set D is one of set C's
    assert not {i["request"] for i in ITEMS_D} & {i["request"] for i in ITEMS}


def test_set_d_tools_read_names_loosely_and_refuse_unknown_ones() -> None:
    assert "lot SB-1257" in D_TOOLS["seed_lot"]("the sea kale")
    assert "PS-64, PS-23" in D_TOOLS["ski_lift"]("BERGKRISTALL")
    assert "Cold Grip" in D_TOOLS["ski_wax"](-7.5) and "Wet Klister" in D_TOOLS["ski_wax"](0)
    assert "sow 782 seeds" in D_TOOLS["sowing_rate"](64, 500)
    assert "283 bottles" in D_TOOLS["bottling_run"](212.5)
    assert "IV-377" in D_TOOLS["loaned_instrument"]("jonas ekberg")
    with pytest.raises(ValueError, match="no barrel"):
        D_TOOLS["barrel_tasting"]("BQ-999")
    with pytest.raises(ValueError, match="Giacomo Ravelli"):
        D_TOOLS["instrument_maker"]("Antonio Stradivari")


def test_bench_capability_scores_set_d_with_the_order_aware_scorer() -> None:
    """`--set d`'s path: a scripted model makes one request's expected calls (a number carried into the wax
    tool), then the same calls with the wax asked for before the snow temperature was read."""
    item = next(i for i in ITEMS_D if i["id"] == "chain3_marmot_wax")
    script = [call(c["name"], **c["arguments"]) for c in item["calls"]]
    model = ScriptedModel([*script, "Use Midwinter wax on PS-12.", script[0], script[2], script[1], "Midwinter"])
    report = run_tool_set(model, [item, item], max_tokens=64, tools=TOOLS_D, max_steps=6, score_call=right_call_c)
    first, second = report["rows"]
    assert first["right_call"] and first["right_answer"]
    assert not second["right_call"] and second["right_answer"]
    assert report["summary"]["chain3"]["right_call"] == 0.5


def test_bench_capability_runs_map_then_act_and_scores_map_probes_not_exploration(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--planner map-then-act`: the first request explores (a probe of its own, not scored), maps with a probe
    that is the chain's first lookup (scored), then acts; the second request reuses the cached exploration."""
    monkeypatch.setenv("AGENTKIT_HOME", str(tmp_path))
    item = next(i for i in ITEMS_D if i["id"] == "chain3_marmot_wax")
    lift, piste, wax = [call(c["name"], **c["arguments"]) for c in item["calls"]]
    plan = json.dumps({"entities": [{"name": "Marmot Six", "kind": "lift"}], "unknowns": [],
                       "subgoals": [{"goal": "read the piste", "tool": "piste_report"}]})
    script = [call("ski_lift", lift="Eagle Chair"), "- lifts are looked up by name",  # explore, then its summary
              lift, plan, piste, wax, "Midwinter wax.",                              # map probes, map, act
              plan, lift, piste, wax, "Midwinter."]                                  # cached priors: map, act
    report = run_tool_set(ScriptedModel(script), [item, item], max_tokens=64, tools=TOOLS_D, max_steps=6,
                          score_call=right_call_c, planner="map-then-act")
    first, second = report["rows"]
    assert [name for name, _ in first["calls"]] == ["ski_lift", "piste_report", "ski_wax"]
    assert first["right_call"] and first["right_answer"]
    assert second["right_call"] and second["right_answer"]
    assert list((tmp_path / "explore").iterdir())


# -- multi-turn sessions ---------------------------------------------------------------------------
def leaning_calls(sessions: list[dict[str, Any]]) -> int:
    """Lookups that lean on earlier turns: tool-turn calls (not the calculator) none of whose arguments the
    user's words give."""
    return sum(1 for s in sessions for t in s["turns"] for c in t["calls"] if c["name"] != "calculator"
               and not any(str(v).lower() in t["user"].lower() for v in c["arguments"].values()))


def check_calculation(calculation: dict[str, Any], shown: str, request: str) -> None:
    """A calculator call that needs no call of its turn computes on numbers an earlier turn's results showed
    (`shown`) or the request gives, or on a small factor or unit (as `check_dependencies`)."""
    used = numbers(calculation["arguments"]["expression"])
    assert all(n in numbers(shown) | numbers(request) or n <= 10 or n in (60, 100, 1000) for n in used), calculation


@pytest.mark.parametrize("name", list(MULTITURN))
def test_multiturn_sessions_are_long_mixed_and_name_real_tools(name: str) -> None:
    sessions, tools = MULTITURN[name]
    assert len(sessions) >= 10
    assert len({s["id"] for s in sessions}) == len(sessions)
    for session in sessions:
        turns = session["turns"]
        assert len(turns) >= 5, session["id"]
        kinds = {t["kind"] for t in turns}
        assert "tool" in kinds and kinds & set(NO_TOOL_KINDS), session["id"]
        for turn in turns:
            assert turn["user"].strip() and turn["kind"] in ("tool", *NO_TOOL_KINDS), turn
            assert bool(turn["calls"]) == (turn["kind"] == "tool"), turn
            assert all(c["name"] in tools for c in turn["calls"]), turn
            assert all(isinstance(g, list) and g for g in turn["answer"]), turn
            if turn["kind"] in ("tool", "recall"):
                assert turn["answer"], turn
    used = {c["name"] for s in sessions for t in s["turns"] for c in t["calls"]}
    assert used == set(tools), set(tools) - used
    # later turns lean on earlier ones: an argument of a tool turn that the user's words do not give
    assert leaning_calls(sessions) >= 10, leaning_calls(sessions)


@pytest.mark.parametrize(("name", "session"), SESSION_CASES)
def test_multiturn_expected_calls_give_the_expected_answers(name: str, session: dict[str, Any]) -> None:
    """Each tool turn's expected calls, run on the set's real tools, show its answer (a calculation takes its
    numbers from earlier results or the request); each recall turn's answer was shown by an earlier turn's
    results."""
    tools = MULTITURN[name][1]
    shown_so_far = ""
    for turn in session["turns"]:
        if turn["kind"] == "tool":
            raw = run_calls(turn["calls"], tools)
            check_dependencies(turn["calls"], raw, turn["user"])
            for c in turn["calls"]:
                if c["name"] == "calculator" and not c.get("needs"):
                    check_calculation(c, shown_so_far, turn["user"])
            results = plain(" | ".join(raw))
            for group in turn["answer"]:
                assert any(plain(alt) in results for alt in group), (turn["user"], group, results)
            shown_so_far += " | " + results
        elif turn["kind"] == "recall":
            for group in turn["answer"]:
                assert any(plain(alt) in shown_so_far for alt in group), (turn["user"], group)


def test_multiturn_dev_sessions_are_apart_from_the_test_sessions() -> None:
    """The dev sessions share no session id, no lookup tool and no user turn with the test sessions."""
    def ids(sessions: list[dict[str, Any]]) -> set[str]:
        return {s["id"] for s in sessions}

    def lookups(sessions: list[dict[str, Any]]) -> set[str]:
        return {c["name"] for s in sessions for t in s["turns"] for c in t["calls"]} - {"calculator"}

    def users(sessions: list[dict[str, Any]]) -> set[str]:
        return {" ".join(t["user"].lower().split()) for s in sessions for t in s["turns"]}

    assert not ids(SESSIONS_D) & ids(SESSIONS)
    assert lookups(SESSIONS_D) and not lookups(SESSIONS_D) & lookups(SESSIONS)
    assert not lookups(SESSIONS_D) & set(TOOLS) and not lookups(SESSIONS) & set(D_TOOLS)
    assert not users(SESSIONS_D) & users(SESSIONS), users(SESSIONS_D) & users(SESSIONS)


def test_multiturn_sets_pair_each_file_with_its_tools() -> None:
    """`--set c` plays the test sessions with set C's lookups, `--set d` the dev sessions with set D's; the
    chat's own calculator is never offered twice; `--sessions` swaps the file, not the tools."""
    test, dev = session_set("c"), session_set("d")
    assert (test.sessions, test.data) == (bench_multiturn.SESSIONS, "test")
    assert (dev.sessions, dev.data) == (bench_multiturn.SESSIONS_D, "dev")
    assert {t.name for t in test.tools} == set(TOOLS) - {"calculator"}
    assert {t.name for t in dev.tools} == set(D_TOOLS) - {"calculator"}
    other = session_set("d", Path("other.jsonl"))
    assert other.sessions == Path("other.jsonl") and other.tools == dev.tools and other.data == "dev"


def test_multiturn_runner_plays_a_dev_session_with_set_d_tools() -> None:
    """A scripted model makes a dev session's expected calls: set D's tools run in the chat and later turns
    see their results."""
    session = next(s for s in SESSIONS_D if s["id"] == "lenz_cello")
    turns = session["turns"][:3]  # a lookup, a recall of its result, a lookup with the id it found
    script: list[Any] = []
    for turn in turns:
        script += [call(c["name"], **c["arguments"]) for c in turn["calls"]]
        script.append(" ".join(group[0] for group in turn["answer"]))
    model = ScriptedModel(script)
    result = run_session(model, {"id": session["id"], "turns": turns}, tools=SETS["d"].tools, echo=False)
    rows = result["turns"]
    assert [r["right_call"] for r in rows] == [True, None, True]
    assert [r["right_answer"] for r in rows] == [True, True, True] and result["figures"]["errors"] == 0
    last = model.requests[-1]
    assert any(m.role == "tool" and "IV-531" in m.content and "Vautrin" in m.content for m in last)


def test_multiturn_main_records_the_set_and_its_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--set d` plays the dev sessions and writes the set and its data kind into the results' JSON."""
    monkeypatch.setattr(bench_multiturn, "resolve_model", lambda _spec: ScriptedModel(["Noted."], repeat_last=True))
    out = tmp_path / "multiturn.json"
    monkeypatch.setattr(sys, "argv", ["bench_multiturn.py", "--model", "scripted", "--set", "d", "--limit", "1",
                                      "--out", str(out)])
    bench_multiturn.main()
    report = json.loads(out.read_text())
    assert (report["set"], report["data"]) == ("d", "dev")
    assert report["sessions_file"].endswith("multiturn_sessions_d.jsonl")
    assert [s["id"] for s in report["sessions"]] == [SESSIONS_D[0]["id"]]
    assert report["overall"]["turns"] == len(SESSIONS_D[0]["turns"])
    assert report["overall"]["tool_turns"] > 0 and report["overall"]["tool_turns_called"] == 0.0  # "Noted." only

    first = report["sessions"][0]["turns"]
    next(r for r in first if r["right_tool"] is not None)["calls"] = [["made", {}]]  # one tool turn calls
    del report["overall"]["tool_turns_called"]
    out.write_text(json.dumps(report))
    monkeypatch.setattr(sys, "argv", ["bench_multiturn.py", "--rescore", str(out)])
    bench_multiturn.main()
    rescored = json.loads(out.read_text())
    # a file written before the figure gets it, recomputed from the turns
    assert rescored["overall"]["tool_turns_called"] == round(1 / report["overall"]["tool_turns"], 4)
    assert rescored["sessions"][0]["figures"]["turns"] == len(first) and rescored["by_kind"].keys() >= {"tool"}


SCRIPTED = {"id": "scripted", "turns": [
    {"user": "Which hives are at Meadowbank?", "kind": "tool", "answer": [["HV-31"], ["HV-32"]],
     "calls": [{"name": "apiary_hives", "arguments": {"apiary": "Meadowbank"}}]},
    {"user": "And how is the second one?", "kind": "tool", "answer": [["11"]],
     "calls": [{"name": "hive_report", "arguments": {"hive": "HV-32"}}]},
    {"user": "What is a drone in a beehive?", "kind": "knowledge", "calls": [], "answer": [["male"]]},
]}


def test_multiturn_runner_scores_a_scripted_conversation() -> None:
    model = ScriptedModel([
        call("apiary_hives", apiary="Meadowbank"), "Meadowbank has hives HV-31 and HV-32.",  # right
        "HV-32 is doing fine.",                                                             # no call: wrong
        call("hive_report", hive="HV-31"), "A drone is a worker bee.",                       # a call: wrong
    ])
    result = run_session(model, SCRIPTED, echo=False)
    rows = result["turns"]
    assert [r["right_tool"] for r in rows] == [True, False, None]
    assert [r["right_call"] for r in rows] == [True, False, None]
    assert [r["no_call"] for r in rows] == [None, None, False]
    assert [r["right_answer"] for r in rows] == [True, False, False]
    assert rows[2]["calls"] == [("hive_report", {"hive": "HV-31"})]
    figures = result["figures"]
    assert figures["turns"] == 3 and figures["tool_turns"] == 2 and figures["errors"] == 0
    assert figures["tool_turns_right_tool"] == 0.5 and figures["no_tool_turns_no_call"] == 0.0
    assert figures["right_answer"] == pytest.approx(1 / 3, abs=1e-3)
    # one conversation: the second turn's request carried the first turn, its call and result
    second = model.requests[2]
    assert [m.role for m in second][:5] == ["system", "user", "assistant", "tool", "assistant"]
    assert "HV-31, HV-32" in second[3].content and second[-1].content == "And how is the second one?"


def test_multiturn_runner_counts_a_fully_right_session() -> None:
    model = ScriptedModel([
        call("apiary_hives", apiary="Meadowbank"), "HV-31 and HV-32.",
        call("hive_report", hive="HV-32"), "HV-32 has 11 kg of honey.",
        "A drone is a male bee.",
    ])
    figures = run_session(model, SCRIPTED, echo=False)["figures"]
    assert figures["tool_turns_right_tool"] == figures["no_tool_turns_no_call"] == figures["right_answer"] == 1.0


def test_multiturn_runner_passes_check_answers_to_the_chats_agent() -> None:
    """With `--check-answers` the second turn's made-up "11 kg" is sent back once; the lookup then made is scored."""
    model = ScriptedModel([
        call("apiary_hives", apiary="Meadowbank"), "Meadowbank has hives HV-31 and HV-32.",
        "HV-32 has 11 kg of honey.", call("hive_report", hive="HV-32"), "HV-32 has 11 kg of honey.",
        "A drone is a male bee.",
    ])
    rows = run_session(model, SCRIPTED, echo=False, check_answers=True)["turns"]
    assert [r["right_call"] for r in rows] == [True, True, None] and rows[1]["steps"] == 3
    assert any(m.role == "user" and m.content.startswith("Your answer states 11") for m in model.requests[3])


def test_score_turn_right_tool_needs_every_expected_tool_and_no_other() -> None:
    turn = SCRIPTED["turns"][0]
    assert score_turn(turn, [("apiary_hives", {"apiary": "Old Rectory"})], "HV-31, HV-32")["right_tool"]
    assert not score_turn(turn, [("apiary_hives", {"apiary": "Old Rectory"})], "x")["right_call"]
    assert not score_turn(turn, [("apiary_hives", {"apiary": "Meadowbank"}), ("calculator", {"expression": "1"})],
                          "HV-31 HV-32")["right_tool"]
    assert not score_turn(turn, [], "HV-31 HV-32")["right_tool"]
    chat = {"user": "thanks!", "kind": "chat", "calls": [], "answer": []}
    assert score_turn(chat, [], "You're welcome!") == {"right_tool": None, "right_call": None, "no_call": True,
                                                       "right_answer": True}
    assert score_turn(chat, [], "")["right_answer"] is False


def test_leakage_nearest_finds_the_most_similar_training_text() -> None:
    np = pytest.importorskip("numpy")
    from check_leakage import nearest, training_requests

    bench = np.array([[1.0, 0.0], [0.0, 1.0]])
    train = np.array([[0.6, 0.8], [1.0, 0.0], [0.0, -1.0]])
    sims, best = nearest(bench, train)
    assert sims.tolist() == pytest.approx([1.0, 0.8]) and best.tolist() == [1, 0]
    texts = training_requests((("tiny", {"n": 20, "seed": 3}),))
    assert 0 < len(texts) <= 20 and len(set(texts)) == len(texts)
