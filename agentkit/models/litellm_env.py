"""Importing LiteLLM without touching the network: its price map is read from the package, telemetry off."""

from __future__ import annotations

import os
from typing import Any

from agentkit.models.protocol import ModelConfigError


def import_litellm() -> Any:
    """Import litellm without network access at import time (local cost map, no telemetry, no banners)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:  # pragma: no cover - litellm is a core dependency
        raise ModelConfigError("the litellm backend needs the litellm package: pip install litellm") from exc
    litellm.telemetry = False
    litellm.suppress_debug_info = True  # no banners on stdout (a price lookup of an unknown model prints one)
    return litellm
