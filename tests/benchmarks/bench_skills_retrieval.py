"""Skill retrieval at scale: latency p50/p99 and recall@3 against exact search, insertion throughput,
process memory, at 1k, 10k and 100k skills.

    python tests/benchmarks/bench_skills_retrieval.py --out bench-out/skills   # JSON + Markdown

Data. 1k: real MiniLM embeddings of 1,000 generated skill descriptions (task templates × domains ×
objects). 10k / 100k: mixtures of those real embeddings, normalize(a·e_i + (1−a)·e_j + 0.35·n) with
a ~ U(0.5, 1) and n a random unit vector, so the large libraries live near the real embedding
manifold instead of being uniform noise (uniform noise is the worst case for HNSW and unlike text).
Queries: MiniLM embeddings of 200 generated task phrasings (not the descriptions themselves).

What is timed.
- index search: `SkillIndex.query` (chromadb HNSW, cosine, k=3) from a precomputed query embedding;
- retrieve: `SkillLibrary.retrieve` from an embedding: the index search plus reading the 3 skill
  folders (SKILL.md + skill.json), at 1k (a real library on disk);
- embed: MiniLM embedding of one query (single-threaded), reported separately;
- insertion: `SkillLibrary.add` one at a time (near-duplicate check, folder write, fsync, index
  upsert) for the first 300 skills, then bulk index upserts of precomputed embeddings (batches of
  1,000) for the large sizes;
- memory: resident set size of this process after each size.
Recall@3 = |HNSW top-3 ∩ exact top-3| / 3, averaged over queries; exact = numpy dot products.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

ACTIONS = ["Count", "Find", "Summarise", "Compare", "Rank", "Filter", "Validate", "Convert", "Merge", "Extract",
           "Clean", "Plot", "Estimate", "Deduplicate", "Export", "Schedule", "Monitor", "Debug", "Migrate", "Index"]
OBJECTS = ["rows per category", "duplicate records", "monthly revenue", "the largest files", "email addresses",
           "failed login attempts", "unit prices", "customer churn", "API pages", "git commits",
           "temperature readings", "shipping addresses", "invoice totals", "log errors", "survey answers",
           "stock prices", "track durations", "employee salaries", "web page tables", "JSON fields"]
PLACES = ["in a SQL database", "in a CSV file", "from a REST API", "in a folder of files", "in a git repository",
          "in server logs", "in a spreadsheet", "on a web page", "in a JSON document", "in a pandas DataFrame"]
HOW = ["with GROUP BY", "step by step", "with a regular expression", "using pagination", "by joining tables",
       "with a dry run first", "with numpy", "with shell tools", "with window functions", "with a checklist"]
ASKS = ["How do I {a} {o} {p}?", "I need to {a} {o} {p}", "Help me {a} {o} {p} quickly",
        "What's the best way to {a} {o} {p}?"]


def generate_descriptions(n: int, seed: int = 0) -> list[str]:
    combos = list(itertools.product(ACTIONS, OBJECTS, PLACES, HOW))
    random.Random(seed).shuffle(combos)
    return [f"{a} {o} {p} {h}." for a, o, p, h in combos[:n]]


def generate_queries(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(ASKS).format(a=rng.choice(ACTIONS).lower(), o=rng.choice(OBJECTS), p=rng.choice(PLACES))
            for _ in range(n)]


def mixtures(base: np.ndarray, n: int, seed: int = 2) -> np.ndarray:
    """n embeddings near the real ones: normalize(a·e_i + (1−a)·e_j + 0.35·noise)."""
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, len(base), n), rng.integers(0, len(base), n)
    a = rng.uniform(0.5, 1.0, (n, 1)).astype(np.float32)
    noise = rng.standard_normal((n, base.shape[1])).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    out = a * base[i] + (1 - a) * base[j] + 0.35 * noise
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def percentiles(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(ms, 50)), 3), "p99_ms": round(float(np.percentile(ms, 99)), 3),
            "mean_ms": round(float(np.mean(ms)), 3)}


def recall_at_3(found: list[list[str]], ids: list[str], vectors: np.ndarray, queries: np.ndarray) -> float:
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :3]
    total = 0.0
    for row, got in zip(exact, found, strict=True):
        total += len({ids[k] for k in row} & set(got)) / 3
    return total / len(found)


def time_queries(fn, queries: np.ndarray, repeat_warmup: int = 5) -> tuple[list[float], list[list[str]]]:
    for q in queries[:repeat_warmup]:
        fn(q)
    times, results = [], []
    for q in queries:
        t0 = time.perf_counter()
        got = fn(q)
        times.append((time.perf_counter() - t0) * 1000)
        results.append(got)
    return times, results


def bench_library(folder: Path, size: int, descriptions: list[str], vectors: np.ndarray, queries: np.ndarray,
                  hnsw, single_adds: int) -> dict:
    """A real library on disk (folders + index); the first skills are added one at a time."""
    from agentkit.skills import Skill, SkillLibrary

    library = SkillLibrary.open(folder, hnsw=hnsw, capacity=max(5000, size))
    skills = [Skill(name=f"s{i:07d}", description=descriptions[i]) for i in range(size)]
    single = min(single_adds, size)
    row: dict = {}
    t = time.perf_counter()
    for i in range(single):
        library.add(skills[i], embedding=vectors[i], dedup=True)
    row["insert_one_by_one_per_s"] = round(single / (time.perf_counter() - t), 1)
    if size > single:
        t = time.perf_counter()
        library.add_many(skills[single:], embeddings=vectors[single:])
        row["insert_bulk_with_folders_per_s"] = round((size - single) / (time.perf_counter() - t), 1)
    r_ms, _ = time_queries(lambda q: library.retrieve(q, k=3, min_score=-1.0), queries)
    row["retrieve_with_folders"] = percentiles(r_ms)
    q_ms, found = time_queries(lambda q: [h.id for h in library.index.query(q, 3)], queries)
    row["index_search"] = percentiles(q_ms)
    row["recall_at_3"] = round(recall_at_3(found, [s.id for s in skills], vectors, queries), 4)
    return row


def bench_index(folder: Path, vectors: np.ndarray, queries: np.ndarray, embedder, hnsw) -> dict:
    """The index alone, filled with precomputed embeddings in batches of 1,000."""
    from agentkit.skills.index import SkillIndex

    index = SkillIndex(str(folder), "skills-bench", embedder, hnsw)
    ids = [f"skill_{i:012x}" for i in range(len(vectors))]
    t = time.perf_counter()
    for start in range(0, len(ids), 1000):
        chunk = ids[start : start + 1000]
        index.upsert(chunk, [""] * len(chunk), chunk, embeddings=vectors[start : start + 1000])
    row: dict = {"insert_bulk_index_only_per_s": round(len(ids) / (time.perf_counter() - t), 1)}
    q_ms, found = time_queries(lambda q: [h.id for h in index.query(q, 3)], queries)
    row["index_search"] = percentiles(q_ms)
    row["recall_at_3"] = round(recall_at_3(found, ids, vectors, queries), 4)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef-search", type=int, default=None, help="HNSW ef_search (chromadb default 100)")
    parser.add_argument("--max-neighbors", type=int, default=None, help="HNSW M (chromadb default 16)")
    parser.add_argument("--ef-construction", type=int, default=None, help="chromadb default 100")
    parser.add_argument("--single-adds", type=int, default=300, help="skills added one by one through add()")
    parser.add_argument("--out", type=Path, default=None, help="folder for results.json and results.md")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from agentkit.memory.embeddings import Embedder
    from agentkit.skills import HnswSettings

    hnsw = HnswSettings(ef_search=args.ef_search, max_neighbors=args.max_neighbors,
                        ef_construction=args.ef_construction)
    sizes = [int(s) for s in args.sizes.split(",")]
    embedder = Embedder.default()
    base_rss = rss_mb()

    t0 = time.perf_counter()
    descriptions = generate_descriptions(1000)
    base = embedder.embed(descriptions)
    query_texts = generate_queries(args.queries)
    queries = embedder.embed(query_texts)
    embed_setup_s = time.perf_counter() - t0
    fresh = np.array([f"{text} (variant {i})" for i, text in enumerate(query_texts[:50])], dtype=object)
    embed_ms, _ = time_queries(lambda q: embedder.embed([q]), fresh, repeat_warmup=0)  # unseen: it caches
    print(f"MiniLM: embedded {len(descriptions) + len(query_texts)} texts in {embed_setup_s:.1f}s; "
          f"one query p50 {np.percentile(embed_ms, 50):.1f} ms")

    work = Path(tempfile.mkdtemp(prefix="bench-skills-"))
    report: dict = {
        "machine": f"{platform.machine()} {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start",
        "hnsw": {"ef_search": args.ef_search or 100, "max_neighbors": args.max_neighbors or 16,
                 "ef_construction": args.ef_construction or 100},
        "embed_query": percentiles(embed_ms), "sizes": {},
    }
    try:
        for size in sizes:
            rss_before = rss_mb()
            if size <= len(base):
                row = bench_library(work / f"lib-{size}", size, descriptions, base[:size], queries, hnsw,
                                    args.single_adds)
            else:
                vectors = np.concatenate([base, mixtures(base, size - len(base))])
                row = bench_index(work / f"index-{size}", vectors, queries, embedder, hnsw)
            row["rss_mb"] = round(rss_mb(), 1)
            row["rss_growth_mb"] = round(rss_mb() - rss_before, 1)
            report["sizes"][str(size)] = row
            print(f"{size:>7} skills: index search p50 {row['index_search']['p50_ms']:.2f} ms, "
                  f"p99 {row['index_search']['p99_ms']:.2f} ms, recall@3 {row['recall_at_3']:.3f}, "
                  f"RSS {row['rss_mb']:.0f} MB  {json.dumps({k: v for k, v in row.items() if 'insert' in k})}",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["rss_mb_start"] = round(base_rss, 1)
    report["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(report, indent=1))
        (args.out / "results.md").write_text(markdown(report))


def markdown(report: dict) -> str:
    lines = [f"Skill retrieval benchmark ({report['machine']}; HNSW {report['hnsw']})", "",
             "| skills | search p50 ms | search p99 ms | recall@3 | retrieve p50 ms | insert/s | RSS MB |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for size, row in report["sizes"].items():
        insert = row.get("insert_bulk_index_only_per_s") or row.get("insert_bulk_with_folders_per_s") or "-"
        retrieve = row.get("retrieve_with_folders", {}).get("p50_ms", "-")
        lines.append(f"| {size} | {row['index_search']['p50_ms']} | {row['index_search']['p99_ms']} | "
                     f"{row['recall_at_3']} | {retrieve} | {insert} | {row['rss_mb']} |")
    lines.append(f"\nOne query embedding (MiniLM, 1 thread): p50 {report['embed_query']['p50_ms']} ms.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
