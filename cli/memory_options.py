"""`--memory DIR`: what a learn run kept, attached by every command that runs an agent (chat, run, eval, sql)
and served by `serve`.

DIR is the `--out` folder of `agentkit learn`; `agentkit.memory.load` says what it holds and how it is
opened. The one-artefact flags `--skills`, `--notes`, `--checks`, `--repairs` and `--pacing` are aliases
kept for a release: each names one artefact's file or folder (any path), and replaces that artefact of
DIR when both are given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

MEMORY_HELP = ("A learn run's folder (`agentkit learn --out DIR`): attach what it kept (experience, skills, notes, "
               "checks, repairs, pacing; the model it trained gets its adapter).")
MEMORY_OPTION: Any = typer.Option(None, "--memory", help=MEMORY_HELP)

ALIAS = "Alias kept for a release; --memory DIR attaches it with the rest."


def alias_option(name: str, what: str) -> Any:
    """A one-artefact flag (`--NAME PATH`), documented as the alias it is."""
    return typer.Option(None, f"--{name}", help=f"{what}. {ALIAS}")


SKILLS_OPTION: Any = alias_option("skills", "A skill library folder to use (skills/ of a learn run)")
NOTES_OPTION: Any = alias_option("notes", "A mistake notebook folder to use (notes/ of a learn run)")
CHECKS_OPTION: Any = alias_option("checks", "Learned SQL shape checks of a confirmed query (checks.json of a learn "
                                  "run)")
REPAIRS_OPTION: Any = alias_option("repairs", "Learned repairs shown after a failed call (repairs.json of a learn "
                                   "run)")
PACING_OPTION: Any = alias_option("pacing", "Learned per-phase call limits (pacing.json of a learn run)")


def memory_paths(memory: Path | None, **aliases: Path | None) -> dict[str, tuple[Path, str]]:
    """What `--memory DIR` and the alias flags ask to attach: artefact kind -> (path, the option that named it),
    in the loader's order. Raises `typer.BadParameter` for a DIR that is not a learn run's folder."""
    from agentkit.memory.load import ARTEFACTS, artefact_paths

    paths: dict[str, tuple[Path, str]] = {}
    if memory is not None:
        try:
            paths = {kind: (path, "--memory") for kind, path in artefact_paths(memory).items()}
        except ValueError as exc:
            raise typer.BadParameter(f"--memory: {exc}") from exc
    for kind, path in aliases.items():
        if kind not in ARTEFACTS:
            raise TypeError(f"no artefact kind {kind!r}; known: {', '.join(ARTEFACTS)}")
        if path is not None:
            paths[kind] = (path, f"--{kind}")
    return {kind: paths[kind] for kind in ARTEFACTS if kind in paths}


def open_memory(paths: dict[str, tuple[Path, str]]) -> list[Any]:
    """Open what `memory_paths` found, as extensions in that order; a file that cannot be opened is a
    `typer.BadParameter` naming its option."""
    from agentkit.memory.load import open_artefact

    loaded = []
    for kind, (path, option) in paths.items():
        try:
            loaded.append(open_artefact(kind, path))
        except (OSError, ValueError) as exc:
            raise typer.BadParameter(f"{option}: {path}: {exc}" if option == "--memory" else f"{option}: {exc}") \
                from exc
        except ImportError as exc:  # skills and notes need the memory extra
            raise typer.BadParameter(f"{option}: the {kind} of {path} need an extra that is not installed: "
                                     f"{exc}") from exc
    return loaded


def learned_extensions(memory: Path | None, **aliases: Path | None) -> list[Any]:
    """The extensions `--memory DIR` and the alias flags ask for (see the module docstring)."""
    return open_memory(memory_paths(memory, **aliases))


def memory_model(model: str, memory: Path | None) -> str:
    """`model` with the learn run's adapter when `--memory DIR` kept one for this very model (see
    `agentkit.memory.load.memory_model`); an adapter kept for another model is left out, with a line on stderr
    naming the model to run it with."""
    if memory is None:
        return model
    from agentkit.memory.load import memory_adapter, trained_model
    from agentkit.memory.load import memory_model as with_adapter

    try:
        chosen = with_adapter(model, memory)
        trained = trained_model(memory)
    except ValueError as exc:
        raise typer.BadParameter(f"--memory: {exc}") from exc
    if chosen == model and "+" not in model and trained not in (None, model) and memory_adapter(memory) is not None:
        typer.echo(f"(the adapter in {memory} was trained on {trained}, not {model}: it is not used; "
                   f"--model {trained} runs it)", err=True)
    return chosen


def note_planner(memory: Path | None, planner: str) -> None:
    """A line on stderr when the learn run in `memory` acted with another planner than `planner` ("react" or
    "draft"): what it kept was validated with that agent, not with this one."""
    if memory is None:
        return
    from agentkit.memory.load import learned_planner

    try:
        learned = learned_planner(memory)
    except ValueError as exc:
        raise typer.BadParameter(f"--memory: {exc}") from exc
    if learned is not None and learned.split(":")[0] != planner:
        typer.echo(f"(what {memory} kept was validated with --planner {learned.split(':')[0]}, not {planner}: "
                   f"--planner {learned.split(':')[0]} runs it as it was judged)", err=True)
