"""The step loop's small parts shared by offline and online training: epoch order and the progress bar."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch


def permutation(n: int, seed: int) -> list[int]:
    """A seeded permutation of range(n): the order of one epoch, the same on every process."""
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(n, generator=g).tolist()


@contextlib.contextmanager
def progress(enabled: bool, total: int, start: int) -> Iterator[Callable[[int, dict[str, Any]], None]]:
    """A rich progress bar over optimiser steps; yields advance(step, record)."""
    if not enabled:
        yield lambda step, record: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  TextColumn("{task.description}")) as bar:
        task = bar.add_task("", total=total, completed=start)

        def advance(step: int, record: dict[str, Any]) -> None:
            desc = (f"loss {record.get('loss', float('nan')):.4f} nll {record.get('nll', float('nan')):.3f} "
                    f"reward {record.get('reward_mean', 0.0):.3f}")
            bar.update(task, completed=step, description=desc)

        yield advance
