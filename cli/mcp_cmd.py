"""`agentkit mcp serve`: what the agent has learnt — its skill library and mistake notebook — as an MCP
server, so other agents and IDE assistants can search and read it (and, with --writable, add to it).

    agentkit mcp serve                                  # stdio: for an MCP client that starts it
    agentkit mcp serve --skills my-skills --notes my-notes --http 8765   # http://127.0.0.1:8765/mcp

Tools: skills_search, skills_show, notes_search, notes_show; with --writable also skills_add and
notes_add. Read-only by default: a client cannot change what the agent has learnt unless asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from mcp.server.fastmcp import FastMCP

    from agentkit.memory.notebook import MistakeNotebook
    from agentkit.skills import SkillLibrary

SERVER_NAME = "agentkit-learnt"


def build_server(library: SkillLibrary | None, notebook: MistakeNotebook | None, *, writable: bool = False,
                 host: str = "127.0.0.1", port: int = 8000) -> FastMCP:
    """An MCP server over `library` and `notebook` (either may be None); `writable` adds the add tools."""
    from agentkit.extras import require

    require("mcp", extra="mcp", feature="agentkit mcp serve")
    from mcp.server.fastmcp import FastMCP
    from mcp.types import ToolAnnotations

    server = FastMCP(SERVER_NAME, host=host, port=port, log_level="WARNING",
                     instructions="Skills (procedures that worked) and notes (mistakes to avoid) that an "
                                  "agentkit agent learnt from its runs. Search first, then show the best hits.")
    read = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    write = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)

    if library is not None:
        lib = library

        @server.tool(annotations=read)
        def skills_search(query: str, k: int = 5) -> list[dict[str, Any]]:
            """Find skills for a task: the k most similar, best first, with their cosine similarity.

            Args:
                query: the task or what you want to do, in plain words.
                k: how many skills to return (1-50).
            """
            hits = lib.search(query, k=max(1, min(int(k), 50)))
            return [{"name": h.skill.name, "description": h.skill.description, "when_to_use": h.skill.when_to_use,
                     "score": round(h.score, 4), "utility": round(h.skill.utility, 4)} for h in hits]

        @server.tool(annotations=read)
        def skills_show(name: str) -> str:
            """The full text of one skill (its SKILL.md), by name or id.

            Args:
                name: the skill's name (as skills_search returns it) or id.
            """
            from agentkit.skills.skillmd import render_skill_md

            try:
                return render_skill_md(lib.get(name))
            except KeyError:
                raise ValueError(f"no skill named {name!r}; skills_search lists the names") from None

        if writable:
            from agentkit.skills import Skill

            @server.tool(annotations=write)
            def skills_add(name: str, description: str, body: str, when_to_use: str = "") -> dict[str, Any]:
                """Offer a new skill to the library; a near-duplicate of an existing skill is refused.

                Args:
                    name: a short kebab-case name, e.g. "sql-count-rows-per-group".
                    description: one sentence saying what the skill does.
                    body: the procedure, step by step.
                    when_to_use: when the skill applies.
                """
                admission = lib.add(Skill(name=name, description=description, body=body, when_to_use=when_to_use))
                return {"status": admission.status, "name": admission.name, "reason": admission.reason}

    if notebook is not None:
        book = notebook

        @server.tool(annotations=read)
        def notes_search(query: str, k: int = 3) -> list[dict[str, Any]]:
            """Find notes about mistakes made on similar tasks: the k closest subjects, best first.

            Args:
                query: the task, in plain words.
                k: how many notes to return (1-50).
            """
            hits = book.search(query, k=max(1, min(int(k), 50)), threshold=-1.0)
            return [{"id": n.id, "subject": n.subject, "score": round(s, 4)} for n, s in hits]

        @server.tool(annotations=read)
        def notes_show(note_id: str) -> str:
            """One note in full: examples, the correct approach, the mistake, the strategy, anti-patterns.

            Args:
                note_id: the note's id (or a unique prefix of it), as notes_search returns it.
            """
            try:
                return book.get(note_id).render(max_words=100_000)
            except KeyError as exc:
                raise ValueError(str(exc.args[0])) from None

        if writable:
            from agentkit.memory.notes import Note

            @server.tool(annotations=write)
            def notes_add(subject: str, corrected_examples: list[str], correct_approach: str, mistake_summary: str,
                          generalisable_strategy: str, anti_patterns: list[str]) -> dict[str, Any]:
                """Add a note about a mistake and how to avoid it.

                Args:
                    subject: what kind of task the note is about, 10 to 50 words.
                    corrected_examples: one to three examples of the task done right.
                    correct_approach: how to do such tasks.
                    mistake_summary: what went wrong.
                    generalisable_strategy: the lesson, for similar tasks.
                    anti_patterns: things not to do.
                """
                note = Note(subject=subject, corrected_examples=corrected_examples, correct_approach=correct_approach,
                            mistake_summary=mistake_summary, generalisable_strategy=generalisable_strategy,
                            anti_patterns=anti_patterns)
                book.add(note)
                return {"id": note.id, "notes": len(book)}

    return server


def register(app: typer.Typer) -> None:
    """Add the `mcp` command group."""
    group = typer.Typer(help="Model Context Protocol: serve what the agent has learnt.", no_args_is_help=True)
    app.add_typer(group, name="mcp")

    @group.command("serve")
    def serve(
        skills: Path | None = typer.Option(None, "--skills", help="Skill library folder (default "
                                           "$AGENTKIT_HOME/skills)"),
        notes: Path | None = typer.Option(None, "--notes", help="Mistake notebook folder (default "
                                          "$AGENTKIT_HOME/notes)"),
        no_skills: bool = typer.Option(False, "--no-skills", help="Do not serve the skill library"),
        no_notes: bool = typer.Option(False, "--no-notes", help="Do not serve the mistake notebook"),
        writable: bool = typer.Option(False, "--writable", help="Also offer skills_add and notes_add"),
        http: int | None = typer.Option(None, "--http", min=1, max=65535,
                                        help="Serve streamable HTTP on this port (at /mcp) instead of stdio"),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on with --http"),
    ) -> None:
        """Serve the skill library and the mistake notebook over MCP (stdio, or HTTP with --http)."""
        from agentkit.extras import MissingExtraError

        try:
            library = None
            if not no_skills:
                from agentkit.cli.skills_cmd import open_library

                library = open_library(skills)
            notebook = None
            if not no_notes:
                from agentkit.memory import default_notes_path
                from agentkit.memory.notebook import MistakeNotebook

                notebook = MistakeNotebook.open(notes or default_notes_path())
            server = build_server(library, notebook, writable=writable, host=host, port=http or 8000)
        except (MissingExtraError, ValueError, OSError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        if library is None and notebook is None:
            typer.echo("error: nothing to serve (both --no-skills and --no-notes)", err=True)
            raise typer.Exit(2)
        server.run("streamable-http" if http else "stdio")
