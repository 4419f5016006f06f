"""SKILL.md, the file format people already use for agent skills, and the folder around it.

    ---
    name: count-rows-per-group
    description: Count rows per category in a SQL table with GROUP BY.
    when_to_use: A question asks "how many ... per/for each ...".
    ---
    1. Find the table holding the items and the column naming the group.
    2. SELECT group_col, COUNT(*) ... GROUP BY group_col ORDER BY 2 DESC.

A skill folder holds SKILL.md, optionally `skill.json` (agentkit's id, provenance and statistics)
and any other files its author put there (scripts, references), which are carried along untouched.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

from agentkit.files import atomic_write
from agentkit.jsontext import loads_bounded
from agentkit.skills.model import SKILL_SCHEMA_VERSION, NewerSchemaError, Skill, SkillFormatError, check_name

SKILL_FILE = "SKILL.md"
META_FILE = "skill.json"
MAX_SKILL_MD_BYTES = 256_000
"""The largest SKILL.md read (bytes of a file, characters of a text)."""
MAX_FRONT_MATTER_CHARS = 32_000
"""The longest front matter (the YAML between the `---` lines) read."""
MAX_FRONT_MATTER_DEPTH = 32
"""The deepest nesting of the front matter's YAML (lists and mappings, block or flow) read."""
MAX_SKILL_JSON_BYTES = 1_000_000
"""The largest skill.json read."""
TEXT_FIELDS = ("name", "description", "when_to_use", "body")
_WHEN_ALIASES = ("when_to_use", "when-to-use", "whenToUse", "when")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader when libyaml is there: ~10x faster
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _NoAliasDumper(_DUMPER):  # type: ignore[misc, valid-type]
    """Writes a value used twice out twice: SKILL.md is read without aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def parse_skill_md(text: str) -> tuple[dict[str, Any], str]:
    """Split SKILL.md text into its front matter (a dict) and its body.

    The text must be at most `MAX_SKILL_MD_BYTES` characters and its front matter at most
    `MAX_FRONT_MATTER_CHARS`, nested at most `MAX_FRONT_MATTER_DEPTH` deep, without YAML aliases (`*name`, which
    can make a few lines stand for an exponential value). These are checked in linear time before the YAML
    loader, which recurses on nesting (deep enough, it crashes the interpreter), builds anything."""
    if len(text) > MAX_SKILL_MD_BYTES:
        raise SkillFormatError(f"SKILL.md is longer than {MAX_SKILL_MD_BYTES:,} characters")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillFormatError("SKILL.md must start with YAML front matter between '---' lines "
                               "(name, description, when_to_use)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        raise SkillFormatError("SKILL.md front matter is not closed by a '---' line") from None
    head = "\n".join(lines[1:end])
    try:
        _check_front_matter(head)
        front = yaml.load(head, Loader=_LOADER) or {}
    except yaml.YAMLError as error:
        raise SkillFormatError(f"SKILL.md front matter is not valid YAML: {error}") from None
    if not isinstance(front, dict):
        raise SkillFormatError("SKILL.md front matter must be a mapping of keys to values")
    return front, "\n".join(lines[end + 1 :]).strip("\n")


def _check_front_matter(head: str) -> None:
    """Refuse front matter past the limits (see `parse_skill_md`): its length; its flow brackets, counted without
    regard to quotes (an upper bound, and the YAML scanner slows with their depth); then, from the parser's
    events (which do not recurse), its nesting and aliases."""
    if len(head) > MAX_FRONT_MATTER_CHARS:
        raise SkillFormatError(f"SKILL.md front matter is longer than {MAX_FRONT_MATTER_CHARS:,} characters")
    depth = deepest = 0
    for ch in head:
        if ch == "[" or ch == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif (ch == "]" or ch == "}") and depth:
            depth -= 1
    if deepest > MAX_FRONT_MATTER_DEPTH:
        raise SkillFormatError(f"SKILL.md front matter nests brackets more than {MAX_FRONT_MATTER_DEPTH} deep")
    depth = 0
    for event in yaml.parse(head, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent):
            raise SkillFormatError("SKILL.md front matter may not use YAML aliases (*name): write the value out")
        if isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            depth += 1
            if depth > MAX_FRONT_MATTER_DEPTH:
                raise SkillFormatError(f"SKILL.md front matter nests more than {MAX_FRONT_MATTER_DEPTH} deep")
        elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            depth -= 1


def skill_from_markdown(text: str) -> Skill:
    """A `Skill` from SKILL.md text (statistics neutral, source hand-written)."""
    front, body = parse_skill_md(text)
    missing = [k for k in ("name", "description") if not str(front.get(k) or "").strip()]
    if missing:
        raise SkillFormatError(f"SKILL.md front matter lacks {', '.join(missing)}")
    when = next((front[k] for k in _WHEN_ALIASES if k in front), "")
    others = {k: v for k, v in front.items() if k not in ("name", "description", *_WHEN_ALIASES)}
    return Skill(
        name=check_name(str(front["name"]).strip()),
        description=" ".join(str(front["description"]).split()),
        when_to_use=" ".join(str(when or "").split()),
        body=body,
        extra={"front_matter": others} if others else {},
    )


def render_skill_md(skill: Skill) -> str:
    """SKILL.md text for a skill (unknown front-matter keys it was read with are written back)."""
    front: dict[str, Any] = {"name": skill.name, "description": skill.description}
    if skill.when_to_use:
        front["when_to_use"] = skill.when_to_use
    front.update(skill.extra.get("front_matter") or {})
    head = yaml.dump(front, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True, width=100).strip()
    return f"---\n{head}\n---\n\n{skill.body.strip()}\n"


def _meta_of(skill: Skill) -> dict[str, Any]:
    data = skill.model_dump(exclude=set(TEXT_FIELDS))
    data["extra"] = {k: v for k, v in skill.extra.items() if k != "front_matter"}
    return data


def read_skill_dir(folder: str | os.PathLike[str]) -> Skill:
    """Read a skill folder: SKILL.md, and skill.json when present."""
    folder = Path(folder)
    md = folder / SKILL_FILE
    if not md.is_file():
        raise SkillFormatError(f"{folder} has no {SKILL_FILE}")
    if md.stat().st_size > MAX_SKILL_MD_BYTES:
        raise SkillFormatError(f"{md} is larger than {MAX_SKILL_MD_BYTES} bytes")
    try:
        skill = skill_from_markdown(md.read_text(encoding="utf-8"))
    except SkillFormatError as error:
        raise SkillFormatError(f"{md}: {error}") from None
    meta_path = folder / META_FILE
    if meta_path.is_file():
        if meta_path.stat().st_size > MAX_SKILL_JSON_BYTES:
            raise SkillFormatError(f"{meta_path} is larger than {MAX_SKILL_JSON_BYTES} bytes")
        try:
            meta = loads_bounded(meta_path.read_text(encoding="utf-8"))
        except ValueError as error:
            raise SkillFormatError(f"{meta_path} is not valid JSON: {error}") from None
        if not isinstance(meta, dict):
            raise SkillFormatError(f"{meta_path} must hold a JSON object")
        version = meta.get("schema_version", SKILL_SCHEMA_VERSION)
        if isinstance(version, int) and version > SKILL_SCHEMA_VERSION:
            raise NewerSchemaError(f"{meta_path} has schema version {version}; this agentkit reads up to "
                                   f"{SKILL_SCHEMA_VERSION}. Upgrade agentkit to use this skill.")
        extra = {**meta.pop("extra", {}), **skill.extra}
        fields = {k: v for k, v in meta.items() if k in Skill.model_fields and k not in TEXT_FIELDS}
        skill = Skill.model_validate({**skill.model_dump(), **fields, "extra": extra})
    return skill


def write_meta(skill: Skill, folder: str | os.PathLike[str]) -> None:
    """Atomically rewrite a skill's skill.json (statistics change after every run that used it)."""
    atomic_write(Path(folder) / META_FILE, json.dumps(_meta_of(skill), indent=1, sort_keys=True))


def write_skill_dir(skill: Skill, folder: str | os.PathLike[str], *, copy_from: str | os.PathLike[str] | None = None,
                    with_meta: bool = True, durable: bool = True) -> Path:
    """Write a skill folder atomically: built beside the target, then renamed into place.

    `copy_from` is a source skill folder whose other files (scripts, references) are carried along.
    An existing folder at the target is replaced as a whole, by an atomic exchange of the two folders
    where the file system has one (Linux renameat2); elsewhere the old folder is moved aside first, and
    `recover_skill_dirs` puts it back if the process died before the new one arrived. A kill at any
    moment leaves the old skill or the new one, never neither. `durable=False` skips the fsyncs (bulk
    loads): readers still never see a half-written folder, but a power cut may lose recent skills.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f"{TMP_NEW}{folder.name}-{uuid.uuid4().hex[:8]}"
    try:
        if copy_from is not None:
            shutil.copytree(copy_from, tmp, symlinks=False,
                            ignore=shutil.ignore_patterns(SKILL_FILE, META_FILE, "__pycache__", ".tmp-*"))
        else:
            tmp.mkdir()
        (tmp / SKILL_FILE).write_text(render_skill_md(skill), encoding="utf-8")
        if with_meta:
            (tmp / META_FILE).write_text(json.dumps(_meta_of(skill), indent=1, sort_keys=True), encoding="utf-8")
        if durable:
            _fsync_dir_files(tmp)
        if not folder.exists():
            os.rename(tmp, folder)
        elif not exchange_paths(tmp, folder):  # no atomic exchange here: move aside, then in
            old = folder.parent / f"{TMP_OLD}{folder.name}-{uuid.uuid4().hex[:8]}"
            os.rename(folder, old)
            os.rename(tmp, folder)
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():  # the build that failed, or the old folder after an exchange
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


TMP_NEW = ".tmp-new-"  # a folder being built
TMP_OLD = ".tmp-old-"  # a folder moved aside to be replaced
_TMP_SUFFIX = re.compile(r"-[0-9a-f]{8}$")


def exchange_paths(a: Path, b: Path) -> bool:
    """Swap two existing paths atomically (Linux renameat2 RENAME_EXCHANGE); False where the system or
    file system cannot, so the caller falls back."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def recover_skill_dirs(parent: str | os.PathLike[str]) -> list[str]:
    """Finish what a killed `write_skill_dir` left in `parent` (call with the library lock held): a
    folder moved aside whose replacement never arrived is put back; other temporary folders (a build
    that did not finish, an old folder after an exchange) are removed. Returns the names put back."""
    parent = Path(parent)
    if not parent.is_dir():
        return []
    restored = []
    for path in sorted(parent.iterdir()):
        if not path.name.startswith(".tmp-") or not path.is_dir():
            continue
        if path.name.startswith(TMP_OLD) and _TMP_SUFFIX.search(path.name):
            name = _TMP_SUFFIX.sub("", path.name[len(TMP_OLD):])
            if name and not (parent / name).exists():
                os.rename(path, parent / name)
                restored.append(name)
                continue
        shutil.rmtree(path, ignore_errors=True)
    return restored


def _fsync_dir_files(folder: Path) -> None:
    for name in (SKILL_FILE, META_FILE):
        path = folder / name
        if path.exists():
            with open(path, "rb") as f:
                os.fsync(f.fileno())


def find_skill_dirs(root: str | os.PathLike[str]) -> list[Path]:
    """Skill folders under `root`: `root` itself if it holds SKILL.md, else every folder below that does."""
    root = Path(root)
    if (root / SKILL_FILE).is_file():
        return [root]
    if not root.is_dir():
        raise FileNotFoundError(f"no such folder: {root}")
    found = []
    for path in root.rglob(SKILL_FILE):
        hidden = any(part.startswith(".") for part in path.relative_to(root).parts[:-1])
        if not hidden and path.is_file():
            found.append(path.parent)
    return sorted(found)
