"""The CPU malloc setting: a freed vocabulary-sized buffer stays in the process for the next one."""

from __future__ import annotations

import platform

import pytest
import torch

from agentkit.training.allocator import keep_freed_memory


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        line = next(x for x in f if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc malloc only")
def test_freed_big_blocks_are_kept_for_reuse() -> None:
    assert keep_freed_memory() and keep_freed_memory()  # applies once, then reports it applied
    x = torch.ones(96 * 2**20 // 4)  # 96 MB: glibc would mmap it and unmap it on free
    held = _rss_mb()
    del x
    assert _rss_mb() > held - 48  # still resident: the next allocation reuses it without page faults
    y = torch.ones(96 * 2**20 // 4)
    assert _rss_mb() < held + 48  # ...and it did
    del y
