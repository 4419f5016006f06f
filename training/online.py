"""Online training: rollouts with the current policy, then an update on them, step after step.

Each step takes `tasks_per_step` tasks (in a seeded order, epoch after epoch), plays each one
`group_size` times through the agent loop with the rollout engine's model (`rollout_concurrency` at a
time), scores the runs with the environment, appends them to OUT/rollouts.jsonl, drops groups whose
rewards are all equal (counted), and makes one batch update on the rest.

Every rollout records its behaviour policy (`agentkit.records.POLICY`): the `version` (optimiser steps)
of the weights that generated it. The engine is synced only between batches, never while one is in
flight, so a run never mixes versions.

- `max_staleness: 0` (synchronous): roll out, update, sync the engine, roll out again; every rollout is
  trained on by the step of its own weights (staleness 0).
- `max_staleness: s > 0` (asynchronous): the rollouts of step k+1 are played while step k updates, from
  weights at most s steps older than the step that trains on them; the engine is synced only when the
  next batch would otherwise be staler than s (s = 1: before every batch; s = 2: every other step).
  A rollout staler than s is never trained on (counted: `trajectories_stale`). The policy-gradient ratio
  is taken against the logged (behaviour) log-probs, so the clipping bounds the off-policy update; the
  rollout correction (TIS/MIS) applies as in synchronous runs. The local engine rolls out from a copy of
  the policy (`SnapshotRollout`); a vLLM engine rolls out from the last shipped adapter.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentkit.records import POLICY, PolicyRecord
from agentkit.training import distributed as dist
from agentkit.training.advantages import group_id
from agentkit.training.credit import informative_groups
from agentkit.training.rollout import LocalRollout, SnapshotRollout
from agentkit.training.steps import permutation, progress
from agentkit.trajectory import Trajectory, append_jsonl

if TYPE_CHECKING:
    from torch import nn

    from agentkit.environments.base import Environment, Task
    from agentkit.training.config import TrainConfig
    from agentkit.training.logprobs import TokenLogProbs
    from agentkit.training.rollout import RolloutEngine

log = logging.getLogger(__name__)


class Trainer(Protocol):
    """What online training needs of its trainer: `agentkit.training.trainer.Trainer`, whose `fit` runs
    `fit_online` for an environment, so this module names the trainer by what it uses."""

    config: TrainConfig
    fsdp: bool
    out_dir: Path
    step: int
    position: dict[str, int]
    counters: dict[str, int]
    policy: nn.Module
    scorer: TokenLogProbs
    module: nn.Module
    tokenizer: Any
    local: Any
    rollout: RolloutEngine | None
    _last_saved: int

    def train_on(self, trajectories: Sequence[Trajectory]) -> dict[str, Any]:
        """One update on scored trajectories; the step's metrics record."""
        ...

    def save(self) -> Path:
        """Write a checkpoint of the current step."""
        ...

    def _after_step(self, record: dict[str, Any]) -> None:
        ...


@dataclass
class RolloutBatch:
    """The rollouts of one step, the policy version that played them, and where the task order stands after."""

    trajectories: list[Trajectory]
    version: int
    position: dict[str, int]
    rollout_s: float


def policy_version(trajectory: Trajectory) -> int | None:
    """The behaviour policy's version recorded on an online rollout (None for other runs)."""
    record = trajectory.records.get(POLICY)
    return None if record is None else record.version


def fit_online(trainer: Trainer, env: Environment, tasks: Sequence[Task] | None = None) -> dict[str, Any]:
    """Run online training until `max_steps`; returns the last metrics record."""
    from agentkit.agent import DEFAULT_INSTRUCTIONS, Agent
    from agentkit.environments.base import run_episode
    from agentkit.models.protocol import GenerationSettings

    cfg = trainer.config
    staleness = cfg.max_staleness
    engine = _engine(trainer, asynchronous=staleness > 0)
    task_list = list(tasks if tasks is not None else env.tasks())
    if not task_list:
        raise ValueError(f"environment {getattr(env, 'name', env)!r} has no tasks")
    settings = GenerationSettings(temperature=cfg.temperature, max_tokens=cfg.max_new_tokens, logprobs=True)
    local_shards = trainer.fsdp and isinstance(engine, LocalRollout)  # rollouts from the gathered shards

    def make_agent(tools: list[Any]) -> Agent:
        instructions = getattr(env, "instructions", None) or DEFAULT_INSTRUCTIONS
        return Agent(engine.model(), tools, instructions=instructions, max_steps=cfg.max_turns, settings=settings)

    def collect(take: list[Task], version: int, position: dict[str, int], use_step: int) -> RolloutBatch:
        jobs = [task for task in take[dist.rank() :: dist.world_size()]  # each process rolls out its share
                for _ in range(cfg.group_size)]
        started = time.perf_counter()
        whole = dist.whole_weights(trainer.scorer) if local_shards else contextlib.nullcontext()
        with whole:
            batch = play(jobs, lambda task: run_episode(make_agent, env, task, metadata={"train_step": use_step}),
                         cfg.rollout_concurrency, engine)
        for trajectory in batch:
            trajectory.records.set(POLICY, PolicyRecord(version=version))
        rollout_s = time.perf_counter() - started
        return RolloutBatch(dist.gather_objects(batch), version, position, rollout_s)

    rollouts_path = trainer.out_dir / "rollouts.jsonl"
    # An engine that holds its own copy of the policy (a snapshot; llama.cpp's LoRA), made before a resume,
    # would hold the weights of before.
    if isinstance(engine, SnapshotRollout) or getattr(engine, "synced_step", trainer.step) != trainer.step:
        engine.sync(trainer.policy, trainer.step)
    engine_version = trainer.step  # the engine samples from the policy as it is now (vLLM: shipped on first use)
    ahead = dict(trainer.position)  # the task order's position after the last batch launched
    last: dict[str, Any] = {}

    def launch(use_step: int) -> Callable[[], RolloutBatch]:
        """Sync the engine if the batch for `use_step` would otherwise be too stale; start playing it."""
        nonlocal engine_version, ahead
        if use_step - engine_version > staleness:
            engine.sync(trainer.policy, trainer.step)
            engine_version = trainer.step
        take, ahead = next_tasks(len(task_list), ahead, cfg.tasks_per_step, cfg.seed)
        trainer.policy.eval()
        engine.model()  # a serving engine ships the policy on first use: here, on every process at once
        args = ([task_list[i] for i in take], engine_version, dict(ahead), use_step)
        if staleness == 0:
            batch = collect(*args)
            return lambda: batch
        future: Future[RolloutBatch] = pool.submit(collect, *args)
        return future.result

    with (progress(cfg.progress and dist.is_main(), cfg.max_steps, trainer.step) as advance,
          ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollouts") as pool):
        if trainer.step < cfg.max_steps:
            pending = launch(trainer.step)
        while trainer.step < cfg.max_steps:
            waited = time.perf_counter()
            batch = pending()
            wait_s = time.perf_counter() - waited
            if staleness > 0 and trainer.step + 1 < cfg.max_steps:
                pending = launch(trainer.step + 1)  # played while this step updates
            trainer.position = batch.position
            if dist.is_main():
                for traj in batch.trajectories:
                    append_jsonl(rollouts_path, traj)
            fresh, dropped = split_stale(batch.trajectories, trainer.step, staleness, batch.version)
            stale = len(dropped)
            trainer.counters["trajectories_stale"] = trainer.counters.get("trajectories_stale", 0) + stale
            if stale:
                log.warning("%d rollouts are staler than max_staleness=%d at step %d: dropped", stale, staleness,
                            trainer.step)
            last = train_rollouts(trainer, fresh, rollout_s=batch.rollout_s,
                                  extra={"policy_version": batch.version, "staleness": trainer.step - batch.version,
                                         "rollout_wait_s": wait_s, "stale_dropped": stale})
            advance(trainer.step, last)
            if staleness == 0 and trainer.step < cfg.max_steps:
                pending = launch(trainer.step)
    if engine_version < trainer.step:  # the engine ends on the trained policy
        engine.sync(trainer.policy, trainer.step)
    if trainer.step > trainer._last_saved:
        trainer.save()
    return last


def split_stale(trajectories: Sequence[Trajectory], step: int, max_staleness: int, default_version: int
                ) -> tuple[list[Trajectory], list[Trajectory]]:
    """(usable, stale) for an update at `step`: a run is stale when `step − version > max_staleness`, its
    version read from its policy record (`default_version` for a run without one)."""
    fresh: list[Trajectory] = []
    stale: list[Trajectory] = []
    for trajectory in trajectories:
        version = policy_version(trajectory)
        age = step - (default_version if version is None else version)
        (fresh if age <= max_staleness else stale).append(trajectory)
    return fresh, stale


def _engine(trainer: Trainer, *, asynchronous: bool) -> Any:
    """The rollout engine: the trainer's, or a local one (a snapshot of the policy when asynchronous)."""
    if asynchronous and dist.active():
        raise NotImplementedError(
            "asynchronous rollouts (max_staleness > 0) run in one process: the rollout thread's collectives "
            "would interleave with the update's across processes. Use max_staleness: 0 under torchrun.")
    if trainer.fsdp and trainer.rollout is not None and not getattr(trainer.rollout, "ships_sharded", False):
        raise NotImplementedError(
            f"online training with sharded weights (fsdp) rolls out with the local sampler or a vLLM server "
            f"(VLLMRollout gathers the adapter on rank 0 and ships it); {type(trainer.rollout).__name__} cannot "
            "take a sharded policy. Drop the engine, or fsdp.")
    if trainer.rollout is None:
        if asynchronous:
            trainer.rollout = SnapshotRollout(trainer.module, trainer.tokenizer)
        else:
            if trainer.local is None:
                from agentkit.models.local import LocalModel

                trainer.local = LocalModel(trainer.module, trainer.tokenizer, name="local:policy")
            trainer.rollout = LocalRollout(trainer.local)
    if asynchronous and getattr(trainer.rollout, "in_place", False):
        raise ValueError(
            "asynchronous rollouts (max_staleness > 0) cannot sample from the module being updated "
            f"({type(trainer.rollout).__name__}): leave Trainer.rollout unset (a SnapshotRollout is made) or "
            "use a serving engine such as VLLMRollout")
    return trainer.rollout


def next_tasks(n_tasks: int, position: dict[str, int], per_step: int, seed: int) -> tuple[list[int], dict[str, int]]:
    """The indices of the next `per_step` tasks in the seeded order from `position`, and the position after."""
    epoch, cursor = position["epoch"], position["cursor"]
    while True:
        perm = permutation(n_tasks, seed + epoch)
        if cursor < len(perm):
            take = perm[cursor : cursor + per_step]
            return take, {"epoch": epoch, "cursor": cursor + len(take)}
        epoch, cursor = epoch + 1, 0


def play(tasks: Sequence[Any], episode: Callable[[Any], Trajectory], concurrency: int, engine: Any
         ) -> list[Trajectory]:
    """Run `episode(task)` for every task, `concurrency` at a time (1: one after another), in task order.

    Concurrent episodes let a serving engine (vLLM) batch their requests; a local engine serialises
    its calls anyway. The engine's model is made once first, so a policy shipped on first use is
    shipped once."""
    if concurrency <= 1 or len(tasks) <= 1:
        return [episode(task) for task in tasks]
    engine.model()
    with ThreadPoolExecutor(max_workers=min(concurrency, len(tasks)), thread_name_prefix="rollout") as pool:
        return list(pool.map(episode, tasks))


def train_rollouts(trainer: Trainer, batch: list[Trajectory], *, rollout_s: float | None = None,
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Update on one batch of fresh rollouts (dropping groups without signal) and log the step.

    A batch where every group is uninformative still counts as a step (no update; `skipped_no_signal`)
    so a run cannot loop forever on a task set it never solves or always solves. `extra` is added to the
    step's metrics record.
    """
    usable = [t for t in batch if t.reward is not None and t.has_tokens]
    trainer.counters["trajectories_skipped"] += len(batch) - len(usable)
    rewards = [t.reward for t in usable if t.reward is not None]
    reward_mean = sum(rewards) / max(1, len(rewards))
    keep, dead = informative_groups(usable, trainer.config) if usable else (set(), set())
    if not trainer.config.drop_zero_variance_groups:
        keep = keep | dead
    else:
        trainer.counters["groups_dropped"] += len(dead)
    kept = [t for t in usable if group_id(t) in keep]
    trainer.counters["groups_used"] += len(keep)
    if kept:
        record = trainer.train_on(kept)
    else:
        trainer.step += 1
        record = {"step": trainer.step, "skipped_no_signal": 1, **trainer.counters}
    record["reward_mean"] = reward_mean  # over every rollout of the step, not only the kept groups
    record["reward_mean_kept"] = sum(t.reward or 0.0 for t in kept) / max(1, len(kept))
    record["rollouts"] = len(batch)
    if rollout_s is not None:
        record["rollout_s"] = rollout_s
        record["rollout_tokens_per_s"] = sum(len(t.completion_ids) for tr in batch for t in tr.turns) / max(rollout_s,
                                                                                                            1e-9)
    record.update(extra or {})
    trainer._after_step(record)
    return record
