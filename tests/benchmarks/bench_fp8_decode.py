"""FP8 vs BF16 KV cache in vLLM: decode throughput and time per output token at long context.

Serves one model twice through `agentkit.serving` (same weights and attention backend, only the KV
cache dtype differs), and at each context length (default 1k, 8k, 32k tokens) and concurrency
(default 1 and 32) streams completions of a fixed length (`ignore_eos`), measuring:

- TTFT and TPOT (time per output token, (t_last - t_first) / (n - 1) per request),
- decode_tok_s: decoded tokens / the time during which at least one request was decoding (the union
  of the requests' [first token, last token] intervals), the decode throughput of the server,
- output_tok_s: output tokens / wall time (prefill included).

Quality: greedy outputs of both servers on 16 prompts (agreement), a 20-question arithmetic set, and
passkey retrieval at every context length. Target from the literature (SnapMLA, docs/methods.md#fp8-decoding): up to
1.91× decode throughput at long context on an MLA model; we look for ≥ 1.5×.

    python tests/benchmarks/bench_fp8_decode.py --model deepseek-ai/DeepSeek-V2-Lite-Chat
    python tests/benchmarks/bench_fp8_decode.py --quick              # 1k/8k, concurrency 1/8, 128 tokens
    python tests/benchmarks/bench_fp8_decode.py --standin --quick    # plumbing check without a GPU

Needs a CUDA GPU and vLLM (`pip install 'agentkit[serve]'`); without them it says so and exits 2.
Writes bench_fp8_decode.json and .md into --out.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from agentkit.models.vllm_server import VLLMServer, free_port
from agentkit.serving import ServeOptions, ServePlan, detect_gpu, installed_vllm_version, plan_serve, read_model_config

STANDIN = Path(__file__).resolve().parents[1] / "fixtures" / "standin_openai_server.py"
QUALITY_PROMPTS = [
    "Explain in two sentences why the sky is blue.", "Write a haiku about a database index.",
    "List three prime numbers greater than 50.", "What is the capital of Australia? One word.",
    "Translate 'good morning, friends' into French.", "Give a one-line Python expression that reverses a list xs.",
    "Name the chemical symbol of gold and of silver.", "What does HTTP status 404 mean? One sentence.",
    "Summarise the plot of Romeo and Juliet in one sentence.", "Write a SQL query counting rows in table t.",
    "Which is larger, 2**10 or 10**3? Answer briefly.", "Name two sorting algorithms with O(n log n) time.",
    "What is the boiling point of water at sea level in Celsius?", "Spell 'necessary' backwards.",
    "Give a synonym of 'rapid'.", "How many sides does a hexagon have?",
]
FILLER = ("The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="deepseek-ai/DeepSeek-V2-Lite-Chat")
    p.add_argument("--contexts", type=int, nargs="+", default=[1024, 8192, 32768])
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 32])
    p.add_argument("--output-tokens", type=int, default=512)
    p.add_argument("--requests-single", type=int, default=3, help="requests at concurrency 1")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--trust-remote-code", action=argparse.BooleanOptionalAction, default=True,
                   help="DeepSeek-V2 checkpoints ship custom config code (default on)")
    p.add_argument("--quick", action="store_true", help="1k/8k context, concurrency 1/8, 128 output tokens")
    p.add_argument("--out", type=Path, default=Path("bench_results"))
    p.add_argument("--dry-run", action="store_true", help="print both server commands and exit")
    p.add_argument("--standin", action="store_true", help="use the test stand-in server (no GPU): plumbing only")
    args = p.parse_args(argv)
    if args.quick:
        args.contexts, args.concurrency, args.output_tokens = [1024, 8192], [1, 8], 128
    return args


def model_config(args: argparse.Namespace) -> dict[str, Any]:
    if args.standin:
        return {"model_type": "deepseek_v2", "kv_lora_rank": 512, "num_attention_heads": 16, "vocab_size": 32000}
    try:
        return read_model_config(args.model)
    except ValueError:
        from huggingface_hub import hf_hub_download  # a benchmark on a GPU machine may fetch the config

        return json.loads(Path(hf_hub_download(args.model, "config.json")).read_text())


def plans(args: argparse.Namespace, config: dict[str, Any]) -> tuple[ServePlan, ServePlan]:
    gpu = detect_gpu()
    version = "0.12.0" if args.standin else (installed_vllm_version() or "0.12.0")
    common: dict[str, Any] = dict(
        model=args.model, served_name="bench", port=free_port(), fp8_weights=False, tool_parser="none",
        max_model_len=max(args.contexts) + args.output_tokens + 256,
        gpu_memory_utilization=args.gpu_memory_utilization, trust_remote_code=args.trust_remote_code,
        extra_args=("--no-enable-prefix-caching", "--max-num-seqs", str(max(args.concurrency))),
    )
    if args.standin:
        from agentkit.serving import GpuInfo

        gpu = GpuInfo.from_spec("h100")
    fp8 = plan_serve(config, gpu, version, ServeOptions(fp8=True, **common))
    common["port"] = free_port()
    bf16 = plan_serve(config, gpu, version, ServeOptions(fp8=False, attention_backend=fp8.attention_backend, **common))
    return bf16, fp8


def stream_completion(client: httpx.Client, base: str, prompt: list[int], max_tokens: int) -> dict[str, float]:
    body = {"model": "bench", "prompt": prompt, "max_tokens": max_tokens, "min_tokens": max_tokens,
            "ignore_eos": True, "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True}}
    start = time.perf_counter()
    first = last = 0.0
    tokens = 0
    with client.stream("POST", f"{base}/completions", json=body, timeout=3600) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if event.get("usage"):
                tokens = int(event["usage"]["completion_tokens"])
            if any(c.get("text") for c in event.get("choices", [])):
                now = time.perf_counter()
                first = first or now
                last = now
    return {"start": start, "first": first, "last": last, "tokens": tokens}


def union_length(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def measure(base: str, vocab: int, context: int, concurrency: int, n_requests: int, out_tokens: int,
            seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    prompts = [[rng.randrange(100, vocab - 100) for _ in range(context)] for _ in range(n_requests)]
    with httpx.Client() as client, ThreadPoolExecutor(max_workers=concurrency) as pool:
        t0 = time.perf_counter()
        runs = list(pool.map(lambda p: stream_completion(client, base, p, out_tokens), prompts))
        wall = time.perf_counter() - t0
    tpots = [(r["last"] - r["first"]) / (r["tokens"] - 1) * 1000 for r in runs if r["tokens"] > 1]
    decoded = sum(max(0, r["tokens"] - 1) for r in runs)
    window = union_length([(r["first"], r["last"]) for r in runs])
    return {
        "context": context, "concurrency": concurrency, "requests": n_requests,
        "output_tokens": sum(r["tokens"] for r in runs),
        "ttft_ms_mean": statistics.mean((r["first"] - r["start"]) * 1000 for r in runs),
        "tpot_ms_mean": statistics.mean(tpots) if tpots else None,
        "tpot_ms_p50": statistics.median(tpots) if tpots else None,
        "decode_tok_s": decoded / window if window > 0 else None,
        "output_tok_s": sum(r["tokens"] for r in runs) / wall,
    }


def chat(client: httpx.Client, base: str, content: str, max_tokens: int) -> str:
    body = {"model": "bench", "messages": [{"role": "user", "content": content}], "max_tokens": max_tokens,
            "temperature": 0.0}
    response = client.post(f"{base}/chat/completions", json=body, timeout=3600)
    response.raise_for_status()
    return response.json()["choices"][0]["message"]["content"] or ""


def quality(base: str, root: str, contexts: list[int]) -> dict[str, Any]:
    with httpx.Client() as client:
        greedy = [chat(client, base, p, 64) for p in QUALITY_PROMPTS]
        rng = random.Random(0)
        pairs = [(rng.randrange(10, 99), rng.randrange(10, 99)) for _ in range(20)]
        arithmetic = [str(a + b) in chat(client, base, f"What is {a} + {b}? Reply with the number only.", 16)
                      for a, b in pairs]
        count = client.post(f"{root}/tokenize", json={"model": "bench", "prompt": FILLER * 20}).json()["count"]
        chars_per_token = len(FILLER * 20) / max(1, count)
        passkey: dict[str, float] = {}
        for context in contexts:
            hits = []
            for _ in range(3):
                key = str(rng.randrange(10000, 99999))
                n = int((context - 200) * chars_per_token / len(FILLER))
                cut = rng.randrange(n // 5, max(n // 5 + 1, 4 * n // 5))
                needle = f"The pass key is {key}. Remember it. {key} is the pass key. "
                text = FILLER * cut + needle + FILLER * (n - cut)
                hits.append(key in chat(client, base, text + "\nWhat is the pass key? Answer with the number.", 16))
            passkey[str(context)] = sum(hits) / len(hits)
    return {"greedy": greedy, "arithmetic_accuracy": sum(arithmetic) / len(arithmetic), "passkey": passkey}


def run_server(label: str, plan: ServePlan, args: argparse.Namespace, vocab: int) -> dict[str, Any]:
    command = None
    if args.standin:
        command = [sys.executable, str(STANDIN), "--port", str(plan.port), "--served-model-name", "bench"]
    log = args.out / f"vllm-{label}.log"
    print(f"[{label}] {plan.command_line()}", flush=True)
    with VLLMServer(plan, command=command, log_path=log, startup_timeout=3600) as server:
        base = server.base_url
        stream_completion(httpx.Client(), base, [1000] * 256, 16)  # warm-up (CUDA graphs, allocator)
        rows = []
        for context in args.contexts:
            for conc in args.concurrency:
                n = args.requests_single if conc == 1 else conc
                row = measure(base, vocab, context, conc, n, args.output_tokens, seed=context + conc)
                print(f"[{label}] ctx {context:>6} conc {conc:>3}: TPOT {row['tpot_ms_mean']:.2f} ms, "
                      f"decode {row['decode_tok_s']:.0f} tok/s, TTFT {row['ttft_ms_mean']:.0f} ms", flush=True)
                rows.append(row)
        return {"command": plan.command_line(), "kv_cache_dtype": plan.kv_cache_dtype,
                "attention_backend": plan.attention_backend, "rows": rows,
                "quality": quality(base, server.admin.root_url, args.contexts)}


def compare(bf16: dict[str, Any], fp8: dict[str, Any]) -> dict[str, Any]:
    speedups = []
    for a, b in zip(bf16["rows"], fp8["rows"], strict=True):
        speedups.append({"context": a["context"], "concurrency": a["concurrency"],
                         "decode_speedup": (b["decode_tok_s"] or 0) / (a["decode_tok_s"] or float("inf")),
                         "tpot_ratio": (a["tpot_ms_mean"] or 0) / (b["tpot_ms_mean"] or float("inf"))})
    ga, gb = bf16["quality"]["greedy"], fp8["quality"]["greedy"]
    prefix = [len(_common_prefix(x, y)) / max(1, max(len(x), len(y))) for x, y in zip(ga, gb, strict=True)]
    return {"speedups": speedups, "greedy_exact_match": sum(x == y for x, y in zip(ga, gb, strict=True)) / len(ga),
            "greedy_common_prefix": statistics.mean(prefix)}


def _common_prefix(a: str, b: str) -> str:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[:i]


def markdown(result: dict[str, Any]) -> str:
    lines = [f"# FP8 vs BF16 KV cache — {result['model']} on {result['gpu']} (vLLM {result['vllm']})", "",
             "| context | conc | TPOT bf16 ms | TPOT fp8 ms | decode bf16 tok/s | decode fp8 tok/s | speed-up |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    if result["standin"]:
        lines[1:1] = ["**Stand-in server (no GPU): a plumbing check of this script; the numbers mean nothing.**", ""]
    for a, b, s in zip(result["bf16"]["rows"], result["fp8"]["rows"], result["compare"]["speedups"], strict=True):
        lines.append(f"| {a['context']} | {a['concurrency']} | {a['tpot_ms_mean']:.2f} | {b['tpot_ms_mean']:.2f} | "
                     f"{a['decode_tok_s']:.0f} | {b['decode_tok_s']:.0f} | {s['decode_speedup']:.2f}× |")
    qa, qb, c = result["bf16"]["quality"], result["fp8"]["quality"], result["compare"]
    lines += ["", f"Greedy agreement: {c['greedy_exact_match']:.0%} identical, "
                  f"{c['greedy_common_prefix']:.0%} mean common prefix.",
              f"Arithmetic accuracy: bf16 {qa['arithmetic_accuracy']:.0%}, fp8 {qb['arithmetic_accuracy']:.0%}.",
              "Passkey retrieval: " + ", ".join(f"{k}: bf16 {qa['passkey'][k]:.0%} / fp8 {qb['passkey'][k]:.0%}"
                                                for k in qa["passkey"])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.standin and not args.dry_run:
        gpu, vllm = detect_gpu(), installed_vllm_version()
        if gpu is None or vllm is None:
            print(f"bench_fp8_decode: needs a CUDA GPU and vLLM (pip install 'agentkit[serve]'); found GPU={gpu}, "
                  f"vLLM={vllm}. Nothing measured.", file=sys.stderr)
            return 2
    config = model_config(args)
    bf16_plan, fp8_plan = plans(args, config)
    if args.dry_run:
        print(bf16_plan.command_line())
        print(fp8_plan.command_line())
        return 0
    if fp8_plan.kv_cache_dtype == "auto":
        print(f"bench_fp8_decode: no FP8 KV cache on this GPU: {fp8_plan.notes}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    vocab = int(config.get("vocab_size") or 32000)
    gpu = detect_gpu()
    result: dict[str, Any] = {"model": args.model, "gpu": gpu.name if gpu else "standin",
                              "vllm": installed_vllm_version() or "standin", "standin": args.standin,
                              "output_tokens": args.output_tokens}
    result["bf16"] = run_server("bf16", bf16_plan, args, vocab)
    result["fp8"] = run_server("fp8", fp8_plan, args, vocab)
    result["compare"] = compare(result["bf16"], result["fp8"])
    (args.out / "bench_fp8_decode.json").write_text(json.dumps(result, indent=2))
    text = markdown(result)
    (args.out / "bench_fp8_decode.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
