"""`agentkit skills`: list, show, search, add, remove, import, export and count the skills of a library,
and the pieces `agentkit chat --skills PATH` uses (the library as an extension and a /skills command)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import typer

from agentkit.cli.slash import SlashCommand
from agentkit.records import SKILLS, SkillsRecord

if TYPE_CHECKING:
    from rich.console import Console

    from agentkit.skills import SkillLibrary
    from agentkit.trajectory import Trajectory


class ChatSession(Protocol):
    """What the /skills command uses of a chat session (`agentkit.cli.chat.ChatSession`)."""

    console: Console
    trajectories: list[Trajectory]

LIBRARY_HELP = "Skill library folder; default $AGENTKIT_HOME/skills."
INDEX_HELP = "chromadb server URL for the index (remembered by the library); default: a folder inside it."


def open_library(path: Path | None = None, index: str | None = None, **settings: Any) -> SkillLibrary:
    """Open a library for the CLI, turning configuration problems into a message and exit code 2."""
    try:
        from agentkit.skills import SkillLibrary

        return SkillLibrary.open(path, index=index, **settings)
    except (ValueError, RuntimeError, OSError, ImportError) as exc:  # ImportError: the memory extra is missing
        typer.echo(f"Cannot open the skill library: {exc}", err=True)
        raise typer.Exit(2) from None


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add the `skills` command group to the CLI."""
    skills = typer.Typer(help="The skill library: SKILL.md folders the agent selects, uses and distills.",
                         no_args_is_help=True)
    app.add_typer(skills, name="skills")
    library_opt = typer.Option(None, "--library", "-l", help=LIBRARY_HELP)
    index_opt = typer.Option(None, "--index", help=INDEX_HELP)

    @skills.command("list")
    def list_skills(library: Path | None = library_opt, index: str | None = index_opt,
                    as_json: bool = typer.Option(False, "--json", help="One JSON object per skill.")) -> None:
        """List the skills: name, utility, uses, source, description."""
        lib = open_library(library, index)
        items = sorted(lib.skills(), key=lambda s: (-s.utility, s.name))
        if as_json:
            for skill in items:
                typer.echo(json.dumps(skill.summary(), ensure_ascii=False))
            return
        if not items:
            typer.echo(f"No skills in {lib.folder.root}. Add one with `agentkit skills add SKILL_DIR`.")
            return
        width = max(len(s.name) for s in items)
        typer.echo(f"{'name':<{width}}  utility  uses  source        description")
        for s in items:
            typer.echo(f"{s.name:<{width}}  {s.utility:7.3f}  {s.use_count:4d}  {s.source:<12}  "
                       f"{_short(s.description, 70)}")
        typer.echo(f"{len(items)} skill(s) in {lib.folder.root}")

    @skills.command("show")
    def show(name: str = typer.Argument(..., help="Skill name or id."),
             library: Path | None = library_opt, index: str | None = index_opt) -> None:
        """Print a skill's SKILL.md and its provenance and statistics."""
        from agentkit.skills.skillmd import render_skill_md

        lib = open_library(library, index)
        try:
            skill = lib.get(name)
        except KeyError as exc:
            raise _fail(str(exc.args[0])) from None
        typer.echo(render_skill_md(skill))
        if skill.example:
            where = f" (shown in environment {skill.example_scope!r})" if skill.example_scope else ""
            typer.echo(f"Worked example{where}:\nTask: {skill.example_task}\n{skill.example}\n")
        elif skill.example_task:
            typer.echo(f"Solved: {skill.example_task}\n")
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(skill.created_at))
        typer.echo(f"id {skill.id} · source {skill.source} · created {created} · "
                   f"from trajectory {skill.source_trajectory or '-'}")
        typer.echo(f"utility {skill.utility:.4f} · used {skill.use_count} · succeeded {skill.success_count}"
                   + (f" · merged from {', '.join(skill.merged_from)}" if skill.merged_from else ""))

    @skills.command("search")
    def search(text: str = typer.Argument(..., help="What the skill should help with."),
               k: int = typer.Option(5, "--k", "-k", min=1, help="Most skills shown."),
               library: Path | None = library_opt, index: str | None = index_opt) -> None:
        """The skills closest to TEXT, with their cosine similarity (the run's floor is 0.4)."""
        lib = open_library(library, index)
        found = lib.search(text, k=k)
        if not found:
            typer.echo("The library is empty.")
            return
        for r in found:
            typer.echo(f"{r.score:.3f}  {r.skill.name}  {_short(r.skill.description, 80)}")

    @skills.command("add")
    def add(skill_dir: Path = typer.Argument(..., help="A folder holding SKILL.md (and any files it uses)."),
            force: bool = typer.Option(False, "--force", help="Add even if a near-duplicate exists."),
            replace: bool = typer.Option(False, "--replace", help="Replace a skill with the same name."),
            library: Path | None = library_opt, index: str | None = index_opt) -> None:
        """Add one hand-written skill folder."""
        from agentkit.skills import SkillFormatError
        from agentkit.skills.skillmd import SKILL_FILE, read_skill_dir

        if not (skill_dir / SKILL_FILE).is_file():
            raise _fail(f"{skill_dir} has no {SKILL_FILE}; a skill is a folder with a SKILL.md "
                        "(front matter: name, description, when_to_use; body: the procedure)", 2)
        lib = open_library(library, index)
        try:
            skill = read_skill_dir(skill_dir)
        except SkillFormatError as exc:
            raise _fail(f"Not a valid skill: {exc}", 2) from None
        result = lib.add(skill, copy_from=skill_dir, dedup=not force, replace=replace)
        if not result.admitted:
            raise _fail(f"Not added: {result.reason}")
        typer.echo(f"{result.status} {result.name} ({result.skill_id})")

    @skills.command("rm")
    def remove(name: str = typer.Argument(..., help="Skill name or id."),
               library: Path | None = library_opt, index: str | None = index_opt) -> None:
        """Remove a skill (its folder and its index entry)."""
        lib = open_library(library, index)
        try:
            skill = lib.remove(name)
        except KeyError as exc:
            raise _fail(str(exc.args[0])) from None
        typer.echo(f"removed {skill.name} ({skill.id})")

    @skills.command("import")
    def import_(source: Path = typer.Argument(..., help="A folder of skill folders (or one skill folder)."),
                force: bool = typer.Option(False, "--force", help="Skip the near-duplicate check."),
                replace: bool = typer.Option(False, "--replace", help="Replace skills with the same name."),
                library: Path | None = library_opt, index: str | None = index_opt) -> None:
        """Import every SKILL.md folder under SOURCE (hand-written or exported)."""
        if not source.exists():
            raise _fail(f"no such folder: {source}", 2)
        lib = open_library(library, index)
        results = lib.import_dir(source, dedup=not force, replace=replace)
        for r in results:
            typer.echo(f"{r.status:8}  {r.name}" + (f"  ({r.reason})" if r.reason and not r.admitted else ""))
        added = sum(r.admitted for r in results)
        typer.echo(f"{added} of {len(results)} skill(s) imported into {lib.folder.root}")

    @skills.command("export")
    def export(target: Path = typer.Argument(..., help="Folder to write one skill folder per skill into."),
               library: Path | None = library_opt, index: str | None = index_opt) -> None:
        """Export every skill as a SKILL.md folder (with skill.json: provenance and statistics)."""
        lib = open_library(library, index)
        written = lib.export_dir(target)
        typer.echo(f"{len(written)} skill(s) exported to {target}")

    @skills.command("stats")
    def stats(library: Path | None = library_opt, index: str | None = index_opt,
              as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
        """Counts, utility and admission figures of the library."""
        lib = open_library(library, index)
        figures = lib.stats()
        if as_json:
            typer.echo(json.dumps(figures, indent=1))
            return
        for key, value in figures.items():
            if key == "most_used":
                for s in value:
                    typer.echo(f"  used {s['use_count']:4d}  U={s['utility']:.3f}  {s['name']}")
            else:
                typer.echo(f"{key:>12}: {value}")

    @skills.command("sync")
    def sync(library: Path | None = library_opt, index: str | None = index_opt) -> None:
        """Rebuild the index from the skill folders (after editing or copying folders by hand)."""
        lib = open_library(library, index)
        changes = lib.sync_index()
        typer.echo(f"index synced: {changes['added']} added, {changes['removed']} removed, "
                   f"{lib.index.count()} skill(s) indexed")


# -- agentkit chat --skills PATH ----------------------------------------------------------------------


def describe_last_use(library: SkillLibrary, record: SkillsRecord | None) -> list[str]:
    """Lines for /skills: what the last turn retrieved, ranked, used and distilled."""
    lines = [f"skill library {library.folder.root}: {len(library)} skill(s)"]
    if record is None:
        lines.append("no turn has run with the library yet")
        return lines
    lines.append(f"query: {record.query or '-'}")
    if record.retrieved:
        for r in record.retrieved:
            mark = "*" if r.id == record.used else " "
            lines.append(f" {mark} {r.score:.3f}  U={r.utility:.3f}  {r.name}")
    else:
        lines.append("retrieved: none above the relevance floor")
    if record.used:
        lines.append("* = the skill put into context")
    distilled = record.distilled
    if record.admitted:
        lines.append(f"distilled: {distilled.get('name') if distilled else '?'} (admitted)")
    elif record.refused_reason:
        lines.append(f"distilled: not admitted: {record.refused_reason}")
    return lines


def chat_commands(library: SkillLibrary) -> dict[str, SlashCommand]:
    """The /skills chat command for a library.

    /skills shows what the last turn used; /skills good | bad gives the last turn its outcome
    (updates the used skill's utility and admits the pending distilled skill on good);
    /skills list lists the library.
    """
    def handle(session: ChatSession, arg: str) -> None:
        last = session.trajectories[-1] if session.trajectories else None
        verb = arg.split()[0].lower() if arg.split() else ""
        if verb in ("good", "bad"):
            if last is None:
                session.console.print("no turn to give feedback on yet")
                return
            record = library.cycle.settle(last, 1.0 if verb == "good" else 0.0)
            outcome = "admitted" if record.admitted else f"not admitted ({record.refused_reason})"
            session.console.print(f"recorded {verb}; distilled skill {outcome}")
            return
        if verb == "list":
            for s in sorted(library.skills(), key=lambda s: -s.utility):
                session.console.print(f"U={s.utility:.3f}  uses {s.use_count:3d}  {s.name}: "
                                      f"{_short(s.description, 70)}", markup=False)
            return
        for line in describe_last_use(library, last.records.get(SKILLS) if last is not None else None):
            session.console.print(line, markup=False)

    return {"skills": SlashCommand("skills", "Skills used in the last turn; /skills good|bad|list", handle,
                                   usage="[good|bad|list]")}
