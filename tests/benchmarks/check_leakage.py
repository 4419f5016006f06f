"""How close the benchmarks' requests are to the tool LoRA's training requests, by sentence embedding.

Benchmark texts: every request of set A (`data/tool_capability.jsonl`), set B (`data/tool_capability_b.jsonl`), set
C (`data/tool_capability_c.jsonl`), set D (`data/tool_capability_d.jsonl`), every user turn of the multi-turn
sessions (`data/multiturn_sessions.jsonl`: `multiturn`) and of their dev counterpart over set D's tools
(`data/multiturn_sessions_d.jsonl`: `multiturn_d`), and every question of the SQL task engine's dev and test
splits (`agentkit.sql.taskgen.build_tasks`, built into a temporary folder). Training texts: every user message (a
chat has several) of the conversations `agentkit.training.synthetic.synthetic_conversations` builds for

- the sample: `--sample N` (default 2000) conversations with the seed, mix and options of the Makefile's
  `tool-lora-1.5b-chains` recipe, standing for what the recipe and any longer run of it draws from;
- each Makefile recipe as it runs with this generator (`tool-lora`, `tool-lora-1.5b`, `tool-lora-1.5b-chains`,
  `tool-lora-1.5b-serial`, `tool-lora-1.5b-revisit`, `tool-lora-1.5b-revisit-recover`: their number of
  conversations and options; `tool-runs-1.5b`, `tool-runs-1.5b-round2`: the requests their collections play),
  reported apart.

Only the data-building function runs (no model). Both sides are embedded with the packaged all-MiniLM-L6-v2
(`agentkit.memory.embeddings.Embedder.default()`, offline, L2-normalised, so a dot product is the cosine). For
each benchmark text its nearest training text is found; per benchmark (and per kind within one) the report
gives the largest of these similarities, their 99th percentile (numpy's linear interpolation), their mean,
every pair at or above the threshold and the five nearest pairs.

The rule: a benchmark text whose nearest training text has a cosine of `THRESHOLD` (0.85) or more is a
leak, and the check fails (exit status 1). At 0.85 MiniLM pairs are paraphrases ("Hi! How are you
today?" / "hey, how are you doing today?": 0.89); requests that share only a form ("How many bikes are free
at X and Y together?" against set C's "how many km is that in total?") stay well below. `leaks` applies the
rule; `tests/test_synthetic_tools.py` enforces it on a small sample.

    python tests/benchmarks/check_leakage.py --out tests/benchmarks/results/leakage.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentkit.memory.embeddings import Embedder
from agentkit.training.synthetic import MIXES, ToolConversation, synthetic_conversations
from agentkit.training.tool_runs import COLLECT_KINDS

sys.path.insert(0, str(Path(__file__).parent))  # the sets' data paths
from bench_capability import DATA as DATA_A
from bench_multiturn import SESSIONS, SESSIONS_D, load_sessions
from tool_set_b import DATA_B
from tool_set_c import DATA_C
from tool_set_d import DATA_D

RESULTS = Path(__file__).with_name("results")
THRESHOLD = 0.85
"""A benchmark text this close (cosine) to a training text, or closer, is a leak."""
# (name, synthetic_conversations keyword arguments): the Makefile's recipes
RECIPES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("make tool-lora", {"n": 480, "seed": 0, "refusals": False, "fresh_names": 0.5}),
    ("make tool-lora-1.5b", {"n": 256, "seed": 0, "refusals": False, "fresh_names": 0.5}),
    ("make tool-lora-1.5b-chains", {"n": 320, "seed": 0, "weights": MIXES["chains"], "refusals": False,
                                    "fresh_names": 0.5}),
    ("make tool-lora-1.5b-serial", {"n": 240, "seed": 0, "weights": MIXES["serial"], "refusals": False,
                                    "fresh_names": 0.5}),
    ("make tool-lora-1.5b-revisit", {"n": 240, "seed": 0, "weights": MIXES["revisit"], "refusals": False,
                                     "fresh_names": 0.5}),
    ("make tool-lora-1.5b-revisit-recover", {"n": 240, "seed": 0, "weights": MIXES["revisit-recover"],
                                             "refusals": False, "fresh_names": 0.5}),
    ("make tool-runs-1.5b", {"n": 150, "seed": 7, "weights": dict.fromkeys(COLLECT_KINDS, 1.0), "refusals": False,
                             "fresh_names": 0.5}),
    ("make tool-runs-1.5b-round2", {"n": 150, "seed": 8,
                                    "weights": {"sequence": 2, "chain3": 2, "compute": 2, "single": 1, "no_tool": 1,
                                                "crowded": 1}, "refusals": False, "fresh_names": 0.5}),
)
SAMPLE_OPTIONS: dict[str, Any] = {k: v for k, v in RECIPES[2][1].items() if k != "n"}
"""The sample's generator options: the chains recipe's seed, mix and options."""


def benchmark_texts(sql: bool = True) -> dict[str, list[tuple[str, str]]]:
    """Each benchmark's (kind, text) pairs: the requests of sets A, B, C and D, the user turns of the test
    sessions (`multiturn`) and of the dev sessions (`multiturn_d`), and (`sql`) the SQL dev and test questions
    (kind: the question's difficulty)."""
    sets: dict[str, list[tuple[str, str]]] = {}
    for name, path in (("A", DATA_A), ("B", DATA_B), ("C", DATA_C), ("D", DATA_D)):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        sets[name] = [(r["kind"], r["request"]) for r in rows]
    for name, sessions in (("multiturn", SESSIONS), ("multiturn_d", SESSIONS_D)):
        sets[name] = [(t["kind"], t["user"]) for s in load_sessions(sessions) for t in s["turns"]]
    if sql:
        from agentkit.sql.taskgen import build_tasks

        with tempfile.TemporaryDirectory(prefix="leakage-sql-") as tmp:
            build_tasks(tmp, splits=("dev", "test"))
            for split in ("dev", "test"):
                rows = [json.loads(line) for line in (Path(tmp) / f"{split}.jsonl").read_text().splitlines()]
                sets[f"sql-{split}"] = [(r["difficulty"], r["question"]) for r in rows]
    return sets


def user_texts(conversations: Iterable[ToolConversation]) -> list[str]:
    """The distinct user messages of the conversations (every turn of a chat), in order."""
    seen: dict[str, None] = {}
    for conv in conversations:
        for message in conv.messages:
            if message.role == "user":
                seen.setdefault(message.content, None)
    return list(seen)


def training_requests(runs: Sequence[tuple[str, dict[str, Any]]] = RECIPES) -> list[str]:
    """The distinct user messages of the conversations the given generator runs build."""
    return user_texts(conv for _, options in runs for conv in synthetic_conversations(**options))


def nearest(bench: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of `bench`, the largest cosine to a row of `train` and that row's index (unit vectors)."""
    sims = bench @ train.T
    best = sims.argmax(axis=1)
    return sims[np.arange(len(bench)), best], best


def _figures(sims: np.ndarray) -> dict[str, Any]:
    return {"n": len(sims), "max": round(float(sims.max()), 4), "p99": round(float(np.percentile(sims, 99)), 4),
            "mean": round(float(sims.mean()), 4)}


def compare(sets: Mapping[str, list[tuple[str, str]]], train_texts: list[str], embedder: Embedder,
            threshold: float = THRESHOLD) -> dict[str, Any]:
    """Per benchmark: the figures of the nearest-training similarities, overall and per kind, the pairs at or
    above `threshold` (most similar first) and the five nearest pairs."""
    train = embedder.embed(train_texts)
    report: dict[str, Any] = {}
    for name, rows in sets.items():
        sims, best = nearest(embedder.embed([text for _, text in rows]), train)
        kinds = sorted({kind for kind, _ in rows})
        pairs = sorted(({"kind": kind, "benchmark": text, "training": train_texts[j], "cosine": round(float(s), 4)}
                        for (kind, text), s, j in zip(rows, sims, best, strict=True)), key=lambda p: -p["cosine"])
        above = [p for p in pairs if p["cosine"] >= threshold]
        report[name] = {**_figures(sims), "at_or_above_threshold": len(above),
                        "by_kind": {k: _figures(sims[[i for i, (kind, _) in enumerate(rows) if kind == k]])
                                    for k in kinds},
                        "pairs_at_or_above_threshold": above, "nearest_pairs": pairs[:5]}
    return report


def leaks(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rule: every pair at or above the threshold, in any benchmark of a `compare` report (none: it
    passes)."""
    return [{"set": name, **p} for name, r in report.items() for p in r["pairs_at_or_above_threshold"]]


def main() -> int:
    """Run the check and write the report; exit status 1 when the sample or a recipe leaks."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="a pair this close or closer leaks")
    parser.add_argument("--sample", type=int, default=2000,
                        help="conversations in the sample (the chains recipe's seed, mix and options)")
    parser.add_argument("--out", type=Path, default=RESULTS / "leakage.json")
    args = parser.parse_args()

    started = time.perf_counter()
    embedder = Embedder.default()
    sets = benchmark_texts()
    sample = user_texts(synthetic_conversations(args.sample, **SAMPLE_OPTIONS))
    sample_report = compare(sets, sample, embedder, args.threshold)
    found = leaks(sample_report)
    report: dict[str, Any] = {
        "embedder": embedder.name, "threshold": args.threshold,
        "rule": f"a benchmark text whose nearest training text has cosine >= {args.threshold} is a leak",
        "statistic": "per benchmark text, the cosine to its nearest training text; max, 99th percentile, mean",
        "sample": {"conversations": args.sample, **{k: v for k, v in SAMPLE_OPTIONS.items() if k != "weights"},
                   "mix": "chains", "weights": dict(SAMPLE_OPTIONS["weights"]), "distinct_user_texts": len(sample)},
        "passed": not found,
        "sets": sample_report,
        "recipes": [],
    }
    for name, options in RECIPES:
        texts = training_requests(((name, options),))
        figures = compare(sets, texts, embedder, args.threshold)
        report["recipes"].append({"name": name, **{k: v for k, v in options.items() if k != "weights"},
                                  "distinct_user_texts": len(texts),
                                  "max": {k: r["max"] for k, r in figures.items()},
                                  "leaks": len(leaks(figures))})
        found += [{"recipe": name, **leak} for leak in leaks(figures)]
    report["passed"] = not found
    report["seconds"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    for name, r in sample_report.items():
        print(f"sample · {name:<11} n={r['n']:<4} max {r['max']:.3f}  p99 {r['p99']:.3f}  mean {r['mean']:.3f}  "
              f">= {args.threshold}: {r['at_or_above_threshold']}")
    for row in report["recipes"]:
        print(f"{row['name']}: max {row['max']}, leaks {row['leaks']}")
    print(f"{'passed' if not found else f'FAILED: {len(found)} leaks'}; written to {args.out} in "
          f"{report['seconds']} s")
    return 0 if not found else 1


if __name__ == "__main__":
    raise SystemExit(main())
