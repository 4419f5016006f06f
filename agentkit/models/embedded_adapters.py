"""LoRA adapters shipped inside agentkit for an embedded model: `local:default` is one of them on its base.

| name (`local:NAME`)                   | base                 | adapter                                       |
|---------------------------------------|----------------------|-----------------------------------------------|
| `default`, `qwen2.5-coder-1.5b-tools` | `qwen2.5-coder-1.5b` | tool LoRA (`make tool-lora-1.5b-serial`), r=8 |
| `qwen2.5-coder-1.5b-sql`              | `qwen2.5-coder-1.5b` | the tool LoRA trained further on the draft    |
|                                       |                      | agent's own SQL runs (`make sql-lora-1.5b`);  |
|                                       |                      | `agentkit sql`'s model                        |
| `qwen2.5-coder-0.5b-tools`            | `qwen2.5-coder-0.5b` | tool LoRA (`make tool-lora`), r=16            |

Each adapter ships as one packed file (`agentkit/models/adapters/KEY.q4.safetensors`, `packed_adapter`: the
LoRA factors in 4 bits; 4.8 MB for the 0.5B's, whose fp16 peft folder is 17.6 MB, and 5.0 MB for the 1.5B's).
Before use the file is checked by size and sha256 and unpacked once into the agentkit home
(`$AGENTKIT_HOME/models/KEY/adapter/`, a peft folder, where the llama.cpp engine writes its GGUF LoRA beside it).
The home copy carries a stamp with the packed file's sha256 and its own files' sizes and modification times, as
the assembled GGUF does: a copy that changed since (a killed write, an edit) or came from another packed file is
unpacked again. A damaged packed file gives an error that says how to restore it. `make tool-lora-1.5b-serial`
rebuilds the default's adapter from scratch with the recipe it was made by (about 110 minutes on two cores, 17 GB
of RAM), `make sql-lora-1.5b` the SQL agent's from the default's (about 3.5 hours), `make tool-lora` the 0.5B's (45
minutes).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from agentkit.home import agentkit_home
from agentkit.models.embedded import sha256_of
from agentkit.models.protocol import ModelConfigError

PACKAGED = Path(__file__).parent / "adapters"
_STAMP = "agentkit-unpacked.json"
_FILES = ("adapter_config.json", "adapter_model.safetensors")


@dataclass(frozen=True)
class EmbeddedAdapter:
    """A packed LoRA adapter shipped with agentkit (`PACKAGED/file`), pinned by size and sha256."""

    key: str
    base: str  # the embedded model it was trained on (`embedded.EMBEDDED_MODELS` key)
    recipe: str
    file: str
    size: int
    sha256: str


EMBEDDED_ADAPTERS: Mapping[str, EmbeddedAdapter] = MappingProxyType({
    "qwen2.5-coder-0.5b-tools": EmbeddedAdapter(
        key="qwen2.5-coder-0.5b-tools",
        base="qwen2.5-coder-0.5b",
        recipe="make tool-lora (scripts/train_tool_lora.py: 480 synthetic tool conversations, 60 steps, r=16), "
               "packed to 4 bits in groups of 64",
        file="qwen2.5-coder-0.5b-tools.q4.safetensors",
        size=4_770_280,
        sha256="1d2be6974356e9578ee5c2d11ea6e753507b306338f9879281220b2fe96c689e",
    ),
    "qwen2.5-coder-1.5b-tools": EmbeddedAdapter(
        key="qwen2.5-coder-1.5b-tools",
        base="qwen2.5-coder-1.5b",
        recipe="make tool-lora-1.5b-serial (scripts/train_tool_lora.py --mix serial: 240 synthetic tool "
               "conversations, chains and chats among them, 30 steps, r=8), packed to 4 bits in groups of 64",
        file="qwen2.5-coder-1.5b-tools.q4.safetensors",
        size=5_016_048,
        sha256="ceda6715e042bfa5e1a873d11864db7e7e69e9ba411ba59bfe712f251a5f7c39",
    ),
    "qwen2.5-coder-1.5b-sql": EmbeddedAdapter(
        key="qwen2.5-coder-1.5b-sql",
        base="qwen2.5-coder-1.5b",
        recipe="make sql-lora-1.5b (the 1.5B tool LoRA continued by SFT on the draft agent's own verified SQL "
               "drafts on the train split's databases: rejection sampling, expert iteration, rationalisation; "
               "r=8), packed to 4 bits in groups of 64",
        file="qwen2.5-coder-1.5b-sql.q4.safetensors",
        size=5_016_048,
        sha256="f91b6626f049d9f3080621188ba3f19d1e5402d13cb297133064c3ccc924a7d1",
    ),
})
MODEL_ADAPTERS: Mapping[str, str] = MappingProxyType({
    "": "qwen2.5-coder-1.5b-tools", "default": "qwen2.5-coder-1.5b-tools",
    "qwen2.5-coder-1.5b-tools": "qwen2.5-coder-1.5b-tools", "qwen2.5-coder-1.5b-sql": "qwen2.5-coder-1.5b-sql",
    "qwen2.5-coder-0.5b-tools": "qwen2.5-coder-0.5b-tools",
})
"""Embedded model names that come with an adapter (every other name is its bare base)."""

_lock = threading.Lock()


def builtin_adapter(name: str) -> Path | None:
    """The verified adapter folder of the embedded model `name` (`default`), or None for a bare model."""
    key = MODEL_ADAPTERS.get(name.strip().lower())
    return adapter_folder(EMBEDDED_ADAPTERS[key]) if key else None


def adapter_folder(spec: EmbeddedAdapter, source: Path | None = None) -> Path:
    """The home copy of `spec` (packed file from `source`, default the packaged folder) as a peft folder,
    unpacked when missing, stale or damaged; raises `ModelConfigError` naming the file when the packed one
    does not match its pinned size and sha256."""
    from agentkit.models.packed_adapter import unpack_adapter

    packed = (source or PACKAGED) / spec.file
    target = agentkit_home() / "models" / spec.key / "adapter"
    with _lock:
        if _intact(target, spec):
            return target
        if not _matches(packed, spec.size, spec.sha256):
            found = packed.stat().st_size if packed.is_file() else "no"
            raise ModelConfigError(
                f"the shipped adapter {spec.key} is damaged: {packed} has {found} bytes or the wrong sha256 "
                f"(expected {spec.size} bytes, {spec.sha256[:16]}…). Restore it: git checkout -- {packed} in a "
                "clone, or pip install --force-reinstall agentkit")
        tmp = target.with_name(f".adapter.tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        unpack_adapter(packed, tmp)
        (tmp / _STAMP).write_text(json.dumps({"packed_sha256": spec.sha256, "files": _stamps(tmp)}))
        shutil.rmtree(target, ignore_errors=True)  # stale or damaged: its GGUF LoRA goes with it
        os.replace(tmp, target)
    return target


def _stamps(folder: Path) -> dict[str, list[int]]:
    return {name: [(st := (folder / name).stat()).st_size, st.st_mtime_ns] for name in _FILES}


def _intact(target: Path, spec: EmbeddedAdapter) -> bool:
    try:
        stamp = json.loads((target / _STAMP).read_text())
        return bool(stamp.get("packed_sha256") == spec.sha256 and stamp.get("files") == _stamps(target))
    except (OSError, ValueError, AttributeError):
        return False


def _matches(path: Path, size: int, sha256: str) -> bool:
    try:
        return path.stat().st_size == size and sha256_of(path) == sha256
    except OSError:
        return False
