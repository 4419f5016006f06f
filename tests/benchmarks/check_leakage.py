"""How close the tool benchmarks' requests are to the tool LoRA's training requests, by sentence embedding.

Benchmark texts: every request of set A (`data/tool_capability.jsonl`), set B (`data/tool_capability_b.jsonl`),
set C (`data/tool_capability_c.jsonl`) and every user turn of the multi-turn sessions
(`data/multiturn_sessions.jsonl`). Training texts: the first user message of every conversation that
`agentkit.training.synthetic_tools.synthetic_conversations` builds for

- `scripts/train_tool_lora.py` run with its defaults (600 conversations, seed 0, refusals, no renamed tools);
- the Makefile's `tool-lora` recipe (480, `--no-refusals --fresh-names 0.5`: the shipped 0.5B adapter) and
  `tool-lora-1.5b` recipe (256, the same options: the shipped `local:default` adapter).

Only the data-building function runs (no model). With `--generator-sample N` (default 5000) a further N
conversations with another seed (1) stand for what the generator produces beyond those runs (a longer or
reseeded run would draw from the same templates), reported apart.

Both sides are embedded with the packaged all-MiniLM-L6-v2 (`agentkit.memory.embeddings.Embedder.default()`,
offline, L2-normalised, so a dot product is the cosine). For each benchmark text its nearest training text
is found; per set (and per kind within a set) the report gives the largest of these similarities, their 99th
percentile (numpy's linear interpolation), their mean, every pair above `--threshold` (0.85) and the five
nearest pairs whatever their similarity. Small talk ("thanks, bye!") lands close to the generator's own
small talk by nature; the per-kind figures keep it apart from the requests that test tool use.

    python tests/benchmarks/check_leakage.py --out tests/benchmarks/results/leakage.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from agentkit.memory.embeddings import Embedder
from agentkit.training.synthetic_tools import synthetic_conversations

sys.path.insert(0, str(Path(__file__).parent))  # the sets' data paths
from bench_capability import DATA as DATA_A
from bench_multiturn import SESSIONS, load_sessions
from tool_set_b import DATA_B
from tool_set_c import DATA_C

RESULTS = Path(__file__).with_name("results")
# (name, synthetic_conversations keyword arguments): the script's defaults and the shipped adapters' recipes
TRAINING_RUNS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("train_tool_lora.py defaults", {"n": 600, "seed": 0}),
    ("make tool-lora (0.5B adapter)", {"n": 480, "seed": 0, "refusals": False, "fresh_names": 0.5}),
    ("make tool-lora-1.5b (local:default adapter)", {"n": 256, "seed": 0, "refusals": False, "fresh_names": 0.5}),
)


def benchmark_texts() -> dict[str, list[tuple[str, str]]]:
    """Each set's (kind, text) pairs: the requests of sets A, B and C, the user turns of the sessions."""
    sets: dict[str, list[tuple[str, str]]] = {}
    for name, path in (("A", DATA_A), ("B", DATA_B), ("C", DATA_C)):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        sets[name] = [(r["kind"], r["request"]) for r in rows]
    sets["multiturn"] = [(t["kind"], t["user"]) for s in load_sessions(SESSIONS) for t in s["turns"]]
    return sets


def training_requests(runs: tuple[tuple[str, dict[str, Any]], ...] = TRAINING_RUNS) -> list[str]:
    """The distinct first user messages of the conversations the given generator runs build."""
    seen: dict[str, None] = {}
    for _, options in runs:
        for conv in synthetic_conversations(**options):
            seen.setdefault(conv.messages[0].content, None)
    return list(seen)


def nearest(bench: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of `bench`, the largest cosine to a row of `train` and that row's index (unit vectors)."""
    sims = bench @ train.T
    best = sims.argmax(axis=1)
    return sims[np.arange(len(bench)), best], best


def _figures(sims: np.ndarray) -> dict[str, Any]:
    return {"n": len(sims), "max": round(float(sims.max()), 4), "p99": round(float(np.percentile(sims, 99)), 4),
            "mean": round(float(sims.mean()), 4)}


def compare(sets: dict[str, list[tuple[str, str]]], train_texts: list[str], embedder: Embedder,
            threshold: float) -> dict[str, Any]:
    """Per set: the figures of the nearest-training similarities, overall and per kind, and the pairs above
    `threshold` (most similar first)."""
    train = embedder.embed(train_texts)
    report: dict[str, Any] = {}
    for name, rows in sets.items():
        sims, best = nearest(embedder.embed([text for _, text in rows]), train)
        kinds = sorted({kind for kind, _ in rows})
        pairs = sorted(({"kind": kind, "benchmark": text, "training": train_texts[j], "cosine": round(float(s), 4)}
                        for (kind, text), s, j in zip(rows, sims, best, strict=True)), key=lambda p: -p["cosine"])
        above = [p for p in pairs if p["cosine"] > threshold]
        report[name] = {**_figures(sims), "above_threshold": len(above),
                        "by_kind": {k: _figures(sims[[i for i, (kind, _) in enumerate(rows) if kind == k]])
                                    for k in kinds},
                        "pairs_above_threshold": above, "nearest_pairs": pairs[:5]}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threshold", type=float, default=0.85, help="list the pairs above this cosine")
    parser.add_argument("--generator-sample", type=int, default=5000,
                        help="also compare with this many more generated conversations, seed 1 (0: skip)")
    parser.add_argument("--out", type=Path, default=RESULTS / "leakage.json")
    args = parser.parse_args()

    started = time.perf_counter()
    embedder = Embedder.default()
    sets = benchmark_texts()
    trained = training_requests()
    report: dict[str, Any] = {
        "embedder": embedder.name, "threshold": args.threshold,
        "statistic": "per benchmark text, the cosine to its nearest training request; max, 99th percentile, mean",
        "training": {"runs": [{"name": n, **o} for n, o in TRAINING_RUNS], "distinct_requests": len(trained)},
        "sets": compare(sets, trained, embedder, args.threshold),
    }
    if args.generator_sample:
        sample = training_requests((("generator sample", {"n": args.generator_sample, "seed": 1}),))
        report["generator_sample"] = {"conversations": args.generator_sample, "seed": 1,
                                      "distinct_requests": len(sample),
                                      "sets": compare(sets, sample, embedder, args.threshold)}
    report["seconds"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    for part, sets_report in (("trained", report["sets"]),
                              ("generator sample", report.get("generator_sample", {}).get("sets", {}))):
        for name, r in sets_report.items():
            print(f"{part:>16} · set {name:<9} n={r['n']:<3} max {r['max']:.3f}  p99 {r['p99']:.3f}  "
                  f"mean {r['mean']:.3f}  above {args.threshold}: {r['above_threshold']}")
    print(f"written to {args.out} in {report['seconds']} s")


if __name__ == "__main__":
    main()
