"""The library folder on disk: layout, schema version, the cross-process lock, and small counters.

    LIBRARY/
      library.json      schema version, embedder, index location (written once)
      skills/NAME/      one folder per skill: SKILL.md + skill.json (+ the author's own files)
      retired/NAME-ID/  skills retired by the capacity bound (kept, not deleted)
      index/            the chromadb index (derived; rebuildable from skills/)
      admissions.jsonl  every admission decision, with the reason for refusals
      state.json        generation (bumped on each index change) and the total use count
      .lock             fcntl lock held around every write
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentkit.files import atomic_write
from agentkit.home import agentkit_home
from agentkit.skills.model import LIBRARY_SCHEMA_VERSION, NewerSchemaError
from agentkit.skills.skillmd import recover_skill_dirs

LIBRARY_FILE = "library.json"
log = logging.getLogger(__name__)


def default_library_path() -> Path:
    """Where the skill library lives unless told otherwise: `$AGENTKIT_HOME/skills`."""
    return agentkit_home() / "skills"


class LibraryFolder:
    """Paths, manifest and lock of one library folder."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().resolve()
        self.skills = self.root / "skills"
        self.retired = self.root / "retired"
        self.index = self.root / "index"
        self.admissions = self.root / "admissions.jsonl"
        self.state_file = self.root / "state.json"
        self._lock_path = self.root / ".lock"
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    # -- manifest -----------------------------------------------------------------------------------
    def open_manifest(self, defaults: dict[str, Any]) -> dict[str, Any]:
        """Read library.json, creating the library when the folder is new or empty."""
        path = self.root / LIBRARY_FILE
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"skill library path {self.root} exists and is not a folder")
        if not path.exists():
            if self.root.exists() and any(p.name not in (".lock",) for p in self.root.iterdir()):
                raise ValueError(
                    f"{self.root} is not empty and is not a skill library (no {LIBRARY_FILE}). To load "
                    f"SKILL.md folders from it, use `agentkit skills import {self.root}` into a library."
                )
            self.root.mkdir(parents=True, exist_ok=True)
            with self.lock():
                if not path.exists():
                    manifest: dict[str, Any] = {"schema_version": LIBRARY_SCHEMA_VERSION,
                                                "uid": uuid.uuid4().hex[:12], "created_at": time.time(), **defaults}
                    self.skills.mkdir(exist_ok=True)
                    atomic_write(path, json.dumps(manifest, indent=1, sort_keys=True))
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as error:
            raise ValueError(f"{path} is not valid JSON ({error}); restore it or start a new library") from None
        version = manifest.get("schema_version") if isinstance(manifest, dict) else None
        if not isinstance(version, int):
            raise ValueError(f"{path} has no schema_version; it is not an agentkit skill library")
        if version > LIBRARY_SCHEMA_VERSION:
            raise NewerSchemaError(
                f"the skill library at {self.root} was written by a newer agentkit (schema version {version}; "
                f"this agentkit reads up to {LIBRARY_SCHEMA_VERSION}). Upgrade agentkit to open it."
            )
        self.skills.mkdir(exist_ok=True)
        with self.lock():  # a writer killed mid-replace: put the skill it moved aside back
            restored = recover_skill_dirs(self.skills)
        if restored:
            log.warning("recovered skill folders a killed writer had moved aside: %s", ", ".join(restored))
        return manifest

    def update_manifest(self, **changes: Any) -> dict[str, Any]:
        """Update fields of the library manifest atomically under the lock; returns the new manifest."""
        with self.lock():
            path = self.root / LIBRARY_FILE
            manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            manifest.update(changes)
            atomic_write(path, json.dumps(manifest, indent=1, sort_keys=True))
            return manifest

    # -- lock ---------------------------------------------------------------------------------------
    @contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive across processes (fcntl) and threads; re-entrant within a thread."""
        with self._thread_lock:
            if self._depth == 0:
                self._fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
                    os.close(self._fd)
                    self._fd = None

    # -- state --------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The counters in state.json ({} when missing or unreadable)."""
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (FileNotFoundError, ValueError):
            return {}

    def bump(self, key: str, by: int = 1) -> int:
        """Increase a counter in state.json (call with the lock held)."""
        state = self.state()
        value = state[key] = int(state.get(key, 0)) + by
        atomic_write(self.state_file, json.dumps(state, sort_keys=True), durable=False)  # counters: no fsync
        return value

    def log_admission(self, entry: dict[str, Any]) -> None:
        """Append one admission decision (call with the lock held)."""
        line = json.dumps({"time": time.time(), **entry}, ensure_ascii=False, default=str) + "\n"
        with open(self.admissions, "a", encoding="utf-8") as f:
            f.write(line)

    def admission_log(self) -> list[dict[str, Any]]:
        """Every admission decision logged so far, oldest first (unreadable lines skipped)."""
        if not self.admissions.exists():
            return []
        out = []
        for line in self.admissions.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def skill_dirs(self) -> list[Path]:
        """The folders under skills/ (hidden temporary folders excluded)."""
        if not self.skills.is_dir():
            return []
        return sorted(p for p in self.skills.iterdir() if p.is_dir() and not p.name.startswith("."))
