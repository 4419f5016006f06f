"""Model backends behind one protocol, named by strings such as `openai:gpt-4o-mini`.

| prefix      | backend                                                    |
|-------------|------------------------------------------------------------|
| `openai:`   | the `openai` client; any base URL (`OPENAI_BASE_URL`)      |
| `vllm:`     | a vLLM server: `vllm:http://host:8000/v1/MODEL`            |
| `litellm:`  | every LiteLLM provider: `litellm:anthropic/claude-sonnet-4` |
| `local:`    | in-process: `local:default` (Qwen2.5-Coder-1.5B + tool LoRA), `local:smollm2-135m`, `BASE+ADAPTER` |
| `script:`   | a scripted model for tests: `script:replies.json` (see agentkit.testing) |
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentkit.models.protocol import (
    GenerationSettings,
    Model,
    ModelConfigError,
    ModelResponse,
    TextDelta,
    TokenRecord,
    TransientModelError,
    collect,
)

__all__ = [
    "GenerationSettings",
    "Model",
    "ModelConfigError",
    "ModelResponse",
    "TextDelta",
    "TokenRecord",
    "TransientModelError",
    "collect",
    "load_local",
    "resolve_model",
]

DEFAULT_MODEL = "local:default"
LOCAL_ENGINES = ("auto", "llama.cpp", "torch")
ENGINE_ENV = "AGENTKIT_ENGINE"
_TORCH_ONLY_OPTIONS = ("dtype", "device", "autocast_bf16")


def resolve_model(spec: str | Model, *, parallel: int = 1, **options: Any) -> Model:
    """Turn a model string into a backend; a `Model` object is returned as it is.

    `parallel`: calls an in-process llama.cpp model serves at once (one context each, for threads that
    call it together, e.g. `evaluate(concurrency=N)`); servers batch concurrent requests on their own and
    the torch engine runs one call at a time, so other backends ignore it."""
    if not isinstance(spec, str):
        return spec
    prefix, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ModelConfigError(
            f"model {spec!r} needs a backend prefix: openai:NAME, litellm:PROVIDER/NAME, "
            "vllm:http://HOST:PORT/v1/NAME or local:default"
        )
    if prefix == "openai":
        from agentkit.models.openai_compat import OpenAIModel

        return OpenAIModel(rest, **options)
    if prefix == "vllm":
        from agentkit.models.vllm_model import VLLMModel

        base_url, _, name = rest.rpartition("/")
        if not base_url.startswith("http"):
            raise ModelConfigError(f"vllm model {spec!r} must look like vllm:http://host:port/v1/MODEL")
        return VLLMModel(name, base_url=base_url, api_key=options.pop("api_key", "EMPTY"), **options)
    if prefix == "litellm":
        from agentkit.models.litellm_model import LiteLLMModel

        return LiteLLMModel(rest, **options)
    if prefix == "local":
        from agentkit.models.adapter import split_adapter_spec

        base, adapter = split_adapter_spec(rest)  # local:BASE+ADAPTER_DIR: a LoRA adapter on a local model
        if adapter is not None:
            options.setdefault("name", f"local:{rest}")
        return load_local(base, parallel=parallel, adapter=adapter, **options)
    if prefix == "script":
        from agentkit.testing import ScriptedModel

        return ScriptedModel.from_file(rest)
    raise ModelConfigError(f"unknown model backend {prefix!r} in {spec!r} (openai, vllm, litellm, local, script)")


def load_local(spec: str, *, engine: str | None = None, parallel: int = 1, adapter: Path | None = None,
               **options: Any) -> Model:
    """An in-process model: an embedded name (`default`, `smollm2-135m`), a `.gguf` file or a saved folder,
    with the peft LoRA `adapter` on top if given (in place of the adapter an embedded name comes with:
    `default` is Qwen2.5-Coder-1.5B with the shipped tool LoRA, `qwen2.5-coder-1.5b` the bare model).

    `engine` ("auto", "llama.cpp" or "torch"; default `$AGENTKIT_ENGINE`, else "auto") picks the
    runtime: auto takes llama.cpp for GGUF models when llama-cpp-python is installed (and no
    torch-only option such as `dtype` is given), and torch otherwise. Training always uses torch.
    `parallel`: llama.cpp slots (see `LlamaCppModel`); the torch engine runs one call at a time.
    """
    engine = (engine or os.environ.get(ENGINE_ENV) or "auto").lower().replace("llamacpp", "llama.cpp")
    if engine not in LOCAL_ENGINES:
        raise ModelConfigError(f"unknown local engine {engine!r}: {', '.join(LOCAL_ENGINES)}")
    from agentkit.models.embedded import embedded_gguf_path, embedded_model
    from agentkit.models.embedded_adapters import builtin_adapter
    from agentkit.models.llamacpp import INSTALL_HINT, LlamaCppModel, llama_cpp_available

    if adapter is None and embedded_model(spec) is not None:
        adapter = builtin_adapter(spec)
        if adapter is not None:
            options.setdefault("name", f"local:{spec or 'default'}")  # the name, not the adapter's home copy
    is_gguf = embedded_model(spec) is not None or spec.endswith(".gguf")
    if engine == "auto":
        torch_only = any(k in options for k in _TORCH_ONLY_OPTIONS)
        engine = "llama.cpp" if is_gguf and llama_cpp_available() and not torch_only else "torch"
    if engine == "torch":
        from agentkit.models.adapter import load_with_adapter
        from agentkit.models.local import LocalModel

        return load_with_adapter(spec, adapter, **options) if adapter else LocalModel.load(spec, **options)
    if not is_gguf:
        raise ModelConfigError(f"the llama.cpp engine runs GGUF files; {spec!r} is not one (use engine='torch')")
    if not llama_cpp_available():
        raise ModelConfigError(f"the llama.cpp engine is not installed: {INSTALL_HINT}")
    path = embedded_gguf_path(spec) if embedded_model(spec) is not None else os.path.expanduser(spec)
    options.setdefault("name", f"local:{spec or 'default'}")
    if adapter is not None:  # the adapter as a GGUF LoRA beside it (written once, rewritten when retrained)
        from agentkit.models.adapter import check_adapter_dir
        from agentkit.models.gguf_lora import gguf_adapter

        options["lora"] = gguf_adapter(check_adapter_dir(adapter), Path(path))
    return LlamaCppModel(path, parallel=parallel, source=spec, adapter=adapter, **options)
