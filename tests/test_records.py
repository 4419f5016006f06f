"""The framework's records on a trajectory: typed, keyed once, and logs of release 0.1.0 still load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentkit import Agent, Message
from agentkit.loop.cognitive_map import CognitiveMap
from agentkit.loop.extensions import RunContext
from agentkit.models.protocol import GenerationSettings
from agentkit.records import (
    EXPERIENCE,
    EXPLORE,
    FEEDBACK,
    MAP,
    MAP_ERROR,
    MAP_PROBES,
    NOTES,
    NOTES_RETRIEVAL_S,
    POLICY,
    RECORD_KEYS,
    SAMPLES,
    SKILLS,
    SQL,
    TOOLS_OFFERED,
    NotesRecord,
    ShownNote,
    SkillsRecord,
)
from agentkit.testing import ScriptedModel
from agentkit.training.advantages import skill1_rewards
from agentkit.training.algorithms import privileged_context
from agentkit.training.config import TrainConfig
from agentkit.training.credit import track_rewards
from agentkit.trajectory import SCHEMA_VERSION, Trajectory, append_jsonl, read_jsonl

OLD_LOG = Path(__file__).parent / "data" / "trajectories-0.1.0.jsonl"


def raw_lines() -> list[dict]:
    return [json.loads(line) for line in OLD_LOG.read_text().splitlines()]


def test_a_log_written_by_release_0_1_0_loads_with_every_record_typed() -> None:
    trajectories = read_jsonl(OLD_LOG)
    assert len(trajectories) == len(raw_lines()) == 6
    seen = set()
    for t, raw in zip(trajectories, raw_lines(), strict=True):
        assert t.schema_version <= SCHEMA_VERSION
        for key in RECORD_KEYS:
            if key.name in raw["extras"]:
                value = t.records.get(key)
                assert isinstance(value, key.model)
                # Read and written back through the accessor, the record is the JSON the release wrote.
                copy = Trajectory()
                copy.records.set(key, value)
                assert copy.extras[key.name] == raw["extras"][key.name]
                seen.add(key.name)
    assert seen == {k.name for k in RECORD_KEYS} - {POLICY.name, TOOLS_OFFERED.name, EXPERIENCE.name,
                                                   FEEDBACK.name}  # every record of 0.1.0
    # (policy came in schema 2, tools_offered in 3, experience and feedback in 4)


def test_old_records_read_as_their_models() -> None:
    by_key = {k: next(t for t in read_jsonl(OLD_LOG) if k.name in t.extras) for k in RECORD_KEYS
               if k not in (POLICY, TOOLS_OFFERED, EXPERIENCE, FEEDBACK)}
    skills = by_key[SKILLS].records.get(SKILLS)
    assert skills is not None and skills.used is not None and skills.used_text
    assert skills.used in {r.id for r in skills.retrieved} and skills.ranking[0] == skills.used
    notes = by_key[NOTES].records.get(NOTES)
    assert notes is not None and all(isinstance(n, ShownNote) for n in notes.root)
    assert by_key[NOTES_RETRIEVAL_S].records.get(NOTES_RETRIEVAL_S).root >= 0.0
    samples = by_key[SAMPLES].records.get(SAMPLES)
    assert samples is not None and samples.n == 3 and len(samples.candidates) == 3
    assert samples.candidates[samples.chosen].kept and samples.candidates[samples.chosen].votes == 2
    cmap = by_key[MAP].records.get(MAP)
    assert isinstance(cmap, CognitiveMap) and not cmap.is_empty
    assert by_key[EXPLORE].records.get(EXPLORE).identity
    assert by_key[MAP_ERROR].records.get(MAP_ERROR).root
    assert isinstance(by_key[MAP_PROBES].records.get(MAP_PROBES).root, list)
    sql = by_key[SQL].records.get(SQL)
    assert sql is not None and sql.final_sql and len(sql.phases) == len(by_key[SQL].turns)


def test_training_reads_the_skills_record_through_the_accessor() -> None:
    t = next(t for t in read_jsonl(OLD_LOG) if SKILLS.name in t.extras)
    t.reward = 1.0
    raw = next(r for r in raw_lines() if r["id"] == t.id)["extras"]["skills"]
    expected = skill1_rewards(1.0, raw)
    got = track_rewards([t], TrainConfig(algo="skill1"))
    assert {k: v[0] for k, v in got.items()} == pytest.approx(expected, nan_ok=True)
    assert privileged_context([t], 0) == raw["used_text"]


def test_records_survive_a_new_log_unchanged(tmp_path: Path) -> None:
    t = Trajectory(task="q", metadata={"experiment": "a"})
    t.records.set(NOTES, NotesRecord([ShownNote(id="note_1", subject="s", score=0.5)]))
    t.records.set(SKILLS, SkillsRecord(query="q", used="skill_1", used_text="do X"))
    append_jsonl(tmp_path / "log.jsonl", t)
    back = read_jsonl(tmp_path / "log.jsonl")[0]
    assert back.records.get(NOTES) == t.records.get(NOTES)
    assert back.records.get(SKILLS).used_text == "do X" and back.metadata == {"experiment": "a"}
    assert back.extras["notes"] == [{"id": "note_1", "subject": "s", "score": 0.5}]


def test_a_record_keeps_its_shape_and_updates_in_place() -> None:
    t = Trajectory()
    t.records.set(SKILLS, SkillsRecord())
    view = t.extras["skills"]
    t.records.set(SKILLS, SkillsRecord(admitted=True))
    assert view["admitted"] is True  # a dict read earlier sees the update
    with pytest.raises(TypeError, match="SkillsRecord"):
        t.records.set(SKILLS, NotesRecord([]))  # type: ignore[arg-type]
    t.extras["skills"] = {"retrieved": [{"name": "no id"}]}
    with pytest.raises(ValidationError):
        t.records.get(SKILLS)


def test_run_context_writes_framework_records_by_key_only() -> None:
    t = Trajectory(task="q")
    run = RunContext(task="q", model=ScriptedModel(["x"]), tools={}, trajectory=t, settings=GenerationSettings())
    run.record(NOTES, NotesRecord([]))
    assert t.extras["notes"] == []
    with pytest.raises(ValueError, match=r"agentkit.records.NOTES"):
        run.record("notes", [])
    run.record("my_extension", {"shown": True})  # an extension's own record, by its own name
    assert t.extras["my_extension"] == {"shown": True}


def test_metadata_is_the_users_and_stays_as_given() -> None:
    result = Agent(ScriptedModel(["hi"])).run("hello", metadata={"split": "dev", "records": [1]})
    assert result.trajectory.metadata == {"split": "dev", "records": [1]}
    assert result.trajectory.extras == {}
    assert result.trajectory.messages[-1] == Message.assistant("hi") or result.answer == "hi"


def test_record_shapes_are_versioned_with_the_trajectory_schema() -> None:
    """Changing a record model changes what logs hold: bump SCHEMA_VERSION and snapshot the new shapes
    (tests/data/record-schemas-vN.json), keeping older logs loadable."""
    snapshot = Path(__file__).parent / "data" / f"record-schemas-v{SCHEMA_VERSION}.json"
    assert snapshot.exists(), f"no snapshot of the record shapes for trajectory schema {SCHEMA_VERSION}"
    current = json.loads(json.dumps({k.name: k.model.model_json_schema() for k in RECORD_KEYS}, sort_keys=True))
    assert current == json.loads(snapshot.read_text()), (
        "a record model changed shape: bump agentkit.trajectory.SCHEMA_VERSION and write its snapshot")


def test_ids_differ_when_random_is_seeded_the_same() -> None:
    import random

    from agentkit.messages import new_id

    random.seed(0)  # training seeds `random` in every process; run and call ids must still not repeat
    first = new_id("traj")
    random.seed(0)
    assert new_id("traj") != first
