"""vLLM on CPU (`make vllm-cpu`): server start, decode speed, agentkit's overhead, online RL rollouts.

    AGENTKIT_VLLM_PYTHON=.venv-vllm/bin/python python tests/benchmarks/bench_vllm_cpu.py --out bench-out/vllm_cpu.json

Measures, against one server serving the embedded SmolLM2-135M (bf16, eager, runtime LoRA) started by
agentkit's launcher:
- start: seconds from launch to /health (the servable folder converted beforehand);
- decode: tokens/s of one stream and of 8 concurrent streams (`ignore_eos`, fixed length);
- overhead: median ms per request of `VLLMModel.generate` (chat path, and the token path that sends
  token ids and asks for log-probs) minus a raw `openai` client call with the same request;
- rollouts: an online RL run (G x tasks episodes per step, LoRA synced to the server) played sequentially
  (rollout_concurrency 1), concurrently (8), and concurrently and asynchronously (8, max_staleness 1: the
  next step's rollouts overlap this step's update); rollout tokens/s, seconds per step, and the mismatch
  between vLLM's and the trainer's log-probs (`--with-tis` adds a concurrent run with TIS).
- lora_decode: tokens/s of 1 and 8 streams through a served LoRA adapter (what rollouts pay), next to
  the base model's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ for the environment used in the tests


def decode_rate(server: Any, streams: int, tokens: int) -> float:
    """Aggregate generated tokens/s of `streams` concurrent completions of exactly `tokens` tokens."""
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="EMPTY")

    def one(i: int) -> int:
        reply = client.completions.create(model=server.served_name, prompt=f"Story {i}: once upon a time",
                                          max_tokens=tokens, temperature=0.8, seed=i,
                                          extra_body={"ignore_eos": True})
        return int(reply.usage.completion_tokens)

    one(0)  # warm-up
    start = time.perf_counter()
    with ThreadPoolExecutor(streams) as pool:
        total = sum(pool.map(one, range(streams)))
    return total / (time.perf_counter() - start)


def overhead(server: Any, n: int) -> dict[str, float]:
    """Median ms per call: raw openai client, VLLMModel chat path, VLLMModel token path (1 token each)."""
    import openai

    from agentkit.messages import Message
    from agentkit.models.protocol import GenerationSettings

    client = openai.OpenAI(base_url=server.base_url, api_key="EMPTY")
    model = server.model()
    messages = [Message.user("Say yes.")]

    def raw() -> None:
        client.chat.completions.create(model=server.served_name, messages=[{"role": "user", "content": "Say yes."}],
                                       max_tokens=1, temperature=0)

    def chat() -> None:
        model.generate(messages, settings=GenerationSettings(max_tokens=1, temperature=0))

    def tokens() -> None:
        model.generate(messages, settings=GenerationSettings(max_tokens=1, temperature=0, logprobs=True))

    out = {}
    for name, fn in (("raw_openai_ms", raw), ("agentkit_chat_ms", chat), ("agentkit_token_path_ms", tokens)):
        fn()
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1000)
        out[name] = statistics.median(times)
    out["overhead_chat_ms"] = out["agentkit_chat_ms"] - out["raw_openai_ms"]
    out["overhead_token_path_ms"] = out["agentkit_token_path_ms"] - out["raw_openai_ms"]
    return out


def lora_decode(server: Any, tokens: int) -> dict[str, float]:
    """Decode tokens/s of 1 and 8 streams through a freshly loaded LoRA adapter (r=8 on q/v, random B)."""
    import peft
    import torch

    from agentkit.models.local import LocalModel
    from agentkit.training.vllm_rollout import VLLMRollout

    local = LocalModel.load(server.plan.args[server.plan.model_arg])
    policy = peft.get_peft_model(local.model, peft.LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                                              task_type="CAUSAL_LM"))
    with torch.no_grad():
        for name, param in policy.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.01)
    rollout = VLLMRollout.from_server(server, Path(tempfile.mkdtemp(prefix="bench-lora-")), policy=policy,
                                      name_prefix="bench-lora")
    rollout.model()
    adapter = _Named(server, rollout.current or "")
    return {"lora_1_tok_s": decode_rate(adapter, 1, tokens), "lora_8_tok_s": decode_rate(adapter, 8, tokens)}


class _Named:
    """The server, asked for another served name (an adapter)."""

    def __init__(self, server: Any, name: str) -> None:
        self.base_url, self.served_name = server.base_url, name


def rl_run(server: Any, concurrency: int, correction: str, steps: int, group: int, tasks: int,
           new_tokens: int, staleness: int = 0) -> dict[str, Any]:
    """An online GRPO run with vLLM rollouts; the per-step metrics."""
    from test_vllm_cpu import LengthEnv

    from agentkit.models.local import LocalModel
    from agentkit.training.config import LoraConfig, TrainConfig
    from agentkit.training.trainer import Trainer
    from agentkit.training.vllm_rollout import VLLMRollout

    out = Path(tempfile.mkdtemp(prefix="bench-rl-"))
    local = LocalModel.load(server.plan.args[server.plan.model_arg])
    config = TrainConfig(lr=1e-3, max_steps=steps, tasks_per_step=tasks, group_size=group, max_new_tokens=new_tokens,
                         max_turns=1, micro_batch_size=8, save_every=1000, progress=False, kl_coef=0.0,
                         rollout_concurrency=concurrency, rollout_correction=correction,  # type: ignore[arg-type]
                         max_staleness=staleness,
                         lora=LoraConfig(r=8, alpha=16, target_modules=["q_proj", "v_proj"]))
    trainer = Trainer(local, config, out_dir=out)
    trainer.rollout = VLLMRollout.from_server(server, out / "adapters", policy=trainer.policy,
                                              name_prefix=f"c{concurrency}-{correction}-s{staleness}")
    started = time.perf_counter()
    trainer.fit(LengthEnv())
    total = time.perf_counter() - started
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    steps_ = [r for r in records if "rollout_s" in r]
    keys = ("rollout_s", "rollout_wait_s", "rollout_tokens_per_s", "time_s", "staleness", "mismatch_kl",
            "mismatch_ratio_max", "tis_clipped_frac")
    return {"concurrency": concurrency, "correction": correction, "max_staleness": staleness, "wall_s": total,
            "s_per_step": total / max(1, steps),
            "steps": [{k: r[k] for k in keys if k in r} for r in steps_]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("bench-out/vllm_cpu.json"))
    parser.add_argument("--tokens", type=int, default=32, help="tokens per decode stream")
    parser.add_argument("--calls", type=int, default=10, help="requests per overhead measurement")
    parser.add_argument("--rl-tokens", type=int, default=16, help="max new tokens per rollout")
    parser.add_argument("--rl-steps", type=int, default=3)
    parser.add_argument("--skip-rl", action="store_true")
    parser.add_argument("--cpu-dtype", default=None, choices=["bfloat16", "float32"],
                        help="default: what agentkit's launcher picks for this CPU (cpu_dtype_for_this_cpu)")
    parser.add_argument("--with-tis", action="store_true", help="add a concurrent run with TIS correction")
    parser.add_argument("--no-lora", action="store_true",
                        help="serve without --enable-lora (start and decode only: what LoRA support costs)")
    args = parser.parse_args()

    from agentkit.models.servable import prepare_servable
    from agentkit.models.vllm_server import VLLMServer, free_port

    t0 = time.perf_counter()
    prepare_servable("local:smollm2-135m")
    results: dict[str, Any] = {"prepare_s": time.perf_counter() - t0}
    lora = {} if args.no_lora else {"runtime_lora": True, "max_lora_rank": 8, "max_loras": 2}
    dtype = {} if args.cpu_dtype is None else {"cpu_dtype": args.cpu_dtype}
    plan = VLLMServer.plan_for("local:smollm2-135m", port=free_port(), max_model_len=2048, **lora, **dtype)
    results["command"] = plan.command_line()
    t0 = time.perf_counter()
    with VLLMServer(plan, startup_timeout=900) as server:
        results["start_s"] = time.perf_counter() - t0
        print(f"ready in {results['start_s']:.1f} s", flush=True)
        results["decode_1_tok_s"] = decode_rate(server, 1, args.tokens)
        results["decode_8_tok_s"] = decode_rate(server, 8, args.tokens)
        print(f"decode: 1 stream {results['decode_1_tok_s']:.1f} tok/s, 8 streams {results['decode_8_tok_s']:.1f}",
              flush=True)
        if args.no_lora:
            args.skip_rl = True
        else:
            results["overhead"] = overhead(server, args.calls)
            print(json.dumps(results["overhead"]), flush=True)
            results["lora_decode"] = lora_decode(server, args.tokens)
            print(json.dumps(results["lora_decode"]), flush=True)
        if not args.skip_rl:
            runs = [(1, "none", 0), (8, "none", 0), (8, "none", 1)] + ([(8, "tis", 0)] if args.with_tis else [])
            results["rl"] = []
            for c, corr, stale in runs:
                results["rl"].append(rl_run(server, c, corr, args.rl_steps, 4, 2, args.rl_tokens, stale))
                print(json.dumps(results["rl"][-1]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
