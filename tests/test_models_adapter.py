"""`local:BASE+ADAPTER_DIR` names a local model with a LoRA adapter (loading one is tested end to end in
tests/test_learn_loop.py::test_rl_method_produces_a_loadable_adapter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.models import ModelConfigError, resolve_model
from agentkit.models.adapter import split_adapter_spec


def test_adapter_model_names_are_checked_before_loading(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="not a LoRA adapter folder"):
        resolve_model(f"local:smollm2-135m+{tmp_path}")
    with pytest.raises(ModelConfigError, match="local:BASE\\+ADAPTER_DIR"):
        resolve_model("local:smollm2-135m+")


def test_split_adapter_spec() -> None:
    assert split_adapter_spec("smollm2-135m") == ("smollm2-135m", None)
    assert split_adapter_spec("models/base+runs/a/adapter") == ("models/base", Path("runs/a/adapter"))
