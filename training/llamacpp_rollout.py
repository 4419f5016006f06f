"""Rollouts on llama.cpp while torch trains: the CPU path of online RL for a GGUF model.

    rollout = LlamaCppRollout(load_local("default", parallel=2), adapter_root=out / "adapters")
    trainer = Trainer("local:default", TrainConfig(rollout_correction="tis"), rollout=rollout)   # LoRA
    trainer.fit(env)

The trainer holds the torch model built from the GGUF (dequantised weights + the LoRA being trained);
the agent's episodes run on llama.cpp, several times faster on a CPU (the quantised weights, the same
GGUF). After each optimiser step `sync` saves the peft adapter, writes it as a GGUF LoRA
(`agentkit.models.gguf_lora`) and sets it on every llama.cpp slot, so the next episodes sample from the
updated policy. The two engines' log-probs differ by the quantisation (about 0.05-0.1 nats per token on
the embedded models): rollout correction (`tis`, `mis`) weighs that in, as for vLLM rollouts.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from torch import nn

from agentkit.models.gguf_lora import gguf_adapter
from agentkit.models.llamacpp import LlamaCppModel
from agentkit.models.protocol import Model
from agentkit.training.vllm_rollout import save_adapter


class LlamaCppRollout:
    """A `RolloutEngine` whose model is a `LlamaCppModel` running the trained LoRA (see the module doc)."""

    in_place = False
    """The policy reaches llama.cpp by `sync`: an update does not change episodes in progress."""

    def __init__(self, model: LlamaCppModel, adapter_root: str | Path) -> None:
        self._model = model
        self.adapter_root = Path(adapter_root)
        self.current: Path | None = None
        """The adapter folder the rollouts use (None: the base model)."""
        self.synced_step = 0
        """The optimiser step whose policy the rollouts use (a fresh LoRA, B = 0, is the base model: step 0)."""

    def model(self) -> Model:
        """The llama.cpp model, running the policy of the last `sync`."""
        return self._model

    def sync(self, policy: nn.Module, step: int, state: dict[str, Any] | None = None) -> None:
        """Ship the LoRA of `policy` after optimiser step `step` to llama.cpp (and drop the previous one)."""
        if not hasattr(policy, "peft_config"):
            raise NotImplementedError("llama.cpp rollouts follow a LoRA policy; full fine-tuning would need "
                                      "the whole model written and quantised to GGUF after every step")
        folder = self.adapter_root / f"step-{step:06d}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        save_adapter(policy, folder, state)
        self._model.set_lora(gguf_adapter(folder, self._model.model_path))
        previous, self.current, self.synced_step = self.current, folder, step
        if previous is not None and previous != folder:
            shutil.rmtree(previous, ignore_errors=True)
