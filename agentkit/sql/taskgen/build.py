"""Build the generated SQL task set: databases, checked questions, and the fixed train/dev/test split.

    from agentkit.sql.taskgen import build_tasks
    summary = build_tasks("bench-out/sqlgen")        # every domain; or splits=("test",)

writes, under the output folder,

    database/DB/DB.sqlite                 one SQLite file per domain
    train.jsonl  dev.jsonl  test.jsonl    {"id", "db_id", "db", "question", "sql", "difficulty", "kind"}
    manifest.json                         per database: split, data and task digests, question counts

A task file loads with `SQLEnvironment(tasks="OUT/test.jsonl")` or `agentkit eval --env sql --tasks ...`
(its "db" paths are relative to the file). The split is by database, decided by a digest of the
domain's name alone, so adding a domain never moves another; `FROZEN` (manifest.json beside this
module) records every database's split and digests, and `build_tasks` refuses to write a database
whose split, data or questions differ from it unless asked to refreeze.

`spare_questions(domain, OUT)` gives a database's further checked questions, the ones its task file does not
hold (for an afternoon of use before held-out questions, say); no split scores them.

Every gold query is checked by execution before it is kept: it runs; its result is non-empty, not all
NULL, not a zero count, at most `MAX_ROWS` rows and not a whole table; and it is deterministic: the same
rows (in the same order where it orders them) with SQLite's unordered scans reversed.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.sql.taskgen.fill import create_statements, generate_rows, write_database
from agentkit.sql.taskgen.questions import candidates
from agentkit.sql.taskgen.spec import Domain
from agentkit.sql.taskgen.template_base import Question

SPLITS = ("train", "dev", "test")
MAX_ROWS = 30
PER_DB = 30
SEED = 0
FROZEN = Path(__file__).with_name("manifest.json")
_SPLIT_SALT = "agentkit-sqlgen-split-v1"


def split_of(name: str) -> str:
    """The split a database belongs to: half train, a quarter dev, a quarter test, by its name's digest."""
    x = int(hashlib.sha256(f"{_SPLIT_SALT}:{name}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "train" if x < 0.5 else "dev" if x < 0.75 else "test"


def data_digest(domain: Domain, seed: int = SEED) -> str:
    """A digest of the database's schema and rows (independent of SQLite's file format)."""
    h = hashlib.sha256()
    for statement in create_statements(domain):
        h.update(statement.encode())
    for name, rows in generate_rows(domain, seed).items():
        h.update(name.encode())
        h.update(repr(rows).encode())
    return h.hexdigest()[:16]


def _first_table(sql: str) -> str | None:
    m = re.search(r"\bFROM\s+(\w+)", sql)
    return m.group(1) if m else None


def _canon(rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows with floats rounded, so a sum taken in another order counts as the same result."""
    return [tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in rows]


def check_gold(conn: sqlite3.Connection, q: Question) -> str | None:
    """Why the question's gold SQL is not fit to keep, or None when it is."""
    try:
        conn.execute("PRAGMA reverse_unordered_selects = OFF")
        rows = conn.execute(q.sql).fetchall()
        conn.execute("PRAGMA reverse_unordered_selects = ON")
        again = conn.execute(q.sql).fetchall()
    except sqlite3.Error as exc:
        return f"does not run: {exc}"
    finally:
        conn.execute("PRAGMA reverse_unordered_selects = OFF")
    if not rows:
        return "empty result"
    if all(v is None for row in rows for v in row):
        return "only NULLs"
    if len(rows) == 1 and len(rows[0]) == 1 and rows[0][0] == 0:
        return "a zero count"
    if len(rows) > MAX_ROWS:
        return f"{len(rows)} rows (more than {MAX_ROWS})"
    ordered = " ORDER BY " in q.sql.upper()
    rows, again = _canon(rows), _canon(again)
    if (rows != again) if ordered else (sorted(map(repr, rows)) != sorted(map(repr, again))):
        return "not deterministic"
    table = _first_table(q.sql)
    if table and len(rows) > 1 and "GROUP BY" not in q.sql.upper():
        total = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        if len(rows) >= total:
            return "the whole table"
    return None


@dataclass(frozen=True)
class BuiltDatabase:
    """One database's build: its split, digests, kept questions and why others were dropped."""

    name: str
    split: str
    data: str
    tasks: str
    questions: list[dict[str, Any]]
    dropped: dict[str, int]


def select(questions: Sequence[Question], rng: random.Random, per_db: int = PER_DB) -> list[Question]:
    """Up to `per_db` questions, drawn round-robin over templates so every kind the database allows shows up."""
    by_kind: dict[str, list[Question]] = defaultdict(list)
    seen_q: set[str] = set()
    seen_sql: set[str] = set()
    for q in questions:
        if q.question in seen_q or q.sql in seen_sql:
            continue
        seen_q.add(q.question)
        seen_sql.add(q.sql)
        by_kind[q.kind].append(q)
    for group in by_kind.values():
        rng.shuffle(group)
    kinds = sorted(by_kind)
    rng.shuffle(kinds)
    out: list[Question] = []
    while len(out) < per_db and any(by_kind[k] for k in kinds):
        for k in kinds:
            if by_kind[k] and len(out) < per_db:
                out.append(by_kind[k].pop())
    return out


def _database_path(domain: Domain, folder: Path) -> tuple[Path, str]:
    """Where the domain's database lives under `folder`: the file, and its path relative to `folder`."""
    rel = f"database/{domain.name}/{domain.name}.sqlite"
    return folder / rel, rel


def _record(domain: Domain, rel: str, task_id: str, q: Question) -> dict[str, Any]:
    return {"id": task_id, "db_id": domain.name, "db": rel, "question": q.question, "sql": q.sql,
            "difficulty": q.difficulty, "kind": q.kind}


def _checked_and_chosen(domain: Domain, path: Path, seed: int,
                        per_db: int) -> tuple[list[Question], list[Question], dict[str, int]]:
    """The database's candidates that pass `check_gold`, the `per_db` of them its task file holds, and the
    count of candidates dropped by each reason (the one sequence of draws every caller must share)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    dropped: dict[str, int] = defaultdict(int)
    try:
        rng = random.Random(f"questions:{domain.name}:{seed}")
        kept = []
        for q in candidates(domain, conn, rng):
            why = check_gold(conn, q)
            if why is None:
                kept.append(q)
            else:
                dropped[why.split(":")[0]] += 1
        chosen = select(kept, rng, per_db)
    finally:
        conn.close()
    return kept, chosen, dict(dropped)


def build_database(domain: Domain, folder: Path, *, seed: int = SEED, per_db: int = PER_DB) -> BuiltDatabase:
    """Write one domain's database under `folder/database/` and return its checked questions."""
    target, rel = _database_path(domain, folder)
    path = write_database(domain, target, seed=seed)
    _, chosen, dropped = _checked_and_chosen(domain, path, seed, per_db)
    records = [_record(domain, rel, f"{domain.name}-{i:03d}", q) for i, q in enumerate(chosen, start=1)]
    digest = hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()[:16]
    return BuiltDatabase(domain.name, split_of(domain.name), data_digest(domain, seed), digest, records, dropped)


def spare_questions(domain: Domain, folder: str | Path, *, seed: int = SEED, per_db: int = PER_DB,
                    limit: int | None = None) -> list[dict[str, Any]]:
    """Checked questions over the domain's database that its task file does not hold: more questions on the
    same data, for uses that need more than the task file gives (an afternoon of use before held-out questions).

        spares = spare_questions(domain, "bench-out/sqlgen")   # [{"id": "home_care-s001", ..., "spare": True}]

    The database is the one `build_database(domain, folder, seed=seed)` writes (its file under
    `folder/database/NAME/` is reused when present, written otherwise). The candidates and their draws are
    the build's own, so the task file's `per_db` questions are exactly the ones left out, and so is every
    candidate that repeats one of their questions or gold queries (or an earlier spare's). The rest come
    round-robin over kinds (as `select` draws, from a fixed draw of their own), at most `limit` of them, as
    task-file records ("db" relative to `folder`) with ids NAME-sNNN and "spare": true. Spares are never part
    of any split's scored tasks: `build_tasks` does not write them.
    """
    folder = Path(folder)
    target, rel = _database_path(domain, folder)
    path = target if target.is_file() else write_database(domain, target, seed=seed)
    kept, chosen, _ = _checked_and_chosen(domain, path, seed, per_db)
    taken_q = {q.question for q in chosen}
    taken_sql = {q.sql for q in chosen}
    rest = [q for q in kept if q.question not in taken_q and q.sql not in taken_sql]
    ordered = select(rest, random.Random(f"spares:{domain.name}:{seed}"), len(rest))
    if limit is not None:
        ordered = ordered[:max(limit, 0)]
    return [{**_record(domain, rel, f"{domain.name}-s{i:03d}", q), "spare": True}
            for i, q in enumerate(ordered, start=1)]


def manifest_entry(b: BuiltDatabase) -> dict[str, Any]:
    """What manifest.json records of one database."""
    counts: dict[str, int] = defaultdict(int)
    for r in b.questions:
        counts[r["difficulty"]] += 1
    return {"split": b.split, "data": b.data, "tasks": b.tasks, "questions": len(b.questions),
            "difficulty": dict(sorted(counts.items()))}


def load_frozen(path: Path = FROZEN) -> dict[str, dict[str, Any]]:
    """The frozen manifest: database name -> its recorded entry (empty if none was frozen)."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return dict(data.get("databases", {}))


class FrozenMismatch(RuntimeError):
    """A database built differently from what the frozen manifest records."""


def build_tasks(out: str | Path, *, domains: Iterable[Domain] | None = None, splits: Sequence[str] = SPLITS,
                per_db: int = PER_DB, seed: int = SEED, refreeze: bool = False,
                frozen: Path = FROZEN) -> dict[str, Any]:
    """Build the databases of `splits` into `out` with their task files and manifest; returns the manifest.

    Raises FrozenMismatch when a database that the frozen manifest records comes out different (a
    changed generator would otherwise silently change the test split); `refreeze=True` rewrites the
    frozen manifest instead (for the train and dev splits only, unless the test split is named too).
    """
    from agentkit.sql.taskgen.domains import ALL_DOMAINS

    unknown = set(splits) - set(SPLITS)
    if unknown:
        raise ValueError(f"unknown split(s) {sorted(unknown)}; choose from {', '.join(SPLITS)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pinned = load_frozen(frozen)
    entries: dict[str, dict[str, Any]] = {}
    files: dict[str, list[dict[str, Any]]] = {s: [] for s in splits}
    for domain in domains if domains is not None else ALL_DOMAINS:
        split = pinned.get(domain.name, {}).get("split") or split_of(domain.name)
        if split not in splits:
            continue
        built = build_database(domain, out, seed=seed, per_db=per_db)
        entry = manifest_entry(built)
        entry["split"] = split
        old = pinned.get(domain.name)
        if old is not None and not refreeze and any(old.get(k) != entry[k] for k in ("data", "tasks")):
            raise FrozenMismatch(f"{domain.name} ({split}) differs from the frozen manifest {frozen}: the "
                                 "generator changed what it writes; rebuild with refreeze only if that is meant, "
                                 "and never for the test split's questions once reported on")
        entries[domain.name] = entry
        files[split].extend(built.questions)
    for split, records in files.items():
        with (out / f"{split}.jsonl").open("w", encoding="utf-8") as fh:
            for r in records:
                fh.write(json.dumps(r) + "\n")
    manifest = {"seed": seed, "per_db": per_db, "databases": dict(sorted(entries.items()))}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    if refreeze:
        merged = {**pinned, **entries}
        frozen.write_text(json.dumps({"seed": seed, "per_db": per_db, "databases": dict(sorted(merged.items()))},
                                     indent=1) + "\n", encoding="utf-8")
    return manifest
