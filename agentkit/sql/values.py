"""Value linking: the database values a question names, and the columns that hold them.

A question says 'Jazz', Frank Harris or Canada; the SQL needs `Genre.Name = 'Jazz'`, the customer's
`FirstName` and `LastName`, `Country = 'Canada'`. Given only the CREATE TABLEs, a model has to guess
(`GenreId = 10`, a name in the wrong table). `find_values` looks each phrase the question quotes or
capitalises up in the database's text columns (whole values in any case; quoted phrases also inside values),
and its longer lower-case words as written ("cancelled" is a status; "money" is not the song "Money"), and says
where each was found, with the key of the row when one row holds it, so the agent starts from the right column.
It is the value half of schema linking, as text-to-SQL systems retrieve entities before they write SQL.
Why: docs/decisions.md#schema-digest-and-value-links

Bounded for hostile or large databases: one read-only scan per text column, each under the toolkit's
query time limit, all of them under `budget_s`; what is not searched in time is left out, never guessed.

    kit = SchemaToolkit("Chinook.sqlite")
    [link.render() for link in find_values(kit, "How many minutes of Jazz are there?")]
    # ["'Jazz' is a value of Genre.Name (GenreId = 2)"]
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass

from agentkit.sql.database import Database, QueryError
from agentkit.sql.toolkit import SchemaToolkit

VALUES_TITLE = "Values the question names, found in the database (use these columns)"
MAX_PHRASES = 8
MAX_WORDS = 12
MAX_COLUMNS_PER_PHRASE = 4
MAX_SPELLINGS = 4
DEFAULT_BUDGET_S = 2.0
_MAX_CACHED = 10_000  # questions whose links a database keeps
_literal = Database.literal
_TEXT_TYPES = ("CHAR", "TEXT", "CLOB", "STRING")
# Capitalised words that start questions and requests rather than name something.
_LEADS = frozenset({
    "a", "an", "the", "how", "what", "which", "who", "whom", "whose", "when", "where", "why", "is", "are", "was",
    "were", "do", "does", "did", "list", "give", "show", "find", "name", "count", "return", "get", "tell", "please",
    "of", "in", "on", "for", "and", "or", "with", "by", "to", "from", "all", "each", "every", "i",
})
_QUOTED = re.compile(r"""'([^']{1,80})'|"([^"]{1,80})"|‘([^’]{1,80})’|“([^”]{1,80})”""")
_WORD = re.compile(r"[^\W\d_][\w'’./&-]*")


def question_phrases(question: str) -> tuple[list[str], list[str], list[str]]:
    """(quoted phrases, capitalised phrases, other words) of `question`: capitalised phrases are runs of
    capitalised words ("Frank Harris"), each word of a longer run also on its own (a first and a last name live
    in two columns); other words are the lower-case words of four letters or more ("cancelled")."""
    quoted = _unique(next(g for g in m.groups() if g).strip() for m in _QUOTED.finditer(question))
    rest = _QUOTED.sub(" | ", question)
    capital: list[str] = []
    run: list[str] = []
    end = 0
    for m in _WORD.finditer(rest):
        word = m.group().rstrip(".'’")
        named = word[:1].isupper() and word.lower() not in _LEADS
        if not named or rest[end:m.start()].strip():  # a run ends at a plain word or any punctuation
            capital += _run_phrases(run)
            run = []
        if named:
            run.append(word)
        end = m.end()
    capital += _run_phrases(run)
    taken = {q.lower() for q in quoted}
    capital = [c for c in _unique(capital) if c.lower() not in taken]
    taken |= {c.lower() for c in capital}
    words = [w for w in _unique(w.rstrip(".'’") for w in _WORD.findall(rest))
             if len(w) >= 4 and w.islower() and w not in _LEADS and w not in taken]
    return quoted, capital, words


def _run_phrases(run: list[str]) -> list[str]:
    return [" ".join(run), *run] if len(run) > 1 else list(run)


def _unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        if item and item.lower() not in seen:
            seen.add(item.lower())
            out.append(item)
    return out


def text_columns(kit: SchemaToolkit) -> list[tuple[str, str]]:
    """(table, column) of every text-typed column (SQLite's untyped columns included), keys left out."""
    found = []
    for table in kit.db.table_names():
        for col in kit.db.describe(table).columns:
            kind = (col.type or "").upper()
            if not col.primary_key and (not kind or any(t in kind for t in _TEXT_TYPES)):
                found.append((table, col.name))
    return found


@dataclass(frozen=True)
class ValueLink:
    """A phrase of the question found in the database: the (table, column)s holding it as a whole value,
    or, for a quoted phrase found only inside values, the first such column and an example value there.
    `keys` holds, per column, the key of the one row holding the value ("GenreId = 1"; "" when several rows
    hold it or the table has no single-column primary key), so the agent can filter on the key without a join."""

    phrase: str
    columns: tuple[tuple[str, str], ...]
    example: str | None = None
    keys: tuple[str, ...] = ()
    spellings: tuple[tuple[str, ...], ...] = ()
    """Per column, the spellings it stores the value in when they are not just the phrase as written (a column
    holding 'paid', 'Paid' and 'PAID'): the agent then compares with LOWER()."""

    def render(self) -> str:
        """The link as one line for the prompt."""
        keys = self.keys or ("",) * len(self.columns)
        spellings = self.spellings or ((),) * len(self.columns)
        where = ", ".join(f"{t}.{c}" + (f" ({k})" if k else "") + _spelled(c, forms)
                          for (t, c), k, forms in zip(self.columns, keys, spellings, strict=True))
        if self.example is None:
            return f"{_literal(self.phrase)} is a value of {where}"
        return f"{_literal(self.phrase)} occurs inside values of {where} (e.g. {_literal(self.example[:80])})"


def _spelled(column: str, forms: tuple[str, ...]) -> str:
    if not forms:
        return ""
    if len(forms) == 1:
        return f", stored as {_literal(forms[0])}"
    shown = ", ".join(_literal(f) for f in forms[:MAX_SPELLINGS])
    return f", stored as {shown} (compare with LOWER({column}))"


def find_values(kit: SchemaToolkit, question: str, *, budget_s: float = DEFAULT_BUDGET_S) -> list[ValueLink]:
    """The phrases of `question` found in the database's text columns, in the question's order. A search
    that finished within the budget is kept for the database's other episodes of the same question."""
    done: dict[str, list[ValueLink]] = kit.db.cache.setdefault("value_links", {})
    if question in done:
        return list(done[question])
    quoted, capital, words = question_phrases(question)
    words = words[:MAX_WORDS]  # matched in their own case: "cancelled" is a status, "Money" a song
    phrases = (quoted + capital)[:MAX_PHRASES] + words
    if not phrases:
        return []
    whole: dict[str, list[tuple[str, str]]] = {p.lower(): [] for p in phrases}
    stored: dict[tuple[str, str, str], str] = {}  # (phrase, table, column) -> the value as the column holds it
    forms: dict[tuple[str, str, str], list[str]] = {}  # (phrase, table, column) -> every spelling it holds
    inside: dict[str, list[tuple[tuple[str, str], str]]] = {p.lower(): [] for p in quoted if p.lower() in whole}
    any_case = {p.lower() for p in phrases if p not in words}
    word_case = {w.lower(): w for w in words}  # a word links only where it is stored as written; its other
    listed = ", ".join(_literal(p) for p in any_case | set(word_case))  # spellings there are then shown too
    likes = "".join(f" OR {{col}} LIKE {_literal('%' + _escape_like(p) + '%')} ESCAPE '\\'" for p in inside)
    deadline = time.monotonic() + budget_s
    complete = True
    for table, column in text_columns(kit):
        left = deadline - time.monotonic()
        if left <= 0:
            complete = False
            break
        col = kit.db.quote(column)
        sql = (f"SELECT DISTINCT {col} FROM {kit.db.quote(table)} WHERE lower({col}) IN ({listed or 'NULL'})"
               + likes.format(col=col) + " LIMIT 50")
        try:
            values = [str(r[0]) for r in kit.db.query(sql, max_rows=50, timeout_s=min(kit.timeout_s, left)).rows
                      if r and r[0] is not None]
        except QueryError:
            complete = False
            continue  # a column that cannot be read in time is not searched
        for value in values:
            low = value.lower()
            key = low if low in any_case else word_case.get(low)
            if key is None:
                continue
            forms.setdefault((key.lower(), table, column), []).append(value)
            linked = key.lower() in any_case or value == key
            if linked and (table, column) not in whole[key.lower()]:
                whole[key.lower()].append((table, column))
                stored[key.lower(), table, column] = value
        for phrase, found in inside.items():
            example = next((v for v in values if phrase in v.lower() and v.lower() != phrase), None)
            if example is not None and (table, column) not in whole[phrase]:
                found.append(((table, column), example))
    links = []
    for p in phrases:
        if whole[p.lower()]:
            spots = tuple(whole[p.lower()][:MAX_COLUMNS_PER_PHRASE])
            spelled = tuple(_spellings(p, forms.get((p.lower(), t, c), [])) for t, c in spots)
            keys = tuple("" if len(sp) > 1 else _row_key(kit, t, c, stored[p.lower(), t, c], deadline)
                         for (t, c), sp in zip(spots, spelled, strict=True))  # several spellings: several rows
            links.append(ValueLink(p, spots, keys=keys, spellings=spelled if any(spelled) else ()))
        elif inside.get(p.lower()):
            spot, example = inside[p.lower()][0]
            links.append(ValueLink(p, (spot,), example))
    if complete and len(done) < _MAX_CACHED:
        done[question] = links
    return links


def _spellings(phrase: str, held: list[str]) -> tuple[str, ...]:
    """The spellings a column holds a phrase in, when that is not exactly the phrase as written."""
    unique = sorted(set(held))
    return () if unique in ([phrase], []) else tuple(unique)


def _row_key(kit: SchemaToolkit, table: str, column: str, value: str, deadline: float) -> str:
    """"Key = v" for the one row of `table` whose `column` is `value`; "" for several rows, no single-column
    primary key, or no time left."""
    keys = [c.name for c in kit.db.describe(table).columns if c.primary_key]
    left = deadline - time.monotonic()
    if len(keys) != 1 or left <= 0:
        return ""
    sql = (f"SELECT {kit.db.quote(keys[0])} FROM {kit.db.quote(table)} "
           f"WHERE {kit.db.quote(column)} = {_literal(value)} LIMIT 2")
    try:
        rows = kit.db.query(sql, max_rows=2, timeout_s=min(kit.timeout_s, left)).rows
    except QueryError:
        return ""
    if len(rows) != 1 or rows[0][0] is None:
        return ""
    key = rows[0][0]
    return f"{keys[0]} = {key if isinstance(key, int | float) else _literal(str(key))}"


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
