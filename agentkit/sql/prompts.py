"""The SQL agent's prompts: its instructions under each schema mode, the task prompt, and the question in it.

    sql_task_prompt("How many albums?", "albums are rows of Album")   # "Question: How many albums?\nHint: ..."
    question_of(sql_task_prompt("How many albums?"))                  # "How many albums?"

Kept apart from `agentkit.sql.recipe` so that the planner and the schema extension the recipe builds on can read
them without importing the recipe.
"""

from __future__ import annotations

SQL_INSTRUCTIONS = """\
You answer questions about a database whose schema you have not seen. Work in four phases, one phase per turn; \
you may go back to an earlier phase when you learn something new.
1. explore_schema: find the relevant tables and columns with list_tables, describe_table, search_columns, \
sample_rows and distinct_values (exact spellings of values matter).
2. propose_schema: call propose_schema with the tables, the columns (as {"Table": ["Column", ...]}) and the \
joins ("TableA.col = TableB.col") your query needs. Fix and propose again if anything comes back UNVERIFIED.
3. generate_sql: run candidate queries with run_query and check the rows make sense (at most 30 rows are shown).
4. confirm_answer: call confirm_answer with the one final SQL query; this ends the task.
Rules: the database is read-only; one SELECT statement per call; never use a table or column you have not seen \
in a tool result; return exactly the columns the question asks for."""

SQL_INSTRUCTIONS_SHOWN = """\
You answer questions about a database with SQL. The user message gives the question and the CREATE TABLE \
statements of the tables it most likely needs.
1. Write one SELECT query that answers the question, using only the tables and columns shown, and check it with \
run_query.
2. If the query fails or its rows look wrong, fix it (describe_table, sample_rows and distinct_values show more \
of the database) and run it again.
3. Call confirm_answer with the final query; this ends the task.
Return exactly the columns the question asks for."""

SQL_INSTRUCTIONS_SINGLE_SHOT = """\
You write SQLite queries. The user message gives a question and the CREATE TABLE statements of the database. \
Reply with one SELECT query that answers the question, in a ```sql block. Return exactly the columns the \
question asks for."""

TASK_TEMPLATE = "Question: {question}"
EVIDENCE_TEMPLATE = "\nHint: {evidence}"


def question_of(task: str) -> str:
    """The question of a run's task: the text after "Question:" up to a "Hint:" line in an SQL task prompt
    (`sql_task_prompt`), else the task as it is."""
    text = task.strip()
    if text.startswith("Question:"):
        text = text[len("Question:"):].split("\nHint:", 1)[0]
    return " ".join(text.split())


def sql_task_prompt(question: str, evidence: str | None = None) -> str:
    """The user message of one text-to-SQL task (the question, and BIRD-style evidence if any)."""
    text = TASK_TEMPLATE.format(question=question.strip())
    if evidence and evidence.strip():
        text += EVIDENCE_TEMPLATE.format(evidence=evidence.strip())
    return text
