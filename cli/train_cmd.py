"""`agentkit train`: RL training on logged trajectories or online, and `agentkit train report`.

    agentkit train --data 'runs/*.jsonl' --model local:smollm2-135m --algo grpo --out ckpt/
    agentkit train --env sql --tasks tasks.jsonl --online --group-size 4 --out ckpt/
    agentkit train --config train.yaml --data runs/a.jsonl --resume
    agentkit train report ckpt/                  # curves of reward, loss, KL, entropy, gates, clipping

Command-line options win over the --config file (YAML or TOML, see agentkit.training.config).
Multi-GPU: launch the same command under `torchrun --nproc_per_node N -m agentkit.cli.main train ...`
(see the agentkit.training module docs).
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import typer

from agentkit.cli.eval_cmd import SCHEMA_HELP

ALGOS = ("grpo", "sdar", "skill1", "dual-track", "sft")  # TrainConfig.algo (not imported: it loads torch)

train_app = typer.Typer(help="Train the model on logged runs or online: RL (GRPO, SDAR, Skill1, Dual-Track) or "
                        "SFT on the good runs.",
                        invoke_without_command=True, no_args_is_help=False)


@train_app.callback()
def train(
    ctx: typer.Context,
    data: list[str] = typer.Option(None, "--data", help="Trajectory JSONL files or glob patterns (offline)."),
    model: str = typer.Option(None, "--model", help="local:NAME or local:PATH (default: the local model the --data "
                              "runs were logged with, else local:smollm2-135m)."),
    algo: str = typer.Option(None, "--algo", help="grpo | sdar | skill1 | dual-track | sft (imitate runs with "
                              "reward >= sft_min_reward)."),
    out: Path = typer.Option(Path("ckpt"), "--out", help="Checkpoints, metrics.jsonl and rollouts go here."),
    config: Path = typer.Option(None, "--config", help="A YAML/TOML TrainConfig file."),
    online: bool = typer.Option(False, "--online", help="Roll out with the current policy between updates."),
    env: str = typer.Option(None, "--env", help="Online environment: sql | tooluse | textgame."),
    tasks: Path = typer.Option(None, "--tasks", help="Task file for the environment."),
    schema: str = typer.Option("digest", "--schema", help=SCHEMA_HELP),
    resume: bool = typer.Option(False, "--resume", help="Continue from the newest checkpoint in --out."),
    max_steps: int = typer.Option(None, "--max-steps"),
    lr: float = typer.Option(None, "--lr"),
    group_size: int = typer.Option(None, "--group-size", help="Rollouts per task online (G)."),
    tasks_per_step: int = typer.Option(None, "--tasks-per-step"),
    groups_per_step: int = typer.Option(None, "--groups-per-step"),
    micro_batch: int = typer.Option(None, "--micro-batch"),
    checkpointing: bool = typer.Option(False, "--checkpointing", help="Recompute activations in the backward pass "
                                       "(less memory, slower steps; e.g. a 1.5B model on a 24 GB machine)."),
    save_every: int = typer.Option(None, "--save-every"),
    kl: float = typer.Option(None, "--kl", help="KL coefficient (0 loads no reference)."),
    full: bool = typer.Option(False, "--full", help="Full fine-tuning instead of LoRA."),
    fsdp: bool = typer.Option(False, "--fsdp", help="Under torchrun: shard weights, gradients and optimizer "
                              "state across processes (FSDP2) instead of replicating them."),
    seed: int = typer.Option(None, "--seed"),
    tensorboard: bool = typer.Option(False, "--tensorboard"),
    wandb: str = typer.Option(None, "--wandb", help="wandb project name."),
) -> None:
    """Train on trajectories (--data) or online against an environment (--online --env)."""
    if ctx.invoked_subcommand is not None:
        return
    from rich.console import Console

    from agentkit.training.config import TrainConfig

    console = Console(stderr=True)
    if algo is not None and algo not in ALGOS:
        raise typer.BadParameter(f"--algo must be one of {', '.join(ALGOS)}")
    overrides: dict[str, Any] = {
        "algo": algo, "max_steps": max_steps, "lr": lr, "group_size": group_size, "tasks_per_step": tasks_per_step,
        "groups_per_step": groups_per_step, "micro_batch_size": micro_batch, "save_every": save_every,
        "kl_coef": kl, "seed": seed, "tensorboard": tensorboard or None, "wandb_project": wandb,
        "gradient_checkpointing": checkpointing or None,
    }
    try:
        cfg = TrainConfig.load(config, **overrides) if config else TrainConfig(
            **{k: v for k, v in overrides.items() if v is not None})
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if full:
        cfg.lora.enabled = False
    if fsdp:
        cfg.fsdp = True
    if online or env:
        if not env:
            raise typer.BadParameter("--online needs --env (sql, tooluse or textgame)")
        from agentkit.cli.eval_cmd import load_environment

        source: Any = load_environment(env, tasks, schema=schema)
    else:
        paths = _expand(data or [])
        if not paths:
            raise typer.BadParameter("give --data FILES (trajectory JSONL) or --online --env NAME")
        source = paths
        logged = logged_model(paths)
        if model is None and logged is not None:
            model = logged
            console.print(f"training {model}: the model these runs were logged with")
        elif model is not None and logged is not None and _base(model) != _base(logged):
            raise typer.BadParameter(f"the runs were logged with {logged}, whose token ids are not {model}'s: train "
                                     f"--model {logged} (or log runs with the model you train)")
    model = model or DEFAULT_TRAIN_MODEL

    from agentkit.training import distributed
    from agentkit.training.trainer import Trainer

    trainer = Trainer(model, cfg, out_dir=out)  # joins the process group under torchrun
    main = distributed.is_main()  # under torchrun, rank 0 reports for everyone
    if main:
        out.mkdir(parents=True, exist_ok=True)
        cfg.save(out / "config.yaml")
        if not (online or env):
            console.print(f"training on {len(paths)} log file(s): {', '.join(str(p) for p in paths[:5])}")
    try:
        summary = trainer.fit(source, resume=resume)
    except (ValueError, FileNotFoundError, NotImplementedError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    if not main:
        return
    console.print(
        f"done: {summary['steps']} steps, {summary['groups_used']} groups used, {summary['groups_dropped']} dropped "
        f"(equal rewards), {summary['nan_skipped']} NaN steps skipped; checkpoints and metrics in {out}"
    )


DEFAULT_TRAIN_MODEL = "local:smollm2-135m"


def logged_model(paths: list[Path], max_lines: int = 200) -> str | None:
    """The embedded (`local:`) model the first trajectories in `paths` were logged with, or None (a served model,
    a local path, or no readable line): training must use the model whose token ids the logs hold."""
    import json

    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for _, line in zip(range(max_lines), f, strict=False):
                try:
                    name = json.loads(line).get("model")
                except (ValueError, AttributeError):
                    continue  # a torn or foreign line: the loader reports it
                if isinstance(name, str) and name.startswith("local:"):
                    return name
                if isinstance(name, str) and name:
                    return None
    return None


def _base(model: str) -> str:
    """A local model's embedded base, aliases resolved (`local:default+ADAPTER` → the Qwen key)."""
    from agentkit.models.embedded import ALIASES

    name = model.removeprefix("local:").split("+", 1)[0].strip().lower()
    return ALIASES.get(name, name)


@train_app.command("report")
def report(
    run: Path = typer.Argument(..., help="The --out folder of a training run (holds metrics.jsonl)."),
    png: Path = typer.Option(None, "--png", help="Where to write the figure (default RUN/report.png)."),
) -> None:
    """Plot reward, loss, KL, entropy, SDAR gate statistics and clip fraction to a PNG."""
    from agentkit.training.report import plot_report

    try:
        path = plot_report(run, png)
    except FileNotFoundError as exc:
        raise typer.BadParameter(str(exc)) from exc
    typer.echo(str(path))


def _expand(patterns: list[str]) -> list[Path]:
    out: list[Path] = []
    for pattern in patterns:
        hits = sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]
        if not hits:
            raise typer.BadParameter(f"--data {pattern!r} matches no file")
        for h in hits:
            if not Path(h).is_file():
                raise typer.BadParameter(f"--data {h} is not a file")
            out.append(Path(h))
    return out


def register(app: typer.Typer) -> None:
    """Add `agentkit train` (and `agentkit train report`) to the CLI."""
    app.add_typer(train_app, name="train")
