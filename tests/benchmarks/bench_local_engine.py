"""The llama.cpp engine against raw llama-cpp-python, the torch engine's numerics, peak RSS and start time.

For each embedded model (same GGUF, same thread count):

1. speed: first-token latency after a ~500-token prompt and decode tok/s, for `LlamaCppModel.stream`
   (which also records ids and log-probs of every token) on the bare GGUF ("ours") and as `local:NAME` loads it,
   with its shipped LoRA ("shipped"), and for raw `Llama.create_completion(stream=True)`; the ratio is ours / raw.
   With `--llama-bench DIR`: llama.cpp's own `llama-bench` at the same context depth and threads, on the bare
   GGUF and on one with the LoRA merged in. Each is measured in a fresh subprocess, which also reports its peak RSS.
2. numerics: the log-probs the engine recorded for its greedy completion, against the torch trainer's
   (`training.logprobs` path: a full forward of the dequantised float32 model over prompt + completion):
   mean and max |Δ log p| of the sampled tokens, and the mean KL(llama.cpp ‖ torch) over the full
   vocabulary at the generated positions.
3. start: `agentkit chat` from launch to its prompt (stdin `/exit`), first run in a fresh agentkit home
   (the Qwen GGUF is assembled and hashed) and then warm.
4. parallel: throughput (replies/min and generated tok/s) of independent conversations called from
   `--calls` threads at once, for one slot of 1 thread, one slot of 2 threads, and 2 slots of 1 thread
   each (`parallel=2`, what `agentkit eval/learn --concurrency 2` loads); the choice for a 2-core machine.

    python tests/benchmarks/bench_local_engine.py --threads 2 --models smollm2-135m default
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROMPT_WORDS = ("Here is a long list of numbers, read them carefully: " + " ".join(str(i) for i in range(1, 230))
                + ". Now write a long story about a robot who learns to paint, at least three paragraphs.")


def _one_speed(kind: str, name: str, threads: int, new_tokens: int) -> dict[str, Any]:
    """Runs in a subprocess: one engine, one model; first-token latency, decode rate, peak RSS."""
    from agentkit.messages import Message
    from agentkit.models import GenerationSettings
    from agentkit.models.embedded import embedded_gguf_path
    from agentkit.models.llamacpp import LlamaCppModel
    from agentkit.models.protocol import ModelResponse, TextDelta

    path = embedded_gguf_path(name)
    started = time.perf_counter()
    if kind == "shipped":  # as `local:NAME` loads it: with the model's shipped LoRA, if it has one
        from agentkit.models import load_local

        loaded = load_local(name, engine="llama.cpp", n_threads=threads, n_ctx=2048)
        assert isinstance(loaded, LlamaCppModel)
        ours = loaded
    else:
        ours = LlamaCppModel(path, n_threads=threads, n_ctx=2048)
    load_s = time.perf_counter() - started
    messages = [Message.user(PROMPT_WORDS)]
    prompt_ids = ours.tokenize(ours.render_prompt(messages))
    if kind in ("ours", "shipped"):
        ours.generate([Message.user("hi")], settings=GenerationSettings(temperature=0, max_tokens=4))  # warm-up
        ours.reset_cache()
        t0 = time.perf_counter()
        first = None
        n = 0
        for item in ours.stream(messages, settings=GenerationSettings(temperature=0, max_tokens=new_tokens)):
            if isinstance(item, TextDelta) and first is None:
                first = time.perf_counter()
            if isinstance(item, ModelResponse):
                n = len(item.tokens.completion_ids)
        end = time.perf_counter()
    else:
        llm = ours.llm
        llm.create_completion([1, 2, 3], max_tokens=4, temperature=0)  # warm-up
        llm.reset()
        t0 = time.perf_counter()
        first = None
        n = 0
        for _chunk in llm.create_completion(prompt_ids, max_tokens=new_tokens, temperature=0, stream=True):
            if first is None:
                first = time.perf_counter()
            n += 1
        end = time.perf_counter()
    assert first is not None
    return {"engine": kind, "model": name, "lora": str(ours.lora) if kind == "shipped" and ours.lora else None,
            "threads": threads, "prompt_tokens": len(prompt_ids), "new_tokens": n,
            "load_s": round(load_s, 3), "first_token_s": round(first - t0, 3),
            "decode_tok_s": round((n - 1) / (end - first), 1) if n > 1 else None,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def speed(name: str, threads: int, new_tokens: int, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("raw", "ours", "shipped"):
        runs = []
        for _ in range(repeats):
            proc = subprocess.run([sys.executable, __file__, "--one", kind, name, str(threads), str(new_tokens)],
                                  capture_output=True, text=True, check=True)
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        best = max(runs, key=lambda r: r["decode_tok_s"] or 0)
        best["decode_tok_s_all"] = [r["decode_tok_s"] for r in runs]
        best["first_token_s_all"] = [r["first_token_s"] for r in runs]
        out[kind] = best
        print(f"  {name} {kind:<5} first token {best['first_token_s']:.3f}s after {best['prompt_tokens']} tokens, "
              f"decode {best['decode_tok_s']} tok/s (runs {best['decode_tok_s_all']}), "
              f"peak RSS {best['peak_rss_mb']} MB", flush=True)
    out["decode_ratio"] = round(out["ours"]["decode_tok_s"] / out["raw"]["decode_tok_s"], 3)
    return out


def llama_bench(name: str, threads: int, new_tokens: int, depth: int, repeats: int, tools: Path) -> dict[str, Any]:
    """llama.cpp's own `llama-bench` (from the folder `tools`, built from the llama.cpp that llama-cpp-python
    vendors) on the same GGUF and threads: decode of `new_tokens` after `depth` tokens in the context. For a
    model shipped with a LoRA, also on a GGUF with the LoRA merged in by `llama-export-lora` (llama-bench runs no
    adapters), next to agentkit's decode of the shipped model with the LoRA applied at run time."""
    from agentkit.models.embedded import embedded_gguf_path
    from agentkit.models.embedded_adapters import builtin_adapter
    from agentkit.models.gguf_lora import gguf_adapter

    base = embedded_gguf_path(name)
    files = {"base": base}
    adapter = builtin_adapter(name)
    if adapter is not None:
        merged = Path(tempfile.gettempdir()) / f"agentkit-bench-{name}-merged.gguf"
        if not merged.exists():
            lora = gguf_adapter(adapter, base)
            subprocess.run([str(tools / "llama-export-lora"), "-m", str(base), "--lora", str(lora), "-o", str(merged),
                            "-t", str(threads)], check=True, capture_output=True)
        files["lora merged"] = merged
    out: dict[str, Any] = {"depth": depth, "new_tokens": new_tokens, "threads": threads}
    for label, path in files.items():
        proc = subprocess.run([str(tools / "llama-bench"), "-m", str(path), "-t", str(threads), "-p", "0",
                               "-n", str(new_tokens), "-d", str(depth), "-r", str(repeats), "-o", "json"],
                              check=True, capture_output=True, text=True)
        [row] = json.loads(proc.stdout)
        out[label] = {"decode_tok_s": round(float(row["avg_ts"]), 1), "stddev_tok_s": round(float(row["stddev_ts"]), 1),
                      "file_mb": round(path.stat().st_size / 2**20), "build": row.get("build_commit")}
        print(f"  {name} llama-bench {label}: {out[label]}", flush=True)
    return out


def numerics(name: str, threads: int, new_tokens: int) -> dict[str, Any]:
    """|Δ log p| and KL between the engine's distributions and the torch model's on the same tokens."""
    import numpy as np
    import torch

    from agentkit.messages import Message
    from agentkit.models import GenerationSettings
    from agentkit.models.embedded import embedded_gguf_path, load_embedded
    from agentkit.models.llamacpp import LlamaCppModel

    torch.set_num_threads(threads)
    engine = LlamaCppModel(embedded_gguf_path(name), n_threads=threads, n_ctx=2048)
    messages = [Message.system("You are a helpful assistant."), Message.user("Explain what a hash map is.")]
    tokens = engine.generate(messages, settings=GenerationSettings(temperature=0, max_tokens=new_tokens)).tokens
    ids = tokens.prompt_ids + tokens.completion_ids
    start = len(tokens.prompt_ids) - 1
    # the engine's full distributions at the generated positions
    engine.reset_cache()
    engine_logp = []
    llm = engine.llm
    llm.reset()
    logits = engine._eval(tokens.prompt_ids)
    for token in tokens.completion_ids:
        engine_logp.append(logits - np.logaddexp.reduce(logits))
        logits = engine._eval([token])
    started = time.perf_counter()
    model, _ = load_embedded(name)
    load_s = time.perf_counter() - started
    with torch.no_grad():
        out = model(torch.tensor([ids])).logits[0].double()
    torch_logp = torch.log_softmax(out, dim=-1)[start : start + len(tokens.completion_ids)].numpy()
    engine_logp_arr = np.stack(engine_logp)
    idx = np.arange(len(tokens.completion_ids))
    picked_torch = torch_logp[idx, tokens.completion_ids]
    recorded = np.array(tokens.logprobs)
    diff = np.abs(recorded - picked_torch)
    p = np.exp(engine_logp_arr)
    kl = (p * (engine_logp_arr - torch_logp)).sum(-1)
    agree = float((torch_logp.argmax(-1) == np.array(tokens.completion_ids)).mean())
    result = {"model": name, "tokens": len(idx), "mean_abs_dlogp": round(float(diff.mean()), 4),
              "max_abs_dlogp": round(float(diff.max()), 4), "mean_kl": round(float(kl.mean()), 5),
              "max_kl": round(float(kl.max()), 5), "greedy_agreement": round(agree, 3),
              "recorded_vs_recomputed_max": round(float(np.abs(recorded - engine_logp_arr[idx, tokens.completion_ids])
                                                        .max()), 5),
              "torch_load_s": round(load_s, 1)}
    print(f"  {name} numerics: {result}", flush=True)
    return result


def chat_start(runs: int) -> dict[str, Any]:
    """Seconds from launching `agentkit chat` to its prompt (it reads `/exit` and leaves), fresh home first."""
    home = tempfile.mkdtemp(prefix="agentkit-bench-home-")
    env = {**os.environ, "AGENTKIT_HOME": home, "HF_HUB_OFFLINE": "1"}
    times = []
    screen = ""
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "agentkit.cli.main", "chat"], input="/exit\n", text=True,
                              capture_output=True, env=env, timeout=600)
        times.append(round(time.perf_counter() - t0, 2))
        screen = proc.stdout + proc.stderr
    print(f"  chat start: cold {times[0]}s (fresh home), warm {times[1:]}", flush=True)
    return {"cold_s": times[0], "warm_s": times[1:], "screen": screen[-600:]}


def parallel(name: str, calls: int, new_tokens: int) -> dict[str, Any]:
    """Replies/min of `calls` different conversations sent together, per (slots, threads) layout."""
    from concurrent.futures import ThreadPoolExecutor
    from functools import partial

    from agentkit.messages import Message
    from agentkit.models import GenerationSettings
    from agentkit.models.embedded import embedded_gguf_path
    from agentkit.models.llamacpp import LlamaCppModel

    settings = GenerationSettings(temperature=0.0, max_tokens=new_tokens)
    chats = [[Message.system("You are a helpful assistant."),
              Message.user(f"Conversation {i}. {PROMPT_WORDS}")] for i in range(calls)]
    out: dict[str, Any] = {}
    for slots, threads in ((1, 1), (1, 2), (2, 1)):
        model = LlamaCppModel(embedded_gguf_path(name), n_threads=threads, parallel=slots, n_ctx=4096)
        model.generate([*chats[0][:1], Message.user("hi")], settings=GenerationSettings(temperature=0, max_tokens=4))
        t0 = time.perf_counter()
        with ThreadPoolExecutor(calls) as pool:
            replies = list(pool.map(partial(model.generate, settings=settings), chats))
        wall = time.perf_counter() - t0
        tokens = sum(r.usage.output_tokens for r in replies)
        key = f"{slots}x{threads}"
        out[key] = {"slots": slots, "threads": threads, "replies_per_min": round(calls * 60 / wall, 2),
                    "gen_tok_s": round(tokens / wall, 2), "wall_s": round(wall, 1)}
        print(f"  parallel {key}: {out[key]}", flush=True)
        del model
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        kind, name, threads, new = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        print(json.dumps(_one_speed(kind, name, threads, new)))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["smollm2-135m", "default"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip", nargs="*", default=[], choices=["speed", "numerics", "start", "parallel"])
    parser.add_argument("--calls", type=int, default=4, help="conversations sent at once in the parallel test")
    parser.add_argument("--numerics", nargs="*", default=["smollm2-135m", "default"],
                        help="models whose torch numerics are compared (loads the model in torch)")
    parser.add_argument("--llama-bench", type=Path, default=None, metavar="DIR",
                        help="a folder with llama.cpp's llama-bench and llama-export-lora: measure them too")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for name in args.models:
        print(f"== {name}, {args.threads} threads", flush=True)
        entry: dict[str, Any] = {}
        if "speed" not in args.skip:
            entry["speed"] = speed(name, args.threads, args.new_tokens, args.repeats)
            if args.llama_bench is not None:
                depth = entry["speed"]["ours"]["prompt_tokens"]
                entry["llama_bench"] = bench = llama_bench(name, args.threads, args.new_tokens, depth, args.repeats,
                                                           args.llama_bench)
                shipped = entry["speed"]["shipped"]["decode_tok_s"]
                entry["shipped_over_llama_bench"] = {label: round(shipped / row["decode_tok_s"], 3)
                                                     for label, row in bench.items() if isinstance(row, dict)}
        if "numerics" not in args.skip and name in args.numerics:
            entry["numerics"] = numerics(name, args.threads, 48)
        if "parallel" not in args.skip:
            entry["parallel"] = parallel(name, args.calls, args.new_tokens)
        results[name] = entry
    if "start" not in args.skip:
        results["chat_start"] = chat_start(3)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
