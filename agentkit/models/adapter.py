"""A local base model with a LoRA adapter on top, named `local:BASE+ADAPTER_DIR`.

    model = resolve_model("local:smollm2-135m+learn-runs/a/adapter")   # base by name or path, adapter folder

The adapter is a peft folder (adapter_config.json + weights), as `agentkit train` and `agentkit learn`
write it. On the torch engine its LoRA layers are injected into the base module in place, so the
`LocalModel` runs them; on llama.cpp (the default for GGUF models) it runs as a GGUF LoRA written beside
it (`gguf_lora`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentkit.models.protocol import ModelConfigError


def split_adapter_spec(spec: str) -> tuple[str, Path | None]:
    """"BASE+ADAPTER" → (BASE, Path(ADAPTER)); "BASE" → (BASE, None)."""
    base, plus, adapter = spec.partition("+")
    if not plus:
        return spec, None
    if not base or not adapter:
        raise ModelConfigError(f"model {spec!r}: name a base and an adapter folder, as local:BASE+ADAPTER_DIR")
    return base, Path(adapter).expanduser()


def check_adapter_dir(adapter: Path) -> Path:
    """`adapter`, if it is a peft adapter folder; a clear error otherwise."""
    if not (adapter / "adapter_config.json").is_file():
        raise ModelConfigError(f"{adapter} is not a LoRA adapter folder (no adapter_config.json); give the "
                               "adapter/ folder that agentkit learn or agentkit train wrote")
    return adapter


def weights_file(adapter: Path) -> Path:
    """The weights file of the peft adapter folder `adapter` (safetensors, or an older .bin)."""
    for name in ("adapter_model.safetensors", "adapter_model.bin"):
        if (adapter / name).is_file():
            return adapter / name
    raise ModelConfigError(f"{adapter} holds no adapter weights (adapter_model.safetensors)")


def load_weights(adapter: Path) -> dict[str, Any]:
    """The peft adapter folder's weights by name, as CPU tensors."""
    path = weights_file(adapter)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return dict(load_file(str(path)))
    import torch

    return dict(torch.load(path, map_location="cpu", weights_only=True))


def load_with_adapter(base: str, adapter: Path, **options: Any) -> Any:
    """Load the local model `base` on the torch engine and put the LoRA adapter in `adapter` onto it (kept as
    `LocalModel.peft`, which a `Trainer` given this model continues to train)."""
    check_adapter_dir(adapter)
    try:
        import peft
    except ImportError as exc:
        raise ModelConfigError("a model with an adapter needs peft: pip install 'agentkit[local]'") from exc
    from agentkit.models.local import LocalModel

    options.setdefault("name", f"local:{base}+{adapter}")
    local = LocalModel.load(base, **options)
    try:
        local.peft = peft.PeftModel.from_pretrained(local.model, str(adapter))  # injects the LoRA layers in place
    except (ValueError, KeyError, RuntimeError) as exc:
        raise ModelConfigError(f"adapter {adapter} does not fit the base model {base!r}: {exc}") from exc
    local.adapter = adapter
    local.model.eval()
    local.reset_cache()
    return local
