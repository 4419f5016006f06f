"""Benchmark of the embedded local model (SmolLM2-135M-Instruct on the CPU).

Measures, each as the median of a few runs:
- cold start to first token in a fresh Python process (imports + load + prefill + first token), with
  the converted-weights cache warm, and once with an empty cache (GGUF conversion included);
- decode speed (tokens/s after the first token) of a greedy answer of up to --tokens tokens, with the
  optimisations on and off: KV-cached decode loop (default) vs recomputing the whole sequence per
  token, float32 vs bfloat16 weights, 1 vs 2 threads, and Transformers' own `generate` for reference;
- the second turn of a conversation: time to first token with the KV cache reused vs a fresh prefill;
- llama-cpp-python on the same GGUF, when a Python with `llama_cpp` is given (--llama-python), and the
  ratio of its decode speed to ours.

    python tests/benchmarks/bench_local_model.py --out bench-out [--tokens 128] [--runs 3]
        [--llama-python /tmp/llamavenv/bin/python]

Writes OUT/bench_local_model.json and OUT/bench_local_model.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

PROMPT = "Write a short story about a cat who travels around the world."

COLD_START = r"""
import json, os, sys, time
t0 = time.perf_counter()
import torch
torch.set_num_threads(int(sys.argv[1]))
from agentkit.messages import Message
from agentkit.models.local import LocalModel
from agentkit.models.protocol import GenerationSettings, TextDelta
t_import = time.perf_counter()
model = LocalModel.load("smollm2-135m")
t_load = time.perf_counter()
first = None
for item in model.stream([Message.user(sys.argv[2])], settings=GenerationSettings(temperature=0, max_tokens=8)):
    if isinstance(item, TextDelta) and first is None:
        first = time.perf_counter()
print(json.dumps({"import_s": t_import - t0, "load_s": t_load - t_import, "first_token_s": first - t0}))
"""

LLAMA_CPP = r"""
import json, sys, time
t0 = time.perf_counter()
from llama_cpp import Llama
path, threads, prompt, n_tokens, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
llm = Llama(model_path=path, n_ctx=2048, n_threads=threads, verbose=False, seed=0)
results = []
for i in range(runs + 1):
    start = time.perf_counter()
    first, count = None, 0
    for chunk in llm.create_chat_completion([{"role": "user", "content": prompt}], temperature=0, top_k=1,
                                            max_tokens=n_tokens, stream=True):
        if chunk["choices"][0]["delta"].get("content"):
            count += 1
            if first is None:
                first = time.perf_counter()
                if i == 0:
                    results.append({"cold_first_token_s": first - t0})
    end = time.perf_counter()
    if i > 0:
        results.append({"first_token_s": first - start, "tokens": count,
                        "decode_tok_s": (count - 1) / (end - first) if count > 1 else 0.0})
    llm.reset()
print(json.dumps(results))
"""


def decode_run(model: Any, n_tokens: int) -> dict[str, float]:
    """One greedy answer, streamed: time to first token and decode tokens/s."""
    from agentkit.messages import Message
    from agentkit.models.protocol import GenerationSettings, ModelResponse, TextDelta

    model.reset_cache()
    start = time.perf_counter()
    first = None
    final = None
    for item in model.stream([Message.user(PROMPT)], settings=GenerationSettings(temperature=0, max_tokens=n_tokens)):
        if isinstance(item, TextDelta) and first is None:
            first = time.perf_counter()
        elif isinstance(item, ModelResponse):
            final = item
    end = time.perf_counter()
    assert final is not None and final.tokens is not None and first is not None
    n = len(final.tokens.completion_ids)
    return {"first_token_s": first - start, "tokens": n, "decode_tok_s": (n - 1) / (end - first)}


def no_cache_run(model: Any, tokenizer: Any, n_tokens: int) -> dict[str, float]:
    """Greedy decoding that recomputes the whole sequence for every token (no KV cache)."""
    import torch

    from agentkit.messages import Message
    from agentkit.models.local import LocalModel

    ids = tokenizer(LocalModel(model, tokenizer).render_prompt([Message.user(PROMPT)]),
                    add_special_tokens=False)["input_ids"]
    start = time.perf_counter()
    first = None
    with torch.inference_mode():
        for _ in range(n_tokens):
            ids.append(int(model(torch.tensor([ids]), use_cache=False).logits[0, -1].argmax()))
            first = first or time.perf_counter()
    end = time.perf_counter()
    assert first is not None
    return {"first_token_s": first - start, "tokens": n_tokens, "decode_tok_s": (n_tokens - 1) / (end - first)}


def hf_generate_run(model: Any, tokenizer: Any, n_tokens: int) -> dict[str, float]:
    """Transformers' own `generate` (greedy, KV cache, no per-token log-probs), for reference."""
    import torch

    from agentkit.messages import Message
    from agentkit.models.local import LocalModel

    ids = tokenizer(LocalModel(model, tokenizer).render_prompt([Message.user(PROMPT)]),
                    add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        start = time.perf_counter()
        model.generate(ids, max_new_tokens=1, do_sample=False)
        first = time.perf_counter() - start
        start = time.perf_counter()
        out = model.generate(ids, max_new_tokens=n_tokens, do_sample=False)
        total = time.perf_counter() - start
    n = out.shape[1] - ids.shape[1]
    return {"first_token_s": first, "tokens": n, "decode_tok_s": (n - 1) / max(total - first, 1e-9)}


def second_turn(model: Any, reuse: bool) -> dict[str, float]:
    """Time to first token of a conversation's second turn, with the cache reused or dropped."""
    from agentkit.messages import Message
    from agentkit.models.protocol import GenerationSettings, TextDelta
    from agentkit.tools.text_calls import render_tools

    system = Message.system("You are a careful assistant.\n\n" + render_tools([
        {"type": "function", "function": {"name": f"tool_{i}", "description": "Looks things up in table " * 4,
                                          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
        for i in range(6)]))
    messages = [system, Message.user("Which tables are there?")]
    model.reset_cache()
    first = model.generate(messages, settings=GenerationSettings(temperature=0, max_tokens=24))
    messages += [first.message, Message.user("Thanks. And what is in the first one?")]
    if not reuse:
        model.reset_cache()
    start = time.perf_counter()
    for item in model.stream(messages, settings=GenerationSettings(temperature=0, max_tokens=2)):
        if isinstance(item, TextDelta):
            break
    elapsed = time.perf_counter() - start
    assert first.tokens is not None
    return {"first_token_s": elapsed, "prompt_tokens": first.usage.input_tokens}


def median_of(runs: list[dict[str, float]]) -> dict[str, Any]:
    keys = runs[0].keys()
    return {**{k: statistics.median(r[k] for r in runs) for k in keys}, "runs": runs}


def cold_starts(threads: int, runs: int, home: str) -> dict[str, Any]:
    env = {**os.environ, "AGENTKIT_HOME": home}
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        res = subprocess.run([sys.executable, "-c", COLD_START, str(threads), PROMPT], env=env, capture_output=True,
                             text=True, timeout=900)
        if res.returncode != 0:
            raise RuntimeError(res.stderr[-2000:])
        data = json.loads(res.stdout.strip().splitlines()[-1])
        data["process_wall_s"] = time.perf_counter() - start
        out.append(data)
    return median_of(out)


def llama_cpp(python: str, threads: int, n_tokens: int, runs: int) -> dict[str, Any]:
    from agentkit.models.embedded import embedded_gguf_path

    res = subprocess.run([python, "-c", LLAMA_CPP, str(embedded_gguf_path()), str(threads), PROMPT, str(n_tokens),
                          str(runs)], capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        raise RuntimeError(res.stderr[-2000:])
    data = json.loads(res.stdout.strip().splitlines()[-1])
    return {"cold_first_token_s": data[0]["cold_first_token_s"], **median_of(data[1:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for the JSON and Markdown results")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="torch threads for the main measurements")
    parser.add_argument("--llama-python", default=None, help="a Python that has llama_cpp installed")
    parser.add_argument("--skip-cold", action="store_true", help="skip the cold starts in fresh processes")
    parser.add_argument("--only-default", action="store_true",
                        help="measure only the default configuration (and llama.cpp): a quick comparison run")
    args = parser.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    import torch

    from agentkit.models.embedded import load_embedded
    from agentkit.models.local import LocalModel

    results: dict[str, Any] = {"tokens": args.tokens, "runs": args.runs, "threads": args.threads,
                               "cpu_count": os.cpu_count(), "load_avg_start": os.getloadavg(),
                               "torch": torch.__version__, "prompt": PROMPT}
    print(f"load average at start: {os.getloadavg()}", flush=True)

    if not args.skip_cold:
        results["cold_start_warm_cache"] = cold_starts(args.threads, args.runs, os.environ.get(
            "AGENTKIT_HOME", str(Path.home() / ".agentkit")))
        print("cold start (conversion cache warm):", results["cold_start_warm_cache"]["first_token_s"], flush=True)
        with tempfile.TemporaryDirectory() as empty_home:
            results["cold_start_empty_cache"] = cold_starts(args.threads, 1, empty_home)
        print("cold start (empty cache, GGUF conversion):", results["cold_start_empty_cache"]["first_token_s"],
              flush=True)

    torch.set_num_threads(args.threads)
    model, tokenizer = load_embedded()
    configs = {"kv_cache_fp32": LocalModel(model, tokenizer)}
    if not args.only_default:
        configs["kv_cache_bf16"] = LocalModel(load_embedded(dtype=torch.bfloat16)[0], tokenizer)
    decode: dict[str, list[dict[str, float]]] = {name: [] for name in configs}
    decode_run(configs["kv_cache_fp32"], 8)  # warm-up
    for _ in range(args.runs):  # interleaved so that load changes hit every configuration alike
        for name, local in configs.items():
            decode[name].append(decode_run(local, args.tokens))
            print(name, decode[name][-1], flush=True)
        if not args.only_default:
            decode.setdefault("hf_generate_fp32", []).append(hf_generate_run(model, tokenizer, args.tokens))
            print("hf_generate_fp32", decode["hf_generate_fp32"][-1], flush=True)
    if args.only_default:
        results["decode"] = {name: median_of(runs) for name, runs in decode.items()}
        finish(args, results, out_dir)
        return
    other_threads = 1 if args.threads != 1 else 2
    torch.set_num_threads(other_threads)
    decode[f"kv_cache_fp32_{other_threads}thread"] = [decode_run(configs["kv_cache_fp32"], args.tokens)
                                                      for _ in range(args.runs)]
    torch.set_num_threads(args.threads)
    decode["no_kv_cache_fp32"] = [no_cache_run(model, tokenizer, min(args.tokens, 48))]
    print("no_kv_cache_fp32", decode["no_kv_cache_fp32"][-1], flush=True)
    results["decode"] = {name: median_of(runs) for name, runs in decode.items()}

    turns = {"reuse": [], "fresh": []}
    for _ in range(args.runs):
        for mode in ("reuse", "fresh"):
            turns[mode].append(second_turn(configs["kv_cache_fp32"], reuse=mode == "reuse"))
    results["second_turn"] = {mode: median_of(runs) for mode, runs in turns.items()}
    print("second turn:", {m: v["first_token_s"] for m, v in results["second_turn"].items()}, flush=True)
    finish(args, results, out_dir)


def finish(args: argparse.Namespace, results: dict[str, Any], out_dir: Path) -> None:
    """Measure llama.cpp (when available) and write the results."""
    if args.llama_python:
        try:
            results["llama_cpp"] = llama_cpp(args.llama_python, args.threads, args.tokens, args.runs)
            ours = results["decode"]["kv_cache_fp32"]["decode_tok_s"]
            results["llama_cpp_decode_ratio"] = results["llama_cpp"]["decode_tok_s"] / ours
            best = max(d["decode_tok_s"] for k, d in results["decode"].items() if k.startswith("kv_cache"))
            results["llama_cpp_decode_ratio_vs_best"] = results["llama_cpp"]["decode_tok_s"] / best
            print("llama.cpp:", results["llama_cpp"]["decode_tok_s"], "tok/s", flush=True)
        except Exception as exc:  # reported, not fatal: the optional extra may be broken
            results["llama_cpp_error"] = f"{type(exc).__name__}: {exc}"[-500:]
    results["load_avg_end"] = os.getloadavg()

    (out_dir / "bench_local_model.json").write_text(json.dumps(results, indent=2))
    (out_dir / "bench_local_model.md").write_text(markdown(results))
    print(markdown(results))


def markdown(r: dict[str, Any]) -> str:
    lines = [f"# Local model benchmark (SmolLM2-135M, {r['cpu_count']} CPUs, {r['threads']} threads, "
             f"load avg {r['load_avg_start'][0]:.1f} → {r.get('load_avg_end', [0])[0]:.1f})", ""]
    for key, label in (("cold_start_warm_cache", "cold start, conversion cache warm"),
                       ("cold_start_empty_cache", "cold start, empty cache (GGUF conversion)")):
        if key in r:
            c = r[key]
            lines.append(f"- {label}: first token after {c['first_token_s']:.1f} s "
                         f"(imports {c['import_s']:.1f} s, load {c['load_s']:.1f} s)")
    lines += ["", "| configuration | first token (s) | tokens | decode tok/s |", "|---|---|---|---|"]
    for name, d in r.get("decode", {}).items():
        lines.append(f"| {name} | {d['first_token_s']:.2f} | {d['tokens']:.0f} | {d['decode_tok_s']:.2f} |")
    if "llama_cpp" in r:
        d = r["llama_cpp"]
        lines.append(f"| llama-cpp-python (same GGUF) | {d['first_token_s']:.2f} | {d['tokens']:.0f} | "
                     f"{d['decode_tok_s']:.2f} |")
        lines += ["", f"llama.cpp / ours (fp32): {r['llama_cpp_decode_ratio']:.2f}×; vs our best: "
                      f"{r['llama_cpp_decode_ratio_vs_best']:.2f}×; llama.cpp cold start to first token "
                      f"{d['cold_first_token_s']:.2f} s"]
    if "llama_cpp_error" in r:
        lines += ["", f"llama-cpp-python failed: {r['llama_cpp_error']}"]
    if "second_turn" in r:
        s = r["second_turn"]
        lines += ["", f"Second turn, time to first token: cache reused {s['reuse']['first_token_s']:.2f} s, "
                      f"fresh prefill {s['fresh']['first_token_s']:.2f} s"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
