"""A read-only SQLite connection whose every resource is bounded.

`connect_sqlite_read_only` opens a file with:
- a `mode=ro` URI and `PRAGMA query_only`;
- an authorizer that allows reading only: SELECT, column reads, recursive CTEs, metadata PRAGMAs that
  change nothing, and the functions in `ALLOWED_FUNCTIONS` (an allowlist: no load_extension, no file
  access, no fts3_tokenizer, whatever the statement calls them, quoted or not);
- `sqlite3_limit`s (`LIMITS`): one string or blob is at most `MAX_VALUE_BYTES` (stored values too: a
  bigger one cannot be read), a statement at most `MAX_SQL_BYTES`, a LIKE/GLOB pattern at most
  `MAX_LIKE_PATTERN`, a result at most `MIN_RESULT_COLUMNS` columns (or the widest table's width), no
  attached databases;
- SQLite's hard heap limit (`PRAGMA hard_heap_limit`, process-wide: it caps all SQLite memory of the
  process, and is only ever lowered) at `MAX_SQLITE_HEAP`, so no query's intermediate values can
  take more memory than that;
- bounded replacements for the built-in functions whose single call could run for minutes, where the
  time limit cannot reach (it is checked between VM steps, not inside a function): `printf`/`format`
  (a width or precision of 2**31 loops for two minutes), the two-argument `trim`/`ltrim`/`rtrim`
  (quadratic), `instr` and `replace` (quadratic worst cases). Small inputs still go to SQLite's own
  implementation (on a private in-memory connection), so results are SQLite's exactly; large inputs
  use linear Python code or are refused with "too big".
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_VALUE_BYTES = 1_000_000  # one string or blob (stops zeroblob/randomblob/printf bombs)
MAX_SQL_BYTES = 100_000
MAX_LIKE_PATTERN = 1_000
MAX_VDBE_OPS = 500_000
MAX_SQLITE_HEAP = 512 << 20
MIN_RESULT_COLUMNS = 100  # result columns allowed (more if a table is wider): bounds one row's memory
NATIVE_WORK = 1_000_000  # len(x) * len(y) below which the quadratic built-ins run as SQLite's own

LIMITS = {
    sqlite3.SQLITE_LIMIT_LENGTH: MAX_VALUE_BYTES,
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: MAX_SQL_BYTES,
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: MAX_LIKE_PATTERN,
    sqlite3.SQLITE_LIMIT_VDBE_OP: MAX_VDBE_OPS,
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
    sqlite3.SQLITE_LIMIT_WORKER_THREADS: 0,
}

# Functions a read-only query may call (core, date, JSON, math, window, aggregate, FTS query helpers,
# including names of newer SQLite versions). Anything else is denied by the authorizer.
_ALLOWED = """
abs char coalesce concat concat_ws format glob hex ifnull iif if instr length like likelihood likely lower
ltrim max min nullif octet_length printf quote random randomblob replace round rtrim sign soundex substr
substring trim typeof unhex unicode unistr unistr_quote unlikely upper zeroblob changes total_changes
last_insert_rowid sqlite_version sqlite_source_id subtype
date time datetime julianday unixepoch strftime timediff current_date current_time current_timestamp
avg count group_concat string_agg sum total median percentile percentile_cont percentile_disc
row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
json jsonb json_array jsonb_array json_array_length json_error_position json_extract jsonb_extract
json_insert jsonb_insert json_object jsonb_object json_patch jsonb_patch json_pretty json_remove
jsonb_remove json_replace jsonb_replace json_set jsonb_set json_type json_valid json_quote
json_group_array jsonb_group_array json_group_object jsonb_group_object json_each json_tree -> ->>
acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln log log10 log2 mod pi
pow power radians sin sinh sqrt tan tanh trunc
match snippet highlight bm25 offsets matchinfo
"""
ALLOWED_FUNCTIONS = frozenset(_ALLOWED.split())

_READ_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "foreign_key_list", "index_list", "index_info", "index_xinfo",
    "table_list", "database_list", "collation_list", "function_list",
})
# PRAGMAs that only report a setting when given no argument (SQLAlchemy asks for some on connect).
_QUERY_PRAGMAS = frozenset({
    "read_uncommitted", "user_version", "schema_version", "application_id", "encoding", "page_size",
    "page_count", "foreign_keys", "query_only", "compile_options", "data_version", "journal_mode",
})
_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, getattr(sqlite3, "SQLITE_RECURSIVE", 33)}


class ValueTooBig(ValueError):
    """A bounded function refused an argument or result over the value-size limit."""


class Expired(RuntimeError):
    """A bounded function was called after its query's deadline."""


@dataclass
class Budget:
    """The running query's deadline (time.monotonic), checked by the bounded functions on each call
    (SQLite checks its progress handler only every so many VM steps), and whether it passed."""

    deadline: float = float("inf")
    expired: bool = False

    def start(self, deadline: float) -> None:
        """Arm for a query that must end by `deadline` (inf: no query running)."""
        self.deadline, self.expired = deadline, False

    def check(self) -> None:
        """Raise `Expired` (and mark the budget expired) once the deadline has passed."""
        if time.monotonic() > self.deadline:
            self.expired = True
            raise Expired("the query's time limit passed")


class BoundedConnection(sqlite3.Connection):
    """A connection that carries the `Budget` its bounded functions check."""

    budget: Budget


def read_only_authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
    """SQLite authorizer that allows reading only: SELECT, column reads, the allowlisted functions,
    recursive CTEs, and metadata PRAGMAs that change nothing."""
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_OK if (arg2 or "").lower() in ALLOWED_FUNCTIONS else sqlite3.SQLITE_DENY
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in _READ_PRAGMAS or (arg2 is None and name in _QUERY_PRAGMAS):
            return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def connect_sqlite_read_only(path: str | Path) -> BoundedConnection:
    """Open an existing SQLite file read-only, with query_only, the read-only authorizer, the limits
    and the bounded functions (see the module docstring); text that is not UTF-8 is read by `read_text`."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no SQLite database at {file}")
    with open(file, "rb") as f:
        header = f.read(16)
    if header and header != b"SQLite format 3\x00":
        raise ValueError(f"{file} is not an SQLite database (bad header)")
    conn: BoundedConnection = sqlite3.connect(_file_uri(file), uri=True, check_same_thread=False,
                                              isolation_level=None, factory=BoundedConnection)
    conn.execute("PRAGMA query_only = ON")
    conn.execute(f"PRAGMA hard_heap_limit = {MAX_SQLITE_HEAP}")  # lowers it only (never raises a smaller one)
    widest = conn.execute("SELECT max((SELECT count(*) FROM pragma_table_xinfo(m.name))) FROM sqlite_master m "
                          "WHERE m.type IN ('table', 'view')").fetchone()[0] or 0
    for limit, value in {**LIMITS, sqlite3.SQLITE_LIMIT_COLUMN: max(MIN_RESULT_COLUMNS, widest + 1)}.items():
        conn.setlimit(limit, value)
    conn.budget = install_bounded_functions(conn)
    conn.set_authorizer(read_only_authorizer)
    conn.text_factory = read_text
    return conn


def read_text(data: bytes) -> str:
    """A text value as `str`: UTF-8, with U+FFFD for bytes that are not. A stored value, or one a query builds
    (`CAST(x'ff' AS TEXT)`), may hold any bytes; the result is still read rather than refused."""
    return data.decode("utf-8", errors="replace")


def _file_uri(file: Path) -> str:
    from urllib.parse import quote

    return f"file:{quote(str(file.resolve()))}?mode=ro"


# -- bounded built-ins -------------------------------------------------------------------------------


def install_bounded_functions(conn: sqlite3.Connection) -> Budget:
    """Replace printf/format, two-argument trim/ltrim/rtrim, instr and replace on `conn` with bounded
    versions (same results; "too big" where SQLite's own would run for minutes). Each call first checks
    the returned `Budget`'s deadline."""
    native = sqlite3.connect(":memory:", check_same_thread=False)
    native.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    budget = Budget()

    def call(name: str, *args: Any) -> Any:
        return native.execute(f"SELECT {name}({', '.join('?' * len(args))})", args).fetchone()[0]

    def text(value: Any) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        return str(native.execute("SELECT CAST(? AS TEXT)", (value,)).fetchone()[0])

    def bounded_printf(*args: Any) -> Any:
        budget.check()
        if args and args[0] is not None:
            check_printf(text(args[0]), args[1:])
        return call("printf", *args)

    def trimmer(name: str, strip: Callable[[str, set[str]], str]) -> Callable[[Any, Any], Any]:
        def bounded(x: Any, y: Any) -> Any:
            budget.check()
            if x is None or y is None:
                return None
            xs, ys = text(x), text(y)
            if len(xs) * len(ys) <= NATIVE_WORK:
                return call(name, x, y)
            return strip(xs, set(ys))

        return bounded

    def bounded_instr(x: Any, y: Any) -> Any:
        budget.check()
        if x is None or y is None:
            return None
        if _size(x) * _size(y) <= NATIVE_WORK * 100:  # memcmp-speed: 10**8 byte compares is milliseconds
            return call("instr", x, y)
        if isinstance(x, bytes) and isinstance(y, bytes):
            return x.find(y) + 1
        return text(x).find(text(y)) + 1

    def bounded_replace(x: Any, y: Any, z: Any) -> Any:
        budget.check()
        if x is None or y is None or z is None:
            return None
        if _size(x) * _size(y) <= NATIVE_WORK * 100:
            return call("replace", x, y, z)
        xs, ys, zs = text(x), text(y), text(z)
        if not ys:
            return x
        if len(xs) + xs.count(ys) * (len(zs) - len(ys)) > MAX_VALUE_BYTES:
            raise ValueTooBig(f"replace: the result would be over {MAX_VALUE_BYTES} bytes")
        return xs.replace(ys, zs)

    for name in ("printf", "format"):
        conn.create_function(name, -1, bounded_printf, deterministic=True)
    conn.create_function("trim", 2, trimmer("trim", lambda s, cs: _rstrip(_lstrip(s, cs), cs)), deterministic=True)
    conn.create_function("ltrim", 2, trimmer("ltrim", _lstrip), deterministic=True)
    conn.create_function("rtrim", 2, trimmer("rtrim", _rstrip), deterministic=True)
    conn.create_function("instr", 2, bounded_instr, deterministic=True)
    conn.create_function("replace", 3, bounded_replace, deterministic=True)
    return budget


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes) else 24


def _lstrip(s: str, chars: set[str]) -> str:
    if len(chars) <= 64:  # str.lstrip scans its argument for each character: fast for a short one
        return s.lstrip("".join(chars))
    i = 0
    while i < len(s) and s[i] in chars:
        i += 1
    return s[i:]


def _rstrip(s: str, chars: set[str]) -> str:
    if len(chars) <= 64:
        return s.rstrip("".join(chars))
    j = len(s)
    while j > 0 and s[j - 1] in chars:
        j -= 1
    return s[:j]


# One printf directive: flags, width (* or digits), precision (. then * or digits), size, type.
_DIRECTIVE = re.compile(r"%([-+ #!0,]*)(\*|\d+)?(?:\.(\*|\d*))?(l{0,2})(.?)", re.S)


def check_printf(fmt: str, args: tuple[Any, ...]) -> None:
    """Raise ValueTooBig when the widths and precisions of a printf format (digits or `*` arguments)
    add up to more than the value-size limit: SQLite would loop over each of them even past its limit."""
    room = MAX_VALUE_BYTES
    position = 0
    for m in _DIRECTIVE.finditer(fmt):
        width, precision, kind = m.group(2), m.group(3), m.group(5)
        for spec in (width, precision):
            if spec == "*":
                value = args[position] if position < len(args) else 0
                position += 1
                room -= _as_count(value)
            elif spec:
                room -= int(spec) if len(spec) <= 10 else MAX_VALUE_BYTES + 1
        if kind and kind != "%":
            position += 1
        if room < 0:
            raise ValueTooBig(f"printf: widths and precisions add up to over {MAX_VALUE_BYTES} characters")


_NUMBER_PREFIX = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _as_count(value: Any) -> int:
    """A `*` argument as SQLite may read it, taken at its largest (text is read as a number)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        m = _NUMBER_PREFIX.match(value)
        value = m.group(0) if m else 0
    try:
        number = abs(float(value))
    except (TypeError, ValueError, OverflowError):
        return 0
    return MAX_VALUE_BYTES + 1 if number != number or number > MAX_VALUE_BYTES else int(number)
