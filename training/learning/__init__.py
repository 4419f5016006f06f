"""agentkit.training.learning — the learning loop: the agent gets better with use, measured on held-out tasks.

    from agentkit.training.learning import learn
    report = learn(env, "local:default", budget="45m", methods=("skills", "notes", "rl"), out="learn-runs/a")

It composes the three learners of the project — Skill1 skill distillation (agentkit.skills), Mistake
Notebook Learning (agentkit.memory) and online GRPO / Dual-Track GRPO with a LoRA adapter (the Trainer) —
so it sits in the training layer, above skills and memory (which never import training); the CLI's
`agentkit learn` is a thin front end to it.
"""

from agentkit.training.learning.loop import Budget, LearnEvent, learn
from agentkit.training.learning.methods import METHODS
from agentkit.training.learning.report import TABLE_HEADER, LearningReport, Score, wilson_interval
from agentkit.training.learning.splits import check_no_leak, split_tasks

__all__ = ["METHODS", "TABLE_HEADER", "Budget", "LearnEvent", "LearningReport", "Score", "check_no_leak", "learn",
           "split_tasks", "wilson_interval"]
