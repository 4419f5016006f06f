"""The SQL query a model wrote in plain text (a reply with no tool call), for the single-shot baseline.

    sql_in_text("Here it is:\n```sql\nSELECT COUNT(*) FROM t;\n```")   # -> "SELECT COUNT(*) FROM t"

The last fenced block tagged sql (or untagged and starting with SELECT/WITH) wins; failing that, the
last line that starts a SELECT or WITH statement, up to the end of the text or its first semicolon.
Linear in the text's length; texts past `MAX_CHARS` are read from their last `MAX_CHARS` characters.
"""

from __future__ import annotations

MAX_CHARS = 200_000
_STARTS = ("select", "with")


def query_key(sql: str) -> str:
    """`sql` as queries are compared for sameness: whitespace collapsed, lower case, no trailing semicolon."""
    return " ".join(sql.strip().rstrip(";").split()).lower()


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language tag, body) of every complete ``` block, in order."""
    blocks = []
    pos = 0
    while True:
        start = text.find("```", pos)
        if start < 0:
            break
        end = text.find("```", start + 3)
        if end < 0:
            break
        inner = text[start + 3:end]
        tag, _, body = inner.partition("\n")
        blocks.append((tag.strip().lower(), body if body else tag))
        pos = end + 3
    return blocks


def _statement(body: str) -> str:
    return body.strip().split(";", 1)[0].strip()


def sql_in_text(text: str | None) -> str | None:
    """The query a text reply gives as its answer, or None when it holds none."""
    if not text:
        return None
    text = text[-MAX_CHARS:]
    for tag, body in reversed(_fenced_blocks(text)):
        candidate = _statement(body)
        if tag == "sql" or (tag in ("", "sqlite") and candidate.lower().startswith(_STARTS)):
            return candidate or None
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].lstrip().lower().startswith(_STARTS):
            return _statement("\n".join(lines[i:])) or None
    return None
