"""A peft LoRA adapter written as a GGUF LoRA file, so llama.cpp runs `local:BASE+ADAPTER` at its own speed.

    path = gguf_adapter(Path("learn-runs/a/adapter"), base_gguf)   # adapter/adapter.gguf, rebuilt when stale

The adapter was trained on the torch model that `transformers` builds from the same GGUF (the trainer's
model), so its layer names are Hugging Face's (`model.layers.3.self_attn.q_proj`) and its weights are in
Hugging Face's layout. The file written here names each pair as llama.cpp does (`blk.3.attn_q.weight.lora_a`
and `.lora_b`, A of shape r x in, B of shape out x r) and, for architectures whose GGUF query and key rows
are permuted for rotary embeddings (llama), permutes B's rows the same way. llama.cpp scales the
product by alpha / r, as peft does (rsLoRA's alpha / sqrt(r) is folded into the alpha written).
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from agentkit.models.adapter import load_weights, weights_file
from agentkit.models.protocol import ModelConfigError

GGUF_NAMES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
"""Hugging Face module names in a decoder layer → llama.cpp's tensor names."""

ROPE_PERMUTED = frozenset({"llama"})
"""Architectures whose GGUF q/k weights have their rows permuted (convert_hf_to_gguf's rotary layout)."""

ADAPTER_FILE = "adapter.gguf"
_KEY = re.compile(r"layers\.(\d+)\.(\w+\.\w+)\.lora_([AB])(?:\.default)?\.weight$")


def gguf_adapter(adapter_dir: Path, base_gguf: Path) -> Path:
    """The GGUF LoRA file for the peft adapter in `adapter_dir` on `base_gguf`: `adapter_dir/adapter.gguf`,
    written (atomically) when missing or older than the adapter's weights."""
    out = adapter_dir / ADAPTER_FILE
    if out.is_file() and out.stat().st_mtime_ns >= weights_file(adapter_dir).stat().st_mtime_ns:
        return out
    return export_gguf_lora(adapter_dir, base_gguf, out)


def export_gguf_lora(adapter_dir: Path, base_gguf: Path, out: Path) -> Path:
    """Write the peft LoRA adapter in `adapter_dir` as a GGUF LoRA file `out` for the model `base_gguf`."""
    import gguf
    import numpy as np

    config = _adapter_config(adapter_dir)
    rank = int(config["r"])
    alpha = float(config.get("lora_alpha", rank))
    if config.get("use_rslora"):
        alpha *= math.sqrt(rank)  # peft scales by alpha / sqrt(r); llama.cpp by alpha / r
    stat = Path(base_gguf).stat()
    base = _base_model(str(base_gguf), stat.st_size, stat.st_mtime_ns)
    pairs: dict[str, dict[str, Any]] = {}
    for key, tensor in load_weights(adapter_dir).items():
        match = _KEY.search(key)
        if match is None or match.group(2) not in GGUF_NAMES:
            raise ModelConfigError(f"adapter {adapter_dir}: llama.cpp cannot run a LoRA on {key!r} (only the "
                                   f"attention and MLP projections: {', '.join(GGUF_NAMES)})")
        layer, module, side = match.groups()
        name = f"blk.{layer}.{GGUF_NAMES[module]}.weight"
        value = tensor.float().numpy()
        if side == "B" and base.arch in ROPE_PERMUTED and module in ("self_attn.q_proj", "self_attn.k_proj"):
            value = _rope_permute(value, base.n_head if module == "self_attn.q_proj" else base.n_head_kv)
        pairs.setdefault(name, {})[side] = value
    for name, pair in pairs.items():
        base.check(name, pair, adapter_dir)
    writer = gguf.GGUFWriter(str(out) + ".tmp", base.arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    for name in sorted(pairs):
        writer.add_tensor(f"{name}.lora_a", np.ascontiguousarray(pairs[name]["A"], dtype=np.float32))
        writer.add_tensor(f"{name}.lora_b", np.ascontiguousarray(pairs[name]["B"], dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(str(out) + ".tmp", out)
    return out


@functools.lru_cache(maxsize=4)
def _base_model(path: str, size: int, mtime_ns: int) -> _BaseModel:
    """The base GGUF's facts, read once per file version (RL exports an adapter after every step)."""
    return _BaseModel.read(Path(path))


def _rope_permute(rows: Any, n_head: int) -> Any:
    """Reorder the output rows of a q/k weight (or LoRA B) into llama.cpp's rotary layout: within each
    head, the two halves of the head dimension are interleaved."""
    shape = rows.shape
    return rows.reshape(n_head, 2, shape[0] // n_head // 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


class _BaseModel:
    """What the export needs from the base GGUF: its architecture, head counts and tensor shapes."""

    def __init__(self, arch: str, n_head: int, n_head_kv: int, shapes: dict[str, tuple[int, ...]]) -> None:
        self.arch, self.n_head, self.n_head_kv, self.shapes = arch, n_head, n_head_kv, shapes

    @classmethod
    def read(cls, path: Path) -> _BaseModel:
        import gguf

        try:
            reader = gguf.GGUFReader(str(path))
        except (OSError, ValueError) as exc:
            raise ModelConfigError(f"cannot read the base model {path}: {exc}") from exc

        def field(key: str) -> Any:
            found = reader.get_field(key)
            if found is None:
                raise ModelConfigError(f"the base model {path} has no {key!r}")
            return found.contents()

        arch = str(field("general.architecture"))
        n_head = int(field(f"{arch}.attention.head_count"))
        kv = reader.get_field(f"{arch}.attention.head_count_kv")
        shapes = {t.name: tuple(int(n) for n in reversed(t.shape)) for t in reader.tensors}  # numpy order
        return cls(arch, n_head, int(kv.contents()) if kv is not None else n_head, shapes)

    def check(self, name: str, pair: dict[str, Any], adapter_dir: Path) -> None:
        """Both halves present and shaped for this model's weight `name` (out x in)."""
        if set(pair) != {"A", "B"}:
            raise ModelConfigError(f"adapter {adapter_dir}: {name} has lora_{''.join(pair)} but not its pair")
        shape = self.shapes.get(name)
        a, b = pair["A"], pair["B"]
        fits = shape is not None and len(shape) == 2 and (b.shape[0], a.shape[1]) == shape
        if not fits or a.shape[0] != b.shape[1]:
            raise ModelConfigError(f"adapter {adapter_dir} does not fit this base model: {name} is {shape}, the "
                                   f"adapter's A is {a.shape} and B is {b.shape}")


def _adapter_config(adapter_dir: Path) -> dict[str, Any]:
    path = adapter_dir / "adapter_config.json"
    try:
        config: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelConfigError(f"{adapter_dir} is not a LoRA adapter folder ({path.name}: {exc})") from exc
    if config.get("use_dora"):
        raise ModelConfigError(f"adapter {adapter_dir} is a DoRA adapter; llama.cpp runs plain LoRA "
                               "(use engine='torch')")
    if "r" not in config:
        raise ModelConfigError(f"adapter {adapter_dir}: {path.name} names no rank r")
    return config

