"""Speed and memory of one GRPO step: agentkit's Trainer against TRL's GRPOTrainer, same everything.

Configuration (both sides): SmolLM2-135M-Instruct fp32 on CPU, 4 prompts × 4 generations, at most 64
new tokens at T = 1, stop at EOS, one optimiser step per batch (AdamW), β (KL) 0 or 0.04, same
prompts, same reward (a cheap string check, so neither side is measured on reward code).
Measured per step: wall seconds (generation + update), the generation part, and the process's peak RSS
(ru_maxrss, whole process, loading included). The first step is a warm-up and not averaged.

TRL must live in its own environment (it pins its own transformers):
    python -m venv /tmp/trlvenv && /tmp/trlvenv/bin/pip install torch==2.13.0 trl
    python tests/benchmarks/bench_train_trl.py --trl-python /tmp/trlvenv/bin/python --out bench_out/trl

Each configuration runs in a fresh process (`--impl agentkit|trl --beta B [--full]`), so peak RSS is
per configuration. Both sides train LoRA (r 16, alpha 32, attention and MLP projections; TRL through peft) or,
with `--full`, every weight. TRL's full fine-tuning also runs with the glibc malloc setting agentkit's Trainer
applies to itself on CPU (agentkit.training.allocator) through MALLOC_* environment variables. `--only
trl-lora,agentkit-lora` runs those configurations alone (`--merge` keeps the others of an earlier file).
Writes OUT/trl_compare.json and OUT/trl_compare.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

QUESTIONS = [
    "What is the weather in Lisbon right now? Answer in one sentence.",
    "Convert 250 US dollars to euros and explain the steps briefly.",
    "Name three uses of a relational database.",
    "Write a haiku about the sea.",
]
SYSTEM = "You are a helpful assistant."


def score(text: str) -> float:
    """The same cheap reward on both sides: shorter, on-topic-ish answers score higher."""
    return min(1.0, len(text.split()) / 40.0) * (0.5 + 0.5 * ("." in text))


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024


def run_agentkit(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from agentkit.messages import Message
    from agentkit.models.local import LocalModel
    from agentkit.training.config import LoraConfig, TrainConfig
    from agentkit.training.rollout import sample_completions
    from agentkit.training.trainer import Trainer
    from agentkit.trajectory import Trajectory

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    local = LocalModel.load(args.local)
    tok = local.tokenizer
    prompts = [local.render_prompt([Message.system(SYSTEM), Message.user(q)]) for q in QUESTIONS]
    prompt_ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    config = TrainConfig(algo="grpo", lr=1e-6 if args.full else 1e-5, kl_coef=args.beta,
                         micro_batch_size=args.micro_batch, dtype=args.dtype,
                         progress=False, save_every=0, lora=LoraConfig(enabled=not args.full))
    trainer = Trainer(local, config, out_dir=args.out + "/agentkit_ckpt")
    gen = torch.Generator().manual_seed(0)
    steps = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        local.model.eval()
        records = sample_completions(local.model, prompt_ids, n=4, max_new_tokens=64, temperature=1.0,
                                     stop_ids=[tok.eos_token_id], generator=gen)
        t1 = time.perf_counter()
        trajs = []
        for k, rec in enumerate(records):
            text = tok.decode(rec.completion_ids, skip_special_tokens=True)
            t = Trajectory(task=QUESTIONS[k // 4], task_id=str(k // 4), reward=score(text))
            t.add_turn(Message.assistant(text), phase="act", tokens=rec)
            trajs.append(t)
        trainer.train_on(trajs)
        t2 = time.perf_counter()
        steps.append({"total_s": t2 - t0, "generation_s": t1 - t0, "update_s": t2 - t1,
                      "completion_tokens": sum(len(r.completion_ids) for r in records)})
    return {"impl": "agentkit", "lora": not args.full, "beta": args.beta, "micro_batch": args.micro_batch,
            "dtype": args.dtype,
            "steps": steps, "peak_rss_gb": peak_rss_gb()}


def run_trl(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    data = Dataset.from_list([{"prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}]}
                              for q in QUESTIONS] * (args.steps + 1))

    def reward(completions: list[Any], **_: Any) -> list[float]:
        return [score(c[0]["content"] if isinstance(c, list) else c) for c in completions]

    config = GRPOConfig(output_dir=args.out + "/trl_out", per_device_train_batch_size=16, num_generations=4,
                        max_completion_length=64, temperature=1.0, beta=args.beta, learning_rate=1e-6,
                        max_steps=args.steps, logging_steps=1, report_to="none", use_cpu=True, bf16=False,
                        save_strategy="no", gradient_accumulation_steps=1, seed=0, dataloader_num_workers=0)
    times: dict[str, list[float]] = {"gen": [], "step_start": [], "step_end": []}

    class Clock(TrainerCallback):
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            times["step_start"].append(time.perf_counter())

        def on_step_end(self, *a: Any, **k: Any) -> None:
            times["step_end"].append(time.perf_counter())

    peft_config = None
    if not args.full:  # LoRA as agentkit's default LoraConfig: r 16, alpha 32, no dropout, attention and MLP
        from peft import LoraConfig as PeftLoraConfig

        peft_config = PeftLoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
                                     target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                     "down_proj"])
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config, train_dataset=data, processing_class=tok,
                          callbacks=[Clock()], peft_config=peft_config)
    target = "_generate" if hasattr(trainer, "_generate") else "_generate_single_turn"
    original = getattr(trainer, target)

    def timed(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        out = original(*a, **k)
        times["gen"].append(time.perf_counter() - t)
        return out

    setattr(trainer, target, timed)
    # TRL prepares the batch (generation) inside training_step, before on_step_begin fires in some
    # versions; time whole steps from one step end to the next instead.
    t0 = time.perf_counter()
    trainer.train()
    ends = [t0, *times["step_end"]]
    steps = [{"total_s": b - a, "generation_s": g, "update_s": (b - a) - g}
             for a, b, g in zip(ends, ends[1:], times["gen"], strict=False)]
    return {"impl": f"trl {trl.__version__}", "lora": not args.full, "beta": args.beta, "steps": steps,
            "peak_rss_gb": peak_rss_gb(), "timed": target}


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    steps = result["steps"][1:] or result["steps"]
    mean = {k: sum(s[k] for s in steps) / len(steps) for k in ("total_s", "generation_s", "update_s")}
    return {**{k: v for k, v in result.items() if k != "steps"}, **{k: round(v, 2) for k, v in mean.items()},
            "steps_measured": len(steps)}


def orchestrate(args: argparse.Namespace) -> None:
    from agentkit.models.embedded import cache_dir, load_embedded

    load_embedded()  # make sure the converted HF folders exist for TRL to read
    weights, tokenizer = cache_dir() / "weights", cache_dir() / "tokenizer"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [("agentkit", 0.0, False), ("agentkit", 0.04, False), ("agentkit", 0.0, True), ("agentkit", 0.04, True)]
    results: list[dict[str, Any]] = []
    if args.trl_results:  # TRL figures measured earlier in this session (same machine, same settings)
        results = json.loads(Path(args.trl_results).read_text())
    elif args.trl_python:
        runs = [("trl", 0.0, False), ("trl", 0.04, False), ("trl", 0.0, True), ("trl", 0.04, True),
                ("trl+malloc", 0.0, True), ("trl+malloc", 0.04, True), *runs]
    if args.only:  # e.g. trl-lora,agentkit-lora: those configurations only
        wanted = set(args.only.split(","))
        runs = [r for r in runs if f"{r[0]}-{'full' if r[2] else 'lora'}" in wanted]
    for impl, beta, full in runs:
        malloc = impl == "trl+malloc"  # TRL given the malloc setting agentkit's Trainer applies itself
        impl = "trl" if malloc else impl
        python = args.trl_python if impl == "trl" else sys.executable
        cmd = [python, __file__, "--impl", impl, "--beta", str(beta), "--steps", str(args.steps), "--threads",
               str(args.threads), "--out", args.out, "--model", str(weights), "--tokenizer", str(tokenizer),
               "--micro-batch", str(args.micro_batch)]
        if full:
            cmd.append("--full")
        print("running:", " ".join(cmd[1:]), flush=True)
        env = {**os.environ, "PYTHONPATH": ""} if impl == "trl" else dict(os.environ)
        if malloc:
            env.update(MALLOC_MMAP_MAX_="0", MALLOC_TRIM_THRESHOLD_=str(2**31 - 1))
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            print(done.stderr[-4000:], flush=True)
            results.append({"impl": impl, "beta": beta, "lora": not full, "error": done.stderr[-500:]})
            continue
        line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")][-1]
        res = summarise(json.loads(line[len("RESULT "):]))
        if malloc:
            res["impl"] += " + malloc reuse"
        print(json.dumps(res), flush=True)
        results.append(res)
    if args.merge:  # keep the other configurations of an earlier file (measured at another time: say so)
        earlier = json.loads(Path(args.merge).read_text())["results"]
        fresh = {(r["impl"], r["lora"], r["beta"]) for r in results}
        results += [{**r, "earlier_run": True} for r in earlier if (r["impl"], r["lora"], r["beta"]) not in fresh
                    and not r.get("earlier_run")] + [r for r in earlier if r.get("earlier_run")
                                                     and (r["impl"], r["lora"], r["beta"]) not in fresh]
    (out / "trl_compare.json").write_text(json.dumps({"threads": args.threads, "steps": args.steps,
                                                      "results": results}, indent=2))
    lines = ["| impl | params trained | β | micro-batch | s/step | generation s | update s | peak RSS GB |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['impl']} | {'LoRA' if r['lora'] else 'full'} | {r['beta']} | | error | | | |")
            continue
        lines.append(f"| {r['impl']} | {'LoRA' if r['lora'] else 'full'} | {r['beta']} | {r.get('micro_batch', 16)} "
                     f"| {r['total_s']} | "
                     f"{r['generation_s']} | {r['update_s']} | {r['peak_rss_gb']:.2f} |")
    (out / "trl_compare.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--impl", choices=["agentkit", "trl"], default=None, help="run one configuration (internal)")
    p.add_argument("--beta", type=float, default=0.0)
    p.add_argument("--full", action="store_true", help="full fine-tuning (default: LoRA r 16, on both sides)")
    p.add_argument("--only", default="", help="configurations to run, e.g. trl-lora,agentkit-lora (default: all)")
    p.add_argument("--merge", default="", help="an earlier trl_compare.json whose other configurations are kept "
                   "(marked earlier_run)")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="agentkit's training precision")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--model", default="")
    p.add_argument("--local", default="smollm2-135m",
                   help="agentkit's embedded model to train (--impl agentkit; e.g. default, the 0.5B Qwen)")
    p.add_argument("--tokenizer", default="")
    p.add_argument("--trl-python", default="", help="python of the environment where TRL is installed")
    p.add_argument("--trl-results", default="", help="JSON list of TRL results already measured (skip TRL runs)")
    p.add_argument("--micro-batch", type=int, default=4,
                   help="agentkit sequences per forward/backward (the step still averages over all 16)")
    p.add_argument("--out", default="bench_out/trl")
    args = p.parse_args()
    if args.impl is None:
        orchestrate(args)
        return
    result = run_agentkit(args) if args.impl == "agentkit" else run_trl(args)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
