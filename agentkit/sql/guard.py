"""The statement guard: only one read-only query per call, checked before any engine sees it.

This is the engine-independent first line of defence; the second is the connection itself (SQLite
`mode=ro` plus an authorizer, other engines a read-only transaction; see `agentkit.sql.database`).
The guard reads the statement with a small lexer that splits text where SQLite's tokenizer does
(strings, quoted identifiers, comments, SQLite's whitespace, non-ASCII letters inside words), so a
keyword inside a string or a comment neither hides nor fakes a write. Where dialects disagree on a
token (PostgreSQL's `$tag$ ... $tag$` strings are variables to SQLite) the statement is refused.
A quoted name called as a function (`"load_extension"(...)`) is refused too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A statement must start with one of these (after any opening parentheses).
READ_STATEMENTS = frozenset({"SELECT", "WITH", "VALUES"})

# Words that write, change state or reach outside the database, wherever they appear outside
# strings and quoted identifiers. (Quote an identifier that happens to be one of these: "Update".)
FORBIDDEN_WORDS = frozenset({
    "INSERT", "UPDATE", "DELETE", "UPSERT", "MERGE", "INTO",
    "CREATE", "DROP", "ALTER", "TRUNCATE", "RENAME", "GRANT", "REVOKE",
    "ATTACH", "DETACH", "PRAGMA", "VACUUM", "REINDEX", "ANALYZE",
    "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT",
    "LOAD_EXTENSION", "WRITEFILE", "READFILE", "FTS3_TOKENIZER",
    "LO_IMPORT", "LO_EXPORT", "PG_READ_FILE", "PG_READ_BINARY_FILE", "PG_LS_DIR", "DBLINK",
    "PG_TERMINATE_BACKEND", "PG_CANCEL_BACKEND", "SET_CONFIG", "NEXTVAL", "SETVAL",
    "LOAD_FILE", "OUTFILE", "DUMPFILE", "XP_CMDSHELL", "OPENROWSET", "SLEEP", "PG_SLEEP",
})

MAX_STATEMENT_CHARS = 20_000
"""The longest statement the guard reads; a longer one is refused unread."""
MAX_NESTING = 100
"""The deepest nesting of parentheses the guard lets through (SQL parsers downstream recurse on it)."""


class StatementRefused(ValueError):
    """The guard refused a statement; the message says why and what is allowed."""


@dataclass(frozen=True)
class Lexeme:
    """One piece of a statement: kind is word, string, identifier, symbol or semicolon; `end` is where it ends
    in the statement's text."""

    kind: str
    text: str
    end: int = 0


# SQLite's identifier characters: letters, digits, _, $ and every non-ASCII character.
_WORD = re.compile(r"[A-Za-z_\x80-\U0010ffff][A-Za-z0-9_$\x80-\U0010ffff]*")
_PARAMETER = re.compile(r"\$[A-Za-z0-9_$\x80-\U0010ffff]*")
_DOLLAR_TAG = re.compile(r"\$([A-Za-z_\x80-\U0010ffff][A-Za-z0-9_\x80-\U0010ffff]*)?\$")
_SPACE = frozenset(" \t\n\v\f\r")  # SQLite's whitespace (other Unicode spaces are identifier characters)
_CLOSERS = {'"': '"', "`": "`", "[": "]"}


def lex(sql: str) -> list[Lexeme]:
    """Split SQL into lexemes, dropping comments and whitespace, in one linear pass. Raises StatementRefused
    when a string, quoted identifier or comment is left open."""
    out: list[Lexeme] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in _SPACE:
            i += 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            if end < 0:
                raise StatementRefused("the statement has an unclosed /* comment")
            i = end + 2
        elif ch == "'":
            j = i + 1
            while True:
                j = sql.find("'", j)
                if j < 0:
                    raise StatementRefused("the statement has an unclosed string literal (')")
                if sql.startswith("''", j):
                    j += 2
                    continue
                break
            out.append(Lexeme("string", sql[i : j + 1], j + 1))
            i = j + 1
        elif ch in _CLOSERS:
            closer = _CLOSERS[ch]
            j = i + 1
            while True:
                j = sql.find(closer, j)
                if j < 0:
                    raise StatementRefused(f"the statement has an unclosed quoted identifier ({ch})")
                if closer != "]" and sql.startswith(closer * 2, j):
                    j += 2
                    continue
                break
            out.append(Lexeme("identifier", sql[i : j + 1], j + 1))
            i = j + 1
        elif ch == "$":
            if _DOLLAR_TAG.match(sql, i):
                raise StatementRefused("dollar-quoted strings ($$...$$, $tag$...$tag$) are not allowed: "
                                       "write strings in single quotes")
            m = _PARAMETER.match(sql, i)
            out.append(Lexeme("word", m.group(0) if m else ch, m.end() if m else i + 1))
            i = m.end() if m else i + 1
        elif m := _WORD.match(sql, i):
            out.append(Lexeme("word", m.group(0), m.end()))
            i = m.end()
        elif ch == ";":
            out.append(Lexeme("semicolon", ch, i + 1))
            i += 1
        else:
            out.append(Lexeme("symbol", ch, i + 1))
            i += 1
    return out


def check_statement(sql: str) -> str:
    """Return the single read-only statement in `sql` (without a trailing semicolon), or raise
    StatementRefused saying why it cannot run. Linear in the statement's length: it is lexed once, and
    refused past `MAX_STATEMENT_CHARS` characters or `MAX_NESTING` levels of parentheses."""
    if not isinstance(sql, str) or not sql.strip():
        raise StatementRefused("empty statement: write one SELECT query")
    if len(sql) > MAX_STATEMENT_CHARS:
        raise StatementRefused(f"statement too long ({len(sql)} characters, at most {MAX_STATEMENT_CHARS})")
    if "\x00" in sql:
        raise StatementRefused("the statement contains a NUL character")
    lexemes = lex(sql)
    statements: list[list[Lexeme]] = [[]]
    for lx in lexemes:
        if lx.kind == "semicolon":
            statements.append([])
        else:
            statements[-1].append(lx)
    statements = [s for s in statements if s]
    if not statements:
        raise StatementRefused("the statement has no SQL in it (only comments or semicolons)")
    if len(statements) > 1:
        raise StatementRefused(
            f"only one statement per call is allowed, found {len(statements)}: run them one at a time"
        )
    body = statements[0]
    first = next((lx for lx in body if not (lx.kind == "symbol" and lx.text == "(")), None)
    if first is None or first.kind != "word" or first.text.upper() not in READ_STATEMENTS:
        shown = first.text.upper() if first is not None else "nothing"
        raise StatementRefused(
            f"only read-only queries may run (SELECT, WITH ... SELECT, VALUES); this one starts with {shown}"
        )
    words = [lx.text.upper() for lx in body if lx.kind == "word"]
    for word in words:
        if word in FORBIDDEN_WORDS:
            raise StatementRefused(
                f"the database is read-only: {word} is not allowed in a query "
                f"(quote it, e.g. \"{word.title()}\", if it is a column name)"
            )
    _refuse_quoted_calls(body, _closing_parens(body))
    # Cut the statement at its end: after its last lexeme (drops trailing semicolons and comments after them).
    return sql[: body[-1].end].strip()


def _closing_parens(body: list[Lexeme]) -> dict[int, int]:
    """For each "(" of `body` (by index), the index of the ")" that closes it (or len(body) when none does);
    refuses nesting deeper than `MAX_NESTING`. One pass."""
    closes: dict[int, int] = {}
    open_at: list[int] = []
    for i, lx in enumerate(body):
        if lx.kind != "symbol":
            continue
        if lx.text == "(":
            open_at.append(i)
            if len(open_at) > MAX_NESTING:
                raise StatementRefused(f"the statement nests parentheses more than {MAX_NESTING} deep: "
                                       "write it flatter (a WITH clause names a part)")
        elif lx.text == ")" and open_at:
            closes[open_at.pop()] = i
    for i in open_at:
        closes[i] = len(body)
    return closes


def _refuse_quoted_calls(body: list[Lexeme], closes: dict[int, int]) -> None:
    """Refuse a quoted identifier followed by "(" (a call of a quoted function name), except a CTE
    with a column list: `"name"(a, b) AS (...)`."""
    for i, lx in enumerate(body[:-1]):
        if lx.kind != "identifier" or body[i + 1].text != "(":
            continue
        j = closes[i + 1]
        after = [x.text.upper() for x in body[j + 1 : j + 3]]
        if len(after) == 2 and after[0] == "AS" and after[1] in ("(", "MATERIALIZED", "NOT"):
            continue
        raise StatementRefused(
            f"a quoted name cannot be called as a function ({lx.text}(...)): write function names without quotes"
        )
