"""LoRA adapters shipped inside agentkit for an embedded model: `local:default` is one of them on its base.

| name (`local:NAME`)                      | base (`local:NAME` without it) | adapter                          |
|------------------------------------------|--------------------------------|----------------------------------|
| `default`, `qwen2.5-coder-0.5b-tools`    | `qwen2.5-coder-0.5b`           | tool LoRA run 7 (RESULTS.md), fp16 |

The adapter's files live in the package (`agentkit/models/adapters/NAME/`, a peft folder). Before use each
file is checked by size and sha256 and copied into the agentkit home (`$AGENTKIT_HOME/models/NAME/adapter/`),
where the llama.cpp engine writes its GGUF LoRA beside it; the home copy is checked again on every load. A
damaged file in the package gives an error that says how to restore it; a damaged home copy is replaced.
`make tool-lora` rebuilds the adapter from scratch (45 minutes on two cores) with the recipe it was made by.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from agentkit.home import agentkit_home
from agentkit.models.protocol import ModelConfigError

PACKAGED = Path(__file__).parent / "adapters"


@dataclass(frozen=True)
class EmbeddedAdapter:
    """A peft LoRA folder shipped with agentkit, pinned file by file: name → (size, sha256)."""

    key: str
    base: str  # the embedded model it was trained on (`embedded.EMBEDDED_MODELS` key)
    recipe: str
    files: Mapping[str, tuple[int, str]]


EMBEDDED_ADAPTERS: Mapping[str, EmbeddedAdapter] = MappingProxyType({
    "qwen2.5-coder-0.5b-tools": EmbeddedAdapter(
        key="qwen2.5-coder-0.5b-tools",
        base="qwen2.5-coder-0.5b",
        recipe="make tool-lora (scripts/train_tool_lora.py: 480 synthetic tool conversations, 60 steps, r=16)",
        files=MappingProxyType({
            "adapter_config.json": (529, "6a240e7dcb564f44751e6547ccd606548146581e90606c899d3a3dbdb63045a9"),
            "adapter_model.safetensors": (
                17_640_472, "2e7dd527981f73eae4abbb056313b90049f9262a8892169846f76341605d2166"),
        }),
    ),
})
MODEL_ADAPTERS: Mapping[str, str] = MappingProxyType({
    "": "qwen2.5-coder-0.5b-tools", "default": "qwen2.5-coder-0.5b-tools",
    "qwen2.5-coder-0.5b-tools": "qwen2.5-coder-0.5b-tools",
})
"""Embedded model names that come with an adapter (every other name is its bare base)."""

_lock = threading.Lock()


def builtin_adapter(name: str) -> Path | None:
    """The verified adapter folder of the embedded model `name` (`default`), or None for a bare model."""
    key = MODEL_ADAPTERS.get(name.strip().lower())
    return adapter_folder(EMBEDDED_ADAPTERS[key]) if key else None


def adapter_folder(spec: EmbeddedAdapter, source: Path | None = None) -> Path:
    """The home copy of `spec`'s files (from `source`, default the packaged folder), each checked by size and
    sha256; raises `ModelConfigError` naming the damaged file when the packaged one does not match."""
    source = source or PACKAGED / spec.key
    target = agentkit_home() / "models" / spec.key / "adapter"
    with _lock:
        for name, (size, sha256) in spec.files.items():
            if _matches(target / name, size, sha256):
                continue
            packaged = source / name
            if not _matches(packaged, size, sha256):
                found = packaged.stat().st_size if packaged.is_file() else "no"
                raise ModelConfigError(
                    f"the shipped adapter {spec.key} is damaged: {packaged} has {found} bytes or the wrong sha256 "
                    f"(expected {size} bytes, {sha256[:16]}…). Restore it: git checkout -- {packaged} in a clone, "
                    "or pip install --force-reinstall agentkit")
            target.mkdir(parents=True, exist_ok=True)
            tmp = target / f".{name}.tmp{os.getpid()}"
            shutil.copyfile(packaged, tmp)
            os.replace(tmp, target / name)
    return target


def _matches(path: Path, size: int, sha256: str) -> bool:
    try:
        if path.stat().st_size != size:
            return False
        return hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    except OSError:
        return False
