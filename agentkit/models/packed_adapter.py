"""A LoRA adapter packed into few bits, small enough to ship inside the package, and unpacked back to peft.

    pack_adapter(Path("runs/tool-lora/adapter"), Path("tool-lora.q4.safetensors"))   # 17.6 MB fp16 → ~4.7 MB
    unpack_adapter(Path("tool-lora.q4.safetensors"), Path("~/.agentkit/adapters/x"))  # a peft adapter folder

    python -m agentkit.models.packed_adapter runs/tool-lora/adapter tool-lora.q4.safetensors --base qwen2.5-coder-1.5b

Each LoRA pair (A: r x in, B: out x r) is first re-factored so that both factors carry the same scale:
ΔW = B A = U S Vᵀ (thin SVD of the pair, never of the full matrix), A' = √S Vᵀ, B' = U √S. Then every
rank's row of A' and column of B' is cut into groups of `group` values, each group stored as signed
integers of `bits` bits with one fp16 scale (absmax / (2^(bits-1) - 1)). Re-factoring first matters:
a trained pair is unbalanced (B small, A large at init scale), and quantising each factor on its own
scale wastes levels on the small one. The file is safetensors: uint8 codes (two 4-bit codes per byte),
fp16 scales, and the peft `adapter_config.json` in the metadata.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentkit.extras import require
from agentkit.models.adapter import load_weights
from agentkit.models.protocol import ModelConfigError

FORMAT = "agentkit-packed-lora/1"


def pack_adapter(adapter_dir: Path, out: Path, *, bits: int = 4, group: int = 64, base: str | None = None) -> Path:
    """Write the peft LoRA adapter in `adapter_dir` packed to `bits` bits per weight (4 or 8) as `out`;
    `base` replaces the base model the adapter's config names (a path on the machine that trained it)."""
    import torch
    from safetensors.torch import save_file

    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, not {bits}")
    config = json.loads((adapter_dir / "adapter_config.json").read_text())
    if base is not None:
        config["base_model_name_or_path"] = base
    pairs = _pairs(load_weights(adapter_dir))
    tensors: dict[str, torch.Tensor] = {}
    for prefix, (a, b) in pairs.items():
        a_bal, b_bal = _balanced(a.double(), b.double())
        for tag, rows in (("A", a_bal), ("B", b_bal.T)):  # both as (r, n): one rank per row
            tensors[f"{prefix}.{tag}.codes"], tensors[f"{prefix}.{tag}.scales"] = _quantise(rows, bits, group)
    meta = {"format": FORMAT, "bits": str(bits), "group": str(group), "adapter_config": json.dumps(config),
            "shapes": json.dumps({p: [list(a.shape), list(b.shape)] for p, (a, b) in pairs.items()})}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    save_file(tensors, str(tmp), metadata=meta)
    tmp.replace(out)
    return out


def unpack_adapter(packed: Path, out_dir: Path, *, dtype: Any = None) -> Path:
    """Write the adapter packed in `packed` as a peft adapter folder `out_dir` (weights in `dtype`, float32 by
    default: the values the packed codes stand for, unrounded); return `out_dir`."""
    require("torch", "safetensors", extra="local", feature="unpacking a packed LoRA adapter (local:default's)")
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    try:
        with safe_open(str(packed), framework="pt") as f:
            meta = f.metadata() or {}
            stored = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no iterator)
    except Exception as exc:  # safetensors raises its own error types for a damaged header
        raise ModelConfigError(f"{packed} is not a packed adapter file: {exc}") from exc
    if meta.get("format") != FORMAT:
        raise ModelConfigError(f"{packed} is not a packed adapter ({FORMAT}); it says {meta.get('format')!r}")
    bits, shapes = int(meta["bits"]), json.loads(meta["shapes"])
    weights: dict[str, torch.Tensor] = {}
    for prefix, (a_shape, b_shape) in shapes.items():
        a = _dequantise(stored[f"{prefix}.A.codes"], stored[f"{prefix}.A.scales"], bits, a_shape[1])
        b = _dequantise(stored[f"{prefix}.B.codes"], stored[f"{prefix}.B.scales"], bits, b_shape[0]).T
        weights[f"{prefix}.lora_A.weight"] = a.to(dtype or torch.float32).contiguous()
        weights[f"{prefix}.lora_B.weight"] = b.to(dtype or torch.float32).contiguous()
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(out_dir / "adapter_model.safetensors"))
    (out_dir / "adapter_config.json").write_text(meta["adapter_config"])
    return out_dir


def _pairs(weights: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """{module prefix: (A, B)} from a peft state dict."""
    pairs: dict[str, tuple[Any, Any]] = {}
    for key, a in weights.items():
        if ".lora_A." in key:
            prefix = key.split(".lora_A.")[0]
            b = weights.get(key.replace(".lora_A.", ".lora_B."))
            if b is None:
                raise ModelConfigError(f"adapter weight {key} has no lora_B partner")
            pairs[prefix] = (a.float(), b.float())
    if not pairs:
        raise ModelConfigError("the adapter holds no LoRA pairs (lora_A / lora_B weights)")
    return pairs


def _balanced(a: Any, b: Any) -> tuple[Any, Any]:
    """(A', B') with B' A' = B A and both factors scaled alike: from the SVD of the rank-r product, computed
    through QR of the thin factors."""
    import torch

    qb, rb = torch.linalg.qr(b)  # B = Qb Rb   (out x r)(r x r)
    qa, ra = torch.linalg.qr(a.T)  # Aᵀ = Qa Ra  (in x r)(r x r)
    u, s, vt = torch.linalg.svd(rb @ ra.T)  # B A = Qb (Rb Raᵀ) Qaᵀ
    root = s.sqrt()
    return (root[:, None] * (vt @ qa.T)).float(), ((qb @ u) * root[None, :]).float()


def _quantise(rows: Any, bits: int, group: int) -> tuple[Any, Any]:
    """Symmetric per-group integer codes (as uint8, two per byte at 4 bits) and fp16 scales of `rows` (r x n)."""
    import torch

    r, n = rows.shape
    pad = (-n) % group
    x = torch.nn.functional.pad(rows, (0, pad)).reshape(r, -1, group)
    top = 2 ** (bits - 1) - 1
    scales = (x.abs().amax(dim=-1, keepdim=True) / top).clamp_min(1e-12).half()
    q = torch.round(x / scales.float()).clamp(-top, top).to(torch.int16) + top  # 0 … 2·top
    q = q.reshape(r, -1).to(torch.uint8)
    if bits == 4:
        q = q[:, 0::2] | (q[:, 1::2] << 4)
    return q.contiguous(), scales.squeeze(-1).contiguous()


def _dequantise(codes: Any, scales: Any, bits: int, n: int) -> Any:
    import torch

    top = 2 ** (bits - 1) - 1
    if bits == 4:
        codes = torch.stack([codes & 0x0F, codes >> 4], dim=-1).reshape(codes.shape[0], -1)
    r = codes.shape[0]
    x = (codes.to(torch.int16) - top).float().reshape(r, scales.shape[1], -1) * scales.float().unsqueeze(-1)
    return x.reshape(r, -1)[:, :n]


def main(argv: list[str] | None = None) -> int:
    """`python -m agentkit.models.packed_adapter ADAPTER_DIR OUT [--bits 4] [--base NAME] [--unpack-to DIR]`: pack a
    peft adapter folder; prints the packed file's size and sha256, the pins `embedded_adapters` ships an adapter
    with. `--unpack-to DIR` also unpacks the packed file there, a peft folder that loads the adapter as it would
    ship (`local:BASE+DIR`), for measuring it before it does."""
    import argparse

    from agentkit.models.embedded import sha256_of

    parser = argparse.ArgumentParser(prog="python -m agentkit.models.packed_adapter", description=main.__doc__)
    parser.add_argument("adapter_dir", type=Path, help="a peft adapter folder (adapter_config.json and weights)")
    parser.add_argument("out", type=Path, help="the packed file to write (replaced)")
    parser.add_argument("--bits", type=int, default=4, choices=(4, 8))
    parser.add_argument("--base", default=None, help="the base model name to record (an embedded model's key)")
    parser.add_argument("--unpack-to", type=Path, default=None, help="also unpack the packed file to this folder")
    args = parser.parse_args(argv)
    out = pack_adapter(args.adapter_dir, args.out, bits=args.bits, base=args.base)
    print(f"{out}: {out.stat().st_size} bytes, sha256 {sha256_of(out)}")
    if args.unpack_to is not None:
        print(f"unpacked to {unpack_adapter(out, args.unpack_to)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
