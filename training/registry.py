"""The annotations that declare an RL algorithm's parts; the registries that list them are in
`agentkit.training.algorithms`. The decorators only annotate (no table is filled at import)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from agentkit.training.config import TrainConfig

F = TypeVar("F", bound=Callable[..., Any])


def advantage_estimator(name: str, *, fields: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Declare an advantage estimator: the algorithm (`TrainConfig.algo`) it implements and the
    `TrainConfig` fields it reads. The function is returned unchanged but for `algorithm` and
    `config_fields` attributes."""
    return _annotate(name, fields)


def policy_loss(name: str, *, fields: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Declare a per-token policy loss: its name and the `TrainConfig` fields it reads (annotation only)."""
    return _annotate(name, fields)


def _annotate(name: str, fields: tuple[str, ...]) -> Callable[[F], F]:
    unknown = [f for f in fields if f not in TrainConfig.model_fields]
    if unknown:
        raise ValueError(f"{name}: {unknown} are not TrainConfig fields")

    def annotate(fn: F) -> F:
        fn.algorithm = name  # type: ignore[attr-defined]
        fn.config_fields = fields  # type: ignore[attr-defined]
        return fn

    return annotate


def declared_name(fn: Callable[..., Any]) -> str:
    """The name a function was declared under with `advantage_estimator` or `policy_loss`."""
    name = getattr(fn, "algorithm", None)
    if not isinstance(name, str):
        raise TypeError(f"{getattr(fn, '__name__', fn)!r} is not declared with @advantage_estimator/@policy_loss")
    return name
