"""agentkit.skills — a library of skills the agent selects, uses and distills (Skill1).

    from agentkit import Agent
    from agentkit.skills import SkillLibrary

    agent = Agent(model, tools, extensions=[SkillLibrary.open("my-skills/")])

Skills are folders with a SKILL.md (YAML front matter: name, description, when_to_use; body: the
procedure), so people can write, read and version them; `agentkit skills import/export` moves them.
"""

from agentkit.extras import require

require("numpy", "chromadb", "sentence_transformers", extra="memory", feature="the skill library")

from agentkit.skills.cycle import SkillSettings
from agentkit.skills.index import HnswSettings
from agentkit.skills.library import SkillLibrary
from agentkit.skills.model import Admission, DistilledSkill, NewerSchemaError, Retrieved, Skill, SkillFormatError

__all__ = [
    "Admission",
    "DistilledSkill",
    "HnswSettings",
    "NewerSchemaError",
    "Retrieved",
    "Skill",
    "SkillFormatError",
    "SkillLibrary",
    "SkillSettings",
]
