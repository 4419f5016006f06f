"""Rows for a `Domain`, from a seeded random generator, written to a SQLite file.

    from agentkit.sql.taskgen.fill import write_database
    write_database(domain, "out/shop.sqlite", seed=7)   # same seed, same bytes of data

Values are realistic enough for questions to read naturally: people's names, places, companies and
product names from word pools; categories with uneven frequencies (so "the most common" has an
answer); foreign keys that leave some parents with no children (so "without any" has an answer) and
give others many; NULLs where a column declares them; text stored in mixed case where it says so.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentkit.sql.taskgen.spec import Col, Domain, Table, id_column, sql_name, table_sql_name

FIRST = ("Ana", "Ben", "Chloe", "David", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kira", "Luis",
         "Maya", "Nils", "Olga", "Pavel", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wen", "Yusuf", "Zoe", "Aiko",
         "Bruno", "Carmen", "Dmitri", "Esther", "Felix", "Greta", "Hassan", "Irene", "Jamal", "Lena", "Marco",
         "Nadia", "Oscar", "Priya", "Quentin", "Rahul", "Sofia", "Tomas", "Ursula", "Victor", "Wanda", "Xavier")
LAST = ("Almeida", "Brandt", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ivanova", "Jensen",
        "Kowalski", "Lind", "Moreau", "Novak", "Okafor", "Petrov", "Quinn", "Rossi", "Silva", "Tanaka", "Ueda",
        "Varga", "Weber", "Yilmaz", "Zhang", "Bauer", "Chen", "Diaz", "Evans", "Ferreira", "Gomez", "Holm",
        "Ito", "Jovanovic", "Khan", "Larsen", "Meyer", "Nakamura", "Olsen", "Park", "Reyes", "Schmidt")
CITIES = ("Oslo", "Lisbon", "Porto", "Lyon", "Graz", "Leeds", "Turin", "Ghent", "Bergen", "Malmo", "Krakow",
          "Seville", "Utrecht", "Basel", "Cork", "Tartu", "Brno", "Aarhus", "Bilbao", "Split", "Nantes")
COUNTRIES = ("Norway", "Portugal", "France", "Austria", "England", "Italy", "Belgium", "Sweden", "Poland",
             "Spain", "Netherlands", "Switzerland", "Ireland", "Estonia", "Czechia", "Denmark", "Croatia")
_ADJ = ("Red", "Blue", "Green", "Silver", "Golden", "Northern", "Quiet", "Rapid", "Bright", "Old", "Grand",
        "Little", "Iron", "Crystal", "Wild", "Sunny", "Hidden", "Royal", "Urban", "Coastal", "Alpine", "Misty")
_NOUN = ("River", "Harbor", "Oak", "Falcon", "Bridge", "Meadow", "Summit", "Lantern", "Garden", "Forge",
         "Anchor", "Valley", "Pine", "Comet", "Orchard", "Tower", "Willow", "Canyon", "Beacon", "Island")
_FIRM = ("Systems", "Labs", "Works", "Partners", "Group", "Foods", "Motors", "Logistics", "Energy", "Studio",
         "Textiles", "Analytics", "Supplies", "Holdings", "Media", "Robotics")
_ITEM = ("Lamp", "Chair", "Kettle", "Backpack", "Jacket", "Blender", "Monitor", "Keyboard", "Tent", "Bottle",
         "Helmet", "Scarf", "Drill", "Speaker", "Camera", "Sofa", "Mug", "Router", "Watch", "Boots")
_TOPIC = ("Data", "Biology", "History", "Design", "Finance", "Robotics", "Poetry", "Chemistry", "Music",
          "Ethics", "Statistics", "Geology", "Marketing", "Astronomy", "Law", "Nutrition", "Painting")
_LEVEL = ("Introduction to", "Advanced", "Applied", "Foundations of", "Topics in", "Practical", "Modern")
_STREET = ("Main", "Church", "Mill", "Park", "High", "Station", "Lake", "Hill", "King", "Garden", "Market")
_PLACE_KIND = ("Street", "Road", "Avenue", "Lane", "Square")
_SPECIES = ("Labrador", "Siamese", "Beagle", "Persian", "Poodle", "Parrot", "Rabbit", "Hamster", "Tortoise",
            "Collie", "Maine Coon", "Terrier")


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _title(rng: random.Random) -> str:
    return f"The {rng.choice(_ADJ)} {rng.choice(_NOUN)}"


def _company(rng: random.Random) -> str:
    return f"{rng.choice(_ADJ)} {rng.choice(_NOUN)} {rng.choice(_FIRM)}"


def _product(rng: random.Random) -> str:
    return f"{rng.choice(_ADJ)} {rng.choice(_ITEM)}"


def _course(rng: random.Random) -> str:
    return f"{rng.choice(_LEVEL)} {rng.choice(_TOPIC)}"


def _place(rng: random.Random) -> str:
    return f"{rng.choice(_ADJ)} {rng.choice(_NOUN)}"


def _street(rng: random.Random) -> str:
    return f"{rng.randint(1, 240)} {rng.choice(_STREET)} {rng.choice(_PLACE_KIND)}"


def _code(rng: random.Random) -> str:
    return f"{rng.choice('ABCDEFGHJKLMNPRSTUVWXYZ')}{rng.choice('ABCDEFGHJKLMNPRSTUVWXYZ')}-{rng.randint(100, 999)}"


def _pet(rng: random.Random) -> str:
    return rng.choice(("Max", "Bella", "Luna", "Charlie", "Milo", "Coco", "Rocky", "Daisy", "Simba", "Nala",
                       "Oliver", "Ruby", "Teddy", "Pepper", "Ziggy", "Mochi", "Biscuit", "Olive", "Juno"))


def _email(rng: random.Random) -> str:
    return f"{rng.choice(FIRST).lower()}.{rng.choice(LAST).lower()}{rng.randint(1, 99)}@example.org"


def _phone(rng: random.Random) -> str:
    return f"+{rng.randint(30, 49)} {rng.randint(100, 999)} {rng.randint(1000, 9999)}"


def _note(rng: random.Random) -> str:
    return rng.choice(("call back", "urgent", "follow up next week", "waiting for parts", "approved",
                       "needs review", "customer asked for invoice", "left a message", "resolved by phone"))


POOLS: dict[str, Callable[[random.Random], str]] = {
    "person": _person, "title": _title, "company": _company, "product": _product, "course": _course,
    "place": _place, "street": _street, "code": _code, "pet": _pet, "email": _email, "phone": _phone,
    "note": _note, "city": lambda rng: rng.choice(CITIES), "country": lambda rng: rng.choice(COUNTRIES),
}
"""Generators of label and text values, by the name a `Col(pool=...)` gives."""


def _weights(n: int) -> list[float]:
    """Uneven frequencies: the first value is about three times as common as the last."""
    return [1.0 / (1.0 + 0.35 * i) for i in range(n)]


def _variant(value: str, rng: random.Random) -> str:
    return rng.choice((value, value, value.lower(), value.upper(), value.title()))


def _unique_values(col: Col, n: int, rng: random.Random) -> list[str]:
    if col.values and len(col.values) >= n:
        pool = list(col.values)
        rng.shuffle(pool)
        return pool[:n]
    make = POOLS.get(col.pool)
    if make is None:
        raise ValueError(f"column {col.name!r}: unknown pool {col.pool!r} (known: {', '.join(sorted(POOLS))})")
    seen: set[str] = set()
    out: list[str] = []
    tries = 0
    while len(out) < n:
        tries += 1
        value = make(rng)
        if tries > 50 * n:
            value = f"{value} {len(out) + 1}"
        if value not in seen:
            seen.add(value)
            out.append(value)
    return out


def _scalar(col: Col, rng: random.Random) -> Any:
    if col.kind == "category":
        value = rng.choices(col.values, weights=_weights(len(col.values)))[0]
        return _variant(value, rng) if col.case_variants else value
    if col.kind == "measure":
        x = rng.uniform(col.low, col.high)
        if col.unit == "money":
            return round(x, 2)
        if col.unit == "real":
            return round(x, 1)
        return round(x)
    if col.kind == "date":
        start = dt.date(int(col.low), 1, 1).toordinal()
        end = dt.date(int(col.high), 12, 31).toordinal()
        return dt.date.fromordinal(rng.randint(start, end)).isoformat()
    if col.kind == "birth_year":
        return rng.randint(int(col.low), int(col.high))
    if col.kind == "flag":
        return int(rng.random() < 0.4)
    if col.kind == "text":
        if col.values:
            return rng.choice(col.values)
        return POOLS[col.pool](rng) if col.pool in POOLS else _unique_values(col, 1, rng)[0]
    raise ValueError(f"column {col.name!r}: no scalar generator for kind {col.kind!r}")


def _sql_type(col: Col) -> str:
    if col.kind in ("fk", "birth_year", "flag") or (col.kind == "measure" and col.unit == "int"):
        return "INTEGER"
    if col.kind == "measure":
        return "REAL"
    return "TEXT"


def create_statements(domain: Domain) -> list[str]:
    """The CREATE TABLE statements of the domain, in its naming style, with primary and foreign keys."""
    out = []
    for t in domain.tables:
        lines = [f"{id_column(t, domain.style)} INTEGER PRIMARY KEY"]
        for c in t.columns:
            null = " NOT NULL" if c.null_rate == 0 and c.kind != "fk" else ""
            if c.kind == "fk":
                parent = domain.table(c.ref)
                null = " NOT NULL" if c.null_rate == 0 else ""
                lines.append(f"{sql_name(c.name, domain.style)} INTEGER{null} REFERENCES "
                             f"{table_sql_name(parent, domain.style)}({id_column(parent, domain.style)})")
            else:
                lines.append(f"{sql_name(c.name, domain.style)} {_sql_type(c)}{null}")
        out.append(f"CREATE TABLE {table_sql_name(t, domain.style)} (\n  " + ",\n  ".join(lines) + "\n)")
    return out


def generate_rows(domain: Domain, seed: int) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows (id first, then the declared columns), the same for the same domain and seed."""
    rng = random.Random(f"{domain.name}:{seed}")
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for t in domain.tables:
        rows[t.name] = _table_rows(t, rows, rng)
    return rows


def _table_rows(t: Table, done: dict[str, list[tuple[Any, ...]]], rng: random.Random) -> list[tuple[Any, ...]]:
    columns: list[list[Any]] = []
    for c in t.columns:
        if c.kind == "label":
            columns.append(list(_unique_values(c, t.rows, rng)))
        elif c.kind == "fk":
            columns.append(_foreign_keys(c, [r[0] for r in done[c.ref]], t.rows, rng))
        else:
            columns.append([_scalar(c, rng) for _ in range(t.rows)])
        if c.null_rate > 0:
            columns[-1] = [None if rng.random() < c.null_rate else v for v in columns[-1]]
    rows = [tuple(col[i] for col in columns) for i in range(t.rows)]
    keys = [i for i, c in enumerate(t.columns) if c.kind == "fk"]
    if len(keys) >= 2 and t.label is None:  # a link table holds each pair once
        seen: set[tuple[Any, ...]] = set()
        unique = []
        for row in rows:
            pair = tuple(row[i] for i in keys)
            if pair not in seen:
                seen.add(pair)
                unique.append(row)
        rows = unique
    return [(i + 1, *row) for i, row in enumerate(rows)]


def _foreign_keys(col: Col, parent_ids: Sequence[int], n: int, rng: random.Random) -> list[int]:
    """Child rows' parents: some parents get none, the rest a skewed share (a few get many)."""
    ids = list(parent_ids)
    rng.shuffle(ids)
    keep = max(1, round(len(ids) * (1.0 - col.optional_parent)))
    used = ids[:keep]
    weights = [1.0 / (1.0 + 0.15 * i) for i in range(len(used))]
    return [rng.choices(used, weights=weights)[0] for _ in range(n)]


def write_database(domain: Domain, path: str | Path, seed: int = 0) -> Path:
    """Create (or replace) the SQLite file at `path` with the domain's tables and generated rows."""
    domain.check()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    rows = generate_rows(domain, seed)
    conn = sqlite3.connect(path)
    try:
        for statement in create_statements(domain):
            conn.execute(statement)
        for t in domain.tables:
            marks = ", ".join("?" * (len(t.columns) + 1))
            conn.executemany(f"INSERT INTO {table_sql_name(t, domain.style)} VALUES ({marks})", rows[t.name])
        conn.commit()
    finally:
        conn.close()
    return path
