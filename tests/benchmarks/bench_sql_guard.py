"""Cost of the read-only SQL layer on Chinook: guard refusals, query overhead, schema-tool latency.

1. The hostile corpus of tests/test_sql_guard.py through both engines (SQLite path, SQLAlchemy URL):
   every statement must fail, and the file's checksum must not move; time per refusal.
2. Overhead of a guarded query (statement guard + authorizer + progress handler + row cap) over a raw
   `sqlite3` query, for a point lookup and a 3-table aggregate.
3. Latency of the exploration tools (list/describe/search; with --embed also MiniLM column search).

    python tests/benchmarks/bench_sql_guard.py [--embed] [--out bench-out/sql-guard]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUERIES = {
    "point lookup": "SELECT Name FROM Track WHERE TrackId = 1234",
    "3-table aggregate": ("SELECT Genre.Name, SUM(InvoiceLine.UnitPrice * InvoiceLine.Quantity) FROM InvoiceLine "
                          "JOIN Track ON InvoiceLine.TrackId = Track.TrackId JOIN Genre ON Track.GenreId = "
                          "Genre.GenreId GROUP BY Genre.GenreId"),
}


def timed(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embed", action="store_true", help="also time MiniLM column search")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("bench-out/sql-guard"))
    args = parser.parse_args()

    from test_sql_guard import HOSTILE, TIMEOUT_S

    from agentkit.environments.sql import CHINOOK_DB
    from agentkit.sql.connect import open_database
    from agentkit.sql.database import QueryError, file_digest
    from agentkit.sql.toolkit import SchemaToolkit

    work = Path(tempfile.mkdtemp(prefix="bench-sql-"))
    copy = work / "chinook.sqlite"
    shutil.copyfile(CHINOOK_DB, copy)
    copy.chmod(0o644)
    results: dict[str, Any] = {"corpus_size": len(HOSTILE), "timeout_s": TIMEOUT_S}

    # 1. hostile corpus
    for engine, target in (("sqlite", str(copy)), ("sqlalchemy", f"sqlite:///{copy}")):
        before = file_digest(copy)
        db = open_database(target)
        refused, ran, times = 0, [], []
        for statement, _ in HOSTILE:
            sql = statement.replace("{tmp}", str(work))
            t0 = time.perf_counter()
            try:
                db.query(sql, timeout_s=TIMEOUT_S)
                ran.append(statement[:50])
            except QueryError:
                refused += 1
            times.append(time.perf_counter() - t0)
        db.close()
        slowest = max(range(len(times)), key=times.__getitem__)
        guard_only = [t for t, (s, frag) in zip(times, HOSTILE, strict=True)
                      if frag not in ("Query stopped", "too big")]
        results[f"corpus_{engine}"] = {
            "refused": refused, "ran": ran, "checksum_unchanged": file_digest(copy) == before,
            "total_s": round(sum(times), 3),
            "median_refusal_ms_without_bombs": round(1000 * statistics.median(guard_only), 3),
            "max_s": round(max(times), 3), "slowest": HOSTILE[slowest][0][:60],
        }
        print(f"corpus via {engine}: {refused}/{len(HOSTILE)} refused, checksum unchanged="
              f"{file_digest(copy) == before}, total {sum(times):.2f}s, median refusal "
              f"{1000 * statistics.median(guard_only):.3f} ms, slowest {max(times):.2f}s: {HOSTILE[slowest][0][:50]}")

    # 2. overhead over raw sqlite3
    raw = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
    db = open_database(copy)
    results["overhead"] = {}
    for label, sql in QUERIES.items():
        raw_t, guarded_t = [], []
        for _ in range(args.repeats):  # interleaved, so load from other processes hits both alike
            raw_t += timed(lambda sql=sql: raw.execute(sql).fetchmany(31), 1)
            guarded_t += timed(lambda sql=sql: db.query(sql), 1)
        r, g = statistics.median(raw_t) * 1e6, statistics.median(guarded_t) * 1e6
        results["overhead"][label] = {"raw_us": round(r, 1), "guarded_us": round(g, 1), "overhead_us": round(g - r, 1)}
        print(f"{label}: raw {r:.1f} µs, guarded {g:.1f} µs (overhead {g - r:.1f} µs, median of {args.repeats})")
    raw.close()

    # 3. exploration tools
    kit = SchemaToolkit(db)
    tools = {t.name: t for t in kit.tools()}
    lat = {
        "list_tables": timed(lambda: tools["list_tables"](), 50),
        "describe_table": timed(lambda: tools["describe_table"](table="Track"), 50),
        "distinct_values": timed(lambda: tools["distinct_values"](table="Customer", column="Country"), 50),
        "search_columns_lexical": timed(lambda: tools["search_columns"](query="song length"), 50),
    }
    if args.embed:
        from agentkit.memory.embeddings import Embedder

        t0 = time.perf_counter()
        embed = Embedder.default().embed
        embed(["warm"])
        results["minilm_load_s"] = round(time.perf_counter() - t0, 2)
        ekit = SchemaToolkit(open_database(copy), embed=embed)
        t0 = time.perf_counter()
        ekit.search("song length", 5)
        results["minilm_index_build_s"] = round(time.perf_counter() - t0, 3)
        fresh = iter(f"where customer number {i} lives" for i in range(1000))  # no cached query vectors
        lat["search_columns_minilm"] = timed(lambda: ekit.search(next(fresh), 5), 20)
    results["tool_latency_ms"] = {k: round(1000 * statistics.median(v), 3) for k, v in lat.items()}
    for k, v in results["tool_latency_ms"].items():
        print(f"{k}: {v} ms (median)")
    db.close()
    shutil.rmtree(work, ignore_errors=True)

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    lines = ["# SQL read-only layer on Chinook", "", f"Hostile corpus: {len(HOSTILE)} statements, "
             f"time cap {TIMEOUT_S}s", ""]
    for engine in ("sqlite", "sqlalchemy"):
        c = results[f"corpus_{engine}"]
        lines.append(f"- {engine}: {c['refused']}/{len(HOSTILE)} refused, checksum unchanged: "
                     f"{c['checksum_unchanged']}, total {c['total_s']}s, median refusal "
                     f"{c['median_refusal_ms_without_bombs']} ms")
    lines += ["", "| query | raw µs | guarded µs | overhead µs |", "|---|---|---|---|"]
    lines += [f"| {k} | {v['raw_us']} | {v['guarded_us']} | {v['overhead_us']} |"
              for k, v in results["overhead"].items()]
    lines += ["", "| tool | median ms |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in results["tool_latency_ms"].items()]
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print(f"written under {args.out}")
    ok = all(results[f"corpus_{e}"]["refused"] == len(HOSTILE) and results[f"corpus_{e}"]["checksum_unchanged"]
             for e in ("sqlite", "sqlalchemy"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
