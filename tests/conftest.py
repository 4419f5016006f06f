"""Test settings shared by the whole suite: offline, and a private agentkit home per run."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session", autouse=True)
def agentkit_home(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Every test run gets its own AGENTKIT_HOME, so nothing touches the user's ~/.agentkit."""
    home = os.environ.get("AGENTKIT_TEST_HOME") or str(tmp_path_factory.mktemp("agentkit-home"))
    os.environ["AGENTKIT_HOME"] = home
    return home
