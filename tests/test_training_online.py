"""Online training (rollouts with the current policy between updates), the CLI and the report."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from agentkit.environments.base import StepResult, Task
from agentkit.messages import Message, ToolCall
from agentkit.models.tiny import tiny_llama, tiny_local_model
from agentkit.training.config import LoraConfig, TrainConfig
from agentkit.training.rollout import LocalRollout, RolloutEngine, sample_completions
from agentkit.training.trainer import Trainer
from agentkit.trajectory import Trajectory, append_jsonl, read_jsonl

torch.set_num_threads(1)


@dataclass
class LengthEpisode:
    """Reply length scored: reward = (number of characters mod 5) / 4, a graded signal for a random model."""

    task: Task
    observation: str = ""
    done: bool = False
    calls: list[ToolCall] = field(default_factory=list)

    @property
    def tools(self) -> list:
        return []

    def step(self, call: ToolCall) -> StepResult:
        return StepResult("no tools here")

    def score(self, trajectory: Trajectory) -> dict[str, float]:
        return {"reward": (len(trajectory.answer or "") % 5) / 4}

    def close(self) -> None:
        self.done = True


class LengthEnv:
    name = "length"

    def identity(self) -> str:
        return "length"

    def tasks(self) -> list[Task]:
        words = ["cats", "rain", "tea", "snow"]
        return [Task(id=f"t{i}", prompt=f"Say something about {w}.") for i, w in enumerate(words)]

    def reset(self, task: Task) -> LengthEpisode:
        return LengthEpisode(task)


def test_online_rollouts_use_the_updated_policy(tmp_path: Path) -> None:
    local = tiny_local_model(seed=0)
    config = TrainConfig(lr=5e-2, max_steps=2, tasks_per_step=2, group_size=3, max_new_tokens=6, max_turns=1,
                         micro_batch_size=6, save_every=1, progress=False, kl_coef=0.0, lora=LoraConfig(r=4, alpha=8))
    trainer = Trainer(local, config, out_dir=tmp_path)
    assert isinstance(LocalRollout(local), RolloutEngine)
    summary = trainer.fit(LengthEnv())
    assert summary["steps"] == 2
    rollouts = read_jsonl(tmp_path / "rollouts.jsonl")
    assert len(rollouts) == 12 and all(t.has_tokens and t.reward is not None for t in rollouts)
    assert {t.metadata["train_step"] for t in rollouts} == {0, 1}
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    updated = [r for r in records if not r.get("skipped_no_signal")]
    assert updated, "no batch had reward variance"
    for r in updated:
        # π_old is the logged log-prob of the rollout: ratio 1 means the rollout used the current weights
        assert abs(r["ratio_max"] - 1.0) < 1e-3
    assert (tmp_path / "ckpt-000002" / "trainable.pt").exists()


def test_cli_train_and_report(tmp_path: Path) -> None:
    from agentkit.cli.main import app

    model, tok = tiny_llama(seed=0)
    model.save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    prompts = [tok(f"Question {i}?")["input_ids"] for i in range(2)]
    records = sample_completions(model, prompts, n=3, max_new_tokens=5, generator=torch.Generator().manual_seed(0))
    for k, rec in enumerate(records):
        t = Trajectory(task=f"q{k // 3}", task_id=f"q{k // 3}", reward=float(k % 3))
        t.add_turn(Message.assistant("x"), phase="act", tokens=rec)
        append_jsonl(tmp_path / "runs" / f"log{k % 2}.jsonl", t)
    out = tmp_path / "out"
    runner = CliRunner()
    result = runner.invoke(app, ["train", "--data", str(tmp_path / "runs" / "*.jsonl"), "--model",
                                 f"local:{tmp_path / 'tiny'}", "--algo", "grpo", "--out", str(out),
                                 "--max-steps", "2", "--groups-per-step", "1", "--lr", "0.01", "--checkpointing"])
    assert result.exit_code == 0, result.output
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2
    assert (out / "config.yaml").exists() and (out / "latest").exists()
    assert "gradient_checkpointing: true" in (out / "config.yaml").read_text()
    result = runner.invoke(app, ["train", "report", str(out)])
    assert result.exit_code == 0, result.output
    png = out / "report.png"
    assert png.exists() and png.read_bytes()[:4] == b"\x89PNG"
    bad = runner.invoke(app, ["train", "--data", str(tmp_path / "nothing*.jsonl"), "--out", str(out)])
    assert bad.exit_code != 0 and "matches no file" in bad.output


def test_online_training_with_sharded_weights_refuses_an_outside_rollout_engine(tmp_path: Path) -> None:
    model, tok = tiny_llama(seed=0)
    trainer = Trainer(model, TrainConfig(progress=False, save_every=0), tokenizer=tok, out_dir=tmp_path,
                      rollout=LocalRollout(tiny_local_model(seed=1)))
    trainer.fsdp = True  # as under torchrun with fsdp: true
    with pytest.raises(NotImplementedError, match="vLLM"):
        trainer.fit(LengthEnv())


def test_rollout_sampling_follows_the_distribution() -> None:
    from agentkit.training.rollout import _sample

    logits = torch.tensor([[2.0, 1.0, 0.0, -1e9, 0.5], [0.0, 0.0, 0.0, 0.0, 5.0]])
    logp = torch.log_softmax(logits, -1)
    gen = torch.Generator().manual_seed(0)
    counts = torch.zeros_like(logp)
    for _ in range(4000):
        counts[torch.arange(2), _sample(logp, gen)] += 1
    assert counts[0, 3] == 0  # a token with probability 0 is never drawn
    assert torch.allclose(counts / 4000, logp.exp(), atol=0.03)


def test_metrics_reach_tensorboard(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from agentkit.training.metrics import MetricsLog

    log = MetricsLog(tmp_path, tensorboard=True)
    for step, loss in [(1, 0.5), (2, 0.25)]:
        log.write({"step": step, "loss": loss, "reward_mean": step / 10, "grad_norm": float("nan")})
    log.close()
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert {"loss", "reward_mean"} <= set(events.Tags()["scalars"])
    assert "grad_norm" not in events.Tags()["scalars"]  # a NaN is logged as null in JSONL, skipped here
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(1, 0.5), (2, 0.25)]


def _wandb_history(run_file: Path) -> list[dict[str, float]]:
    """The history rows of an offline wandb run file: a LevelDB-style log of wandb `Record` protobufs."""
    from wandb.proto.wandb_internal_pb2 import Record

    data, rows, pos, chunks = run_file.read_bytes(), [], 7, b""  # a 7-byte file header, then 32 KiB blocks
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        chunks += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a whole record, or the last piece of one
            record = Record.FromString(chunks)
            chunks = b""
            if record.WhichOneof("record_type") == "history":
                rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                             for item in record.history.item})
    return rows


def test_metrics_reach_wandb_and_a_resumed_run_continues_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wandb")
    from agentkit.training.metrics import MetricsLog

    monkeypatch.setenv("WANDB_MODE", "offline")  # written to disk, never sent
    monkeypatch.setenv("WANDB_SILENT", "true")
    log = MetricsLog(tmp_path, wandb_project="agentkit-test", run_config={"lr": 1e-6})
    for step, loss in [(1, 0.5), (2, 0.25)]:
        log.write({"step": step, "loss": loss, "grad_norm": float("nan")})
    log.close()
    time.sleep(1.1)  # wandb names an offline run's folder by the second it started: two runs, two folders
    resumed = MetricsLog(tmp_path, wandb_project="agentkit-test", resume_step=2)
    resumed.write({"step": 3, "loss": 0.125})
    resumed.close()
    run_id = (tmp_path / "wandb-run-id").read_text().strip()
    files = sorted((tmp_path / "wandb").glob("offline-run-*/run-*.wandb"))
    assert [f.name for f in files] == [f"run-{run_id}.wandb"] * 2  # one run, continued
    rows = [_wandb_history(f) for f in files]
    deadline = time.monotonic() + 30  # wandb's service process may still be writing the last record
    while not rows[1] and time.monotonic() < deadline:
        time.sleep(0.5)
        rows = [_wandb_history(f) for f in files]
    assert [(r["_step"], r["loss"]) for r in rows[0]] == [(1, 0.5), (2, 0.25)]
    assert [(r["_step"], r["loss"]) for r in rows[1]] == [(3, 0.125)]
    assert all("grad_norm" not in r for r in rows[0])  # NaN is null in JSONL and not sent


def test_metrics_log_survives_a_torn_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from agentkit.training.metrics import MetricsLog, read_metrics

    log = MetricsLog(tmp_path)
    log.write({"step": 1, "loss": 0.5})
    log.write({"step": 2, "loss": 0.25})
    log.close()
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"step": 3, "lo')  # killed mid-write
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2] and "metrics.jsonl:3" in caplog.text
    appended = MetricsLog(tmp_path, resume_step=3)  # the torn record is dropped; the rest is kept
    appended.write({"step": 3, "loss": 0.125})
    assert [(r["step"], r["loss"]) for r in read_metrics(tmp_path)] == [(1, 0.5), (2, 0.25), (3, 0.125)]
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"step": 4, "lo')
    appended.write({"step": 4, "loss": 0.0625})  # a writer closes a torn line off before its record
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 3, 4]


def test_play_runs_episodes_concurrently_in_task_order() -> None:
    import threading
    import time

    from agentkit.training.online import play

    class Engine:
        made = 0

        def model(self) -> None:
            Engine.made += 1

    active, peak, lock = [0], [0], threading.Lock()
    wave: list[threading.Barrier | None] = [threading.Barrier(4, timeout=30)]  # four at once, however slow to start

    def episode(task: int) -> Trajectory:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        if wave[0] is not None:
            wave[0].wait()
        time.sleep(0.05)  # a fifth episode, if the pool let one in, would be counted here
        with lock:
            active[0] -= 1
        return Trajectory(task=str(task))

    out = play(list(range(8)), episode, 4, Engine())
    assert [t.task for t in out] == [str(i) for i in range(8)]
    assert peak[0] == 4 and Engine.made == 1  # bounded pool; the policy is shipped once, before the pool
    peak[0], wave[0] = 0, None
    assert [t.task for t in play([1, 2], episode, 1, Engine())] == ["1", "2"] and peak[0] == 1
