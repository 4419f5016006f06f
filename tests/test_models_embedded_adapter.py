"""The tool LoRAs shipped in agentkit: `local:default` is the 1.5B Qwen GGUF with one on top
(`local:qwen2.5-coder-0.5b-tools` the 0.5B with its own), the packed file checked (size and sha256) and unpacked
into the home before use; `local:qwen2.5-coder-1.5b` is the bare model."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from agentkit.models import ModelConfigError, resolve_model
from agentkit.models.embedded import EMBEDDED_MODELS, embedded_model
from agentkit.models.embedded_adapters import (
    EMBEDDED_ADAPTERS,
    MODEL_ADAPTERS,
    PACKAGED,
    EmbeddedAdapter,
    adapter_folder,
    builtin_adapter,
)

TOOLS = EMBEDDED_ADAPTERS["qwen2.5-coder-1.5b-tools"]


def _runs_on_llama(base: str) -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and all(
        importlib.util.find_spec(p.package) is not None for p in EMBEDDED_MODELS[base].parts)


DEFAULT_ON_LLAMA = _runs_on_llama(TOOLS.base)


def test_default_names_the_tool_adapter_and_the_base_name_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    monkeypatch.setenv("AGENTKIT_HOME", str(tmp_path))
    folder = builtin_adapter("default")
    assert folder == tmp_path / "models" / TOOLS.key / "adapter"
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in folder.iterdir()}
    assert json.loads((folder / "adapter_config.json").read_text())["base_model_name_or_path"] == TOOLS.base
    assert builtin_adapter("Qwen2.5-Coder-1.5B-Tools") == folder != builtin_adapter("qwen2.5-coder-0.5b-tools")
    assert builtin_adapter("qwen2.5-coder-1.5b") is None and builtin_adapter("smollm2-135m") is None
    assert TOOLS.base in EMBEDDED_MODELS


@pytest.mark.parametrize("spec", EMBEDDED_ADAPTERS.values(), ids=lambda spec: spec.key)
def test_a_damaged_packaged_file_is_refused_naming_it(spec: EmbeddedAdapter, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTKIT_HOME", str(tmp_path / "home"))
    source = tmp_path / "pkg"
    source.mkdir()
    packed = source / spec.file
    data = bytearray((PACKAGED / spec.file).read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one byte altered
    packed.write_bytes(bytes(data))
    with pytest.raises(ModelConfigError, match=rf"{spec.file} .*wrong sha256.*git checkout"):
        adapter_folder(spec, source)
    packed.write_bytes(bytes(data[:-10]))  # truncated
    with pytest.raises(ModelConfigError, match=rf"has {spec.size - 10} bytes"):
        adapter_folder(spec, source)
    assert not (tmp_path / "home" / "models" / spec.key / "adapter").exists()


@pytest.mark.parametrize("spec", EMBEDDED_ADAPTERS.values(), ids=lambda spec: spec.key)
def test_each_shipped_file_is_under_the_repositorys_size_limit(spec: EmbeddedAdapter) -> None:
    assert (PACKAGED / spec.file).stat().st_size == spec.size < 5 * 2**20


def test_every_adapter_name_loads_its_own_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name with an adapter resolves, as an embedded model, to the base that adapter was trained on."""
    monkeypatch.setenv("AGENTKIT_HOME", str(tmp_path))
    for name, key in MODEL_ADAPTERS.items():
        spec = EMBEDDED_ADAPTERS[key]
        base = embedded_model(name)
        assert base is not None and base.key == spec.base, name
        folder = builtin_adapter(name)
        assert folder is not None
        assert json.loads((folder / "adapter_config.json").read_text())["base_model_name_or_path"] == spec.base


def test_a_damaged_home_copy_is_replaced_from_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTKIT_HOME", str(tmp_path))
    folder = builtin_adapter("default")
    assert folder is not None
    peft_files = ("adapter_config.json", "adapter_model.safetensors")  # beside them: the unpacking stamp
    good = {name: (folder / name).read_bytes() for name in peft_files}
    (folder / "adapter_config.json").write_text('{"r": 64}')
    assert builtin_adapter("default") == folder
    assert (folder / "adapter_config.json").read_bytes() == good["adapter_config.json"]
    weights = folder / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])  # a killed copy
    assert builtin_adapter("default") == folder
    assert {name: (folder / name).read_bytes() for name in peft_files} == good


@pytest.mark.parametrize("spec", EMBEDDED_ADAPTERS.values(), ids=lambda spec: spec.key)
def test_an_adapter_name_runs_its_adapter_on_the_base_gguf_and_the_base_name_none(spec: EmbeddedAdapter) -> None:
    if not _runs_on_llama(spec.base):
        pytest.skip(f"needs llama-cpp-python and the {spec.base} parts")
    tuned = resolve_model(f"local:{spec.key}")
    bare = resolve_model(f"local:{spec.base}")
    assert tuned.adapter == builtin_adapter(spec.key) and tuned.lora is not None  # type: ignore[attr-defined]
    assert bare.adapter is None and bare.lora is None  # type: ignore[attr-defined]
    assert tuned.model_path == bare.model_path  # type: ignore[attr-defined]  # one GGUF, shared


@pytest.mark.skipif(not DEFAULT_ON_LLAMA, reason="needs llama-cpp-python and the default model's parts")
def test_local_default_runs_the_default_adapter_or_the_one_given() -> None:
    default = resolve_model("local:default")
    assert default.adapter == builtin_adapter("qwen2.5-coder-1.5b-tools") != builtin_adapter(  # type: ignore[attr-defined]
        "qwen2.5-coder-0.5b-tools")
    other = resolve_model(f"local:default+{builtin_adapter('default')}")
    assert other.adapter == builtin_adapter("default")  # type: ignore[attr-defined]


@pytest.mark.slow
def test_the_torch_engine_runs_the_same_adapter_under_the_models_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """An adapter name on torch: the base with the shipped adapter injected (peft), named as the user named it
    (the 0.5B's: the torch tests load the lighter model)."""
    if importlib.util.find_spec("peft") is None or not all(
            importlib.util.find_spec(p.package) for p in EMBEDDED_MODELS["qwen2.5-coder-0.5b"].parts):
        pytest.skip("needs peft and the Qwen parts")
    name = "local:qwen2.5-coder-0.5b-tools"
    model = resolve_model(name, engine="torch")
    assert model.name == name and model.adapter == builtin_adapter(name[6:])  # type: ignore[attr-defined]
    assert model.peft is not None  # type: ignore[attr-defined]
    assert sum("lora_A" in n for n, _ in model.model.named_parameters()) == 24 * 7  # type: ignore[attr-defined]
