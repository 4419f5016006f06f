"""SKILL.md: parsing, rendering, skill folders, and the export → import → export round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentkit.skills.model import NewerSchemaError, Skill, SkillFormatError, check_name, slugify
from agentkit.skills.skillmd import (
    find_skill_dirs,
    parse_skill_md,
    read_skill_dir,
    render_skill_md,
    skill_from_markdown,
    write_skill_dir,
)

DATA = Path(__file__).parent / "data" / "skills"

HAND_WRITTEN = """---
name: count-rows-per-group
description: Count rows per category with GROUP BY.
when-to-use: A question asks how many items each group has.
license: MIT
allowed-tools: [sql_query]
---

1. Find the table.
2. GROUP BY the category column.
"""


def test_parse_hand_written_skill_keeps_unknown_keys():
    skill = skill_from_markdown(HAND_WRITTEN)
    assert skill.name == "count-rows-per-group"
    assert skill.when_to_use == "A question asks how many items each group has."
    assert skill.body.startswith("1. Find the table.")
    assert skill.extra["front_matter"] == {"license": "MIT", "allowed-tools": ["sql_query"]}
    again = skill_from_markdown(render_skill_md(skill))
    assert (again.name, again.description, again.when_to_use, again.body, again.extra) == (
        skill.name, skill.description, skill.when_to_use, skill.body, skill.extra)


@pytest.mark.parametrize("text, message", [
    ("no front matter here", "must start with YAML front matter"),
    ("---\nname: x\n", "not closed"),
    ("---\nname: [unclosed\n---\nbody", "not valid YAML"),
    ("---\n- a list\n---\nbody", "must be a mapping"),
    ("---\nname: ok-name\n---\nbody", "lacks description"),
    ("---\nname: Bad Name!\ndescription: d\n---\n", "invalid skill name"),
])
def test_bad_skill_md_is_a_clear_error(text, message):
    with pytest.raises(SkillFormatError, match=message):
        skill_from_markdown(text)


def test_names_and_slugs():
    assert check_name("a") == "a"
    assert check_name("sql-top-n") == "sql-top-n"
    for bad in ("", "-a", "a-", "a--b", "A", "a_b", "x" * 65):
        with pytest.raises(SkillFormatError):
            check_name(bad)
    assert slugify("Count Rows per Group (SQL)!") == "count-rows-per-group-sql"
    assert slugify("???") == "skill"


def test_every_fixture_skill_parses():
    dirs = find_skill_dirs(DATA)
    assert len(dirs) >= 12
    skills = [read_skill_dir(d) for d in dirs]
    assert all(s.description and s.when_to_use and s.body for s in skills)
    assert sorted(s.name for s in skills) == sorted(d.name for d in dirs)


def test_skill_folder_round_trip_keeps_provenance_and_extra_files(tmp_path):
    source = tmp_path / "src" / "count-rows-per-group"
    source.mkdir(parents=True)
    (source / "SKILL.md").write_text(HAND_WRITTEN)
    (source / "scripts").mkdir()
    (source / "scripts" / "check.sql").write_text("SELECT 1;")
    skill = read_skill_dir(source)
    assert skill.source == "hand-written" and skill.use_count == 0
    skill.utility, skill.use_count, skill.success_count = 0.73, 4, 3
    skill.source_trajectory = "traj_abc"
    out = write_skill_dir(skill, tmp_path / "out" / skill.name, copy_from=source)
    assert (out / "scripts" / "check.sql").read_text() == "SELECT 1;"
    back = read_skill_dir(out)
    assert back.model_dump() == skill.model_dump()
    # Writing again over the folder replaces it whole and leaves no temporary folders behind.
    write_skill_dir(back, out, copy_from=out)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [skill.name]
    assert read_skill_dir(out).model_dump() == skill.model_dump()


def test_newer_skill_schema_is_refused_clearly(tmp_path):
    folder = write_skill_dir(Skill(name="s-one", description="d", body="b"), tmp_path / "s-one")
    meta = json.loads((folder / "skill.json").read_text())
    meta["schema_version"] = 99
    (folder / "skill.json").write_text(json.dumps(meta))
    with pytest.raises(NewerSchemaError, match="schema version 99"):
        read_skill_dir(folder)


def test_parse_skill_md_splits_front_and_body():
    front, body = parse_skill_md("\ufeff---\nname: a\ndescription: b\n...\nline 1\nline 2\n")
    assert front == {"name": "a", "description": "b"} and body == "line 1\nline 2"
