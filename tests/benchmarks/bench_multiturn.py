"""Multi-turn chat benchmark: scripted conversations played through the chat's own session machinery.

Two sets of sessions, chosen with `--set`:

- c (default): `data/multiturn_sessions.jsonl`, over set C's twelve lookup tools (`tool_set_c.py`): the frozen
  test data, never used to tune or decide;
- d: `data/multiturn_sessions_d.jsonl`, over set D's twelve lookup tools (`tool_set_d.py`: a seed bank, a ski
  resort, a wine cellar, an orchestra's loaned instruments): the dev data, to tune and decide on.

No training or tuning used either set's tools. `--sessions FILE` plays another file with the chosen set's tools.
Sessions are one a line, `{"id", "turns": [{"user", "kind", "calls", "answer"}]}`. A turn's kind says what it
needs:

- tool: the tools of `calls` (set C's format: expected arguments, `needs` for a call that takes an earlier
  call's result within the turn); arguments often come from earlier turns ("and the second one?");
- chat: small talk, an opinion, advice: no call;
- knowledge: something the model knows (the moon makes the tides): no call;
- recall: answered by a result already in the conversation ("and low water?" after the tide table): no call.

Each session is one `ChatSession` (agentkit.cli.chat, the conversation `agentkit chat` runs): the agent from
`build_agent` with the built-in calculator and the set's lookup tools, the chat's approval policy (the tools are
read-only, so nothing waits), and each user turn sent with `session.ask`, which passes the conversation so far
as history and keeps it. Greedy sampling.

Per turn: `right_tool` (tool turns: every expected tool called in this turn, no other tool), `right_call`
(tool turns, stricter: set C's `right_call_c`, arguments and the order of dependent calls too), `no_call`
(the other turns: no call), `right_answer` (one spelling of each expected value in the answer, commas in
numbers ignored; a turn without expected values needs a non-empty answer; a no-tool turn with a call is
wrong). Figures per session, per turn kind and overall: the share of tool turns with the right tool, of
no-tool turns with no call, of all turns with the right answer, and seconds per turn. The results' JSON names
the set and its data (`"set": "d", "data": "dev"`).

    python tests/benchmarks/bench_multiturn.py --model local:default --set d \\
        --out tests/benchmarks/results/multiturn-d-default.json        # --limit 1: the first session only
    python tests/benchmarks/bench_multiturn.py --model local:default \\
        --out tests/benchmarks/results/multiturn-default.json          # set c, the test sessions
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from agentkit.cli.chat import DEFAULT_ASK, DEFAULT_MAX_STEPS, ChatSession, build_agent
from agentkit.models import GenerationSettings, Model, resolve_model
from agentkit.runs.approval import policy_from_spec
from agentkit.tools import Tool

sys.path.insert(0, str(Path(__file__).parent))  # sets C and D and set A's answer check live beside this file
from bench_capability import right_answer
from tool_set_c import TOOLS_C, right_call_c
from tool_set_d import TOOLS_D

SESSIONS = Path(__file__).with_name("data") / "multiturn_sessions.jsonl"
SESSIONS_D = Path(__file__).with_name("data") / "multiturn_sessions_d.jsonl"
NO_TOOL_KINDS = ("chat", "knowledge", "recall")


def lookups(tools: Sequence[Tool]) -> list[Tool]:
    """A set's tools without the calculator, which the chat brings as its built-in."""
    return [t for t in tools if t.name != "calculator"]


LOOKUP_TOOLS = lookups(TOOLS_C)
LOOKUP_TOOLS_D = lookups(TOOLS_D)


@dataclass(frozen=True)
class SessionSet:
    """A set of scripted sessions: their file, what data they are ("test" or "dev") and the lookup tools
    their sessions are played with."""

    sessions: Path
    data: str
    tools: tuple[Tool, ...]


SETS = {"c": SessionSet(SESSIONS, "test", tuple(LOOKUP_TOOLS)),
        "d": SessionSet(SESSIONS_D, "dev", tuple(LOOKUP_TOOLS_D))}
"""`--set`'s choices: c, the test sessions over set C's tools; d, the dev sessions over set D's."""


def session_set(name: str, sessions: Path | None = None) -> SessionSet:
    """The set `name` of `SETS`; with `sessions`, that file played with the set's tools instead of its own."""
    chosen = SETS[name]
    return replace(chosen, sessions=sessions) if sessions is not None else chosen


def load_sessions(path: Path = SESSIONS) -> list[dict[str, Any]]:
    """The scripted sessions of `path` (JSONL)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def score_turn(turn: dict[str, Any], calls: Sequence[tuple[str, dict[str, Any]]], answer: str | None
               ) -> dict[str, Any]:
    """The scores of one turn from the calls it made (in order) and its answer; `None` marks a score that
    does not apply (`right_tool`, `right_call` on a no-tool turn, `no_call` on a tool turn)."""
    wanted = {c["name"] for c in turn["calls"]}
    made = [name for name, _ in calls]
    needs_tool = bool(turn["calls"])
    return {
        "right_tool": (wanted <= set(made) and set(made) <= wanted) if needs_tool else None,
        "right_call": right_call_c(turn, list(calls)) if needs_tool else None,
        "no_call": None if needs_tool else not calls,
        "right_answer": right_answer(turn, answer, list(calls)),
    }


def _share(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    scored = [r[key] for r in rows if r[key] is not None]
    return round(sum(scored) / len(scored), 4) if scored else None


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Figures over scored turns: `tool_turns_called` (a tool turn made any call), `tool_turns_right_tool`,
    `tool_turns_right_call`, `no_tool_turns_no_call`, `right_answer` (all turns), counts, and `seconds_per_turn`."""
    tool_rows = [r for r in rows if r["right_tool"] is not None]
    return {"turns": len(rows), "tool_turns": len(tool_rows),
            "tool_turns_called": round(sum(bool(r["calls"]) for r in tool_rows) / len(tool_rows), 4)
            if tool_rows else None,
            "tool_turns_right_tool": _share(rows, "right_tool"), "tool_turns_right_call": _share(rows, "right_call"),
            "no_tool_turns_no_call": _share(rows, "no_call"), "right_answer": _share(rows, "right_answer"),
            "seconds_per_turn": round(sum(r["seconds"] for r in rows) / len(rows), 2) if rows else None,
            "errors": sum(r["error"] is not None for r in rows)}


def run_session(model: Model, session: dict[str, Any], *, model_spec: str = "", max_steps: int = DEFAULT_MAX_STEPS,
                settings: GenerationSettings | None = None, tools: Sequence[Tool] = LOOKUP_TOOLS,
                console: Console | None = None, echo: bool = True, check_answers: bool = False) -> dict[str, Any]:
    """Play one session's user turns, in order, through one `ChatSession` with `model`, the built-in calculator
    and the lookup `tools` (a set's `SessionSet.tools`; set C's by default); the rows of its turns (what was
    called and answered, the scores) and its figures (`summarize`). A turn whose run fails (the chat shows the
    error and keeps the conversation as it was) scores as wrong, with `error` set. `check_answers` is the agent's
    option of that name (`agentkit.loop.grounding`)."""
    settings = settings or GenerationSettings(temperature=0)

    def factory(m: Model) -> Any:
        return build_agent(m, tools="calculator", extra_tools=tools, max_steps=max_steps, settings=settings,
                           approval=policy_from_spec(DEFAULT_ASK), check_answers=check_answers)

    reset = getattr(model, "reset_cache", None)
    if callable(reset):
        reset()
    chat = ChatSession(factory, model, model_spec or getattr(model, "name", "model"),
                       console or Console(file=io.StringIO(), width=120), read_answer=lambda _question: "y")
    rows: list[dict[str, Any]] = []
    try:
        for index, turn in enumerate(session["turns"]):
            started = time.perf_counter()
            result = chat.ask(turn["user"])
            seconds = round(time.perf_counter() - started, 2)
            calls: list[tuple[str, dict[str, Any]]] = []
            answer, stop, steps, tokens, error = None, None, 0, 0, "the turn failed (the chat showed why)"
            if result is not None:
                calls = [(c.name, c.arguments) for t in result.trajectory.turns for c in t.output.tool_calls]
                answer, stop, steps = result.answer, result.stop_reason, len(result.trajectory.turns)
                tokens, error = result.trajectory.usage.output_tokens, None
            row = {"turn": index, "kind": turn["kind"], "user": turn["user"],
                   "expected": [c["name"] for c in turn["calls"]], "calls": calls, "answer": (answer or "")[:300],
                   **score_turn(turn, calls, answer), "seconds": seconds, "steps": steps, "stop_reason": stop,
                   "output_tokens": tokens, "error": error}
            rows.append(row)
            if echo:
                mark = row["right_tool"] if row["right_tool"] is not None else row["no_call"]
                print(f"  {session['id']:<18} {index} {turn['kind']:<9} tool={'ok' if mark else '--'} "
                      f"answer={'ok' if row['right_answer'] else '--'} {seconds:>6.1f}s "
                      f"{json.dumps(calls)[:80]} | {row['answer'][:60]!r}", flush=True)
    finally:
        chat.agent.close()
    return {"id": session["id"], "figures": summarize(rows), "turns": rows}


def figures(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The report's figures from its sessions' results: "overall", "by_kind", and each session's "figures"."""
    rows = [r for s in results for r in s["turns"]]
    for s in results:
        s["figures"] = summarize(s["turns"])
    return {"overall": summarize(rows),
            "by_kind": {k: summarize([r for r in rows if r["kind"] == k]) for k in sorted({r["kind"] for r in rows})}}


def rescore(path: Path) -> None:
    """Recompute the figures of the results file `path` from its turns (after `summarize` gained a figure)."""
    report = json.loads(path.read_text())
    report.update(figures(report["sessions"]))
    path.write_text(json.dumps(report, indent=1, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="local:default", help="a model string, as `agentkit chat --model`")
    parser.add_argument("--set", choices=sorted(SETS), default="c",
                        help="c: the test sessions, set C's tools; d: the dev sessions, set D's tools")
    parser.add_argument("--sessions", type=Path, default=None,
                        help="the sessions' JSONL (default: the set's own), played with the set's tools")
    parser.add_argument("--only", nargs="+", default=None, help="only the sessions with these ids")
    parser.add_argument("--limit", type=int, default=0, help="the first N sessions (0: all)")
    parser.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, help="model calls per turn (the chat's)")
    parser.add_argument("--max-tokens", type=int, default=256, help="most tokens per model reply")
    parser.add_argument("--show", action="store_true", help="print the conversations as the chat shows them")
    parser.add_argument("--check-answers", action="store_true",
                        help="an answer stating numbers or ids no result gave is sent back once "
                             "(Agent(check_answers=True), agentkit.loop.grounding)")
    parser.add_argument("--out", type=Path, default=None, help="the results' JSON")
    parser.add_argument("--rescore", type=Path, default=None,
                        help="recompute an earlier results file's figures from its turns, in place (no model run)")
    args = parser.parse_args()
    if args.rescore is not None:
        rescore(args.rescore)
        return

    chosen = session_set(args.set, args.sessions)
    sessions = [s for s in load_sessions(chosen.sessions) if args.only is None or s["id"] in args.only]
    sessions = sessions[: args.limit] if args.limit else sessions
    started = time.perf_counter()
    model = resolve_model(args.model)
    print(f"== {args.model} ({type(model).__name__}, loaded in {time.perf_counter() - started:.1f}s): set "
          f"{args.set} ({chosen.data}), {len(sessions)} sessions, {sum(len(s['turns']) for s in sessions)} turns",
          flush=True)
    settings = GenerationSettings(temperature=0, max_tokens=args.max_tokens)
    console = Console(highlight=False, soft_wrap=True) if args.show else None
    results = [run_session(model, s, model_spec=args.model, max_steps=args.max_steps, settings=settings,
                           tools=chosen.tools, console=console, check_answers=args.check_answers) for s in sessions]
    report = {"model": args.model, "model_class": type(model).__name__, "max_steps": args.max_steps,
              "check_answers": args.check_answers,
              "max_tokens": args.max_tokens, "temperature": 0, "set": args.set, "data": chosen.data,
              "sessions_file": str(chosen.sessions),
              **figures(results), "sessions": results}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps({"overall": report["overall"], "by_kind": report["by_kind"],
                      "sessions": {s["id"]: s["figures"] for s in results}}, indent=1))


if __name__ == "__main__":
    main()
