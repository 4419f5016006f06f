"""Where agentkit keeps its files: `$AGENTKIT_HOME`, default `~/.agentkit`."""

from __future__ import annotations

import os
from pathlib import Path


def agentkit_home() -> Path:
    """The agentkit home directory (models cache, skills, notes, sessions, exploration priors)."""
    return Path(os.environ.get("AGENTKIT_HOME") or Path.home() / ".agentkit").expanduser()
