"""The draft planner for SQL: write the query in one completion first, then let the loop check and repair it.

    agent = Agent(model, kit, instructions=SQL_INSTRUCTIONS_SHOWN, planner=SQLDraftPlanner(votes=5))
    agent.run(sql_task_prompt(question), context=schema_context(kit, question, "tables"))

Before the act loop, the model is asked once, with no tools, to write the query from the run's context (the
CREATE TABLEs; with schema "digest" also the values the question names) in a ```sql block: the prompt a
single completion answers best. The draft is run (read-only, bounded like every query); while it fails or
returns no rows, the model is shown what happened in the same conversation and writes a corrected query, up
to `repairs` times (each its own turn, phase "repair", sampled at `repair_temperature` with a fixed seed per
attempt: a greedy repair of a query the model just wrote is mostly the same query). What happens to the last
query is `accept`:

- "rows" (default): a draft that runs and returns rows is confirmed at once (`confirm_answer`); one that
  fails or returns nothing opens the loop as the model's own `run_query` call, so the model starts from its
  draft and the error or the empty result, with every tool to repair it;
- "never": the draft always opens the loop as a `run_query` call; the model confirms or fixes it.

With `votes=N`, N-1 more drafts are sampled (fixed seeds) and run, and the query whose result most drafts
share is kept (the first draft's among equals). A reply with no SQL in it leaves the loop to start as usual.
Every draft and repair is its own turn in the trajectory (phases "draft" and "repair", with their tokens).
Why: docs/decisions.md#sql-draft
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from agentkit.loop.extensions import RunContext
from agentkit.messages import Message, ToolCall
from agentkit.models.protocol import GenerationSettings
from agentkit.sql.extract import sql_in_text
from agentkit.sql.prompts import SQL_INSTRUCTIONS_SINGLE_SHOT
from agentkit.tools import Tool

Accept = Literal["rows", "never"]
DRAFT_PHASE, REPAIR_PHASE = "draft", "repair"
MAX_RESULT_CHARS = 1500
VOTE_SEED = 101
REPAIR_PROMPT = ("Running that query {outcome}:\n{result}\n\nWrite the corrected query that answers the question, "
                 "in a ```sql block.")
QUERY_TOOL, FINISH_TOOL = "run_query", "confirm_answer"


def returned_rows(observation: str) -> bool:
    """Whether a `run_query` result shows at least one row (its last line counts them: "(0 rows)" is none)."""
    last = observation.rstrip().rsplit("\n", 1)[-1].strip()
    return not last.startswith("(0 rows")


class SQLDraftPlanner:
    """Drafts the query in one completion before the loop (see the module docstring).

    Args:
        accept: "rows" confirms a draft that runs and returns rows; "never" always hands it to the loop.
        repairs: how many corrected queries to ask for while the query fails or returns no rows.
        votes: how many drafts vote by their results (1: the greedy draft alone); the others are sampled.
        repair_temperature: the sampling temperature of a repair or an extra draft (each has its own fixed seed).
        instructions: the system prompt of the draft call (the run's context sections follow it).
    """

    name = "draft"

    def __init__(self, accept: Accept = "rows", *, repairs: int = 3, votes: int = 1, repair_temperature: float = 0.8,
                 instructions: str = SQL_INSTRUCTIONS_SINGLE_SHOT) -> None:
        if accept not in ("rows", "never"):
            raise ValueError(f"accept must be 'rows' or 'never', not {accept!r}")
        if repairs < 0:
            raise ValueError("repairs must be 0 or more")
        self.accept, self.repairs, self.instructions = accept, repairs, instructions
        self.repair_temperature, self.votes = repair_temperature, votes

    def prepare(self, run: RunContext) -> None:
        """Ask for a draft, run it, repair it in text while it fails, and open the loop with the last one
        (confirmed when it returned rows and `accept` is "rows", else as a `run_query` call)."""
        query, finish = run.tools.get(QUERY_TOOL), run.tools.get(FINISH_TOOL)
        if query is None:
            return  # not a SQL agent: nothing to draft with
        system = "\n\n".join([self.instructions, *(s.render() for s in run.sections)])
        settings = replace(run.settings, tool_choice=None)
        messages = [Message.system(system), Message.user(run.task)]
        reply = run.call_model(messages, phase=DRAFT_PHASE, settings=settings)
        sql = sql_in_text(reply.content)
        if sql is None:
            return
        for attempt in range(self.repairs + 1):
            ran, failed = try_query(query, sql)
            good = not failed and returned_rows(ran)
            if good or attempt == self.repairs:
                break
            messages = [*messages, Message.assistant(reply.content),
                        Message.user(REPAIR_PROMPT.format(outcome="failed" if failed else "returned no rows",
                                                          result=ran[:MAX_RESULT_CHARS]))]
            reply = run.call_model(messages, phase=REPAIR_PHASE, settings=replace(
                settings, temperature=self.repair_temperature, seed=attempt + 1))
            sql = sql_in_text(reply.content) or sql
        if self.votes > 1:
            sql, good = self._vote(run, messages[:2], settings, query, sql if good else None, ran if good else "")
        name = FINISH_TOOL if good and self.accept == "rows" and finish is not None else QUERY_TOOL
        run.open_with(Message.assistant(tool_calls=[ToolCall(name=name, arguments={"sql": sql})]))

    def _vote(self, run: RunContext, messages: list[Message], settings: GenerationSettings, query: Tool,
              first: str | None, first_result: str) -> tuple[str, bool]:
        """Sample `votes - 1` more drafts, run each, and return the query whose result most drafts share (the
        first draft's among equals) and whether any draft returned rows."""
        found: list[tuple[str, str]] = [(first, result_key(first_result))] if first is not None else []
        for i in range(self.votes - 1):
            reply = run.call_model(messages, phase=DRAFT_PHASE, settings=replace(
                settings, temperature=self.repair_temperature, seed=VOTE_SEED + i))
            sql = sql_in_text(reply.content)
            if sql is None:
                continue
            ran, failed = try_query(query, sql)
            if not failed and returned_rows(ran):
                found.append((sql, result_key(ran)))
        if not found:
            return first or "", False
        return found[majority([key for _, key in found])][0], True


def majority(keys: Sequence[str]) -> int:
    """The index of the vote the draft planner keeps among results `keys` (one a draft, in draft order): the first
    of the key most of them share."""
    counts = Counter(keys)
    best = max(counts.values())
    return next(i for i, key in enumerate(keys) if counts[key] == best)


def try_query(query: Tool, sql: str) -> tuple[str, bool]:
    """(what running `sql` with the `run_query` tool showed, whether it failed)."""
    try:
        return str(query(sql=sql)), False
    except Exception as exc:  # the query's error, as the loop would show it
        return str(exc), True


def result_key(rendered: str) -> str:
    """A result's rows in a canonical order (drafts that differ only in row order agree)."""
    lines = rendered.strip().split("\n")
    return "\n".join(sorted(lines[1:-1])) + "\n" + lines[-1] if len(lines) > 2 else rendered
