"""agentkit.memory: embeddings, the vector store, the mistake notebook, chat sessions and tool selection.

    from agentkit.memory.embeddings import Embedder
    from agentkit.memory.vectors import VectorStore
    from agentkit.memory.notebook import MistakeNotebook, Note
    from agentkit.memory.sessions import SessionStore
    from agentkit.memory.tool_selection import ToolSelection

Modules are imported on demand so that `import agentkit.memory` stays cheap (no torch, no chromadb).
"""

from __future__ import annotations

from pathlib import Path

from agentkit.home import agentkit_home


def default_notes_path() -> Path:
    """Where the default mistake notebook lives: `$AGENTKIT_HOME/notes`."""
    return agentkit_home() / "notes"
