"""Stores and checkpoints lose nothing (issue 16): a skill replace killed between its two renames is
recovered on open, checkpoints prune by step number (past step 1,000,000), a killed save's temporary
folder is cleaned up, a crafted checkpoint cannot run code on resume; and kill -9 at random moments
(tests/kill_stores.py) loses no record of the skill library or the checkpoints."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from agentkit.skills import Skill
from agentkit.skills.skillmd import exchange_paths, read_skill_dir, write_skill_dir
from agentkit.skills.storage import LibraryFolder
from agentkit.training.checkpoint import (
    checkpoint_dirs,
    clean_stale_temporaries,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)

KILL = Path(__file__).parent / "kill_stores.py"


def _kill_run(store: str, rounds: int, seed: int = 0) -> dict:
    proc = subprocess.run([sys.executable, str(KILL), store, str(rounds), str(seed)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


# -- skills -----------------------------------------------------------------------------------------


def test_a_skill_moved_aside_by_a_killed_replace_is_put_back_on_open(tmp_path) -> None:
    folder = LibraryFolder(tmp_path / "lib")
    folder.open_manifest({})
    write_skill_dir(Skill(name="keep-me", description="A skill that must survive."), folder.skills / "keep-me")
    # The state a kill between the two renames of the move-aside replace leaves:
    os.rename(folder.skills / "keep-me", folder.skills / ".tmp-old-keep-me-0123abcd")
    (folder.skills / ".tmp-new-keep-me-89abcdef").mkdir()  # the new folder, not yet renamed in
    LibraryFolder(tmp_path / "lib").open_manifest({})
    assert read_skill_dir(folder.skills / "keep-me").description == "A skill that must survive."
    assert sorted(p.name for p in folder.skills.iterdir()) == ["keep-me"]


def test_replace_exchanges_the_folders_and_leaves_nothing_behind(tmp_path) -> None:
    target = tmp_path / "skills" / "swap-me"
    write_skill_dir(Skill(name="swap-me", description="first"), target)
    (target / "script.py").write_text("print('kept')")
    write_skill_dir(Skill(name="swap-me", description="second"), target, copy_from=target)
    assert read_skill_dir(target).description == "second"
    assert (target / "script.py").read_text() == "print('kept')"
    assert [p.name for p in target.parent.iterdir()] == ["swap-me"]
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("A")
    b.write_text("B")
    if exchange_paths(a, b):  # where the file system has renameat2
        assert (a.read_text(), b.read_text()) == ("B", "A")


def test_kill_during_skill_replaces_loses_nothing() -> None:
    result = _kill_run("skills-replace", 6)
    assert result["writes"] > 0 and result["lost"] == 0 and result["leftovers"] == [], result


@pytest.mark.slow
def test_kill_during_skill_merges_loses_nothing() -> None:
    result = _kill_run("skills-merge", 1)
    assert result["writes"] > 0 and result["lost"] == 0 and result["leftovers"] == [], result


# -- checkpoints ------------------------------------------------------------------------------------


def _parts():
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    return model, optimizer, scheduler


def _save(out: Path, step: int, parts, keep: int = 2) -> Path:
    model, optimizer, scheduler = parts
    return save_checkpoint(out, step, model=model, optimizer=optimizer, scheduler=scheduler, state={},
                           config_yaml="", export=False, keep=keep)


def test_pruning_orders_checkpoints_by_step_past_one_million(tmp_path) -> None:
    parts = _parts()
    for step in (999_998, 999_999, 1_000_000, 1_000_001):
        final = _save(tmp_path, step, parts)
        assert final.exists()  # was deleted right after being written from step 1,000,000 on
    assert [p.name for p in checkpoint_dirs(tmp_path)] == ["ckpt-1000000", "ckpt-1000001"]
    assert latest_checkpoint(tmp_path) == tmp_path / "ckpt-1000001"


def test_stale_temporaries_of_a_killed_save_are_cleaned_and_a_moved_checkpoint_is_restored(tmp_path) -> None:
    parts = _parts()
    _save(tmp_path, 5, parts)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()  # a pid that no longer runs
    (tmp_path / f".tmp-ckpt-000006-{dead}").mkdir()
    (tmp_path / f".tmp-ckpt-000006-{dead}" / "trainable.pt").write_bytes(b"x" * 1000)
    (tmp_path / f".latest-{dead}").write_text("ckpt-000006\n")
    os.replace(tmp_path / "ckpt-000005", tmp_path / f".tmp-ckpt-000005-{dead}-old")  # killed mid-replace
    assert latest_checkpoint(tmp_path) == tmp_path / "ckpt-000005"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt-000005", "latest"]
    assert clean_stale_temporaries(tmp_path) == []


class _RunsCode:
    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_crafted_checkpoint_cannot_run_code_on_resume(tmp_path) -> None:
    parts = _parts()
    folder = _save(tmp_path, 1, parts)
    marker = tmp_path / "pwned"
    evil = _RunsCode()
    evil.marker = marker
    with open(folder / "rng.pt", "wb") as f:  # torch.load reads plain pickles too
        pickle.dump({"per_process": [evil]}, f, protocol=2)
    model, optimizer, scheduler = parts
    with pytest.raises(pickle.UnpicklingError):
        load_checkpoint(folder, model=model, optimizer=optimizer, scheduler=scheduler)
    assert not marker.exists()


@pytest.mark.slow
def test_kill_during_checkpoint_saves_with_pruning_loses_nothing() -> None:
    result = _kill_run("checkpoints", 1)
    assert result["writes"] > 0 and result["lost"] == 0 and result["leftovers"] == [], result
    assert len(result["kept"]) <= 3  # keep=2, plus the newest when the kill came before its pruning
