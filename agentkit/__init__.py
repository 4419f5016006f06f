"""agentkit: tool-using LLM agents that improve with use.

    from agentkit import Agent, tool

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    result = Agent(model="local:smollm2-135m", tools=[add]).run("What is 2 + 40?")
"""

from agentkit.agent import Agent, RunResult
from agentkit.loop.extensions import Extension, Planner, RunContext
from agentkit.messages import Message, ToolCall, Usage
from agentkit.models import GenerationSettings, Model, resolve_model
from agentkit.tools import Tool, Toolkit, tool
from agentkit.trajectory import Trajectory, Turn, append_jsonl, read_jsonl
from agentkit.version import __version__ as __version__

__all__ = [
    "Agent",
    "Extension",
    "GenerationSettings",
    "Message",
    "Model",
    "Planner",
    "RunContext",
    "RunResult",
    "Tool",
    "ToolCall",
    "Toolkit",
    "Trajectory",
    "Turn",
    "Usage",
    "append_jsonl",
    "read_jsonl",
    "resolve_model",
    "tool",
]

