"""CPU training page-faults its large buffers in again and again unless freed memory is kept for reuse.

glibc serves every allocation above its mmap threshold (at most 32 MB) with a fresh mapping and
unmaps it on free. A training step allocates and frees vocabulary-sized buffers (embedding and
output-layer gradients: 113 MB each for SmolLM2) several times per micro-batch, so each one is
faulted in and zeroed by the kernel again. `keep_freed_memory` turns mmap serving off and heap
trimming (almost) off: freed blocks stay in the process and are reused, which makes the update faster at
about the same peak RSS (the peak is live tensors either way; Why: docs/decisions.md#cpu-training-speed).
One cost: torch asks for 64-byte-aligned blocks, which
glibc carves from a request a few bytes bigger than the block itself, so a block freed between live
small ones cannot serve the next request of the same size; until freed neighbours coalesce (a few
cycles), such blocks stay unused in the heap. It changes process-wide malloc settings, so the
Trainer applies it only on CPU and only with `TrainConfig.keep_freed_memory` (default on).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

log = logging.getLogger(__name__)

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_applied = False


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for reuse. Returns whether it applied (glibc only)."""
    global _applied
    if _applied:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _applied = bool(mallopt(_M_MMAP_MAX, 0) == 1 and mallopt(_M_TRIM_THRESHOLD, 2**31 - 1) == 1)
    if _applied:
        log.debug("malloc: mmap serving off, trim threshold 2 GiB (freed memory is reused)")
    return _applied
