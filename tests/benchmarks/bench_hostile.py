"""Hostile input and faults (issue 16): what is refused, what runs, how long and how much memory the
worst of it takes, whether anything crashes or hangs, and how many records kill -9 loses.

1. SQL: the issue's probe statements, tests/test_sql_guard.py's hostile corpus and N generated
   statements (write keywords, denied functions, quoting tricks, bomb functions with huge arguments)
   through `Database.query` on a copy of Chinook (5 s limit): tried / refused by the guard / refused by
   SQLite (authorizer, limits) / stopped at the time limit / ran; worst single-query time and the
   largest peak-RSS step of any single query; the file's checksum before and after.
2. The agent loop: runs on generated hostile model replies and tools (surrogates, 100 slow calls in a
   reply, values that cannot become text, SystemExit/KeyboardInterrupt): crashes (an exception out of
   `Agent.run`), hangs (a run over its bound), worst run time.
3. kill -9 at random moments (tests/kill_stores.py): skill replace, skill merge, checkpoints with
   pruning: writes before the kills and records lost.

    python tests/benchmarks/bench_hostile.py [--statements 400] [--runs 40] [--kills 20,3,5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROBE = [  # the statements issue 16 names
    "SELECT printf('%.*c', 2147483647, 'x')",
    "SELECT instr(hex(zeroblob(499999)), printf('%.*c', 400000, '0') || '1')",
    "SELECT ltrim(hex(zeroblob(499999)), printf('%.*c', 400000, '1') || '0')",
    "SELECT " + ", ".join(["zeroblob(9999999)"] * 1000),
    "SELECT " + ",".join(["printf('%.*c',999999,'x')"] * 700),
    "WITH v(b) AS (SELECT zeroblob(999999)) SELECT " + ",".join(["b"] * 1500) + " FROM v",
    "SELECT " + ", ".join(["upper(upper(hex(zeroblob(499999))))"] * 99),
    "SELECT $a$; ATTACH 'x.db' AS x; $a$",
    'SELECT "load_extension"(\'/tmp/x.so\')',
    'SELECT "fts3_tokenizer"(\'simple\')',
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
    "SELECT count(*) FROM Track a, Track b, Track c",
    "SELECT * FROM sqlite_dbpage",
]
BOMBS = ["printf('%.*c', {n}, 'x')", "zeroblob({n})", "randomblob({n})", "hex(zeroblob({n}))",
         "ltrim(printf('%.*c', {n}, 'a'), printf('%.*c', {m}, 'b') || 'a')",
         "replace(printf('%.*c', {n}, 'a'), 'a', 'aa')",
         "instr(printf('%.*c', {n}, 'a'), printf('%.*c', {m}, 'a') || 'b')", "upper(printf('%.*c', {n}, 'a'))",
         "group_concat(printf('%.*c', {m}, 'x'))", "json_array(printf('%.*c', {n}, 'x'))",
         "printf('%{n}d%{n}d', 1, 2)", "substr(printf('%.*c', {n}, 'a'), {m})"]
WRAPS = ["SELECT {x}", "SELECT length({x})", "SELECT {x} FROM Track LIMIT 20", "SELECT count({x}) FROM Track",
         "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 50) SELECT max(length({x})) FROM r",
         "SELECT {x}, {x}, {x}, {x}", "SELECT 1; {x}", "SELECT \"{f}\"({x})", "SELECT {f}({x})", "{w} {x}"]
WRITES = ["INSERT INTO Album VALUES (999, 'x', 1)", "DELETE FROM Album", "ATTACH 'x' AS y", "PRAGMA writable_schema=1",
          "VACUUM INTO 'copy.db'", "CREATE TABLE t(x)", "UPDATE Album SET Title='x'", "SAVEPOINT a", "DROP TABLE Album"]


def generated(n: int, seed: int) -> list[str]:
    from agentkit.sql.sqlite_safety import ALLOWED_FUNCTIONS

    rng = random.Random(seed)
    denied = ["load_extension", "readfile", "writefile", "edit", "sqlite_log", "sqlite_compileoption_get",
              "rtreenode", "fts5", "optimize", "fts3_tokenizer"]
    functions = [*sorted(ALLOWED_FUNCTIONS - {"->", "->>"}), *denied]
    out = []
    for _ in range(n):
        size = rng.choice([10, 1000, 100_000, 999_999, 1_000_001, 2**31 - 1])
        bomb = rng.choice(BOMBS).format(n=size, m=rng.choice([10, 1000, 50_000, 400_000]))
        wrap = rng.choice(WRAPS)
        function = rng.choice(functions if rng.random() < 0.7 else denied)
        out.append(wrap.format(x=bomb, f=function, w=rng.choice(WRITES)))
    return out


def bench_sql(statements: int, seed: int) -> dict[str, Any]:
    from test_sql_guard import HOSTILE

    from agentkit.environments.sql import CHINOOK_DB
    from agentkit.sql.connect import open_database
    from agentkit.sql.database import QueryError, file_digest

    folder = Path(tempfile.mkdtemp(prefix="bench-hostile-"))
    path = folder / "chinook.sqlite"
    shutil.copy(CHINOOK_DB, path)
    before, listing = file_digest(path), sorted(p.name for p in folder.iterdir())
    corpus = PROBE + [s.replace("{tmp}", str(folder)) for s, _ in HOSTILE] + generated(statements, seed)
    db = open_database(path)
    counts = {"tried": 0, "refused_by_guard": 0, "refused_by_sqlite": 0, "stopped_at_time_limit": 0,
              "too_big_or_out_of_memory": 0, "other_sql_error": 0, "ran": 0, "crashed": 0}
    worst: tuple[float, str] = (0.0, "")
    rss_step: tuple[float, str] = (0.0, "")
    for sql in corpus:
        counts["tried"] += 1
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        try:
            db.query(sql, timeout_s=5.0)
            counts["ran"] += 1
        except QueryError as exc:
            text = str(exc)
            if text.startswith("Refused: the database is read-only (") or "not authorized" in text:
                counts["refused_by_sqlite"] += 1
            elif text.startswith("Refused"):
                counts["refused_by_guard"] += 1
            elif text.startswith("Query stopped"):
                counts["stopped_at_time_limit"] += 1
            elif "too big" in text or "memory" in text or "too many columns" in text or "one row" in text:
                counts["too_big_or_out_of_memory"] += 1
            else:
                counts["other_sql_error"] += 1
        except Exception as exc:  # anything else is a crash of the tool
            counts["crashed"] += 1
            print(f"CRASH {type(exc).__name__}: {exc} on {sql[:100]!r}", file=sys.stderr)
        elapsed = time.perf_counter() - t0
        if elapsed > worst[0]:
            worst = (elapsed, sql)
        step = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
        if step > rss_step[0]:
            rss_step = (step, sql)
    db.close()
    return {**counts, "worst_query_s": round(worst[0], 2), "worst_query": worst[1][:120],
            "largest_peak_rss_step_mb": round(rss_step[0]), "largest_rss_step_query": rss_step[1][:120],
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "file_unchanged": file_digest(path) == before,
            "no_file_created": sorted(p.name for p in folder.iterdir()) == listing}


def bench_loop(runs: int, seed: int) -> dict[str, Any]:
    from agentkit import Agent
    from agentkit.testing import ScriptedModel, call, calls
    from agentkit.tools import tool
    from agentkit.trajectory import read_jsonl

    @tool(timeout_s=0.5)
    def nap(i: int = 0) -> str:
        """Sleep for two seconds.

        Args:
            i: which call.
        """
        time.sleep(2)
        return "late"

    @tool(timeout_s=2)
    def hostile(kind: str) -> object:
        """Return or raise something hostile.

        Args:
            kind: what.
        """
        class Bad:
            def __str__(self) -> str:
                raise RuntimeError("no")

        deep: list = []
        node = deep
        for _ in range(100_000):
            node.append([])
            node = node[0]
        values: dict[str, Any] = {"bigint": 10**5000, "deep": deep, "bad": Bad(), "surrogate": "x\ud800"}
        if kind == "exit":
            raise SystemExit(1)
        if kind == "interrupt":
            raise KeyboardInterrupt
        return values.get(kind, kind)

    rng = random.Random(seed)
    kinds = ["bigint", "deep", "bad", "surrogate", "exit", "interrupt"]
    log = Path(tempfile.mkdtemp(prefix="bench-loop-")) / "log.jsonl"
    crashes = hangs = 0
    worst = 0.0
    for r in range(runs):
        script: list[Any] = []
        for _ in range(rng.randint(1, 3)):
            choice = rng.random()
            if choice < 0.3:
                script.append(calls(*[("nap", {"i": i}) for i in range(100)]))
            elif choice < 0.7:
                script.append(call("hostile", kind=rng.choice(kinds)))
            else:
                script.append('<tool_call>{"name": "hostile", "arguments": {"kind": "a\\ud800"}}</tool_call> \ud800')
        script.append("answer \udfff")
        agent = Agent(ScriptedModel(script, text_tools=True), tools=[nap, hostile], log=log)
        bound = 1.0 * len(script) + 5.0
        t0 = time.perf_counter()
        try:
            agent.run(f"run {r} \ud800")
        except BaseException as exc:  # counting what escapes is the point
            crashes += 1
            print(f"CRASH {type(exc).__name__}: {exc}", file=sys.stderr)
        elapsed = time.perf_counter() - t0
        hangs += elapsed > bound
        worst = max(worst, elapsed)
        agent.close()
    logged = len(read_jsonl(log)) if log.exists() else 0
    return {"runs": runs, "crashes": crashes, "hangs": hangs, "worst_run_s": round(worst, 2), "logged": logged}


def bench_kills(rounds: dict[str, int], seed: int) -> list[dict[str, Any]]:
    script = Path(__file__).resolve().parents[1] / "kill_stores.py"
    out = []
    for store, n in rounds.items():
        proc = subprocess.run([sys.executable, str(script), store, str(n), str(seed)], capture_output=True, text=True)
        if proc.returncode != 0:
            out.append({"store": store, "error": proc.stderr[-500:]})
        else:
            out.append(json.loads(proc.stdout.splitlines()[-1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=int, default=400, help="generated SQL statements")
    parser.add_argument("--runs", type=int, default=40, help="agent runs on hostile replies")
    parser.add_argument("--kills", default="20,3,5", help="kill rounds: skills-replace,skills-merge,checkpoints")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    replace, merge, ckpt = (int(x) for x in args.kills.split(","))
    started = time.perf_counter()
    report = {"sql": bench_sql(args.statements, args.seed)}
    print(json.dumps({"sql": report["sql"]}, indent=1), flush=True)
    report["loop"] = bench_loop(args.runs, args.seed)
    print(json.dumps({"loop": report["loop"]}, indent=1), flush=True)
    report["kills"] = bench_kills({"skills-replace": replace, "skills-merge": merge, "checkpoints": ckpt}, args.seed)
    print(json.dumps({"kills": report["kills"]}, indent=1), flush=True)
    report["seconds"] = round(time.perf_counter() - started)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
