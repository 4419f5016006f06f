"""The training configuration: one typed object, loadable from YAML or TOML.

Every hyperparameter of the methods has a named field with its published default; fields whose value
the papers do not publish say so. Load with `TrainConfig.load("train.yaml")` (or `.toml`); unknown
keys are an error, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Algorithm = Literal["grpo", "sdar", "skill1", "dual-track", "sft"]


class LoraConfig(BaseModel):
    """LoRA adapter settings (peft). `enabled=False` means full fine-tuning."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )


class TrainConfig(BaseModel):
    """All settings of a training run.

    Groups: the algorithm and its coefficients, the optimiser, batching, precision,
    checkpointing, and online rollouts.
    """

    model_config = ConfigDict(extra="forbid")

    algo: Algorithm = "grpo"

    # -- GRPO backbone ----------------------------------------------------
    scale_adv_by_std: bool = True
    """A_i = (r_i − mean)/(std + ε); False is Dr.GRPO (no std)."""
    adv_eps: float = 1e-6
    """ε in the advantage denominator."""
    clip_low: float = 0.2
    """ε_low: ratios below 1 − ε_low are clipped."""
    clip_high: float = 0.2
    """ε_high: ratios above 1 + ε_high are clipped (DAPO clip-higher uses 0.28)."""
    kl_coef: float = 0.01
    """c_KL on the k3 estimator of KL(π_θ‖π_ref); 0 loads no reference. 0.01 in Skill1 and SDAR."""
    entropy_coef: float = 0.0
    """c_ent, the entropy bonus; SDAR's value is not published, so it is off by default."""
    drop_zero_variance_groups: bool = True
    """Groups whose rewards are all equal carry no signal and are dropped (and counted)."""
    group_size: int = 8
    """G, rollouts per task online (Skill1's reference run: 8)."""
    old_logprobs: Literal["logged", "current", "recompute"] = "logged"
    """π_old for the ratio: the log-probs recorded at generation ("logged", free and exact for
    on-policy data), the current policy detached ("current": ratio 1, plain policy gradient), or a
    no-grad forward pass at the start of each step ("recompute")."""
    rollout_correction: Literal["none", "tis", "mis", "tis+mis"] = "none"
    """Training–inference mismatch correction (training/correction.py) for rollouts whose log-probs are
    not the trainer's (vLLM): π_old is then the trainer's own no-grad pass, and each token's term is
    weighted by truncated IS (tis), its sequence masked when far off (mis), or both."""
    tis_cap: float = 2.0
    """C in the TIS weight min(π_train/π_rollout, C)."""
    mis_low: float = 0.5
    """Sequences whose geometric-mean ratio π_train/π_rollout is below this are masked (mis)."""
    mis_high: float = 2.0
    """... or above this."""

    # -- SDAR -------------------------------------------------------------
    sdar_beta: float = 5.0
    """β in the gate g = sigmoid(β·δ)."""
    sdar_coef: float = 0.01
    """λ on L_SDAR."""
    sdar_prefix: str = "[Privileged Skill Information]\n{skill}\n\n"
    """Privileged context prepended to the teacher's prompt."""

    # -- Skill1 credit -------------------------------------------
    skill1_rerank_coef: float = 0.3
    """λ1 on J_rerank."""
    skill1_distill_coef: float = 0.3
    """λ2 on J_distill."""
    skill1_rerank_phases: list[str] = Field(default_factory=lambda: ["rerank"])
    skill1_distill_phases: list[str] = Field(default_factory=lambda: ["distill"])
    """Tokens of any other phase (query, act, ...) are utilization tokens, credited from r."""

    # -- Dual-Track GRPO ---------------------------------------
    dual_schema_coef: float = 0.25
    """w_sch."""
    dual_answer_coef: float = 1.0
    """w_ans."""
    dual_adv_clip: float = 10.0
    """Both advantages are clipped to ±this."""
    dual_schema_key: str = "schema"
    dual_answer_keys: list[str] = Field(default_factory=lambda: ["answer"])
    """Reward components summed into the answer track (e.g. ["execution", "format"])."""
    dual_propose_phase: str = "propose_schema"

    # -- SFT (supervised fine-tuning on good trajectories) ---------------------------------------
    sft_min_reward: float = 1.0
    """Trajectories whose reward is at least this are imitated (every generated token, advantage 1, no
    group baseline): rejection-sampling fine-tuning on logged runs, or plain SFT on demonstrations
    (`agentkit.training.demonstrations`); the others are left out. SFT takes π_old = the current policy,
    so its loss is the token-mean negative log-likelihood."""

    # -- nested runs (agents called as tools, handoffs) -----------------------------------------
    credit_nested: Literal["outer", "inner", "both"] = "outer"
    """Whose tokens a run's outcome trains when the run started other agents' runs (`Trajectory.children`):
    "outer" the top-level run's only (its child runs are left out), "inner" its child runs' only (at any depth),
    "both" all of them. A child run carries its top-level run's reward, group and advantage on every track: the
    group statistics are the top-level runs' alone, so adding children changes no advantage
    (training/credit.py)."""

    # -- optimiser ------------------------------------------------------------------------------
    lr: float = 1e-6
    """Skill1's reference run: 1e-6 (full fine-tuning of a 7B model); LoRA usually wants ~1e-5–1e-4."""
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = 0
    max_grad_norm: float = 1.0
    lora: LoraConfig = Field(default_factory=LoraConfig)

    # -- batching -------------------------------------------------------------------------------
    groups_per_step: int = 2
    """Task groups per optimiser step (Skill1's batch 16 = 16 tasks × G rollouts)."""
    micro_batch_size: int = 4
    """Sequences per forward/backward; the step's loss is a token-mean over the whole batch, so the
    result does not depend on this (gradient accumulation)."""
    updates_per_batch: int = 1
    """Optimiser steps on each batch (PPO epochs); > 1 needs old_logprobs = logged or recompute."""
    max_steps: int = 100
    epochs: int = 1
    """Offline: passes over the data (max_steps still bounds the run)."""
    max_seq_len: int = 4096
    """Longer sequences are cut from the right (their tail loses its loss)."""
    logprob_chunk: int = 1024
    """Tokens per chunk in the fused log-prob (never a full-vocabulary float32 tensor for the batch)."""
    gradient_checkpointing: bool = False
    keep_freed_memory: bool = True
    """CPU (glibc): keep freed memory in the process for reuse instead of unmapping and faulting it in
    again, for faster steps (see agentkit.training.allocator). Changes process-wide malloc settings."""
    fsdp: bool = False
    """Under torchrun: shard parameters, gradients and optimizer state across the processes (FSDP2, one
    unit per decoder layer) instead of replicating them. Ignored in one process."""
    share_prompts: bool = True
    """Run a prompt shared by several sequences (a task's G samples) through the model once per
    micro-batch and continue from its KV cache; same result, less compute. Off with gradient
    checkpointing (which cannot keep a cache)."""

    # -- precision, seed ------------------------------------------------------------------------
    dtype: Literal["auto", "fp32", "bf16"] = "auto"
    """auto: bf16 autocast on GPUs that support it, fp32 otherwise."""
    seed: int = 0

    # -- checkpoints, logging -------------------------------------------------------------------
    save_every: int = 50
    keep_checkpoints: int = 2
    tensorboard: bool = False
    wandb_project: str | None = None
    progress: bool = True

    # -- online ---------------------------------------------------------------------------------
    tasks_per_step: int = 2
    """Online: tasks sampled per step; each is rolled out group_size times."""
    max_new_tokens: int = 128
    temperature: float = 1.0
    max_turns: int = 6
    """Agent steps per online episode."""
    rollout_concurrency: int = 1
    """Online: episodes of a step played at once against the rollout engine (a serving engine such as
    vLLM batches them; 1 plays them one after another). The environment's `reset` must then be thread-safe."""
    max_staleness: int = 0
    """Online: 0 alternates rollouts and updates (synchronous). s > 0 plays the rollouts of step k+1 while
    step k updates (asynchronous, one process), from weights at most s optimiser steps older than the step
    that trains on them; staler rollouts are never used (training/online.py)."""

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if self.clip_low < 0 or self.clip_high < 0:
            raise ValueError("clip_low and clip_high must be ≥ 0")
        if self.micro_batch_size < 1 or self.groups_per_step < 1:
            raise ValueError("micro_batch_size and groups_per_step must be ≥ 1")
        if self.algo == "sft":
            if "old_logprobs" in self.model_fields_set and self.old_logprobs != "current":
                raise ValueError("sft imitates: its ratio is to the current policy (old_logprobs = 'current')")
            self.old_logprobs = "current"
        if self.updates_per_batch > 1 and self.old_logprobs == "current":
            raise ValueError("updates_per_batch > 1 needs old_logprobs = 'logged' or 'recompute'")
        if self.rollout_concurrency < 1:
            raise ValueError("rollout_concurrency must be ≥ 1")
        if self.max_staleness < 0:
            raise ValueError("max_staleness must be ≥ 0 (0: synchronous rollouts)")
        if self.temperature <= 0:
            raise ValueError("temperature must be > 0 (training needs sampled tokens and their log-probs)")
        return self

    # -- files ----------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> TrainConfig:
        """Read a YAML (.yaml/.yml), TOML (.toml) or JSON file; `overrides` win over the file."""
        path = Path(path)
        text = path.read_text()
        if path.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text) or {}
        elif path.suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            raise ValueError(f"config {path} must end in .yaml, .yml, .toml or .json")
        if not isinstance(data, dict):
            raise ValueError(f"config {path} must hold a mapping of settings, got {type(data).__name__}")
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(data)

    def save(self, path: str | Path) -> None:
        """Write the configuration as YAML or JSON (by suffix)."""
        path = Path(path)
        data = self.model_dump(mode="json")
        if path.suffix in (".yaml", ".yml"):
            import yaml

            path.write_text(yaml.safe_dump(data, sort_keys=False))
        else:
            path.write_text(json.dumps(data, indent=2))
