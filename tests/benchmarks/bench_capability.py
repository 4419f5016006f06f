"""Capability of the embedded models as agents: a tool-use set and the Chinook easy SQL tasks.

Tool use: `data/tool_capability.jsonl`, 46 requests over six tools (calculator, get_weather,
convert_currency, get_population, unit_convert, count_letters): single calls, a call whose result
the answer must use, two calls in sequence, and requests that need no tool. The tools are real
functions over a small fixed table, so the answers are known. Each request runs through `Agent`
(react, greedy, at most 4 model calls unless `--max-steps`; with `--select-tools N` it is shown only the
N tools nearest the request, through `ToolSelection`). Scores:

- right call: every expected call was made (names, and arguments equal after normalising: numbers
  within 1 %, strings case-insensitive, calculator expressions by value), and no call to another tool;
  for no-tool requests, no call at all.
- right answer: the final answer holds each expected value (one of its spellings, commas removed);
  a no-tool request with no expected value needs a non-empty answer and no call.

SQL: the Chinook easy tasks through `agentkit.evaluation` with the react, map-then-act and recipe
planners (`--sql-limit` tasks each, 0 to skip), through bench_sql_eval's configurations.

    python tests/benchmarks/bench_capability.py --models local:smollm2-135m local:default \\
        --formats native text --sql-limit 10 --out tests/benchmarks/results/capability.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import resource
import sys
import time
from pathlib import Path
from typing import Any

from agentkit import Agent, tool
from agentkit.agent import DEFAULT_INSTRUCTIONS
from agentkit.memory.tool_selection import ToolSelection
from agentkit.models import GenerationSettings, load_local
from agentkit.models.adapter import split_adapter_spec
from agentkit.tools.builtin import calculator, evaluate

DATA = Path(__file__).with_name("data") / "tool_capability.jsonl"

WEATHER = {"paris": (18, "cloudy"), "tokyo": (24, "sunny"), "lisbon": (21, "sunny"), "oslo": (4, "snow"),
           "cairo": (33, "clear sky"), "new york": (12, "rain")}
USD_RATES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.0, "CHF": 0.88}
POPULATION = {"france": 68_170_000, "japan": 124_500_000, "brazil": 216_400_000, "canada": 40_100_000,
              "kenya": 55_100_000, "norway": 5_520_000}
UNITS = {"km": "km", "kilometer": "km", "kilometers": "km", "kilometre": "km", "kilometres": "km",
         "mi": "mi", "mile": "mi", "miles": "mi", "m": "m", "meter": "m", "meters": "m", "metre": "m",
         "metres": "m", "ft": "ft", "foot": "ft", "feet": "ft", "kg": "kg", "kilogram": "kg", "kilograms": "kg",
         "lb": "lb", "lbs": "lb", "pound": "lb", "pounds": "lb", "c": "c", "celsius": "c", "°c": "c",
         "f": "f", "fahrenheit": "f", "°f": "f"}
LINEAR = {("km", "mi"): 0.621371, ("mi", "km"): 1.609344, ("m", "ft"): 3.28084, ("ft", "m"): 0.3048,
          ("kg", "lb"): 2.204623, ("lb", "kg"): 0.4535924, ("km", "m"): 1000.0, ("m", "km"): 0.001}


@tool
def get_weather(city: str) -> str:
    """Current weather for a city: temperature in Celsius and conditions.

    Args:
        city: the city name, e.g. "Paris"
    """
    found = WEATHER.get(city.split(",")[0].strip().lower())
    if found is None:
        raise ValueError(f"no weather station for {city!r}; known: {', '.join(c.title() for c in WEATHER)}")
    return f"{city.split(',')[0].strip().title()}: {found[0]} °C, {found[1]}"


@tool
def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert an amount of money between currencies at today's rate.

    Args:
        amount: the amount of money
        from_currency: ISO code of the currency to convert from, e.g. USD
        to_currency: ISO code of the currency to convert to, e.g. EUR
    """
    a, b = from_currency.strip().upper(), to_currency.strip().upper()
    if a not in USD_RATES or b not in USD_RATES:
        raise ValueError(f"unknown currency; known: {', '.join(USD_RATES)}")
    return f"{amount} {a} = {round(float(amount) * USD_RATES[b] / USD_RATES[a], 2)} {b}"


@tool
def get_population(country: str) -> str:
    """The population of a country.

    Args:
        country: the country name, e.g. "France"
    """
    found = POPULATION.get(country.strip().lower())
    if found is None:
        raise ValueError(f"no data for {country!r}")
    return f"{country.strip().title()}: {found}"


def _unit(name: str) -> str:
    unit = UNITS.get(name.strip().lower())
    if unit is None:
        raise ValueError(f"unknown unit {name!r}; use km, mi, m, ft, kg, lb, c or f")
    return unit


def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """`value` in `from_unit` expressed in `to_unit`, rounded to 2 decimals."""
    a, b = _unit(from_unit), _unit(to_unit)
    if (a, b) == ("c", "f"):
        return round(float(value) * 9 / 5 + 32, 2)
    if (a, b) == ("f", "c"):
        return round((float(value) - 32) * 5 / 9, 2)
    if a == b:
        return round(float(value), 2)
    if (a, b) not in LINEAR:
        raise ValueError(f"cannot convert {from_unit} to {to_unit}")
    return round(float(value) * LINEAR[(a, b)], 2)


@tool
def unit_convert(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a value between units of length, weight or temperature.

    Args:
        value: the number to convert
        from_unit: unit of the value: km, mi, m, ft, kg, lb, c (Celsius) or f (Fahrenheit)
        to_unit: unit to convert to (same choices)
    """
    return f"{value} {from_unit} = {convert_units(value, from_unit, to_unit)} {to_unit}"


@tool
def count_letters(word: str, letter: str) -> str:
    """Count how many times a letter occurs in a word.

    Args:
        word: the word to look at
        letter: the letter to count
    """
    return str(word.lower().count(letter.strip().lower()))


TOOLS = [calculator, get_weather, convert_currency, get_population, unit_convert, count_letters]


# -- scoring -------------------------------------------------------------------------------------
def _same_value(expected: Any, got: Any, key: str) -> bool:
    if key == "expression":
        try:
            a, b = float(evaluate(str(expected))), float(evaluate(str(got)))
        except Exception:
            return False
        return math.isclose(a, b, rel_tol=0.01, abs_tol=1e-9)
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        try:
            return math.isclose(float(expected), float(got), rel_tol=0.01)
        except (TypeError, ValueError):
            return False
    if key.endswith("_unit"):
        return UNITS.get(str(got).strip().lower()) == UNITS.get(str(expected).lower())
    return str(expected).strip().lower() == str(got).split(",")[0].strip().lower()


def _call_matches(expected: dict[str, Any], name: str, arguments: dict[str, Any]) -> bool:
    return name == expected["name"] and all(
        k in arguments and _same_value(v, arguments[k], k) for k, v in expected["arguments"].items())


def right_call(item: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> bool:
    """Every expected call was made and no call went to a tool the request does not need."""
    if not item["calls"]:
        return not calls
    wanted = {c["name"] for c in item["calls"]}
    if any(name not in wanted for name, _ in calls):
        return False
    return all(any(_call_matches(e, n, a) for n, a in calls) for e in item["calls"])


def right_answer(item: dict[str, Any], answer: str | None, calls: list[Any]) -> bool:
    """The answer holds one spelling of each expected value (commas removed, case-insensitive)."""
    if not answer or not answer.strip():
        return False
    if not item["calls"] and calls:
        return False
    text = re.sub(r"(?<=\d),(?=\d{3})", "", answer).lower()
    return all(any(alt.lower() in text for alt in group) for group in item["answer"])


def run_tool_set(model: Any, items: list[dict[str, Any]], max_tokens: int, concurrency: int = 1,
                 select_tools: int | None = 0, tools: list[Any] = TOOLS, max_steps: int = 4,
                 instructions: str = DEFAULT_INSTRUCTIONS, score_call: Any = right_call,
                 wait_for_results: bool = False, planner: str = "react", check_answers: bool = False
                 ) -> dict[str, Any]:
    """Run every request; per-kind and overall right-call and right-answer rates. With `concurrency` > 1
    requests run at once (a llama.cpp model then needs as many slots) and caches are not reset between them.
    `select_tools` > 0 offers each request only that many tools, those nearest it (`ToolSelection`).
    `score_call(item, calls)` judges the calls (set C's `right_call_c` also checks the order of dependent ones);
    `wait_for_results` and `check_answers` are the agent's options (`agentkit.loop.grounding`); `planner` is the agent's
    planner by name (`agentkit.loop.planners.PLANNERS`: react, or map-then-act, whose exploration of the
    read-only tools is cached under $AGENTKIT_HOME/explore/ and reused by every later request)."""
    extensions = [ToolSelection(select_tools)] if select_tools != 0 else []  # None: all, nearest first
    from concurrent.futures import ThreadPoolExecutor

    def one(item: dict[str, Any]) -> dict[str, Any]:
        agent = Agent(model, tools, max_steps=max_steps,
                      settings=GenerationSettings(temperature=0, max_tokens=max_tokens),
                      extensions=extensions, instructions=instructions, wait_for_results=wait_for_results,
                      planner=planner, check_answers=check_answers)
        reset = getattr(model, "reset_cache", None)
        if callable(reset) and concurrency == 1:
            reset()
        started = time.perf_counter()
        result = agent.run(item["request"])
        calls = [(c.name, c.arguments) for t in result.trajectory.turns if t.phase != "explore"
                 for c in t.output.tool_calls]  # exploration is task-agnostic; a map's probes count
        row = {"id": item["id"], "kind": item["kind"], "right_call": score_call(item, calls),
               "right_answer": right_answer(item, result.answer, calls), "calls": calls,
               "answer": (result.answer or "")[:200], "seconds": round(time.perf_counter() - started, 2),
               "output_tokens": result.trajectory.usage.output_tokens}
        print(f"  {item['id']:<22} call={'ok' if row['right_call'] else '--'} "
              f"answer={'ok' if row['right_answer'] else '--'} {row['seconds']:>6.1f}s "
              f"{json.dumps(calls)[:90]} | {row['answer'][:60]!r}", flush=True)
        return row

    with ThreadPoolExecutor(concurrency) as pool:
        rows = list(pool.map(one, items))
    summary: dict[str, Any] = {"n": len(rows)}
    for kind in ("all", *sorted({r["kind"] for r in rows})):
        sel = [r for r in rows if kind == "all" or r["kind"] == kind]
        summary[kind] = {"n": len(sel), "right_call": sum(r["right_call"] for r in sel) / len(sel),
                         "right_answer": sum(r["right_answer"] for r in sel) / len(sel),
                         "seconds_per_request": sum(r["seconds"] for r in sel) / len(sel)}
    return {"summary": summary, "rows": rows}


def run_sql(model: Any, limit: int, max_tokens: int, out: Path) -> dict[str, Any]:
    """Chinook easy tasks through the eval machinery (react, map-then-act, recipe), as bench_sql_eval does."""
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_sql_eval import build_configs, run_part

    from agentkit.environments.sql import SQLEnvironment

    env = SQLEnvironment.chinook()
    subset = [t for t in env.tasks() if str(t.data.get("difficulty")) == "easy"][:limit]
    configs = build_configs(env, model, max_steps=6, max_tokens=max_tokens, explore_steps=2, map_steps=1,
                            persist=True, priors_cache=Path(tempfile.mkdtemp(prefix="agentkit-bench-priors-")))
    runs = run_part(f"Chinook easy · {getattr(model, 'name', model)}", env, subset, configs, out)
    return {r.config: r.summary() for r in runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["local:default", "local:smollm2-135m"])
    parser.add_argument("--formats", nargs="+", default=["native", "text"], choices=["native", "text"])
    parser.add_argument("--engine", default="auto", choices=["auto", "llama.cpp", "torch"])
    parser.add_argument("--limit", type=int, default=0, help="first N tool-use requests (0: all)")
    parser.add_argument("--stride", type=int, default=1, help="every k-th request (a spread subset, all kinds)")
    parser.add_argument("--kinds", nargs="+", default=None, help="only these kinds (single, sequence, ...)")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: half the CPUs)")
    parser.add_argument("--sql-limit", type=int, default=10, help="Chinook easy tasks per planner (0: skip)")
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--max-steps", type=int, default=None,
                        help="model calls per tool-use request (default 4; 6 for sets c and d, whose longest "
                             "requests need five)")
    parser.add_argument("--concurrency", type=int, default=1, help="tool-use requests at once (llama.cpp slots)")
    parser.add_argument("--select-tools", type=lambda v: None if v == "ranked" else int(v), default=0,
                        help="offer each request only the N tools nearest it (0: all, as given; 'ranked': all, "
                             "nearest first)")
    parser.add_argument("--set", choices=["a", "b", "c", "d"], default="a",
                        help="tool set: a (data/tool_capability.jsonl, six tools), b (tool_set_b.py, ten others), "
                             "c (tool_set_c.py: multi-step requests over twelve more and the calculator; the test "
                             "set) or d (tool_set_d.py: built like c over twelve others; the dev set)")
    parser.add_argument("--instructions", default=DEFAULT_INSTRUCTIONS, help="the agent's system prompt opening")
    parser.add_argument("--wait", action="store_true",
                        help="a call with an id or number the conversation never wrote is not run once "
                             "(Agent(wait_for_results=True), agentkit.loop.grounding)")
    parser.add_argument("--check-answers", action="store_true",
                        help="an answer stating numbers or ids no result gave is sent back once "
                             "(Agent(check_answers=True), agentkit.loop.grounding)")
    parser.add_argument("--planner", default="react", choices=["react", "map-then-act"],
                        help="the agent's planner for the tool-use requests (map-then-act explores the read-only "
                             "tools once, then maps each request before acting)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).parent))
    from tool_set_b import DATA_B, TOOLS_B
    from tool_set_c import DATA_C, TOOLS_C, right_call_c
    from tool_set_d import DATA_D, TOOLS_D

    data, tools = {"a": (DATA, TOOLS), "b": (DATA_B, TOOLS_B), "c": (DATA_C, TOOLS_C), "d": (DATA_D, TOOLS_D)}[args.set]
    score_call = right_call_c if args.set in ("c", "d") else right_call
    max_steps = args.max_steps or (6 if args.set in ("c", "d") else 4)
    items = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    items = [i for i in items if args.kinds is None or i["kind"] in args.kinds][:: args.stride]
    items = items[: args.limit] if args.limit else items
    results: dict[str, Any] = {}
    for spec in args.models:
        for fmt in args.formats:
            started = time.perf_counter()
            options = {"n_threads": args.threads} if args.threads and args.engine != "torch" else {}
            options.update({"parallel": args.concurrency} if args.concurrency > 1 else {})
            base, adapter = split_adapter_spec(spec.removeprefix("local:"))  # NAME or NAME+ADAPTER_DIR
            model = load_local(base, engine=args.engine, text_tools=(fmt == "text"), adapter=adapter, **options)
            offered = (", all tools, nearest first" if args.select_tools is None
                       else f", {args.select_tools} tools offered" if args.select_tools else "")
            offered += ", made-up values wait" if args.wait else ""
            offered += ", answers checked" if args.check_answers else ""
            offered += f", {args.planner}" if args.planner != "react" else ""
            key = f"{spec} [{fmt}, {type(model).__name__}{offered}]"
            if fmt == "native" and getattr(model, "text_tools", True):
                print(f"{key}: no native tool template; skipped (the text protocol row covers it)")
                continue
            print(f"== {key} (loaded in {time.perf_counter() - started:.1f}s)", flush=True)
            entry: dict[str, Any] = {"tool_use": run_tool_set(model, items, args.max_tokens, args.concurrency,
                                                              args.select_tools, tools, max_steps,
                                                              args.instructions, score_call, args.wait,
                                                              args.planner, args.check_answers)}
            if args.sql_limit and fmt == ("native" if not getattr(model, "text_tools", True) else "text"):
                entry["sql"] = run_sql(model, args.sql_limit, 256, Path("bench-out/capability-sql") / spec[6:])
            entry["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            results[key] = entry
            s = entry["tool_use"]["summary"]["all"]
            print(f"{key}: right call {s['right_call']:.0%}, right answer {s['right_answer']:.0%}, "
                  f"{s['seconds_per_request']:.1f}s/request, peak RSS {entry['peak_rss_mb']:.0f} MB", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1, default=str))
    print(json.dumps({k: {"tool_use": v["tool_use"]["summary"], "sql": v.get("sql")} for k, v in results.items()},
                     indent=1), file=sys.stdout)


if __name__ == "__main__":
    main()
