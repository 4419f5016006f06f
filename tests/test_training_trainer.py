"""The trainer on a tiny random Llama: logged log-probs, LoRA/full runs, accumulation, NaN guard, exact resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from agentkit.messages import Message
from agentkit.models.tiny import tiny_llama
from agentkit.training.config import LoraConfig, TrainConfig
from agentkit.training.logprobs import naive_logprobs, sequence_logprobs
from agentkit.training.rollout import sample_completions
from agentkit.training.sequences import build_sequences, collate
from agentkit.training.trainer import Trainer
from agentkit.trajectory import Trajectory, append_jsonl

torch.set_num_threads(1)


def token_reward(ids: list[int]) -> float:
    """A reward that depends on what was sampled (a hash of the token ids in [0, 1])."""
    return (sum(ids) % 11) / 10


def sampled(model, tok, *, tasks: int = 3, group: int = 4, seed: int = 0, max_new: int = 6) -> list[Trajectory]:
    prompts = [tok(f"Task {i}: write a short word.")["input_ids"] for i in range(tasks)]
    gen = torch.Generator().manual_seed(seed)
    records = sample_completions(model, prompts, n=group, max_new_tokens=max_new, temperature=1.0, generator=gen)
    out = []
    for k, rec in enumerate(records):
        task = k // group
        t = Trajectory(task=f"task {task}", task_id=f"t{task}")
        text = tok.decode(rec.completion_ids)
        t.add_turn(Message.assistant(text), phase="act", tokens=rec)
        t.answer = text
        t.reward = token_reward(rec.completion_ids)
        out.append(t)
    # one more group whose rewards are all equal: no signal, dropped and counted
    for rec in records[:2]:
        t = Trajectory(task="flat", task_id="flat", reward=1.0)
        t.add_turn(Message.assistant("x"), phase="act", tokens=rec)
        out.append(t)
    return out


@pytest.fixture(scope="module")
def data() -> list[Trajectory]:
    model, tok = tiny_llama(seed=0)
    return sampled(model, tok)


def cfg(**kw) -> TrainConfig:
    base = dict(lr=1e-2, max_steps=2, groups_per_step=2, micro_batch_size=3, save_every=0, progress=False,
                kl_coef=0.0, lora=LoraConfig(r=4, alpha=8))
    base.update(kw)
    return TrainConfig(**base)


def test_logged_logprobs_equal_training_forward(data: list[Trajectory]) -> None:
    model, _ = tiny_llama(seed=0)
    batch = collate(build_sequences(data[:12]), pad_id=2)
    with torch.no_grad():
        lp, _ = sequence_logprobs(model, batch, chunk=5)
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
        naive, _ = naive_logprobs(logits[batch.rows, batch.cols], batch.targets, batch.temperatures)
    assert torch.allclose(lp, naive, atol=1e-5)
    assert torch.allclose(lp, batch.old_logprobs, atol=1e-4)  # rollout and trainer see the same tokens


def test_shared_prompt_forward_equals_plain(data: list[Trajectory]) -> None:
    model, _ = tiny_llama(seed=0)
    seqs = build_sequences(data[:12])
    seqs[5].input_ids += [7, 8]  # a longer row in a group: padding inside the suffix pass
    seqs[5].loss_mask += [1, 0]
    seqs[5].old_logprobs += [0.0, 0.0]
    seqs[5].temperatures += [1.0, 1.0]
    seqs[5].turn_ids += [0, -1]
    batch = collate(seqs, pad_id=2)
    params = [p for p in model.parameters()]
    results = []
    for share in (False, True):
        lp, ent = sequence_logprobs(model, batch, chunk=7, with_entropy=True, share_prompts=share)
        grads = torch.autograd.grad((lp * torch.linspace(-1, 1, lp.numel())).sum() + ent.mean(), params)
        results.append((lp.detach(), ent.detach(), grads))
    assert torch.allclose(results[0][0], results[1][0], atol=1e-5)
    assert torch.allclose(results[0][1], results[1][1], atol=1e-5)
    for a, b in zip(results[0][2], results[1][2], strict=True):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)


def test_offline_grpo_lora_run(data: list[Trajectory], tmp_path: Path) -> None:
    model, tok = tiny_llama(seed=0)
    trainer = Trainer(model, cfg(kl_coef=0.01, entropy_coef=0.001), tokenizer=tok, out_dir=tmp_path)
    before = {n: p.clone() for n, p in trainer.policy.named_parameters() if p.requires_grad}
    summary = trainer.fit(data)
    assert summary["steps"] == 2 and summary["groups_dropped"] == 1 and summary["groups_used"] == 3
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2]
    first = records[0]
    assert first["ratio_max"] == pytest.approx(1.0, abs=1e-3)  # on-policy data: π_θ = π_old at step 1
    assert first["kl"] == pytest.approx(0.0, abs=1e-6)          # LoRA starts at the base weights
    for key in ("loss", "entropy", "clip_frac", "grad_norm", "reward_mean", "pg_loss_main", "lr"):
        assert key in first
    changed = [n for n, p in trainer.policy.named_parameters() if p.requires_grad and not torch.equal(p, before[n])]
    assert changed and all("lora" in n for n in changed)
    ckpt = tmp_path / (tmp_path / "latest").read_text().strip()
    assert (ckpt / "trainable.pt").exists() and (ckpt / "adapter" / "adapter_config.json").exists()
    # the module the rollout model uses is the one being trained (adapters injected in place)
    assert any("lora" in n for n, _ in model.named_parameters())


def test_gradient_accumulation_matches_one_big_batch(data: list[Trajectory], tmp_path: Path) -> None:
    results = []
    for micro in (1, 16):
        model, tok = tiny_llama(seed=0)
        trainer = Trainer(model, cfg(max_steps=1, micro_batch_size=micro, lora=LoraConfig(enabled=False), lr=1e-3,
                                     kl_coef=0.01, entropy_coef=0.01, max_grad_norm=1e9),
                          tokenizer=tok, out_dir=tmp_path / f"m{micro}")
        grads: list[torch.Tensor] = []

        def capture(grads: list[torch.Tensor] = grads, params: list = trainer.params) -> None:  # no update
            grads.extend(p.grad.clone() for p in params)

        trainer.optimizer.step = capture
        rec = trainer.train_on(data[:8])
        results.append((rec["loss"], rec["kl"], grads))
    assert results[0][0] == pytest.approx(results[1][0], abs=1e-6)
    assert results[0][1] == pytest.approx(results[1][1], abs=1e-7)
    for a, b in zip(results[0][2], results[1][2], strict=True):
        assert torch.allclose(a, b, atol=1e-6, rtol=1e-4)


def test_nan_loss_skips_the_step(data: list[Trajectory], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    model, tok = tiny_llama(seed=0)
    trainer = Trainer(model, cfg(), tokenizer=tok, out_dir=tmp_path)
    calls = {"n": 0}

    def poison(module, args, output):  # the first forward produces NaN hidden states
        calls["n"] += 1
        return output * float("nan") if calls["n"] == 1 else output

    handle = model.model.layers[0].mlp.register_forward_hook(poison)
    before = [p.clone() for p in trainer.params]
    with caplog.at_level("WARNING"):
        rec = trainer.train_on(data[:8])
    assert rec["skipped"] == 1 and trainer.counters["nan_skipped"] == 1
    assert "skipped" in caplog.text
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.params, strict=True))
    rec = trainer.train_on(data[:8])
    handle.remove()
    assert rec["skipped"] == 0 and trainer.counters["nan_skipped"] == 1
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.params, strict=True))


@pytest.mark.parametrize("lora", [True, False])
def test_resume_continues_exactly(data: list[Trajectory], tmp_path: Path, lora: bool) -> None:
    def run(out: Path, max_steps: int, resume: bool) -> list[dict]:
        model, tok = tiny_llama(seed=0)
        config = cfg(max_steps=max_steps, groups_per_step=1, save_every=2, epochs=3,
                     lora=LoraConfig(enabled=lora, r=4, alpha=8), lr=1e-2 if lora else 1e-3, kl_coef=0.01)
        Trainer(model, config, tokenizer=tok, out_dir=out).fit(data, resume=resume)
        return [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]

    full = run(tmp_path / "a", 5, False)
    run(tmp_path / "b", 2, False)
    resumed = run(tmp_path / "b", 5, True)
    assert [r["step"] for r in resumed] == [1, 2, 3, 4, 5]
    for a, b in zip(full[2:], resumed[2:], strict=True):
        assert a["loss"] == b["loss"] and a["kl"] == b["kl"] and a["grad_norm"] == b["grad_norm"]


def test_rng_of_each_process_is_restored_and_a_changed_process_count_reseeds() -> None:
    from agentkit.training.checkpoint import restore_rng, rng_state

    states = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        states.append(rng_state())
    saved = {"per_process": states}

    def draws(rank: int, world: int) -> tuple[bool, torch.Tensor]:
        return restore_rng(saved, rank, world), torch.rand(4)

    exact, second = draws(1, 2)
    assert exact and torch.equal(second, _rand_after(2))
    # Resumed with three processes: rank 0 continues process 0's stream, the others get their own.
    grown = [draws(rank, 3) for rank in range(3)]
    assert not any(ok for ok, _ in grown)
    assert torch.equal(grown[0][1], _rand_after(1))
    assert len({tuple(x.tolist()) for _, x in grown}) == 3
    assert restore_rng(states[0], 0, 1)  # rng.pt of older checkpoints: one state, not a list


def _rand_after(seed: int) -> torch.Tensor:
    torch.manual_seed(seed)
    return torch.rand(4)


def test_bf16_autocast_step_keeps_fp32_weights_and_logprobs(data: list[Trajectory], tmp_path: Path) -> None:
    records = {}
    for dtype in ("fp32", "bf16"):
        model, tok = tiny_llama(seed=0)
        trainer = Trainer(model, cfg(dtype=dtype, lora=LoraConfig(enabled=False), lr=1e-3), tokenizer=tok,
                          out_dir=tmp_path / dtype)
        records[dtype] = trainer.train_on(data[:8])
        assert all(p.dtype == torch.float32 for p in trainer.params)  # master weights and AdamW state in fp32
    assert trainer.amp_dtype == torch.bfloat16 and records["fp32"]["skipped"] == records["bf16"]["skipped"] == 0
    fp32, bf16 = records["fp32"], records["bf16"]
    assert bf16["loss"] != fp32["loss"]  # the bf16 matmuls ran...
    assert bf16["grad_norm"] == pytest.approx(fp32["grad_norm"], rel=0.02)  # ...and moved the gradient a little


def test_sdar_skill1_dual_track_steps(data: list[Trajectory], tmp_path: Path) -> None:
    model, tok = tiny_llama(seed=0)
    rec = Trainer(model, cfg(algo="sdar"), tokenizer=tok, out_dir=tmp_path / "s").train_on(data[:8])
    assert rec["sdar_tokens"] > 0 and 0.0 < rec["gate_mean"] < 1.0 and "delta_mean" in rec
    for t in data[:8]:
        t.rewards = {"schema": t.reward, "answer": 1.0 - t.reward}
    model, tok = tiny_llama(seed=0)
    rec = Trainer(model, cfg(algo="dual-track"), tokenizer=tok, out_dir=tmp_path / "d").train_on(data[:8])
    assert rec["pg_loss_answer"] != 0.0 and rec["pg_loss_schema"] == 0.0  # no propose turn: empty schema mask
    model, tok = tiny_llama(seed=0)
    rec = Trainer(model, cfg(algo="skill1"), tokenizer=tok, out_dir=tmp_path / "k").train_on(data[:8])
    assert set(k for k in rec if k.startswith("pg_loss_")) == {"pg_loss_util", "pg_loss_rerank", "pg_loss_distill"}


def test_config_files_and_errors(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("algo: sdar\nsdar_beta: 3.0\nlora:\n  r: 8\n")
    (tmp_path / "c.toml").write_text('algo = "dual-track"\nclip_high = 0.28\n')
    assert TrainConfig.load(tmp_path / "c.yaml").sdar_beta == 3.0
    assert TrainConfig.load(tmp_path / "c.toml", lr=1e-5).clip_high == 0.28
    c = TrainConfig()
    assert (c.clip_low, c.kl_coef, c.sdar_beta, c.sdar_coef, c.skill1_rerank_coef, c.dual_schema_coef,
            c.dual_adv_clip) == (0.2, 0.01, 5.0, 0.01, 0.3, 0.25, 10.0)
    (tmp_path / "bad.yaml").write_text("algo: grpo\nlearning_rate: 1\n")
    with pytest.raises(ValueError, match="learning_rate"):
        TrainConfig.load(tmp_path / "bad.yaml")


def test_jsonl_input_and_clear_error_without_signal(data: list[Trajectory], tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    for t in data[12:]:
        append_jsonl(log, t)
    model, tok = tiny_llama(seed=0)
    with pytest.raises(ValueError, match="equal rewards"):
        Trainer(model, cfg(), tokenizer=tok, out_dir=tmp_path / "o").fit([str(log)])


def test_a_model_with_an_adapter_trains_that_adapter_on(data: list[Trajectory], tmp_path: Path) -> None:
    """`local:BASE+ADAPTER` (and `local:default`, the base with its shipped adapter) trains the adapter it
    runs: the same LoRA weights at the start, no second adapter, and a KL reference that is the start policy
    (the adapter on), not the base weights."""
    import peft
    from safetensors.torch import load_file

    model, tok = tiny_llama(seed=0)
    model.save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    torch.manual_seed(1)
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft.get_peft_model(model, config).save_pretrained(tmp_path / "adapter")  # A and B random: not the base
    start = load_file(tmp_path / "adapter" / "adapter_model.safetensors")

    trainer = Trainer(f"local:{tmp_path / 'base'}+{tmp_path / 'adapter'}", cfg(kl_coef=0.05), out_dir=tmp_path / "run")
    assert trainer.policy is trainer.local.peft
    trained = {n.replace(".default", ""): p for n, p in trainer.policy.named_parameters() if p.requires_grad}
    assert set(trained) == set(start)
    assert all(torch.equal(trained[n], start[n]) for n in start)
    trainer.fit(data)
    first = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert first["kl"] == pytest.approx(0.0, abs=1e-6)  # π_ref is the start policy, adapter included
    saved = load_file(tmp_path / "run" / (tmp_path / "run" / "latest").read_text().strip() / "adapter"
                      / "adapter_model.safetensors")
    assert set(saved) == set(start) and any(not torch.equal(saved[n], start[n]) for n in start)
