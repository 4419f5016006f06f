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

