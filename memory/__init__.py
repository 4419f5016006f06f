"""agentkit.memory: what the agent keeps from its runs, and the stores that hold it.

What a learn run fits from the agent's own runs, each an extension, and the one loader that attaches
whatever a learn run wrote into its folder:

    from agentkit.memory import load_memory             # load_memory("learn-runs/chinook") -> [extensions]
    from agentkit.memory.notebook import MistakeNotebook, Note   # notes from past mistakes
    from agentkit.memory.experience import Experience            # worked examples of verified runs (DAIL-SQL)
    from agentkit.memory.pacing import Pacing                    # per-phase call limits
    from agentkit.memory.shape_checks import ShapeChecks         # SQL shape checks of a confirmed query
    from agentkit.memory.repairs import Repairs                  # repairs shown after a failed call
    from agentkit.memory.tool_selection import ToolSelection     # offer only the tools nearest the task
    from agentkit.memory.from_runs import learn_from_runs        # experience and notes from rated runs

(the skill library, procedures distilled from successful runs, is `agentkit.skills`; `load_memory` opens it
too), and the stores: embeddings, the vector store, chat sessions.

    from agentkit.memory.embeddings import Embedder
    from agentkit.memory.vectors import VectorStore
    from agentkit.memory.sessions import SessionStore

Modules are imported on demand so that `import agentkit.memory` stays cheap (no torch, no chromadb).
"""

from __future__ import annotations

import os
from pathlib import Path

from agentkit.home import agentkit_home
from agentkit.loop.extensions import Extension


def load_memory(folder: str | os.PathLike[str]) -> list[Extension]:
    """The extensions of what a learn run kept in `folder` (skills, notes, experience, checks, repairs, pacing);
    see `agentkit.memory.load`."""
    from agentkit.memory.load import load_memory as load

    return load(folder)


def default_notes_path() -> Path:
    """Where the default mistake notebook lives: `$AGENTKIT_HOME/notes`."""
    return agentkit_home() / "notes"
