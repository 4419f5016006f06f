"""The prompts of the mistake notebook, kept as data."""

from agentkit.jsontext import template_placeholders

NOTES_TITLE = "Notes from past mistakes"

NOTES_INSTRUCTION = (
    "These notes were written after earlier mistakes on tasks that looked similar. They may or may not "
    "apply here: for each note, first judge whether its subject matches this task; follow the ones that "
    "apply, avoid their anti-patterns, and ignore the ones that do not."
)

ANALYST_SYSTEM = (
    "You are an analyst who studies an AI agent's failed attempts and writes short, general guidance "
    "so that it does not repeat the mistakes. You answer with one JSON object and nothing else."
)

LABEL_PROMPT = """\
The agent failed this task.

Task:
{task}

What the agent did:
{context}

Name the subject of this failure in 10 to 50 words: the kind of question in the words a user would \
use, the domain, and the method that the task needs (for example: "Questions like how many tracks are \
in each genre, over a music store database: counting rows per group needs GROUP BY on the grouping key \
with COUNT and a join to get the group's name"). Notes are found by comparing new tasks with this \
subject, so keep it close to how such tasks are phrased.

Subjects already in use (reuse one of them EXACTLY, word for word, if this task is the same kind of \
problem; otherwise write a new one):
{labels}

Answer with JSON only: {{"subject": "..."}}"""

NOTE_PROMPT = """\
The agent failed the following {n} task(s), which share this subject:
{subject}

{cases}

Write one note that would help the agent solve tasks of this subject next time. Be general: the note \
must help on new tasks of the same kind, not only on these. Keep the whole note under 250 words.

Answer with JSON only, with exactly these keys:
{{
  "corrected_examples": ["1 to 3 short examples: the task, what was wrong, and the corrected answer"],
  "correct_approach": "how to solve tasks of this subject, step by step",
  "mistake_summary": "what went wrong, in one or two sentences",
  "generalisable_strategy": "the lesson that carries over to other tasks of this subject",
  "anti_patterns": ["specific things NOT to do (at least one)"]
}}"""

CASE_TEMPLATE = """\
### Case {i}
Task: {task}
Agent's attempt:
{context}
{expected}"""

RETRY_PROMPT = "Your reply could not be used: {error}. Answer again with the JSON object only."

# The note template's placeholder texts (read from it, so they cannot drift): an analyst may copy them
# back, and a copied section is not a note.
NOTE_PLACEHOLDERS = template_placeholders(NOTE_PROMPT)
