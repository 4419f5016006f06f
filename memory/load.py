"""One loader for what the agent learned from use: `load_memory(DIR)` attaches whatever a learn run wrote.

`agentkit learn --out DIR` writes each method's artefact into DIR, under a fixed name:

    skills/          a skill library                      agentkit.skills.SkillLibrary
    notes/           a mistake notebook                   agentkit.memory.notebook.MistakeNotebook
    experience.json  worked examples of verified runs     agentkit.memory.experience.Experience
    checks.json      SQL shape checks                     agentkit.memory.shape_checks.ShapeChecks
    repairs.json     repairs shown after a failed call    agentkit.memory.repairs.Repairs
    pacing.json      per-phase call limits                agentkit.memory.pacing.Pacing
    adapter/         a LoRA adapter of the model          (weights, not an extension: `memory_model`)

and `summary.json`, whose `artefacts` name what the run kept (a method the validation set aside leaves its
file behind, unkept). `load_memory(DIR)` opens what the summary names, or every artefact present when the
folder has no summary (one put together by hand), and returns them as extensions in the order above:

    agent = Agent(model, tools, extensions=load_memory("learn-runs/chinook"))

`agentkit chat/run/eval/sql --memory DIR` do the same (and `serve --memory DIR` serves the adapter).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from agentkit.loop.extensions import Extension

SUMMARY = "summary.json"
ADAPTER = "adapter"


def _skills(path: Path) -> Extension:
    from agentkit.skills import SkillLibrary

    return SkillLibrary.open(path)


def _notes(path: Path) -> Extension:
    from agentkit.memory.notebook import MistakeNotebook

    return MistakeNotebook.open(path)


def _experience(path: Path) -> Extension:
    from agentkit.memory.experience import Experience

    return Experience.load(path)


def _checks(path: Path) -> Extension:
    from agentkit.memory.shape_checks import ShapeChecks

    return ShapeChecks.load(path)


def _repairs(path: Path) -> Extension:
    from agentkit.memory.repairs import Repairs

    return Repairs.load(path)


def _pacing(path: Path) -> Extension:
    from agentkit.memory.pacing import Pacing

    return Pacing.load(path)


ARTEFACTS: Mapping[str, tuple[str, Callable[[Path], Extension]]] = MappingProxyType({
    "skills": ("skills", _skills),
    "notes": ("notes", _notes),
    "experience": ("experience.json", _experience),
    "checks": ("checks.json", _checks),
    "repairs": ("repairs.json", _repairs),
    "pacing": ("pacing.json", _pacing),
})
"""Each learn method that leaves an extension: its file or folder in a learn run's folder, and its opener
(the learn run's `--method` names; the modules are imported only for what a folder holds)."""


def _summary(folder: Path) -> dict[str, Any] | None:
    file = folder / SUMMARY
    if not file.is_file():
        return None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{file} is not a learn run's summary: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("artefacts", {}), dict):
        raise ValueError(f"{file} is not a learn run's summary: no artefacts table")
    return data


def kept(folder: str | os.PathLike[str]) -> list[str]:
    """What a learn run's folder holds for an agent, in `ARTEFACTS` order (then "adapter"): the artefacts its
    summary names, or every one present when it has none.

    Raises:
        ValueError: `folder` is not a folder, its summary is malformed, or it holds nothing learned.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder (--memory takes the --out folder of `agentkit learn`)")
    summary = _summary(root)
    names = [*ARTEFACTS, ADAPTER]
    if summary is not None:
        named = summary.get("artefacts", {})
        found = [n for n in names if n in named and (root / _file(n)).exists()]
    else:
        found = [n for n in names if (root / _file(n)).exists()]
    if not found and summary is None:
        raise ValueError(f"{root} holds nothing a learn run writes ({', '.join(_file(n) for n in names)})")
    return found


def _file(name: str) -> str:
    return ARTEFACTS[name][0] if name in ARTEFACTS else ADAPTER


def artefact_paths(folder: str | os.PathLike[str]) -> dict[str, Path]:
    """The extension artefacts a learn run kept in `folder`, by method name (see `kept`)."""
    root = Path(folder)
    return {name: root / ARTEFACTS[name][0] for name in kept(root) if name in ARTEFACTS}


def open_artefact(name: str, path: str | os.PathLike[str]) -> Extension:
    """Open one artefact of the `ARTEFACTS` kind `name` at `path` (any path: a learn run's file or another).

    Raises:
        ValueError: a file that cannot be read or is not of its kind (the message says which).
        OSError: a file that cannot be opened.
        ImportError: the artefact needs an extra that is not installed (skills and notes: `agentkit[memory]`).
    """
    return ARTEFACTS[name][1](Path(path))


def load_memory(folder: str | os.PathLike[str]) -> list[Extension]:
    """The extensions of what a learn run kept in `folder` (see the module docstring), opened in
    `ARTEFACTS` order; none when it kept only an adapter, or nothing.

    Raises:
        ValueError: as `kept`, or a file that cannot be read (the message names it).
        ImportError: an artefact needs an extra that is not installed (skills, notes and experience:
            `agentkit[memory]`).
    """
    loaded = []
    for name, path in artefact_paths(folder).items():
        try:
            loaded.append(open_artefact(name, path))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: {exc}") from exc
    return loaded


def memory_adapter(folder: str | os.PathLike[str]) -> Path | None:
    """The LoRA adapter a learn run kept in `folder` (its rl method), or None."""
    return Path(folder) / ADAPTER if ADAPTER in kept(folder) else None


def trained_model(folder: str | os.PathLike[str]) -> str | None:
    """The model a learn run in `folder` learned with (its summary's `model`), or None without a summary."""
    summary = _summary(Path(folder))
    model = None if summary is None else summary.get("model")
    return model if isinstance(model, str) else None


def learned_planner(folder: str | os.PathLike[str]) -> str | None:
    """How the agent acted in the learn run in `folder` (its summary's `planner`: "react", or "draft:VOTES" for
    the SQL draft planner with that many votes), or None where its summary does not say (no summary, or one
    written before the planner was recorded). What the run kept was validated with that agent only."""
    summary = _summary(Path(folder))
    planner = None if summary is None else summary.get("planner")
    return planner if isinstance(planner, str) else None


def memory_model(model: str, folder: str | os.PathLike[str]) -> str:
    """`model` with the learn run's adapter when the run kept one and trained this very model (the `model`
    of its summary; "local:NAME" becomes "local:NAME+FOLDER/adapter"); else `model` unchanged."""
    adapter = memory_adapter(folder)
    if adapter is None or "+" in model or trained_model(folder) != model:
        return model
    return f"{model}+{adapter}"
