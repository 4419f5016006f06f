"""SQL over unknown schemas (TRUST-SQL): read-only database access, the
schema-exploration toolkit, the four-phase agent recipe and its rewards.

    from agentkit.sql import sql_agent, sql_task_prompt
    agent = sql_agent("openai:gpt-4o-mini", "Chinook.sqlite")
    print(agent.run(sql_task_prompt("How many albums does AC/DC have?")).answer)
"""

from agentkit.sql.connect import open_database
from agentkit.sql.database import Database, QueryError, QueryResult, TableInfo
from agentkit.sql.guard import StatementRefused, check_statement
from agentkit.sql.recipe import SQL_INSTRUCTIONS, SQL_MODEL, SQLRunRecorder, sql_agent, sql_record, sql_task_prompt
from agentkit.sql.rewards import score_sql_trajectory
from agentkit.sql.toolkit import PHASES, SchemaProposal, SchemaToolkit

__all__ = [
    "PHASES",
    "SQL_INSTRUCTIONS",
    "SQL_MODEL",
    "Database",
    "QueryError",
    "QueryResult",
    "SQLRunRecorder",
    "SchemaProposal",
    "SchemaToolkit",
    "StatementRefused",
    "TableInfo",
    "check_statement",
    "open_database",
    "score_sql_trajectory",
    "sql_agent",
    "sql_record",
    "sql_task_prompt",
]
