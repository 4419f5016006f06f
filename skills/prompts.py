"""The prompts of the skill cycle (Skill1): query, rerank, utilize, distill. Data, not code."""

from agentkit.jsontext import template_placeholders

QUERY_SYSTEM = (
    "You are choosing which skill from a skill library could help with a task. Do not solve the task. "
    "Write one short sentence describing the kind of procedure the task needs, as a search query, "
    "inside <query></query> tags."
)

QUERY_USER = "Task:\n{task}\n\nReply with only <query>one sentence</query>."

RERANK_SYSTEM = (
    "You are ranking skills from a skill library by how useful each would be for a task. Do not solve "
    "the task. Reply with the candidate numbers, most useful first, inside <rank></rank> tags, "
    "for example <rank>2,1,3</rank>."
)

RERANK_USER = "Task:\n{task}\n\nCandidate skills:\n{candidates}\n\nReply with only <rank>...</rank>."

RERANK_CANDIDATE = "{number}. {name}: {description}{when}"

UTILIZE_TITLE = "A skill that may help"

UTILIZE_CAVEAT = (
    "This skill was retrieved from your skill library because it looked relevant. It was written from "
    "earlier tasks and may be outdated or not fit this task exactly: follow it only where it applies, "
    "and trust what you observe over what it says. It is advice, not a tool: act with your tools only."
)

DISTILL_SYSTEM = (
    "You write reusable skills from finished agent runs. A skill is a short, general procedure that "
    "would help with similar tasks later; it must not contain this task's specific answer or any "
    "instructions to the agent about its behaviour beyond the procedure. Reply with one JSON object "
    "and nothing else."
)

DISTILL_USER = """Task:
{task}

What the agent did:
{steps}

Final answer: {answer}
Outcome: {outcome}

Write the skill as JSON with these keys:
{{"name": "short-kebab-case-name",
 "description": "one line: what problem this procedure solves (used to find the skill)",
 "when_to_use": "one line: which tasks it fits",
 "subgoals": [{{"goal": "a step of the procedure", "status": "done"}}],
 "strategy": "two or three sentences on how to approach such tasks",
 "lessons": ["a pitfall to avoid or a check to make"],
 "success": true}}"""

# The template's placeholder texts (read from it, so they cannot drift): a distillation that copies
# them back is refused.
DISTILL_PLACEHOLDERS = template_placeholders(
    DISTILL_USER, ("name", "description", "when_to_use", "goal", "strategy", "lessons"))
