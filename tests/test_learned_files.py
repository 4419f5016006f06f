"""The files `agentkit learn` writes one artefact to (pacing, repairs, shape checks): saved and read back
the same, and a missing, cut or other file is a clear error naming what the file should be."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentkit.memory.pacing import Pacing
from agentkit.memory.repairs import Repair, Repairs
from agentkit.memory.shape_checks import Example, ShapeChecks

ARTEFACTS: list[tuple[Any, str]] = [
    (Pacing({"explore": 2}, {"successes": 3}), "pacing file"),
    (Repairs([Repair("no such column: …", "q", "t1", "run_query", {"sql": "a"}, "e", "run_query", {"sql": "b"},
                     "reference")]), "repairs file"),
    (ShapeChecks([Example("Question: List the names.", ())], {"extra_limit": 2}), "shape-checks file"),
]


@pytest.mark.parametrize(("artefact", "what"), ARTEFACTS, ids=lambda a: type(a).__name__)
def test_an_artefact_reads_back_as_saved_and_a_bad_file_says_what_it_should_be(artefact: Any, what: str,
                                                                              tmp_path: Path) -> None:
    cls = type(artefact)
    path = artefact.save(tmp_path / "saved.json")
    again = cls.load(path).save(tmp_path / "again.json")
    assert again.read_bytes() == path.read_bytes()
    others = [a for a, _ in ARTEFACTS if type(a) is not cls]
    other = others[0].save(tmp_path / "other.json")
    (tmp_path / "cut.json").write_text(path.read_text()[:25])
    for bad in (other, tmp_path / "cut.json"):
        with pytest.raises(ValueError, match=f"is not a {what}"):
            cls.load(bad)
    with pytest.raises(FileNotFoundError, match=f"no {what} at"):
        cls.load(tmp_path / "none.json")
