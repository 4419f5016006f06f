"""Placeholder: commands of this module are being written."""

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to the CLI."""
