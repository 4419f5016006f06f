"""The rl method of `learn`: online GRPO (Dual-Track GRPO on SQL) with a LoRA adapter, on a local torch model
trained in place or on a GGUF model that llama.cpp plays while a torch copy trains; and how the loop puts the
learned adapter on the model, or takes it off.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Literal

from agentkit.environments.base import Environment
from agentkit.training.learning.learner import LearnContext, Learner
from agentkit.trajectory import Trajectory


def default_rl_config(env: Environment, seed: int, max_turns: int, max_new_tokens: int | None) -> Any:
    """GRPO settings for learning on a CPU budget: Dual-Track GRPO on SQL, plain GRPO elsewhere; LoRA,
    one task of four rollouts per update, no reference model (the LoRA adapter is small); episodes as long
    as the evaluations' (turns and tokens per reply)."""
    from agentkit.training.config import TrainConfig

    algo: Literal["dual-track", "grpo"] = "dual-track" if getattr(env, "name", "").startswith("sql") else "grpo"
    return TrainConfig(algo=algo, group_size=4, tasks_per_step=1, groups_per_step=1, lr=5e-5, kl_coef=0.0,
                       max_new_tokens=max_new_tokens or 256, max_turns=max_turns, temperature=1.0, save_every=1,
                       keep_checkpoints=1, progress=False, seed=seed, max_steps=10**9)


def untrainable(model: Any) -> str | None:
    """Why the rl method cannot train `model` (None when it can: a local torch model, trained in place, or
    a GGUF model on llama.cpp, trained as a torch copy (of the adapter it runs, if any) while llama.cpp plays
    the episodes)."""
    inner = getattr(model, "inner", model)
    if _is_torch_local(inner):
        if getattr(inner, "peft", None) is not None:
            return (f"the rl method trains a torch model in place, and {inner.name!r} runs an adapter it could not "
                    "set aside again: learn on the llama.cpp engine (which trains a copy of the adapter), or "
                    "from the base model without it")
        return None
    if _is_llamacpp(inner):
        if inner.lora is not None and inner.adapter is None:
            return (f"the rl method continues the peft adapter a model was loaded with; {inner.name!r} runs a GGUF "
                    "LoRA without one (load it as local:BASE+ADAPTER_DIR)")
        return None
    name = getattr(inner, "name", type(inner).__name__)
    return (f"the rl method trains the model in-process: it needs a local model (local:NAME), not {name!r} "
            "(a server cannot be trained from here). Learn skills, notes, checks and pacing with this model: "
            "--method skills,notes,checks,pacing.")


def rl_by_default(model: Any) -> bool:
    """Whether learn's default methods include rl for `model`: only for a local torch model. On llama.cpp
    the rl method works when named (`--method ...,rl`) but is not a default: a GRPO step on a CPU costs
    minutes of the budget. Why: docs/decisions.md#rl-in-the-learning-loop"""
    return _is_torch_local(getattr(model, "inner", model)) and untrainable(model) is None


def _is_torch_local(model: Any) -> bool:
    return getattr(model, "tokenizer", None) is not None and getattr(model, "model", None) is not None


def _is_llamacpp(model: Any) -> bool:
    from agentkit.models.llamacpp import LlamaCppModel

    return isinstance(model, LlamaCppModel)


class RLLearner(Learner):
    """Online GRPO / Dual-Track GRPO with a LoRA adapter; one optimiser step per learner step."""

    name = "rl"

    def __init__(self, ctx: LearnContext, *, resume: bool) -> None:
        from agentkit.training.checkpoint import latest_checkpoint
        from agentkit.training.trainer import Trainer

        self.ctx = ctx
        problem = untrainable(ctx.model.inner)
        if problem:
            raise ValueError(problem)
        cfg = ctx.rl_config or default_rl_config(ctx.env, ctx.seed, ctx.max_steps, ctx.train_settings.max_tokens)
        cfg = cfg.model_copy(deep=True)
        cfg.progress = False
        self.folder = ctx.out / "rl"
        inner, rollout = ctx.model.inner, None
        if _is_llamacpp(inner):  # train a torch copy of the GGUF (and its adapter); llama.cpp plays the episodes
            from agentkit.models.adapter import load_with_adapter
            from agentkit.models.local import LocalModel
            from agentkit.training.llamacpp_rollout import LlamaCppRollout

            rollout = LlamaCppRollout(inner, self.folder / "adapters")
            start = inner.adapter
            inner = load_with_adapter(inner.source, start) if start is not None else LocalModel.load(inner.source)
            if "rollout_correction" not in cfg.model_fields_set:
                cfg.rollout_correction = "tis"  # the engines' numerics differ (quantised vs dequantised weights)
            if "dtype" not in cfg.model_fields_set:
                cfg.dtype = "bf16"  # the copy already differs from the GGUF, and bf16 is faster on CPUs
            if "micro_batch_size" not in cfg.model_fields_set and "gradient_checkpointing" not in cfg.model_fields_set:
                # multi-turn SQL episodes are long (thousands of tokens each): one per micro-batch, and only
                # each layer's input kept for the backward pass
                cfg.micro_batch_size, cfg.gradient_checkpointing = 1, True
        self.trainer = Trainer(inner, cfg, out_dir=self.folder, rollout=rollout)
        self._resume = resume and latest_checkpoint(self.folder) is not None
        self._rollouts = self.folder / "rollouts.jsonl"

    def step(self, progress: dict[str, Any]) -> list[Trajectory]:
        """One online trainer step on the train tasks; returns the rollouts it made."""
        from agentkit.trajectory import read_jsonl

        start = self._rollouts.stat().st_size if self._rollouts.exists() else 0
        self.trainer.config.max_steps = self.trainer.step + 1
        summary = self.trainer.fit(self.ctx.env, tasks=self.ctx.train, resume=self._resume)
        self._resume = False
        progress["steps"] = self.trainer.step
        progress["last"] = {k: v for k, v in summary.get("last", {}).items() if isinstance(v, int | float)}
        new: list[Trajectory] = []
        if self._rollouts.exists():
            with open(self._rollouts, "rb") as f:
                f.seek(start)
                chunk = f.read()
            if chunk:
                tmp = self.folder / ".step-rollouts.jsonl"
                tmp.write_bytes(chunk)
                new = read_jsonl([tmp])
                tmp.unlink()
        return new

    def export_adapter(self) -> Path | None:
        """Copy the newest checkpoint's peft adapter to OUT/adapter (loadable as local:BASE+OUT/adapter)."""
        from agentkit.training.checkpoint import latest_checkpoint

        found = latest_checkpoint(self.folder)
        if found is None or not (found / "adapter").is_dir():
            return None
        target = self.ctx.out / "adapter"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(found / "adapter", target)
        (target / "agentkit-base.json").write_text(json.dumps({"base_model": self.ctx.model.name}))
        return target

    def details(self, progress: dict[str, Any]) -> dict[str, Any]:
        """The method's progress figures for the report."""
        return {"algo": self.trainer.config.algo, "steps": progress.get("steps", 0),
                "episodes": progress.get("episodes", 0), "last": progress.get("last", {})}

    def close(self) -> None:
        """Nothing to release."""
        return None


def use_adapter(model: Any, adapter: Path | None) -> None:
    """Run local `model` with the learned LoRA `adapter`, or without it (None: as loaded, the base weights or
    the adapter it came with). The rl phase leaves its adapter on the model; an agent that does not keep rl
    (validation set it aside) must run the model as loaded, and a run resumed after the phase must get the
    learned adapter back."""
    if _is_llamacpp(model):
        from agentkit.models.gguf_lora import gguf_adapter

        adapter = adapter or model.adapter
        target = gguf_adapter(adapter, model.model_path) if adapter is not None else None
        if model.lora != target:
            model.set_lora(target)
        return
    from peft.tuners.tuners_utils import BaseTunerLayer

    layers = [m for m in model.model.modules() if isinstance(m, BaseTunerLayer)]
    if adapter is not None and not layers:
        import peft

        peft.PeftModel.from_pretrained(model.model, str(adapter))  # injects the LoRA layers into the module
    for layer in layers:
        layer.enable_adapters(adapter is not None)
    reset = getattr(model, "reset_cache", None)
    if callable(reset):
        reset()
