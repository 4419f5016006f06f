"""Training metrics: one JSON line per step in OUT/metrics.jsonl, optionally TensorBoard and wandb."""

from __future__ import annotations

import json
import logging
import math
import secrets
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class MetricsLog:
    """Appends one record per step. On resume from step k, records after k are dropped first, so the
    log reads as one uninterrupted run."""

    def __init__(self, out_dir: str | Path, *, tensorboard: bool = False, wandb_project: str | None = None,
                 resume_step: int | None = None, run_config: dict[str, Any] | None = None) -> None:
        self.path = Path(out_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume_step is not None and self.path.exists():
            kept = [r for r in _readable(self.path) if r.get("step", 0) <= resume_step]
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text("".join(json.dumps(r) + "\n" for r in kept))
            tmp.replace(self.path)  # a crash here keeps the old log whole
        elif resume_step is None and self.path.exists():
            self.path.unlink()
        self._tb = None
        self._wandb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(Path(out_dir) / "tensorboard"))
            except ImportError:
                log.warning("tensorboard is not installed (pip install tensorboard); logging JSONL only")
        if wandb_project:
            self._wandb = _wandb_run(Path(out_dir), wandb_project, run_config or {}, resume_step is not None)

    def write(self, record: dict[str, Any]) -> None:
        """Append one step's metrics (JSONL, and TensorBoard/W&B when enabled)."""
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
        with open(self.path, "a+b") as f:
            if f.seek(0, 2) > 0:  # a run killed mid-line left a torn record: close it off first
                f.seek(-1, 2)
                if f.read(1) != b"\n":
                    f.write(b"\n")
            f.write((json.dumps(clean) + "\n").encode())
        step = int(record.get("step", 0))
        scalars = {k: v for k, v in clean.items() if isinstance(v, int | float) and k != "step"}
        if self._tb is not None:
            for k, v in scalars.items():
                self._tb.add_scalar(k, v, step)
        if self._wandb is not None:
            self._wandb.log(scalars, step=step)

    def close(self) -> None:
        """Flush and close the sinks."""
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


def _wandb_run(out_dir: Path, project: str, config: dict[str, Any], resume: bool) -> Any:
    """A wandb run writing under OUT/wandb; a resumed training continues the run it started."""
    try:
        import wandb
    except ImportError:
        log.warning("wandb is not installed (pip install wandb); logging JSONL only")
        return None
    id_file = out_dir / "wandb-run-id"
    run_id = id_file.read_text().strip() if resume and id_file.exists() else secrets.token_hex(4)
    id_file.write_text(run_id + "\n")
    return wandb.init(project=project, id=run_id, resume="allow", dir=str(out_dir), config=config)


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl file (or of OUT/metrics.jsonl given OUT)."""
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"no metrics log at {path}")
    return _readable(path)


def _readable(path: Path) -> list[dict[str, Any]]:
    """The records of a metrics log, skipping torn or corrupted lines with a warning."""
    records = []
    for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            log.warning("skipping unreadable metrics record at %s:%d", path, lineno)
    return records
