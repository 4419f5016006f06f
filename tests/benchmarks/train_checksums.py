"""Same numbers before and after a change: train a tiny random Llama 3 steps with each algorithm (full
fine-tuning; `--lora` for LoRA r4) and print a checksum of the trained weights and the last metrics.
Run it in two checkouts (old and new code) and compare the lines:

    python tests/benchmarks/train_checksums.py [--lora]
"""

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
torch.set_num_threads(1)
from test_training_trainer import sampled  # noqa: E402

from agentkit.models.tiny import tiny_llama  # noqa: E402
from agentkit.training.config import LoraConfig, TrainConfig  # noqa: E402
from agentkit.training.trainer import Trainer  # noqa: E402

for algo in ("grpo", "skill1", "dual-track", "sdar"):
    model, tok = tiny_llama(seed=0)
    data = sampled(model, tok)
    for i, t in enumerate(data):
        t.rewards = {"schema": float(i % 3) / 2, "answer": float(t.reward or 0)}
        if algo == "dual-track":
            t.turns[0].phase = "propose_schema" if i % 2 else "act"
        if algo == "skill1":
            t.extras["skills"] = {"retrieved": [{"id": "a", "utility": 0.2}, {"id": "b", "utility": 0.9}],
                                  "ranking": ["a", "b"] if i % 2 else ["b", "a"], "used": "a", "u_hat": 0.9,
                                  "distilled": {"x": 1} if i % 3 else None, "admitted": False}
            t.turns[0].phase = "rerank" if i % 4 == 0 else ("distill" if i % 4 == 1 else "act")
    torch.manual_seed(0)
    lora = LoraConfig(r=4, alpha=8) if "--lora" in sys.argv else LoraConfig(enabled=False)
    cfg = TrainConfig(algo=algo, lr=1e-2, max_steps=3, groups_per_step=2, micro_batch_size=3, save_every=0,
                      progress=False, kl_coef=0.01, lora=lora)
    with tempfile.TemporaryDirectory() as out:
        tr = Trainer(model, cfg, tokenizer=tok, out_dir=out)
        summary = tr.fit(data)
    h = hashlib.sha256()
    for _, p in sorted(model.state_dict().items()):
        h.update(p.detach().float().numpy().tobytes())
    last = summary["last"]
    print(algo, h.hexdigest()[:16], json.dumps({k: last[k] for k in sorted(last) if isinstance(last[k], float)}))
