"""Retries with exponential backoff on transient model errors: the one helper every model call uses."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from agentkit.models.protocol import TransientModelError

T = TypeVar("T")


def _delays(max_retries: int, first_delay: float) -> Iterator[float | None]:
    """The wait after each failed attempt: first_delay, doubling; None after the last attempt."""
    delay = first_delay
    for _ in range(max_retries):
        yield delay
        delay *= 2
    yield None


def call_with_retries(call: Callable[[], T], max_retries: int, *, first_delay: float = 1.0) -> T:
    """`call()`, tried again after 1, 2, 4, … s when it raises `TransientModelError` (at most
    `max_retries` retries; the last error is raised)."""
    for delay in _delays(max_retries, first_delay):
        try:
            return call()
        except TransientModelError:
            if delay is None:
                raise
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def stream_with_retries(
    open_stream: Callable[[], Iterable[T]],
    max_retries: int,
    *,
    committed: Callable[[T], bool],
    first_delay: float = 1.0,
) -> Iterator[T]:
    """The items of `open_stream()`, opened again after a `TransientModelError` as `call_with_retries`
    does — unless an item for which `committed(item)` is true was already passed on (text the user has
    seen cannot be taken back), in which case the error is raised."""
    for delay in _delays(max_retries, first_delay):
        emitted = False
        try:
            for item in open_stream():
                emitted = emitted or committed(item)
                yield item
            return
        except TransientModelError:
            if emitted or delay is None:
                raise
            time.sleep(delay)
