"""Model backends behind one protocol, named by strings such as `openai:gpt-4o-mini`.

| prefix      | backend                                                    |
|-------------|------------------------------------------------------------|
| `openai:`   | the `openai` client; any base URL (`OPENAI_BASE_URL`)      |
| `vllm:`     | a vLLM server: `vllm:http://host:8000/v1/MODEL`            |
| `litellm:`  | every LiteLLM provider: `litellm:anthropic/claude-sonnet-4` |
| `local:`    | Transformers in-process: `local:smollm2-135m`, `local:PATH`, `local:BASE+ADAPTER_DIR` |
| `script:`   | a scripted model for tests: `script:replies.json` (see agentkit.testing) |
"""

from __future__ import annotations

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
    "resolve_model",
]

DEFAULT_MODEL = "local:smollm2-135m"


def resolve_model(spec: str | Model, **options: Any) -> Model:
    """Turn a model string into a backend; a `Model` object is returned as it is."""
    if not isinstance(spec, str):
        return spec
    prefix, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ModelConfigError(
            f"model {spec!r} needs a backend prefix: openai:NAME, litellm:PROVIDER/NAME, "
            "vllm:http://HOST:PORT/v1/NAME or local:smollm2-135m"
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
        from agentkit.models.adapter import load_with_adapter, split_adapter_spec
        from agentkit.models.local import LocalModel

        base, adapter = split_adapter_spec(rest)  # local:BASE+ADAPTER_DIR: a LoRA adapter on a local model
        return LocalModel.load(rest, **options) if adapter is None else load_with_adapter(base, adapter, **options)
    if prefix == "script":
        from agentkit.testing import ScriptedModel

        return ScriptedModel.from_file(rest)
    raise ModelConfigError(f"unknown model backend {prefix!r} in {spec!r} (openai, vllm, litellm, local, script)")
