"""A `local:` model made servable for vLLM: the converted folder, and the tool template rendering exactly
the prompt `LocalModel` builds (so a served SmolLM2 sees what the in-process one sees)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit import tool
from agentkit.messages import Message, ToolCall
from agentkit.models.servable import TOOL_TEMPLATE_NAME, prepare_servable, tool_chat_template
from agentkit.models.vllm_model import VLLMModel  # noqa: F401  (the backend that uses the template)


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first number
        b: second number
    """
    return a + b


def _openai(messages: list[Message]) -> list[dict]:
    from agentkit.models.openai_compat import to_openai_messages

    return to_openai_messages(messages, [add.spec()])


@pytest.mark.slow
def test_embedded_model_converted_once_with_its_tool_template(tmp_path: Path) -> None:
    from transformers import AutoConfig, AutoTokenizer

    from agentkit.models.local import LocalModel

    served = prepare_servable("local:smollm2-135m", root=tmp_path)
    assert served.served_name == "smollm2-135m" and served.path.parent == tmp_path
    assert (served.path / "config.json").is_file() and (served.path / "tokenizer_config.json").is_file()
    assert served.chat_template == served.path / TOOL_TEMPLATE_NAME
    assert AutoConfig.from_pretrained(str(served.path)).model_type == "llama"
    assert getattr(AutoConfig.from_pretrained(str(served.path)), "quantization_config", None) is None  # dense
    stamp = (served.path / "agentkit-source.json").stat().st_mtime_ns
    again = prepare_servable("local:smollm2-135m", root=tmp_path)
    assert again.path == served.path and (served.path / "agentkit-source.json").stat().st_mtime_ns == stamp

    # The template renders tools, calls and results as LocalModel's text protocol does.
    tokenizer = AutoTokenizer.from_pretrained(str(served.path))
    local = LocalModel.load(str(served.path))
    call = ToolCall(name="add", arguments={"a": 2, "b": 40})
    for messages in (
        [Message.system("Be useful."), Message.user("2 + 40?")],
        [Message.user("2 + 40?")],
        [Message.system("Be useful."), Message.user("2 + 40?"), Message.assistant("Let me add.", [call]),
         Message.tool(call, "42")],
    ):
        served_prompt = tokenizer.apply_chat_template(_openai(messages), tools=[add.spec()], tokenize=False,
                                                      add_generation_prompt=True,
                                                      chat_template=served.chat_template.read_text())
        assert served_prompt == local.render_prompt(messages, [add.spec()])
    assert "{{" in tool_chat_template() and "<|im_start|>" in tool_chat_template()


@pytest.mark.slow
def test_a_tools_model_is_served_with_its_tool_adapter_merged_in(tmp_path: Path) -> None:
    """`agentkit serve local:qwen2.5-coder-0.5b-tools` (and `local:default`, the 1.5B's) serves the weights users
    run in process: the Qwen base with the shipped LoRA merged (W + alpha/r · B A), in a folder of its own, apart
    from the bare model's."""
    import importlib.util

    from safetensors import safe_open
    from safetensors.torch import load_file

    from agentkit.models.embedded import EMBEDDED_MODELS
    from agentkit.models.embedded_adapters import builtin_adapter
    from agentkit.models.local import LocalModel

    if not all(importlib.util.find_spec(p.package) for p in EMBEDDED_MODELS["qwen2.5-coder-0.5b"].parts):
        pytest.skip("needs the Qwen parts")
    served = prepare_servable("local:qwen2.5-coder-0.5b-tools", root=tmp_path)
    assert served.served_name == "qwen2.5-coder-0.5b-tools"
    assert "adapter" in (served.path / "agentkit-source.json").read_text()
    name = "model.layers.3.self_attn.q_proj.weight"
    shard = next(f for f in served.path.glob("*.safetensors")
                 if name in safe_open(str(f), "pt").keys())  # noqa: SIM118
    merged = load_file(str(shard))[name].float()
    base = dict(LocalModel.load("qwen2.5-coder-0.5b").model.named_parameters())[name].detach().float()
    lora = load_file(str(builtin_adapter("qwen2.5-coder-0.5b-tools") / "adapter_model.safetensors"))
    prefix = "base_model.model.model.layers.3.self_attn.q_proj"
    delta = 2.0 * lora[f"{prefix}.lora_B.weight"].float() @ lora[f"{prefix}.lora_A.weight"].float()  # alpha/r = 32/16
    assert (merged - base).norm() > 0.9 * delta.norm() > 0  # the adapter changed this weight, and by its B A
    assert (merged - (base + delta)).norm() < 0.01 * delta.norm()
