"""Writing files safely: the one atomic write the packages share."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
