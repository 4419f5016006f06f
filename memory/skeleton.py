"""SQL skeletons: a query with its names and values masked, and how alike two skeletons are (DAIL-SQL).

    sql_skeleton("SELECT p.Name, COUNT(*) AS n FROM Shop AS p WHERE p.District = 'Old Town' GROUP BY p.Name")
    # 'SELECT _ , COUNT ( * ) FROM _ WHERE _ = _ GROUP BY _'
    skeleton_similarity(a, b)        # 0.0 … 1.0

A skeleton keeps what a query does (its keywords, operators, functions and punctuation) and masks what it
does it to: every table, column and alias name and every literal becomes `_`, a qualified name (`p.Name`)
is one `_`, an alias (`AS n`) is dropped, and a run of masks is one mask. Two questions answered by queries
with the same skeleton need the same kind of query, whatever the tables; that is what the experience
(`agentkit.memory.experience`) compares, beside the questions, to choose its worked examples.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

MASK = "_"
_FALLBACK = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|`[^`]*`|\[[^\]]*\]|\d+(?:\.\d+)?|\w+|<=|>=|<>|!=|\|\||\S")
_KEYWORDS = frozenset(("SELECT", "DISTINCT", "FROM", "WHERE", "AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE",
                       "BETWEEN", "EXISTS", "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "OUTER", "CROSS", "ON", "USING",
                       "GROUP", "BY", "HAVING", "ORDER", "ASC", "DESC", "LIMIT", "OFFSET", "UNION", "ALL", "INTERSECT",
                       "EXCEPT", "CASE", "WHEN", "THEN", "ELSE", "END", "WITH"))
"""Words the plain pattern keeps as keywords (used only when sqlglot cannot tokenize a query)."""


def sql_skeleton(sql: str) -> str:
    """The skeleton of `sql` (see the module): keywords, operators and function names kept, names and values
    masked, tokens separated by single spaces. SQL sqlglot cannot tokenize is read by a plain pattern."""
    tokens = _tokens(sql)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        following = tokens[i + 1] if i + 1 < len(tokens) else ("", "")
        if kind == "alias":  # "AS name": the alias says nothing about the query's shape
            i += 2 if following[0] == "name" else 1
            continue
        if kind == "name" and following[1] == "(":
            token = text.upper()  # a function: COUNT, SUM, strftime ...
        elif kind in ("name", "value"):
            token = MASK
        elif text == "." and out and out[-1] == MASK:
            i += 1  # "_ . _" is one name
            if i < len(tokens) and tokens[i][0] in ("name", "value"):
                i += 1
            continue
        else:
            token = text.upper()
        if not (token == MASK and out and out[-1] == MASK):
            out.append(token)
        i += 1
    while out and out[-1] == ";":
        out.pop()
    return " ".join(out)


def skeleton_similarity(a: str, b: str) -> float:
    """How alike two skeletons are: 2·M / T over their tokens (M tokens matched in order, T tokens in all),
    1.0 for the same skeleton and 0.0 for none in common (difflib's ratio)."""
    left, right = a.split(), b.split()
    if not left and not right:
        return 1.0
    return SequenceMatcher(None, left, right, autojunk=False).ratio()


def _tokens(sql: str) -> list[tuple[str, str]]:
    """(kind, text) per token, kind being "name", "value", "alias" or "other"."""
    try:
        from sqlglot import Tokenizer, TokenType

        names = {TokenType.VAR, TokenType.IDENTIFIER}
        values = {TokenType.STRING, TokenType.NUMBER, TokenType.NATIONAL_STRING, TokenType.BIT_STRING,
                  TokenType.HEX_STRING, TokenType.PARAMETER, TokenType.PLACEHOLDER}
        out = []
        for token in Tokenizer().tokenize(sql):
            if token.token_type in names:
                out.append(("name", token.text))
            elif token.token_type in values:
                out.append(("value", token.text))
            elif token.token_type == TokenType.ALIAS:
                out.append(("alias", token.text))
            else:
                out.append(("other", token.text))
        return out
    except Exception:  # sqlglot could not tokenize it: a plain pattern
        return [_kind(t) for t in _FALLBACK.findall(sql)]


def _kind(text: str) -> tuple[str, str]:
    if text[0] in "'\"`[" or text[0].isdigit():
        return ("value" if text[0] in "'" or text[0].isdigit() else "name"), text
    if re.fullmatch(r"\w+", text):
        upper = text.upper()
        if upper == "AS":
            return "alias", text
        return ("other" if upper in _KEYWORDS else "name"), text
    return "other", text
