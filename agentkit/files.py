"""Writing files safely (the one atomic write the packages share), and reading back the JSON artefacts written
with it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write(path: str | os.PathLike[str], data: bytes | str, *, durable: bool = True) -> None:
    """Replace `path` with `data` so that readers see the old or the new content, never a mix.

    The data goes to a temporary file beside `path` (created with its folder if needed), which then
    replaces `path` with `os.replace`. `durable` also fsyncs the file and its folder, so the new content
    survives a power loss; without it the write is still atomic for readers, only cheaper (counters).
    Text is written as UTF-8.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def write_artefact(path: str | os.PathLike[str], kind: str, data: dict[str, Any]) -> Path:
    """Write a learned artefact as indented JSON tagged with its `kind` (atomically); its path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, json.dumps({"kind": kind, **data}, indent=2, ensure_ascii=False) + "\n")
    return out


def read_artefact(path: str | os.PathLike[str], kind: str, what: str, writer: str, field: str) -> dict[str, Any]:
    """The JSON object `write_artefact` wrote to `path` with this `kind`, which must hold `field` (a list or an
    object); a missing, cut or other file is a clear error naming `what` it should be and its `writer`."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"no {what} at {file}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{file} is not a {what}: {exc}") from exc
    if not isinstance(data, dict) or data.get("kind") != kind or not isinstance(data.get(field), list | dict):
        raise ValueError(f"{file} is not a {what} (written by {writer})")
    return data
