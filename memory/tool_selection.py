"""Tool selection: offer the model only the tools whose descriptions are nearest the task.

A model offered several similar tools may call the wrong one (a unit conversion sent to a currency
converter); shown only the few nearest the request, it has fewer to confuse. With many tools (an MCP
server's dozens) a shorter tool list also means a shorter prompt for any model.

`Agent(model, tools, extensions=[ToolSelection(top_k=3)])` ranks the tools by the cosine between the
task and each tool's name and description (the packaged MiniLM, or any `Embedder`) and offers the
`top_k` nearest. Tools that finish a run (`final=True`) and a typed output's tool are always offered.
The ranking is recorded on the trajectory (`records.TOOLS_OFFERED`). A call to a tool that was not
offered still runs (the agent has it); the model just was not shown it.

`ToolSelection(top_k=None)` offers every tool, nearest first, for models that lean to the first tools they
are shown. MiniLM does not read arithmetic, so a ranking can put another tool above the calculator; and
because the tool list, and so the prompt's cached prefix, changes with each request, every request pays a
longer prefill. Selection is therefore opt-in. Why: docs/decisions.md#tool-selection
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentkit.loop.extensions import RunContext
from agentkit.memory.embeddings import Embedder
from agentkit.tools import Tool


def tool_text(tool: Tool) -> str:
    """What is embedded for a tool: its name in words and its description."""
    return f"{tool.name.replace('_', ' ')}: {tool.description}"


class ToolSelection:
    """An extension that offers each run only the `top_k` tools nearest its task."""

    name = "tool_selection"

    def __init__(self, top_k: int | None = 3, embedder: Embedder | None = None) -> None:
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be at least 1 (or None: every tool, nearest first), not {top_k}")
        self.top_k = top_k
        self.embedder = embedder or Embedder.default()  # the model itself loads on the first ranking

    def rank(self, task: str, tools: Sequence[Tool]) -> list[tuple[Tool, float]]:
        """`tools` with their cosine to `task`, nearest first (ties keep the given order)."""
        if not tools:
            return []
        vectors = self.embedder.embed([task, *(tool_text(t) for t in tools)])
        scores = vectors[1:] @ vectors[0]
        order = np.argsort(-scores, kind="stable")
        return [(tools[i], float(scores[i])) for i in order]

    def before_run(self, run: RunContext) -> None:
        """Offer the `top_k` nearest tools (all of them, as given, when there are no more than that), or
        with `top_k=None` every tool, nearest first."""
        choosable = [t for t in run.tools.values() if not t.final]
        if self.top_k is not None and len(choosable) <= self.top_k:
            return
        ranked = self.rank(run.task, choosable)
        offered = [t.name for t, _ in ranked[: self.top_k]]
        run.offer(offered, scores={t.name: round(s, 4) for t, s in ranked})

    def after_run(self, run: RunContext) -> None:
        """Nothing to learn."""

    def __repr__(self) -> str:
        return f"ToolSelection(top_k={self.top_k})"
