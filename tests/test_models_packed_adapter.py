"""A LoRA adapter packed to 4 (or 8) bits and unpacked to a peft folder that loads and acts like the original."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from agentkit.models import ModelConfigError
from agentkit.models.packed_adapter import pack_adapter, unpack_adapter

peft = pytest.importorskip("peft")


def _adapter(folder: Path, seed: int = 0) -> Path:
    """A trained-looking LoRA on a tiny random llama: B small, A at its init scale, both nonzero."""
    from agentkit.models.tiny import tiny_llama

    torch.manual_seed(seed)
    model, _ = tiny_llama(seed=seed)
    config = peft.LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"],
                             init_lora_weights=False)
    wrapped = peft.get_peft_model(model, config)
    with torch.no_grad():
        for name, p in wrapped.named_parameters():
            if "lora_B" in name:
                p.mul_(0.01)  # unbalanced like a trained pair: quantising each factor alone wastes levels
    wrapped.save_pretrained(str(folder))
    return folder


def _products(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    w = load_file(str(folder / "adapter_model.safetensors"))
    return {k.split(".lora_A.")[0]: w[k.replace(".lora_A.", ".lora_B.")].float() @ a.float()
            for k, a in w.items() if ".lora_A." in k}


@pytest.mark.parametrize(("bits", "tolerance"), [(4, 0.2), (8, 0.02)])
def test_packed_and_unpacked_the_update_is_kept(tmp_path: Path, bits: int, tolerance: float) -> None:
    source = _adapter(tmp_path / "adapter")
    packed = pack_adapter(source, tmp_path / "packed.safetensors", bits=bits, group=32, base="tiny")
    from safetensors.torch import load_file

    values = sum(t.numel() for t in load_file(str(source / "adapter_model.safetensors")).values())
    stored = sum(t.numel() * t.element_size() for t in load_file(str(packed)).values())
    assert stored <= values * (bits / 8 + 2 / 32)  # `bits` per value plus an fp16 scale per group of 32
    out = unpack_adapter(packed, tmp_path / "unpacked")
    before, after = _products(source), _products(out)
    assert before.keys() == after.keys() and len(before) == 2 * 3
    for name, delta in before.items():
        error = float((after[name] - delta).norm() / delta.norm())
        assert error < tolerance, (name, error)
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["r"] == 8 and config["base_model_name_or_path"] == "tiny"


def test_the_unpacked_adapter_loads_on_its_base_and_changes_it_as_the_original(tmp_path: Path) -> None:
    from agentkit.models.tiny import tiny_llama

    source = _adapter(tmp_path / "adapter")
    out = unpack_adapter(pack_adapter(source, tmp_path / "p.safetensors"), tmp_path / "unpacked")
    ids = torch.tensor([[1, 5, 9, 200, 31]])
    logits = {}
    for name, folder in (("original", source), ("unpacked", out)):
        base, _ = tiny_llama(seed=0)
        logits[name] = peft.PeftModel.from_pretrained(base, str(folder))(ids).logits
    bare, _ = tiny_llama(seed=0)
    plain = bare(ids).logits
    moved = (logits["original"] - plain).norm()
    assert moved > 0 and (logits["unpacked"] - logits["original"]).norm() < 0.2 * moved


def test_what_is_not_a_packed_adapter_is_refused(tmp_path: Path) -> None:
    source = _adapter(tmp_path / "adapter")
    with pytest.raises(ModelConfigError, match="not a packed adapter"):
        unpack_adapter(source / "adapter_model.safetensors", tmp_path / "out")  # a plain peft file
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x00" * 64)
    with pytest.raises(ModelConfigError, match="not a packed adapter file"):
        unpack_adapter(junk, tmp_path / "out")
    with pytest.raises(ValueError, match="bits must be 4 or 8"):
        pack_adapter(source, tmp_path / "x.safetensors", bits=3)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "adapter_config.json").write_text("{}")
    with pytest.raises(ModelConfigError, match="holds no adapter weights"):
        pack_adapter(tmp_path / "empty", tmp_path / "y.safetensors")


def test_the_command_packs_a_folder_and_prints_the_pins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentkit.models.embedded import sha256_of
    from agentkit.models.packed_adapter import main

    source = _adapter(tmp_path / "adapter")
    out = tmp_path / "x.q4.safetensors"
    assert main([str(source), str(out), "--base", "tiny", "--unpack-to", str(tmp_path / "q4")]) == 0
    printed = capsys.readouterr().out
    assert f"{out.stat().st_size} bytes" in printed and sha256_of(out) in printed
    config = json.loads((unpack_adapter(out, tmp_path / "back") / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "tiny"
    unpacked = {f.name: f.read_bytes() for f in (tmp_path / "q4").iterdir()}
    assert unpacked == {f.name: f.read_bytes() for f in (tmp_path / "back").iterdir()}
