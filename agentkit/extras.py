"""Optional dependencies: the core install is light, extras add the heavy parts.

`pip install agentkit` gives the SDK for hosted and OpenAI-compatible models. Each heavier part
lives in an extra (`memory`, `local`, `train`, `serve`, `mcp`, `all`), and the code that needs one
calls `require(...)` first, so that a missing extra is an error naming the extra to install rather
than a bare `ModuleNotFoundError` deep in a traceback.
"""

from __future__ import annotations

import importlib.util


class MissingExtraError(ImportError):
    """A feature needs an optional dependency that is not installed; the message says which extra."""

    def __init__(self, module: str, extra: str, feature: str | None = None) -> None:
        what = feature or f"this part of agentkit (it imports {module})"
        super().__init__(
            f"{what} needs the {module!r} package, which is not installed: "
            f"pip install 'agentkit[{extra}]'",
            name=module,
        )
        self.module = module
        self.extra = extra


def require(*modules: str, extra: str, feature: str | None = None) -> None:
    """Raise `MissingExtraError` naming `extra` unless every module in `modules` is importable.

    Checks presence without importing (cheap enough to call before each lazy import).

    Args:
        modules: top-level import names, e.g. "chromadb", "torch".
        extra: the agentkit extra that installs them, e.g. "memory".
        feature: what needs them, for the message (e.g. "the mistake notebook").
    """
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a blocked import, or a half-removed package
            found = False
        if not found:
            raise MissingExtraError(module, extra, feature)
