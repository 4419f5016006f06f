"""A mistake analyst for SQL that needs no model: it reads what a failed query did differently from the
reference query, clause by clause.

The notebook's analyst is the acting model by default, and a model that copies the template, or writes
lessons too vague to act on, writes no usable note. For SQL the training tasks carry the gold query, so
what a failed run got wrong can be read off the two queries: a LIMIT the question never asked for, `= ?`
where the gold tests `IS NULL`, COUNT where the gold sums, a missing GROUP BY, ORDER BY or JOIN.
Each such difference is a label; the failures that share one make one note, whose subject quotes their
questions (the notebook shows a note to questions like those) and whose corrected examples pair each
question with its gold query. Whether a note is kept is still decided by the notebook's accept-or-roll-back
step on the same batch. Why: docs/decisions.md#notes

    notebook.learn(batch, reward_fn, agent_for, analyst=SQLDiffAnalyst())

`agentkit learn` uses it for SQL environments (`notes_analyst="environment"`, the default).

Only clause-level habits are labelled (what transfers to another database); which table or column a
question needs is not, since that is particular to one schema.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agentkit.environments.base import Task
from agentkit.memory.notes import Note
from agentkit.trajectory import Trajectory

AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX")
SUBJECT_WORDS = 45  # a note's subject is 10 to 50 words


@dataclass(frozen=True)
class Lesson:
    """What one kind of difference teaches: the subject's opening, and the note's sections."""

    kind: str  # the subject's opening, e.g. "Questions that do not ask for a number of rows"
    mistake: str
    approach: str
    strategy: str
    avoid: str


LESSONS: dict[str, Lesson] = {
    "extra_limit": Lesson(
        "Questions that do not ask for a fixed number of rows, so the answer needs every matching row",
        "The query added a LIMIT the question did not ask for and cut rows off the answer.",
        "Return every row the question asks about; use LIMIT only for 'the top N', 'the first' or 'which one'.",
        "Read the question for a count of results before adding LIMIT.",
        "LIMIT on a question that asks for all matching rows"),
    "null_test": Lesson(
        "Questions about rows where a value is missing, not recorded or empty, or where it is present",
        "The query compared a missing value with = or a placeholder instead of testing for NULL.",
        "A missing value is NULL: write `column IS NULL` (or `IS NOT NULL` for present values).",
        "'no X recorded', 'without X', 'has an X listed' are NULL tests.",
        "`column = ''`, `column = ?` or `column = NULL` for a missing value"),
    "placeholder": Lesson(
        "Questions that name a value to filter on, such as a name, a country or a title in the question",
        "The query used a `?` placeholder, which has no value, so it matched nothing.",
        "Write the value from the question into the SQL as a literal, e.g. `WHERE Country = 'Canada'`.",
        "Every value in a WHERE clause comes from the question text.",
        "`?` placeholders in a query that is run as it is"),
    "aggregate": Lesson(
        "Questions that ask for a total, a sum, an average, a count, the largest or the smallest value",
        "The query used the wrong aggregate (or none) for what the question asks.",
        "Match the wording: total or sum → SUM(column); average → AVG; how many → COUNT(*); most or "
        "highest value → MAX; least or lowest → MIN.",
        "Find the aggregate word in the question first, then the column it applies to.",
        "listing rows or counting them when the question asks for a sum or an average"),
    "group_by": Lesson(
        "Questions that ask for a number or a value for each group, per item, in each category",
        "The query computed one value over all rows where the question wanted one per group.",
        "Use GROUP BY on what 'each' or 'per' refers to, with the aggregate in the SELECT.",
        "'for each X', 'per X', 'in each X' → GROUP BY X.",
        "a single total for a question that asks per group"),
    "superlative": Lesson(
        "Questions that ask which item has the most, the highest, the fewest or the lowest of something",
        "The query did not rank the rows, so it returned an arbitrary row instead of the top one.",
        "Rank with ORDER BY the counted or measured value (DESC for most/highest, ASC for fewest/lowest) "
        "and keep the first row with LIMIT 1; GROUP BY first when the value is counted per item.",
        "'which … the most' = GROUP BY the item, ORDER BY the count DESC, LIMIT 1.",
        "ORDER BY an id or no ORDER BY for a 'most' question"),
    "distinct": Lesson(
        "Questions that ask for the different or distinct values, or for a list of unique items",
        "The query's DISTINCT did not match the question: duplicates were kept, or rows were merged.",
        "Use SELECT DISTINCT when the question asks for different or unique values, and not otherwise.",
        "'distinct', 'different', 'unique', 'which countries' → DISTINCT.",
        "DISTINCT on a count or a sum the question wants over every row"),
    "join": Lesson(
        "Questions that combine facts stored in two or more tables, such as an item and the group or "
        "person it belongs to",
        "The query read fewer tables than the question needs, so a condition or a column came from the "
        "wrong table.",
        "JOIN the tables on their key columns (the REFERENCES in the CREATE TABLEs) and take each column "
        "from the table that holds it.",
        "Name, for each word of the question, the table that stores it; join those tables.",
        "filtering or selecting a column from a table that does not hold it"),
}


def last_sql(trajectory: Trajectory | None) -> str | None:
    """The SQL of the run's last call that carried one (its answer, or its last query), or None."""
    if trajectory is None:
        return None
    for message in reversed(trajectory.messages):
        for call in reversed(message.tool_calls):
            sql = call.arguments.get("sql") if isinstance(call.arguments, dict) else None
            if isinstance(sql, str) and sql.strip():
                return sql
    return None


def _shape(sql: str) -> str:
    """The query upper-cased with its string literals and quoted names blanked, spaces collapsed."""
    sql = re.sub(r"'(?:[^']|'')*'", "''", sql)
    sql = re.sub(r'"[^"]*"|`[^`]*`|\[[^\]]*\]', "x", sql)
    return " ".join(sql.upper().split())


def _tables(shape: str) -> int:
    return len(re.findall(r"\b(?:FROM|JOIN)\s+(?!\()", shape))


def _aggregates(shape: str) -> set[str]:
    return {a for a in AGGREGATES if re.search(rf"\b{a}\s*\(", shape)}


def differences(predicted: str | None, gold: str) -> list[str]:
    """The lessons (keys of `LESSONS`) a failed query's differences from the gold query point to."""
    if not predicted:
        return []
    p, g = _shape(predicted), _shape(gold)

    def has(shape: str, pattern: str) -> bool:
        return re.search(pattern, shape) is not None

    found = []
    if has(p, r"\bLIMIT\b") and not has(g, r"\bLIMIT\b"):
        found.append("extra_limit")
    if has(g, r"\bIS\s+(?:NOT\s+)?NULL\b") and not has(p, r"\bIS\s+(?:NOT\s+)?NULL\b"):
        found.append("null_test")
    if "?" in p:
        found.append("placeholder")
    if _aggregates(p) != _aggregates(g):
        found.append("aggregate")
    if has(g, r"\bGROUP\s+BY\b") and not has(p, r"\bGROUP\s+BY\b"):
        found.append("group_by")
    if has(g, r"\bORDER\s+BY\b.*\bLIMIT\b") and not has(p, r"\bORDER\s+BY\b"):
        found.append("superlative")
    if has(g, r"\bDISTINCT\b") != has(p, r"\bDISTINCT\b"):
        found.append("distinct")
    if _tables(g) > _tables(p):
        found.append("join")
    return found


def _gold(task: Task) -> str | None:
    for key in ("gold_sql", "sql"):
        value = task.data.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _question(task: Task) -> str:
    return str(task.data.get("question") or task.prompt).strip()


class SQLDiffAnalyst:
    """Labels a failed SQL run by how its query differs from the gold query, and writes a note per label
    (see the module docstring). A `FailureAnalyst` for `agentkit.memory.learn.learn`."""

    def labels(self, task: Task, trajectory: Trajectory | None) -> list[str]:
        """The lessons this failure points to ([] when the task has no gold query or the run wrote none)."""
        gold = _gold(task)
        return differences(last_sql(trajectory), gold) if gold else []

    def note(self, label: str, cases: Sequence[tuple[Task, Trajectory | None]]) -> Note:
        """One note for the failures that share `label`: the lesson, with their questions and gold queries."""
        lesson = LESSONS[label]
        questions = list(dict.fromkeys(_question(task) for task, _ in cases))
        subject = f"{lesson.kind}, like: " + " / ".join(questions)
        words = subject.split()
        subject = " ".join(words[:SUBJECT_WORDS]) + (" …" if len(words) > SUBJECT_WORDS else "")
        examples = [f"{_question(task)} → {_gold(task)}" for task, _ in cases]
        wrong = [f"{lesson.avoid}, as in: {sql}" for sql in dict.fromkeys(last_sql(t) for _, t in cases) if sql]
        return Note(subject=subject, corrected_examples=list(dict.fromkeys(examples)),
                    correct_approach=lesson.approach, mistake_summary=lesson.mistake,
                    generalisable_strategy=lesson.strategy, anti_patterns=wrong[:2] or [lesson.avoid],
                    source_trajectories=[t.id for _, t in cases if t is not None],
                    source_tasks=[task.id for task, _ in cases])
