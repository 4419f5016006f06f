"""The trainer: wires sequences, credit, log-probs and losses into optimiser steps.

    trainer = Trainer("local:smollm2-135m", TrainConfig(algo="grpo"), out_dir="ckpt")
    trainer.fit(read_jsonl("runs/a.jsonl"))     # offline: logged trajectories, grouped by task id
    trainer.fit(environment)                    # online: rollouts with the current policy, then updates

One step (`train_on`): build one sequence per chain of turns from the recorded token ids (of the runs and, as
`TrainConfig.credit_nested` says, of the agents' runs they started: `credit.nested_batch`), attach each
token's advantage per track (`credit`), run the no-grad passes it needs (reference for KL, teacher for
SDAR, old log-probs when recomputed), then forward/backward micro-batch by micro-batch with every
loss a token-mean over the WHOLE batch, clip the gradient norm and step — unless a loss or the
gradient is NaN/inf, in which case the step is skipped, counted and warned about.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import random
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import nn

from agentkit.environments.base import Environment, Task
from agentkit.extras import require
from agentkit.training import checkpoint as ckpt
from agentkit.training import distributed as dist
from agentkit.training.advantages import group_id
from agentkit.training.algorithms import teacher_for
from agentkit.training.allocator import keep_freed_memory
from agentkit.training.config import TrainConfig
from agentkit.training.correction import rollout_correction
from agentkit.training.credit import assign_credit, descendants, informative_groups, nested_batch
from agentkit.training.logprobs import TokenLogProbs, decoder_layers
from agentkit.training.metrics import MetricsLog
from agentkit.training.objective import Denominators, StepInputs, StepSums, micro_batch_loss, step_record, sync_sums
from agentkit.training.registry import TeacherPass
from agentkit.training.rollout import RolloutEngine
from agentkit.training.sequences import MissingTokensError, PackedBatch, TokenSequence, build_sequences, collate
from agentkit.training.steps import permutation, progress
from agentkit.trajectory import Trajectory

if TYPE_CHECKING:
    from agentkit.models.local import LocalModel

log = logging.getLogger(__name__)

TrainingSource = Environment | str | Path | Sequence[str | Path] | Sequence[Trajectory]
"""What `Trainer.fit` trains on: an environment (online), JSONL log paths, or trajectories (offline)."""


class Trainer:
    """Trains a local causal LM with GRPO, SDAR, Skill1 credit or Dual-Track GRPO.

    Args:
        model: "local:NAME", a `LocalModel` (its module is trained in place, so its next generation
            uses the new weights), or a torch causal LM together with `tokenizer`. A model that runs a
            LoRA adapter (`local:BASE+ADAPTER`) trains that adapter on; full fine-tuning
            merges it in first.
        config: a `TrainConfig` (defaults if omitted).
        out_dir: checkpoints, metrics.jsonl and online rollouts go here.
        rollout: a `RolloutEngine` for online training (default: `LocalRollout` on the same module).
    """

    def __init__(self, model: str | LocalModel | nn.Module, config: TrainConfig | None = None, *,
                 tokenizer: Any = None, out_dir: str | Path = "ckpt", rollout: RolloutEngine | None = None) -> None:
        self.config = config or TrainConfig()
        cfg = self.config
        self.local, self.module, self.tokenizer = _resolve_model(model, tokenizer)
        self.out_dir = Path(out_dir)
        device = dist.setup()
        if device is not None:
            self.module.to(device)
        random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        running = getattr(self.local, "peft", None)  # the adapter a local model runs (local:BASE+ADAPTER)
        if running is not None and not cfg.lora.enabled:  # full fine-tuning starts from the merged weights
            running.merge_and_unload()
            self.local.peft = running = None
        if running is not None:  # continue training the adapter: the policy the model acts with
            for name, p in running.named_parameters():
                p.requires_grad_("lora_" in name)
            self.policy: nn.Module = running
        elif cfg.lora.enabled:
            require("peft", extra="local", feature="LoRA training")
            import peft

            lora = peft.LoraConfig(r=cfg.lora.r, lora_alpha=cfg.lora.alpha, lora_dropout=cfg.lora.dropout,
                                   target_modules=list(cfg.lora.target_modules), task_type="CAUSAL_LM")
            self.policy = peft.get_peft_model(self.module, lora)  # injects into self.module in place
        else:
            self.policy = self.module
            for p in self.policy.parameters():
                p.requires_grad_(True)
        if cfg.gradient_checkpointing:
            self.policy.gradient_checkpointing_enable()  # type: ignore[operator]
            if cfg.lora.enabled:
                self.policy.enable_input_require_grads()  # type: ignore[operator]
        self.device = next(self.policy.parameters()).device
        self.pad_id = _pad_id(self.tokenizer)
        frozen_ref = None  # KL: a frozen copy of the start weights (a fresh LoRA: the adapter turned off)
        if cfg.kl_coef > 0 and (not cfg.lora.enabled or running is not None):
            frozen_ref = copy.deepcopy(self.policy).eval().requires_grad_(False)
        # Every forward that scores tokens goes through these modules (the FSDP roots when sharded).
        self.scorer = TokenLogProbs(self.policy)
        self._ref_scorer = TokenLogProbs(frozen_ref) if frozen_ref is not None else None
        self.fsdp = cfg.fsdp and dist.active()
        if self.fsdp:
            dist.shard(self.scorer, decoder_layers(self.policy))
            if frozen_ref is not None and self._ref_scorer is not None:
                dist.shard(self._ref_scorer, decoder_layers(frozen_ref))
            self._warm_up_shards()
        self.params = [p for p in self.policy.parameters() if p.requires_grad]
        # Fused AdamW: one kernel over all parameters (7× faster than the loop on CPU); FSDP: per-tensor.
        fast = {"foreach": True} if self.fsdp else {"fused": True}
        self.optimizer = torch.optim.AdamW(self.params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay,
                                           **fast)
        if self.device.type == "cpu" and cfg.keep_freed_memory:
            keep_freed_memory()
        warm = max(0, cfg.warmup_steps)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: min(1.0, (s + 1) / (warm + 1)))
        if dist.active():  # same initial weights everywhere (seeded above); different rollout samples per process
            torch.manual_seed(cfg.seed + 1000 * dist.rank())
        self.amp_dtype = _amp_dtype(cfg.dtype, self.device)
        # Sharded, every process must run the same passes: a prompt-sharing pass count varies with the data.
        self._share_prompts = cfg.share_prompts and not cfg.gradient_checkpointing and not self.fsdp
        self.rollout: RolloutEngine | None = rollout
        self.step = 0
        self.position = {"epoch": 0, "cursor": 0}
        self.counters = {"nan_skipped": 0, "groups_dropped": 0, "groups_used": 0, "trajectories_skipped": 0}
        self.metrics: MetricsLog | None = None
        self._last_saved = 0

    # -- public API -----------------------------------------------------------------------------
    def fit(self, source: TrainingSource, *, resume: bool | str | Path = False,
            tasks: Sequence[Task] | None = None) -> dict[str, Any]:
        """Train on logged trajectories (a list, or JSONL paths) or online against an `Environment`.

        `resume=True` continues from the newest checkpoint in `out_dir` (or from the given path).
        Returns a summary: steps, counters, and the last metrics record.
        """
        if resume:
            self.resume(None if resume is True else resume)
        if dist.is_main():
            self.metrics = MetricsLog(self.out_dir, tensorboard=self.config.tensorboard,
                                      wandb_project=self.config.wandb_project,
                                      resume_step=self.step if resume or self.step else None,  # fit again: append
                                      run_config=self.config.model_dump(mode="json"))
        try:
            if isinstance(source, Environment):
                from agentkit.training.online import fit_online

                last = fit_online(self, source, tasks)
            else:
                last = self._fit_offline(_load_trajectories(source))
        finally:
            if self.metrics is not None:
                self.metrics.close()
        return {"steps": self.step, **self.counters, "last": last}

    def train_on(self, trajectories: Sequence[Trajectory]) -> dict[str, Any]:
        """One batch: `updates_per_batch` optimiser steps on these trajectories. Returns the metrics."""
        cfg = self.config
        t0 = time.perf_counter()
        batch = nested_batch(trajectories, cfg)  # with their child runs, as `credit_nested` says
        seqs = build_sequences(batch.trajectories, max_len=cfg.max_seq_len, include=batch.credited)
        if not seqs:
            raise ValueError("no trainable tokens in this batch (every completion is empty or cut off)")
        tracks, reward_stats = assign_credit(batch.trajectories, seqs, cfg,
                                             roots=None if cfg.credit_nested == "outer" else batch.roots)
        teacher = teacher_for(cfg)
        prefixes = self._teacher_prefixes(teacher, batch.trajectories, seqs) if teacher is not None else None
        # Same prompts next to each other (they share a forward pass), then by length (less padding).
        order = sorted(range(len(seqs)), key=lambda i: (_first_prompt(seqs[i]), len(seqs[i])))
        order = order[dist.rank() :: dist.world_size()]
        micro = [order[i : i + cfg.micro_batch_size] for i in range(0, len(order), cfg.micro_batch_size)]
        n_real = len(micro)
        if self.fsdp:  # sharded, every process runs as many passes: pad with passes that contribute nothing
            micro += [micro[-1] if micro else [0]] * (dist.max_int(n_real, self.device) - n_real)
        batches = [collate([seqs[i] for i in m], pad_id=self.pad_id).to(self.device) for m in micro]
        teacher_tokens = None if prefixes is None else sum(float(seqs[i].n_generated) for i in order if prefixes[i])
        denom = Denominators.of(batches[:n_real], tracks, teacher_tokens, self.device)
        ref_lp = self._no_grad_logprobs(batches, reference=True) if cfg.kl_coef > 0 else None
        teacher_lp = None
        if prefixes is not None:
            teacher_batches = [collate([seqs[i] for i in m], pad_id=self.pad_id,
                                       prefixes=[prefixes[i] for i in m]).to(self.device) for m in micro]
            teacher_lp = self._no_grad_logprobs(teacher_batches)
        old_lp = [b.old_logprobs for b in batches] if cfg.old_logprobs == "logged" else None
        if cfg.old_logprobs == "recompute" or cfg.rollout_correction != "none":
            old_lp = self._no_grad_logprobs(batches)
        weights, correction = self._correction_weights(batches[:n_real], old_lp)
        inputs = StepInputs(tracks=tracks, denom=denom, old_lp=old_lp, ref_lp=ref_lp, teacher=teacher,
                            teacher_lp=teacher_lp, weights=weights)

        record: dict[str, Any] = {}
        mismatch: dict[str, Any] = {}
        for update in range(cfg.updates_per_batch):
            record = self._update(batches[:n_real], batches[n_real:], inputs)
            if update == 0:  # before any update on this batch the trainer's log-probs are π_train itself
                mismatch = record
        record.update({k: v for k, v in mismatch.items() if k.startswith("mismatch_")}, **correction)
        record.update(reward_stats)
        record.update(n_trajectories=len(trajectories), n_sequences=len(seqs), time_s=time.perf_counter() - t0)
        return record

    def resume(self, path: str | Path | None = None) -> Path:
        """Restore weights, optimizer, scheduler, RNG, step and data position from a checkpoint."""
        found = ckpt.latest_checkpoint(path or self.out_dir)
        if found is None:
            raise FileNotFoundError(f"no checkpoint to resume from in {path or self.out_dir}")
        state = ckpt.load_checkpoint(found, model=self.policy, optimizer=self.optimizer, scheduler=self.scheduler)
        self.step = int(state["step"])
        self._last_saved = self.step
        self.position = dict(state.get("position", self.position))
        self.counters.update(state.get("counters", {}))
        log.info("resumed from %s at step %d", found, self.step)
        return found

    def save(self) -> Path:
        """Write a checkpoint of the current step (atomically)."""
        import yaml

        self._last_saved = self.step
        final = self.out_dir / f"{ckpt.CKPT_PREFIX}{self.step:06d}"
        gathered = dist.full_state(self.policy, self.optimizer) if self.fsdp else None  # every process takes part
        rng_states = dist.gather_objects([ckpt.rng_state()])
        if not dist.is_main():
            dist.barrier()
            return final
        path = ckpt.save_checkpoint(
            self.out_dir, self.step, model=self.policy, optimizer=self.optimizer, scheduler=self.scheduler,
            gathered=gathered, rng_states=rng_states,
            state={"position": self.position, "counters": self.counters},
            config_yaml=yaml.safe_dump(self.config.model_dump(mode="json"), sort_keys=False),
            tokenizer=self.tokenizer, keep=self.config.keep_checkpoints,
        )
        dist.barrier()
        return path

    # -- one optimiser step ---------------------------------------------------------------------
    def _correction_weights(self, batches: list[PackedBatch], train_lp: list[torch.Tensor] | None
                            ) -> tuple[list[torch.Tensor] | None, dict[str, float]]:
        """TIS / MIS weights of each micro-batch's tokens (training/correction.py), or None when off."""
        cfg = self.config
        if cfg.rollout_correction == "none" or train_lp is None:
            return None, {}
        weights, fractions = [], {"tis_clipped_frac": 0.0, "mis_masked_frac": 0.0}
        for k, b in enumerate(batches):
            w, stats = rollout_correction(train_lp[k], b.old_logprobs, b.seq_of_token, mode=cfg.rollout_correction,
                                          tis_cap=cfg.tis_cap, mis_low=cfg.mis_low, mis_high=cfg.mis_high)
            weights.append(w)
            for key, value in stats.items():
                fractions[key] += value / len(batches)
        return weights, fractions

    def _update(self, batches: list[PackedBatch], padding: list[PackedBatch], inputs: StepInputs) -> dict[str, Any]:
        """One optimiser step over the micro-batches (`padding`: FSDP passes that only keep step)."""
        self.policy.train()
        self.optimizer.zero_grad(set_to_none=True)
        sums = StepSums()
        finite = self._accumulate_gradients(batches, padding, inputs, sums)
        if not self.fsdp:  # sharded, `_all_finite` already agreed on every pass
            finite = dist.all_true(finite, self.device)
        sync_sums(sums, inputs, self.device)
        grad_norm = self._apply_gradients(finite, sums.sums.get("loss", math.nan))
        record: dict[str, Any] = {"step": self.step, "skipped": int(not math.isfinite(grad_norm)),
                                  "grad_norm": grad_norm, "lr": self.scheduler.get_last_lr()[0],
                                  "n_tokens": int(inputs.denom.all)}
        record.update(step_record(sums, inputs))
        record.update(self.counters)
        return record

    def _accumulate_gradients(self, batches: list[PackedBatch], padding: list[PackedBatch], inputs: StepInputs,
                              sums: StepSums) -> bool:
        """Forward and backward every micro-batch; False (and stop) at the first non-finite loss."""
        for k, b in enumerate(batches + padding):
            with self._autocast():
                logp, ent = self.scorer(b, chunk=self.config.logprob_chunk, with_entropy=True,
                                        share_prompts=self._share_prompts)
            if k >= len(batches):  # a pass only to keep step with the other processes' gathers (FSDP)
                loss = (logp.sum() + ent.sum()) * 0.0
            else:
                loss = micro_batch_loss(logp, ent, b, k, inputs, self.config, sums)
            if not self._all_finite(loss):
                return False
            loss.backward()
        return True

    def _apply_gradients(self, finite: bool, loss: float) -> float:
        """Sum, clip and apply the gradients, or skip the step when the loss or the gradient is not finite.
        Returns the gradient norm (NaN for a skipped step)."""
        grad_norm = float("nan")
        if finite:
            if not self.fsdp:  # FSDP has already summed them into the shards
                dist.sum_gradients(self.params)
            norm = torch.nn.utils.clip_grad_norm_(self.params, self.config.max_grad_norm)
            grad_norm = float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)
            finite = math.isfinite(grad_norm)
        self.step += 1
        if finite:
            self.optimizer.step()
            self.scheduler.step()
        else:
            self.counters["nan_skipped"] += 1
            log.warning("step %d skipped: non-finite %s (skipped so far: %d)", self.step,
                        "gradient" if math.isfinite(loss) else "loss", self.counters["nan_skipped"])
        self.optimizer.zero_grad(set_to_none=True)
        return grad_norm

    # -- helpers --------------------------------------------------------------------------------
    def _warm_up_shards(self) -> None:
        """One tiny no-grad forward through each sharded root: FSDP settles which module is its root on
        the first forward, which must go through the root (rollouts call the inner LM directly)."""
        probe = TokenSequence(trajectory=0, context="probe", input_ids=[self.pad_id] * 2, loss_mask=[0, 1],
                              old_logprobs=[0.0, 0.0], temperatures=[1.0, 1.0], turn_ids=[-1, 0])
        batch = collate([probe], pad_id=self.pad_id).to(self.device)
        with torch.no_grad():
            for scorer in (self.scorer, self._ref_scorer):
                if scorer is not None:
                    scorer(batch)
                    scorer.reshard()  # type: ignore[operator]  # FSDP's method; a root keeps its weights gathered after forward; the optimizer needs shards

    def _all_finite(self, loss: torch.Tensor) -> bool:
        """Whether the loss is finite (sharded: on every process, so all skip the step together)."""
        ok = bool(torch.isfinite(loss))
        return dist.all_true(ok, self.device) if self.fsdp else ok

    def _no_grad_logprobs(self, batches: list[PackedBatch], *, reference: bool = False) -> list[torch.Tensor]:
        out = []
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.no_grad())
            scorer = stack.enter_context(self._reference()) if reference else self.scorer
            for b in batches:
                with self._autocast():
                    lp, _ = scorer(b, chunk=self.config.logprob_chunk, share_prompts=self._share_prompts)
                out.append(lp.detach())
        return out

    @contextlib.contextmanager
    def _reference(self) -> Iterator[nn.Module]:
        """π_ref: the base weights (LoRA adapter disabled) or a frozen copy taken at start."""
        if self._ref_scorer is not None:
            yield self._ref_scorer
        else:
            with self.policy.disable_adapter():  # type: ignore[operator]
                yield self.scorer

    def _autocast(self) -> Any:
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

    def _teacher_prefixes(self, teacher: TeacherPass, trajectories: Sequence[Trajectory],
                          seqs: list[TokenSequence]) -> list[list[int]]:
        """The token ids the teacher pass puts before each sequence ([] for none); sets the teacher masks."""
        cache: dict[int, list[int]] = {}
        prefixes = []
        for seq in seqs:
            if seq.trajectory not in cache:
                text = teacher.context(trajectories, seq.trajectory, self.config)
                cache[seq.trajectory] = [] if text is None else self._encode(text)
            prefix = cache[seq.trajectory]
            seq.teacher_mask = [1.0 if prefix else 0.0] * seq.n_generated
            prefixes.append(prefix)
        return prefixes

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _fit_offline(self, trajectories: list[Trajectory]) -> dict[str, Any]:
        cfg = self.config
        usable = []
        inner_only = cfg.credit_nested == "inner"  # the top-level run's own tokens are not trained
        for t in trajectories:
            if t.reward is None or not (t.has_tokens or inner_only):
                self.counters["trajectories_skipped"] += 1
            else:
                usable.append(t)
        if self.counters["trajectories_skipped"]:
            log.warning("%d trajectories skipped (no reward or no token ids)", self.counters["trajectories_skipped"])
        if cfg.credit_nested != "outer" and (bare := sum(not c.has_tokens for t in usable for c in descendants(t))):
            log.warning("%d child runs left out of training: they have no token ids", bare)
        groups: dict[Any, list[Trajectory]] = {}
        for t in usable:
            groups.setdefault(group_id(t), []).append(t)
        keep, dead = informative_groups(usable, cfg) if usable else (set(), set())
        if cfg.drop_zero_variance_groups:
            self.counters["groups_dropped"] = len(dead)
            groups = {g: ts for g, ts in groups.items() if g in keep}
        if not groups:
            raise ValueError(
                f"nothing to train on: {len(trajectories)} trajectories, {self.counters['trajectories_skipped']} "
                f"without reward/tokens, {len(dead)} groups with equal rewards or nothing to imitate (GRPO "
                "needs ≥ 2 runs per task with different rewards; sft needs runs with reward ≥ sft_min_reward = "
                f"{cfg.sft_min_reward})"
            )
        self.counters["groups_used"] = len(groups)
        names = list(groups)
        last: dict[str, Any] = {}
        with progress(cfg.progress and dist.is_main(), cfg.max_steps, self.step) as advance:
            while self.step < cfg.max_steps and self.position["epoch"] < cfg.epochs:
                perm = permutation(len(names), cfg.seed + self.position["epoch"])
                cursor = self.position["cursor"]
                if cursor >= len(perm):
                    self.position = {"epoch": self.position["epoch"] + 1, "cursor": 0}
                    continue
                take = perm[cursor : cursor + cfg.groups_per_step]
                self.position = {"epoch": self.position["epoch"], "cursor": cursor + len(take)}
                batch = [t for i in take for t in groups[names[i]]]
                try:
                    last = self.train_on(batch)
                except MissingTokensError as exc:
                    raise ValueError(f"cannot train on this data: {exc}") from exc
                self._after_step(last)
                advance(self.step, last)
        if self.step > self._last_saved:
            self.save()
        return last

    def _after_step(self, record: dict[str, Any]) -> None:
        if self.metrics is not None:
            self.metrics.write(record)
        every = self.config.save_every
        if every > 0 and self.step // every > self._last_saved // every:
            self.save()


def _resolve_model(model: Any, tokenizer: Any) -> tuple[Any, nn.Module, Any]:
    if isinstance(model, str):
        prefix, _, rest = model.partition(":")
        if prefix != "local" or not rest:
            raise ValueError(f"training needs an in-process model: local:NAME or local:PATH, not {model!r}")
        from agentkit.models import resolve_model
        from agentkit.models.local import LocalModel

        local = cast(LocalModel, resolve_model(model, engine="torch"))  # with the adapter it names (BASE+ADAPTER)
        return local, local.model, local.tokenizer
    inner = getattr(model, "model", None)
    has_tokenizer = getattr(model, "tokenizer", None) is not None
    if isinstance(inner, nn.Module) and has_tokenizer and not isinstance(model, nn.Module):
        return model, inner, model.tokenizer
    if isinstance(model, nn.Module):
        if tokenizer is None:
            raise ValueError("a torch model needs its tokenizer: Trainer(model, config, tokenizer=tok)")
        return None, model, tokenizer
    raise TypeError(f"cannot train {type(model).__name__}: pass local:NAME, a LocalModel or a torch causal LM")


def _first_prompt(seq: Any) -> tuple[int, ...]:
    return tuple(seq.input_ids[: seq.loss_mask.index(1)])


def _load_trajectories(source: Any) -> list[Trajectory]:
    from agentkit.trajectory import read_jsonl

    if isinstance(source, str | Path):
        return read_jsonl([source])
    items = list(source)
    if items and all(isinstance(x, str | Path) for x in items):
        return read_jsonl(items)
    if not all(isinstance(x, Trajectory) for x in items):
        raise TypeError("fit() takes trajectories, JSONL paths or an environment")
    return items


def _amp_dtype(setting: str, device: torch.device) -> torch.dtype | None:
    if setting == "fp32":
        return None
    if setting == "bf16":
        return torch.bfloat16
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return None


def _pad_id(tokenizer: Any) -> int:
    for attr in ("pad_token_id", "eos_token_id"):
        value = getattr(tokenizer, attr, None)
        if isinstance(value, int):
            return value
    return 0
