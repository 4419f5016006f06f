"""A folder vLLM can serve, made from any `local:` model (the embedded GGUF included).

vLLM does not load a GGUF directly, and wants weights and tokenizer in one Hugging Face folder. For
`local:smollm2-135m`, `local:FILE.gguf` or `local:ORG/NAME`, the model is loaded the way `LocalModel`
loads it (the GGUF dequantised to dense weights, its quantizer detached) and saved with its tokenizer
under the agentkit home, once per source (reused while the source is unchanged); `local:default` is saved
with its shipped tool adapter merged into the weights. A `local:FOLDER` that
already holds config.json and a tokenizer is served as it is.

Families vLLM has no tool-call parser for (SmolLM2 among them) get a ChatML chat template that renders
the tools in agentkit's text protocol (the prompt `LocalModel` builds), so vLLM's `hermes` parser reads
the `<tool_call>{...}</tool_call>` replies back as native tool calls.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit.home import agentkit_home
from agentkit.models.protocol import ModelConfigError

__all__ = ["TOOL_TEMPLATE_NAME", "ServableModel", "prepare_servable", "tool_chat_template"]

TOOL_TEMPLATE_NAME = "agentkit_tools.jinja"
_STAMP = "agentkit-source.json"


@dataclass
class ServableModel:
    """A model folder to pass to vLLM, with the chat template to serve it with (None: the folder's own)."""

    path: Path
    served_name: str
    chat_template: Path | None = None
    notes: list[str] = field(default_factory=list)


def _escape(text: str) -> str:
    return json.dumps(text)  # a Jinja string literal (JSON escapes are Jinja escapes)


def tool_chat_template() -> str:
    """A ChatML template that renders tools, tool calls and results as `LocalModel` does (text protocol)."""
    from agentkit.models.chat_format import TOOL_RESULT_PREFIX
    from agentkit.tools.text_calls import CLOSE_TAG, FORMAT_INSTRUCTIONS, OPEN_TAG

    before, after = TOOL_RESULT_PREFIX.split("{name}")
    nl = "{{ '\\n' }}"  # every newline of the output is explicit: whitespace control strips the template's own
    lines = [
        "{%- set ns = namespace(tools='', name='tool') -%}",
        "{%- if tools -%}",
        "{%- set ns.tools = 'You can use these tools:' -%}",
        "{%- for spec in tools -%}{%- set fn = spec.function if spec.function is defined else spec -%}",
        "{%- set ns.tools = ns.tools ~ '\\n- ' ~ fn.name ~ ': ' ~ (fn.description or '') ~ '\\n  parameters: '"
        " ~ ((fn.parameters or {}) | tojson(separators=(',', ':'))) -%}",
        "{%- endfor -%}",
        f"{{%- set ns.tools = ns.tools ~ '\\n\\n' ~ {_escape(FORMAT_INSTRUCTIONS)} -%}}",
        "{%- if messages[0].role != 'system' -%}",
        f"<|im_start|>system{nl}{{{{ ns.tools }}}}<|im_end|>{nl}{{%- set ns.tools = '' -%}}",
        "{%- endif -%}",
        "{%- endif -%}",
        "{%- for m in messages -%}",
        "{%- if m.role == 'system' -%}",
        f"<|im_start|>system{nl}{{{{ ((m.content or '') ~ ('\\n\\n' ~ ns.tools if ns.tools else '')) | trim }}}}"
        f"<|im_end|>{nl}{{%- set ns.tools = '' -%}}",
        "{%- elif m.role == 'assistant' -%}",
        f"<|im_start|>assistant{nl}{{{{ m.content or '' }}}}",
        f"{{%- for c in (m.tool_calls or []) -%}}{{%- if m.content or not loop.first -%}}{nl}{{%- endif -%}}",
        f"{{{{ {_escape(OPEN_TAG)} }}}}{{%- set args = c.function.arguments -%}}",
        "{\"name\": {{ c.function.name | tojson }}, \"arguments\": {{ args if args is string else (args | tojson) }}}",
        f"{{{{ {_escape(CLOSE_TAG)} }}}}",
        f"{{%- endfor -%}}<|im_end|>{nl}",
        "{%- elif m.role == 'tool' -%}",
        "{%- set ns.name = m.name or 'tool' -%}",
        "{%- for prev in messages[:loop.index0] -%}{%- for c in (prev.tool_calls or []) -%}",
        "{%- if c.id == m.tool_call_id -%}{%- set ns.name = c.function.name -%}{%- endif -%}",
        "{%- endfor -%}{%- endfor -%}",
        f"<|im_start|>user{nl}{{{{ {_escape(before)} ~ ns.name ~ {_escape(after)} }}}}",
        f"{{{{ m.content }}}}<|im_end|>{nl}",
        "{%- else -%}",
        f"<|im_start|>{{{{ m.role }}}}{nl}{{{{ m.content }}}}<|im_end|>{nl}",
        "{%- endif -%}",
        "{%- endfor -%}",
        f"{{%- if add_generation_prompt -%}}<|im_start|>assistant{nl}{{%- endif -%}}",
    ]
    return "".join(lines)  # no newline between the lines: the output's own are the explicit ones


def _source_stamp(spec: str) -> dict[str, Any]:
    from agentkit.models.embedded import embedded_gguf_path, embedded_model
    from agentkit.models.embedded_adapters import EMBEDDED_ADAPTERS, MODEL_ADAPTERS

    source = embedded_gguf_path(spec) if embedded_model(spec) is not None else Path(spec).expanduser()
    adapter = MODEL_ADAPTERS.get(spec.strip().lower())  # merged into the served weights (`_convert`)
    pinned = {"adapter": EMBEDDED_ADAPTERS[adapter].sha256} if adapter else {}
    if source.exists():
        st = source.stat()
        return {"spec": spec, "source": str(source.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                **pinned}
    return {"spec": spec, **pinned}


def _is_chatml(tokenizer: Any) -> bool:
    return "<|im_start|>" in tokenizer.get_vocab() and "<|im_end|>" in tokenizer.get_vocab()


def _family_has_tool_parser(folder: Path, name: str) -> bool:
    from agentkit.serving import known_tool_parser, read_model_config

    return bool(known_tool_parser(read_model_config(str(folder)), name))


def prepare_servable(spec: str, *, root: str | Path | None = None, refresh: bool = False) -> ServableModel:
    """A vLLM-servable folder for the `local:` model `spec` ("smollm2-135m", a .gguf, a folder, ORG/NAME).

    Converted folders live in `root` (default: AGENTKIT_HOME/served); a folder that already has weights
    and a tokenizer is used in place. Raises `ModelConfigError` when the model cannot be loaded."""
    spec = spec.removeprefix("local:")
    served_name = Path(spec).stem if spec.endswith(".gguf") else (Path(spec).name or "smollm2-135m")
    path = Path(spec).expanduser()
    if path.is_dir() and (path / "config.json").is_file() and (path / "tokenizer_config.json").is_file():
        folder = path
    else:
        stamp = _source_stamp(spec or "smollm2-135m")
        key = hashlib.sha256(json.dumps(stamp, sort_keys=True).encode()).hexdigest()[:10]
        folder = Path(root) if root else agentkit_home() / "served"
        folder = folder / f"{served_name}-{key}"
        if refresh or not (folder / _STAMP).is_file():
            _convert(spec, folder, stamp)
    model = ServableModel(path=folder, served_name=served_name)
    template = folder / TOOL_TEMPLATE_NAME
    if template.is_file():
        if template.read_text() != tool_chat_template():  # made by an older agentkit: keep it current
            template.write_text(tool_chat_template())
        model.chat_template = template
    elif not _family_has_tool_parser(folder, served_name):
        from transformers import AutoTokenizer

        if _is_chatml(AutoTokenizer.from_pretrained(str(folder))):
            template = (folder if folder != path else Path(root or agentkit_home() / "served")) / (
                f"{served_name}-{TOOL_TEMPLATE_NAME}")
            template.parent.mkdir(parents=True, exist_ok=True)
            template.write_text(tool_chat_template())
            model.chat_template = template
        else:
            model.notes.append(f"{served_name}: no tool-call parser known and not a ChatML tokenizer: native tool "
                               "calling off (use agentkit's text tool protocol)")
    return model


def _convert(spec: str, folder: Path, stamp: dict[str, Any]) -> None:
    from agentkit.models import load_local

    loaded: Any = load_local(spec or "smollm2-135m", engine="torch")  # a LocalModel, with an adapter if it has one
    if loaded.peft is not None:  # local:default: the base with its shipped adapter merged in
        loaded.peft.merge_and_unload()
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        loaded.model.save_pretrained(str(tmp))
        loaded.tokenizer.save_pretrained(str(tmp))
        if _is_chatml(loaded.tokenizer) and not _family_has_tool_parser(tmp, Path(spec).name or "smollm2"):
            (tmp / TOOL_TEMPLATE_NAME).write_text(tool_chat_template())
        (tmp / _STAMP).write_text(json.dumps(stamp))
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ModelConfigError(f"could not write a servable copy of local:{spec} to {folder}: {exc}") from exc
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
