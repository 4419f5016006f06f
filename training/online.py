"""Online training: alternate rollouts with the current policy and updates.

Each step takes `tasks_per_step` tasks (in a seeded order, epoch after epoch), plays each one
`group_size` times through the agent loop with the rollout engine's model, scores the runs with the
environment, appends them to OUT/rollouts.jsonl, drops groups whose rewards are all equal (counted),
and makes one batch update on the rest; then the rollout engine is synced with the new weights.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from agentkit.training import distributed as dist
from agentkit.training.credit import group_id, informative_groups
from agentkit.training.rollout import LocalRollout
from agentkit.training.steps import permutation, progress
from agentkit.trajectory import Trajectory, append_jsonl

if TYPE_CHECKING:
    from agentkit.environments.base import Environment, Task
    from agentkit.training.trainer import Trainer

log = logging.getLogger(__name__)


def fit_online(trainer: Trainer, env: Environment, tasks: Sequence[Task] | None = None) -> dict[str, Any]:
    """Run online training until `max_steps`; returns the last metrics record."""
    from agentkit.agent import DEFAULT_INSTRUCTIONS, Agent
    from agentkit.environments.base import run_episode
    from agentkit.models.protocol import GenerationSettings

    cfg = trainer.config
    if trainer.fsdp and trainer.rollout is not None:
        raise NotImplementedError(
            "online training with sharded weights (fsdp) rolls out with the local sampler only: shipping "
            "gathered weights to a rollout engine such as vLLM is not implemented. Drop the engine, or fsdp."
        )
    if trainer.rollout is None:
        if trainer.local is None:
            from agentkit.models.local import LocalModel

            trainer.local = LocalModel(trainer.module, trainer.tokenizer, name="local:policy")
        trainer.rollout = LocalRollout(trainer.local)
    engine = trainer.rollout
    task_list = list(tasks if tasks is not None else env.tasks())
    if not task_list:
        raise ValueError(f"environment {getattr(env, 'name', env)!r} has no tasks")
    settings = GenerationSettings(temperature=cfg.temperature, max_tokens=cfg.max_new_tokens, logprobs=True)

    def make_agent(tools: list[Any]) -> Agent:
        instructions = getattr(env, "instructions", None) or DEFAULT_INSTRUCTIONS
        return Agent(engine.model(), tools, instructions=instructions, max_steps=cfg.max_turns, settings=settings)

    rollouts_path = trainer.out_dir / "rollouts.jsonl"
    last: dict[str, Any] = {}
    with progress(cfg.progress and dist.is_main(), cfg.max_steps, trainer.step) as advance:
        while trainer.step < cfg.max_steps:
            perm = permutation(len(task_list), cfg.seed + trainer.position["epoch"])
            cursor = trainer.position["cursor"]
            if cursor >= len(perm):
                trainer.position = {"epoch": trainer.position["epoch"] + 1, "cursor": 0}
                continue
            take = [task_list[i] for i in perm[cursor : cursor + cfg.tasks_per_step]]
            trainer.position = {"epoch": trainer.position["epoch"], "cursor": cursor + len(take)}
            trainer.policy.eval()
            batch: list[Trajectory] = []
            # Sharded: every process gathers the whole policy for its rollouts and frees it afterwards.
            whole = dist.whole_weights(trainer.scorer) if trainer.fsdp else contextlib.nullcontext()
            jobs = [task for task in take[dist.rank() :: dist.world_size()]  # each process rolls out its share
                    for _ in range(cfg.group_size)]
            started = time.perf_counter()
            with whole:
                batch = play(jobs, lambda task: run_episode(make_agent, env, task,
                                                            metadata={"train_step": trainer.step}),
                             cfg.rollout_concurrency, engine)
            rollout_s = time.perf_counter() - started
            batch = dist.gather_objects(batch)
            if dist.is_main():
                for traj in batch:
                    append_jsonl(rollouts_path, traj)
            last = train_rollouts(trainer, batch, rollout_s=rollout_s)
            engine.sync(trainer.policy, trainer.step)
            advance(trainer.step, last)
    if trainer.step > trainer._last_saved:
        trainer.save()
    return last


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


def train_rollouts(trainer: Trainer, batch: list[Trajectory], *, rollout_s: float | None = None) -> dict[str, Any]:
    """Update on one batch of fresh rollouts (dropping groups without signal) and log the step.

    A batch where every group is uninformative still counts as a step (no update; `skipped_no_signal`)
    so a run cannot loop forever on a task set it never solves or always solves.
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
    trainer._after_step(record)
    return record
