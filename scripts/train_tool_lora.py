"""Fine-tune the embedded model's tool use on synthetic conversations: a LoRA adapter, trained with SFT.

    python scripts/train_tool_lora.py --out runs/tool-lora --conversations 600 --steps 75
    agentkit chat --model local:qwen2.5-coder-0.5b+runs/tool-lora/adapter   # the shipped recipes: make tool-lora(-1.5b)

The conversations (`agentkit.training.synthetic`) use tools from ~90 invented families and never the tools of the
benchmarks (`HELD_OUT_TOOLS`), so what the benchmarks measure afterwards is transfer: choosing among offered tools,
a second call that uses the first one's result, an answer that quotes the results, no call when no tool fits.
`--mix chains` (`make tool-lora-1.5b-chains`) adds chains of three or four calls, calls side by side in one reply,
computing with results through an arithmetic tool, and chats of 4 to 8 turns that mix turns with and without tools;
`--mix serial` (`make tool-lora-1.5b-serial`) the same without calls side by side, with no-tool requests offered
many tools; `--mix recover` and `--mix revisit` add to `serial` chats with made-up earlier answers and chats that
combine two earlier results, `--mix revisit-recover` both. Each conversation is replayed through the agent loop
(`agentkit.training.demonstrations`; a chat turn by turn, with its history), so the model learns the prompts it
will see in use. Besides the peft folder it writes `adapter.q4.safetensors`, the adapter packed to 4 bits
(`agentkit.models.packed_adapter`), the form `local:default` ships it in. On the 1.5B (`--model
qwen2.5-coder-1.5b`, `make tool-lora-1.5b`, the default's) `--micro-batch 2 --checkpointing` keeps the run within
16 GB.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from agentkit.models import load_local
from agentkit.models.packed_adapter import pack_adapter
from agentkit.training.checkpoint import latest_checkpoint
from agentkit.training.config import LoraConfig, TrainConfig
from agentkit.training.demonstrations import demonstration_trajectories
from agentkit.training.synthetic import MIXES, synthetic_conversations
from agentkit.training.trainer import Trainer
from agentkit.trajectory import Trajectory, read_jsonl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b",
                        help="embedded model (local:NAME); default the bare 0.5B")
    parser.add_argument("--conversations", type=int, default=600)
    parser.add_argument("--steps", type=int, default=75)
    parser.add_argument("--batch", type=int, default=8, help="conversations per optimiser step")
    parser.add_argument("--micro-batch", type=int, default=4, help="conversations per forward pass")
    parser.add_argument("--checkpointing", action="store_true",
                        help="gradient checkpointing: activations recomputed in the backward pass (for the 1.5B)")
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mix", default=None, help=f"a named mix ({', '.join(MIXES)}) or kinds' shares, e.g. "
                        "single=45,use_result=15,sequence=30,no_tool=10 (default: the generator's KIND_WEIGHTS)")
    parser.add_argument("--max-len", type=int, default=2048, help="tokens of a training sequence (longer: cut)")
    parser.add_argument("--no-refusals", action="store_true", help="no answers saying no offered tool fits")
    parser.add_argument("--calls", default="json", choices=["json", "template"],
                        help="how calls are written (json: the bare JSON the embedded Qwen writes)")
    parser.add_argument("--fresh-names", type=float, default=0.0, help="share of tools renamed per conversation")
    parser.add_argument("--finish", type=float, default=0.0,
                        help="share of conversations offered a tool that finishes the run (final_answer, submit), "
                        "ending with its call (off by default; why: docs/decisions.md#tool-lora)")
    parser.add_argument("--extra", type=Path, action="append", default=[],
                        help="a JSONL of trajectories with token ids to train on beside the conversations (repeatable; "
                        "e.g. scripts/sql_drafts_data.py's verified SQL drafts)")
    parser.add_argument("--resume", action="store_true",
                        help="continue a stopped run in --out: its demonstrations and its newest checkpoint")
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    mix = (dict(MIXES[args.mix]) if args.mix in MIXES
           else {k: float(v) for k, v in (part.split("=") for part in args.mix.split(","))} if args.mix else None)
    conversations = synthetic_conversations(args.conversations, seed=args.seed, weights=mix,
                                            refusals=not args.no_refusals, fresh_names=args.fresh_names,
                                            finish=args.finish)
    saved = args.out / "demonstrations.jsonl"
    resuming = args.resume and saved.exists() and latest_checkpoint(args.out / "ckpt") is not None
    if resuming:
        demos = [Trajectory.model_validate_json(line) for line in saved.read_text().splitlines() if line.strip()]
    else:
        demos = demonstration_trajectories(load_local(args.model), conversations, calls=args.calls)
        demos += read_jsonl(args.extra) if args.extra else []
        with saved.open("w") as f:
            for t in demos:
                f.write(t.model_dump_json() + "\n")
    prepared = time.perf_counter() - started
    print(f"{len(demos)} demonstrations in {prepared:.0f} s", flush=True)

    config = TrainConfig(algo="sft", kl_coef=0.0, lr=args.lr, groups_per_step=args.batch,
                         micro_batch_size=args.micro_batch, gradient_checkpointing=args.checkpointing,
                         max_steps=args.steps, epochs=100, dtype="bf16", save_every=10, keep_checkpoints=1,
                         seed=args.seed, lora=LoraConfig(r=args.rank, alpha=2 * args.rank), max_seq_len=args.max_len)
    trainer = Trainer(f"local:{args.model}", config, out_dir=args.out / "ckpt")
    trainer.fit(demos, resume=resuming)
    found = latest_checkpoint(args.out / "ckpt")
    if found is None:
        raise SystemExit("training wrote no checkpoint")
    shutil.rmtree(args.out / "adapter", ignore_errors=True)
    shutil.copytree(found / "adapter", args.out / "adapter")
    packed = pack_adapter(args.out / "adapter", args.out / "adapter.q4.safetensors", base=args.model)
    summary = {"conversations": len(demos), "steps": trainer.step, "batch": args.batch, "lr": args.lr,
               "rank": args.rank, "seed": args.seed, "mix": args.mix if args.mix in MIXES else mix, "weights": mix,
               "refusals": not args.no_refusals, "fresh_names": args.fresh_names, "finish": args.finish,
               "calls": args.calls, "max_len": args.max_len,
               "extra": {str(p): sum(1 for line in p.read_text().splitlines() if line.strip()) for p in args.extra},
               "prepare_s": round(prepared),
               "minutes": round((time.perf_counter() - started) / 60, 1),
               "kinds": {k: sum(c.kind == k for c in conversations) for k in sorted({c.kind for c in conversations})},
               "finishing": sum(bool(c.final) for c in conversations)}
    summary["packed_bytes"] = packed.stat().st_size  # what agentkit/models/adapters/ would ship
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
