"""Parse time of every reader of outside text on adversarial inputs of 0.1, 0.25, 0.5 and 1 MB.

Readers: the text tool-call parser (tags, bare JSON, fences, one call per line), lenient JSON (and the
first object in prose), a backend's response conversion (an OpenAI-compatible reply), the SQL guard, SKILL.md,
chat session files, trajectory logs and MCP results. Inputs: deep nesting, long strings, many brackets,
unterminated fences and strings, quotes of both kinds, trailing commas, many tags. A reader with a size limit
below an input's size refuses it; that refusal is what is timed.

For each reader the worst time of any input at each size is kept (each input timed as the best of `--repeats`
runs, in CPU seconds of this process, so other processes on the machine count less), and its worst
seconds per MB. Written to tests/benchmarks/results/parse_linear.json.

    python tests/benchmarks/bench_parse_linear.py [--sizes 0.1,0.25,0.5,1] [--repeats 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import platform
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

MB = 1_000_000


# -- adversarial texts -------------------------------------------------------------------------------------------------
def texts(n: int) -> dict[str, str]:
    """Adversarial texts of about `n` characters (a few characters over, at most)."""
    h = n // 2
    return {
        "deep nesting": "[" * h + "]" * h,
        "deep, never closed": "[" * n,
        "deep objects": '{"a":' * (n // 5),
        "many bracket pairs": "[]" * h,
        "trees 50 deep": ("[" * 50 + "]" * 50) * (n // 100),
        "trees 99 deep, open": ("[" * 99 + "]" * 98) * (n // 197),
        "99 deep, long list": "[" * 99 + "1," * ((n - 99) // 2),
        "long string": '{"a": "' + "x" * (n - 8),
        "many strings": '["a",' * (n // 5),
        "single-quoted strings": "[" + "'a', " * (n // 5),
        "mixed quotes": "[" + "'a', \"b\", " * (n // 10),
        "Python literals": "[" + "True, " * (n // 6),
        "escaped quotes": '"' + '\\"' * h,
        "escaped single quotes": "['" + "\\'" * (h - 1),
        "commas": "[1" + ", " * (h - 1),
        "trailing commas": "[1,]" * (n // 4),
        "stray tail": "{" + " ," * (h - 1),
        "apostrophes": "it's " * (n // 5),
        "braces in prose": "{x " * (n // 3),
        "doubled braces": "{{" * h,
        "unterminated fences": "```json\n{" * (n // 9),
        "many fences": "```\nx\n```\n" * (n // 10),
        "many tags": "<tool_call>" * (n // 11),
        "tags around junk": "<tool_call>x" * (n // 12),
        "calls one per line": '{"name": "f", "arguments": {}}\n' * (n // 32),
        "call syntax": "<tool_call>f(" + "a=1, " * (n // 6) + ")",
        "names everywhere": '"name": "f", ' * (n // 13),
    }


def tool_call_inputs(n: int) -> dict[str, str]:
    """The texts bare, in a tag, in a fence, and as a call's arguments."""
    out: dict[str, str] = {}
    for name, body in texts(n - 60).items():
        out[name] = body
        out[name + " (tagged)"] = "<tool_call>" + body
        out[name + " (fenced)"] = "```json\n" + body
        out[name + " (arguments)"] = '<tool_call>{"name": "f", "arguments": {"x": ' + body
    return out


# -- readers: each takes an input of about n characters, prepared outside the timing ---------------------------------
def tool_call_reader() -> tuple[Callable[[int], dict[str, Any]], Callable[[Any], Any]]:
    from agentkit.tools.text_calls import parse_tool_calls

    return tool_call_inputs, lambda text: parse_tool_calls(text, {"f", "add"})


def lenient_reader() -> tuple[Callable[[int], dict[str, Any]], Callable[[Any], Any]]:
    from agentkit.jsontext import first_json_object, lenient_json

    return texts, lambda text: (lenient_json(text), first_json_object(text))


def backend_reader() -> tuple[Callable[[int], dict[str, Any]], Callable[[Any], Any]]:
    from agentkit.models.openai_response import parse_completion

    spec = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}

    def inputs(n: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, text in texts(n).items():
            out[name + " (content)"] = {"choices": [{"message": {"role": "assistant", "content": text}}]}
            out[name + " (arguments)"] = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": text}}]}}]}
        return out

    return inputs, lambda body: parse_completion(body, [spec])


def sql_reader() -> tuple[Callable[[int], dict[str, Any]], Callable[[Any], Any]]:
    from agentkit.sql.guard import StatementRefused, check_statement

    def inputs(n: int) -> dict[str, str]:
        return {"semicolons": "SELECT 1" + ";" * n, "semicolons and comments": "SELECT 1" + "; /**/" * (n // 6),
                "quoted calls": "SELECT " + '"a"(1),' * (n // 7) + "1", "parentheses": "SELECT " + "(" * n,
                "strings": "SELECT " + "'a'," * (n // 4) + "1", "words": "SELECT " + "a " * (n // 2)}

    def read(sql: str) -> None:
        with contextlib.suppress(StatementRefused):
            check_statement(sql)

    return inputs, read


def skill_md_reader() -> tuple[Callable[[int], dict[str, Any]], Callable[[Any], Any]]:
    from agentkit.skills.model import SkillFormatError
    from agentkit.skills.skillmd import parse_skill_md

    def inputs(n: int) -> dict[str, str]:
        return {"deep flow front matter": "---\na: " + "[" * n + "\n---\nbody",
                "deep block front matter": "---\n" + "- " * (n // 2) + "x\n---\nbody",
                "long body": "---\nname: x\ndescription: y\n---\n" + "z" * n,
                "unclosed front matter": "---\n" + "a: b\n" * (n // 5),
                "aliases": "---\na: &a [1]\n" + "".join(f"b{i}: [*a, *a]\n" for i in range(n // 16)) + "---\n"}

    def read(text: str) -> None:
        with contextlib.suppress(SkillFormatError):
            parse_skill_md(text)

    return inputs, read


def session_reader() -> tuple[Callable[[int], dict[str, Any]], Callable[[Any], Any]]:
    from agentkit.memory.sessions import SessionStore
    from agentkit.messages import Message

    folder = Path(tempfile.mkdtemp(prefix="bench-parse-"))

    def inputs(n: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, text in [("long message", "x" * n), ("deep message", "[" * (n // 2) + "]" * (n // 2))]:
            store = SessionStore(folder / f"{name}-{n}.db".replace(" ", "-"))
            store.save("s", [Message.user(text)])
            out[name] = store
        store = SessionStore(folder / f"raw-{n}.db")
        store.save("s", [])
        with sqlite3.connect(store.path) as db:  # rows no agentkit wrote: deep JSON, and not JSON at all
            db.execute("INSERT INTO messages VALUES ('s', 0, ?)", ("[" * n,))
            db.execute("INSERT INTO messages VALUES ('s', 1, ?)", ('{"role": "user", "content": "' + "y" * n,))
            db.execute("UPDATE sessions SET metadata = ?", ("[" * n,))
        out["hand-written rows"] = store
        return out

    return inputs, lambda store: store.load("s")


def trajectory_reader() -> tuple[Callable[[int], dict[str, Any]], Callable[[Any], Any]]:
    from agentkit.trajectory import iter_jsonl

    folder = Path(tempfile.mkdtemp(prefix="bench-parse-"))

    def inputs(n: int) -> dict[str, Path]:
        out: dict[str, Path] = {}
        lines = {"deep line": "[" * n, "long string line": '{"task": "' + "x" * n + '"}',
                 "many short lines": '{"task": "t"}\n' * (n // 15), "torn lines": '{"task": "' * (n // 10)}
        for name, line in lines.items():
            path = folder / f"{name}-{n}.jsonl".replace(" ", "-")
            path.write_text(line + "\n")
            out[name] = path
        return out

    return inputs, lambda path: sum(1 for _ in iter_jsonl(path))


def mcp_reader() -> tuple[Callable[[int], dict[str, Any]], Callable[[Any], Any]]:
    from agentkit.tools.mcp import render_content

    def inputs(n: int) -> dict[str, Any]:
        def block(text: str) -> SimpleNamespace:
            return SimpleNamespace(type="text", text=text)

        deep: Any = {"leaf": 1}
        for _ in range(min(n // 10, 5_000)):
            deep = {"a": deep}
        return {"one long text": SimpleNamespace(content=[block("x" * n)], structuredContent=None),
                "many blocks": SimpleNamespace(content=[block("b")] * (n // 2), structuredContent=None),
                "deep structured content": SimpleNamespace(content=[], structuredContent=deep)}

    return inputs, render_content


def limits() -> dict[str, int]:
    """Readers whose size limit is below the sizes benchmarked (they refuse those unread), and that limit: they
    are also timed on inputs at the limit."""
    from agentkit.skills.skillmd import MAX_SKILL_MD_BYTES
    from agentkit.sql.guard import MAX_STATEMENT_CHARS

    return {"SQL guard (sql.guard)": MAX_STATEMENT_CHARS - 10, "SKILL.md (skills.skillmd)": MAX_SKILL_MD_BYTES - 100}


READERS: dict[str, Callable[[], tuple[Callable[[int], dict[str, Any]], Callable[[Any], Any]]]] = {
    "tool calls in text (tools.text_calls)": tool_call_reader,
    "lenient JSON (jsontext)": lenient_reader,
    "backend reply (openai_compat)": backend_reader,
    "SQL guard (sql.guard)": sql_reader,
    "SKILL.md (skills.skillmd)": skill_md_reader,
    "chat sessions (memory.sessions)": session_reader,
    "trajectory logs (trajectory)": trajectory_reader,
    "MCP results (tools.mcp)": mcp_reader,
}


def timed(read: Callable[[Any], Any], value: Any, repeats: int) -> float:
    """The best CPU time of `repeats` reads of `value`."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        read(value)
        best = min(best, time.process_time() - t0)
    return best


def bench(sizes_mb: list[float], repeats: int, only: str | None = None) -> dict[str, Any]:
    """Time every reader on every input at every size; the worst input per reader and size."""
    results: dict[str, Any] = {}
    for name, make in READERS.items():
        if only and only not in name:
            continue
        inputs, read = make()
        seconds: dict[str, float] = {}
        worst_case: dict[str, str] = {}
        for size in sizes_mb:
            n = int(size * MB)
            cases = inputs(n)
            times = {case: timed(read, value, repeats) for case, value in cases.items()}
            case = max(times, key=lambda c: times[c])
            seconds[str(size)] = round(times[case], 4)
            worst_case[str(size)] = case
        per_mb = max(seconds[str(s)] / s for s in sizes_mb)
        results[name] = {"worst_seconds": seconds, "worst_input": worst_case, "worst_s_per_mb": round(per_mb, 4),
                         "all_inputs_at_largest": {c: round(t, 4) for c, t in sorted(times.items())}}
        limit = limits().get(name)
        if limit is not None:  # the inputs at the reader's own limit, as seconds per MB
            at_limit = {case: timed(read, value, repeats) for case, value in inputs(limit).items()}
            case = max(at_limit, key=lambda c: at_limit[c])
            results[name]["at_limit"] = {"chars": limit, "worst_seconds": round(at_limit[case], 4),
                                         "worst_input": case, "s_per_mb": round(at_limit[case] * MB / limit, 4)}
        print(f"{name:38} worst {seconds[str(sizes_mb[-1])]:.3f} s at {sizes_mb[-1]} MB "
              f"({worst_case[str(sizes_mb[-1])]}); worst {per_mb:.3f} s per MB"
              + (f"; at its limit, {results[name]['at_limit']['s_per_mb']:.3f} s per MB" if limit else ""),
              flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0.1,0.25,0.5,1", help="input sizes in MB")
    parser.add_argument("--repeats", type=int, default=2, help="runs per input (the best is kept)")
    parser.add_argument("--only", default=None, help="only the readers whose name contains this")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "parse_linear.json")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # every refusal logs a warning; the figures are what is wanted here
    sizes = [float(s) for s in args.sizes.split(",")]
    started = time.perf_counter()
    results = bench(sizes, args.repeats, args.only)
    report = {"sizes_mb": sizes, "repeats": args.repeats, "clock": "CPU seconds of the process (time.process_time)",
              "readers": results, "seconds": round(time.perf_counter() - started),
              "python": platform.python_version(), "machine": platform.machine()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
