"""`agentkit train report`: the curves of a run as one PNG (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentkit.extras import require
from agentkit.training.metrics import read_metrics

PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reward", ("reward_mean", "reward_max", "reward_min")),
    ("loss", ("loss",)),
    ("KL to reference (k3)", ("kl",)),
    ("entropy", ("entropy",)),
    ("SDAR gate", ("gate_mean", "gate_pos_frac", "delta_mean")),
    ("clip fraction", ("clip_frac",)),
    ("grad norm", ("grad_norm",)),
    ("per-track policy loss", ("pg_loss_main", "pg_loss_util", "pg_loss_rerank", "pg_loss_distill",
                               "pg_loss_schema", "pg_loss_answer")),
)


def plot_report(run: str | Path, png: str | Path | None = None, *, smooth: int = 5) -> Path:
    """Plot every panel that has data in RUN/metrics.jsonl; return the PNG path.

    Each series is drawn raw (thin) and as a trailing moving average over `smooth` steps.
    """
    require("matplotlib", extra="train", feature="training plots")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run = Path(run)
    records = read_metrics(run)
    panels = [(title, [k for k in keys if _series(records, k)[0]]) for title, keys in PANELS]
    panels = [(t, ks) for t, ks in panels if ks]
    if not panels:
        raise FileNotFoundError(f"{run} has no plottable metrics")
    cols = 2
    rows = (len(panels) + 1) // 2
    fig, axes = plt.subplots(rows, cols, figsize=(11, 3.0 * rows), squeeze=False)
    for ax, (title, keys) in zip(axes.flat, panels, strict=False):
        for key in keys:
            xs, ys = _series(records, key)
            (line,) = ax.plot(xs, ys, linewidth=0.8, alpha=0.4)
            if len(ys) >= smooth > 1:
                ax.plot(xs, _moving_average(ys, smooth), color=line.get_color(), linewidth=1.8, label=key)
            else:
                line.set_label(key)
                line.set_alpha(1.0)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(f"training run {run.name} — {len(records)} steps")
    fig.tight_layout()
    out = Path(png) if png else run / "report.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _series(records: list[dict[str, Any]], key: str) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    for r in records:
        v = r.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool):
            xs.append(float(r.get("step", len(xs))))
            ys.append(float(v))
    return xs, ys


def _moving_average(ys: list[float], n: int) -> list[float]:
    out = []
    for i in range(len(ys)):
        window = ys[max(0, i - n + 1) : i + 1]
        out.append(sum(window) / len(window))
    return out
