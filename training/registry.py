"""The annotations that declare an RL algorithm's parts; the registries that list them are in
`agentkit.training.algorithms`. The decorators only annotate (no table is filled at import)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from agentkit.training.config import TrainConfig

if TYPE_CHECKING:
    import torch

    from agentkit.trajectory import Trajectory

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class TeacherPass:
    """An algorithm's extra no-grad pass of the policy over each sequence with a privileged text put
    before it (SDAR's teacher), and the loss term on the log-probs it gives. An algorithm declares one
    with `@advantage_estimator(..., teacher=...)`; the trainer runs it only for such an algorithm.

    The teacher mask of a sequence is 1 on its generated tokens when its trajectory has a context, else 0.
    """

    context: Callable[[Sequence[Trajectory], int, TrainConfig], str | None]
    """The privileged text before trajectory i of the batch (None: no teacher signal for it)."""
    loss: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float, TrainConfig],
                   tuple[torch.Tensor, dict[str, float]]]
    """(student log-probs, teacher log-probs, teacher mask, token count of the whole batch, config) →
    (the weighted term added to the step's loss, this micro-batch's metric sums under `metric_keys`)."""
    summary: Callable[[Mapping[str, float], float], dict[str, Any]]
    """(the step's metric sums, the token count) → the fields the step's metrics record gets."""
    metric_keys: tuple[str, ...]
    """The sums `loss` returns; summed over micro-batches and processes."""


def advantage_estimator(name: str, *, fields: tuple[str, ...] = (),
                        teacher: TeacherPass | None = None) -> Callable[[F], F]:
    """Declare an advantage estimator: the algorithm (`TrainConfig.algo`) it implements, the
    `TrainConfig` fields it reads and, if the algorithm has one, its `TeacherPass`. The function is
    returned unchanged but for `algorithm`, `config_fields` and `teacher` attributes."""
    return _annotate(name, fields, teacher)


def policy_loss(name: str, *, fields: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Declare a per-token policy loss: its name and the `TrainConfig` fields it reads (annotation only)."""
    return _annotate(name, fields, None)


def _annotate(name: str, fields: tuple[str, ...], teacher: TeacherPass | None) -> Callable[[F], F]:
    unknown = [f for f in fields if f not in TrainConfig.model_fields]
    if unknown:
        raise ValueError(f"{name}: {unknown} are not TrainConfig fields")

    def annotate(fn: F) -> F:
        fn.algorithm = name  # type: ignore[attr-defined]
        fn.config_fields = fields  # type: ignore[attr-defined]
        fn.teacher = teacher  # type: ignore[attr-defined]
        return fn

    return annotate


def declared_name(fn: Callable[..., Any]) -> str:
    """The name a function was declared under with `advantage_estimator` or `policy_loss`."""
    name = getattr(fn, "algorithm", None)
    if not isinstance(name, str):
        raise TypeError(f"{getattr(fn, '__name__', fn)!r} is not declared with @advantage_estimator/@policy_loss")
    return name


def declared_teacher(fn: Callable[..., Any]) -> TeacherPass | None:
    """The `TeacherPass` an advantage estimator was declared with (None: the algorithm has none)."""
    declared_name(fn)
    teacher = getattr(fn, "teacher", None)
    return teacher if isinstance(teacher, TeacherPass) else None
